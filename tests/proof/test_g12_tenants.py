# SPDX-License-Identifier: MIT
"""Group 12: between tenants (docs/security.md "Between tenants").

What one user's thread can do to another user's, found by an attack run
against the live service and proved closed here, each against a control:

- run directory: alice's command writes into its agent directory
  (/opt/yuxi/run), alice deletes the thread, bob creates a thread of the same
  id: bob must find nothing of alice's. Control: the test-only daemon with
  YX_CONTROL_OFF=rundir (run directories kept) and one shared uid
  (YUXI_SANDBOX_UID_RANGE=off), which is how it was before.
- per-uid kernel limits: alice's sandbox takes every inotify instance and
  fills the POSIX message-queue budget; bob's sandbox must still get both.
  Every thread has its own host uid, so the per-uid counters are its own.
  Control: YUXI_SANDBOX_UID_RANGE=off (every sandbox uid 1000): bob fails.
- listing cost: bob owns 5,000 threads; alice's GET /api/threads must cost
  what alice owns (per-owner index). Control: YX_CONTROL_OFF=ownerindex
  (the listing reads every thread record).
- worker share: alice runs more long commands at once than there are
  workers; bob's listing and command must not wait for them (by default one
  user runs at most YUXI_WORKERS - 1 commands, the rest answer 503 capacity
  with Retry-After: 1). Control: YUXI_USER_COMMANDS=YUXI_WORKERS (no cap):
  bob waits until one of alice's commands ends.
- stdin writes and process calls: alice writes 640 KiB bodies into slow
  readers, or floods the process routes of a box whose keeper she stopped
  from inside; bob's listing must stay under 0.5 s (every route that holds
  a worker takes one of the user's slots, and each has a bound on its whole
  time). Control: YUXI_USER_COMMANDS=YUXI_WORKERS: bob waits.
"""
import concurrent.futures
import os
import secrets
import statistics
import threading
import time

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 12
FOREIGN = int(os.environ.get("YUXI_PROOF_FOREIGN_THREADS", "5000"))


def new_id(tag):
    return "%s-%s" % (tag, secrets.token_hex(5))


def create(svc, who, tid):
    r = svc.request(who, "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code in (200, 201), r.text
    return r.json()


@pytest.fixture(scope="module")
def prod():
    if not P.image_present(P.FULL_IMAGE):
        pytest.skip("image %s missing" % P.FULL_IMAGE)
    # bob makes FOREIGN threads for the listing cost: no per-user limit
    svc = P.ProofService("prod", YUXI_SANDBOX_IMAGE=P.FULL_IMAGE,
                         YUXI_COMMAND_PATH_POLICY="off",
                         YUXI_MAX_THREADS_PER_USER=0).start()
    yield svc
    svc.stop()


def control(off, kind="cbroker", **kw):
    """A control service: the test-only daemon with YX_CONTROL_OFF=off, or
    (kind "prod") the production daemon with weakened settings."""
    if kind != "prod":
        kw["YX_CONTROL_OFF"] = off
    return P.ProofService(kind, YUXI_SANDBOX_IMAGE=P.FULL_IMAGE,
                          YUXI_COMMAND_PATH_POLICY="off", **kw).start()


# ------------------------------------------------------------- run directory
def run_dir_inherited(svc):
    """alice writes into /opt/yuxi/run, deletes; bob takes the id: leaked?"""
    tid = new_id("rd")
    token = secrets.token_hex(12)
    create(svc, "alice", tid)
    out = svc.run(tid, "echo %s > /opt/yuxi/run/alice.txt && ls /opt/yuxi/run" % token)
    assert "alice.txt" in out["output"], out
    r = svc.request("alice", "DELETE", "/api/threads/" + tid)
    assert r.status_code == 204, r.text
    left = os.path.exists(os.path.join(svc.saves, "run", tid))
    create(svc, "bob", tid)
    out = svc.run(tid, "cat /opt/yuxi/run/alice.txt 2>&1; ls -a /opt/yuxi/run", who="bob")
    return token in out["output"], left, out["output"]


def test_run_directory_not_inherited(prod):
    leaked, left, out = run_dir_inherited(prod)
    print("run dir prod: leaked=%s left_on_disk=%s %r" % (leaked, left, out[-200:]))
    stats.case(G, "deleted thread's run directory reaches the next owner",
               escapes=leaked, outside_metadata=left)
    assert not leaked and not left, out
    # no run directory without its thread after a round of deletes
    runs = set(os.listdir(os.path.join(prod.saves, "run")))
    threads = set(os.listdir(os.path.join(prod.saves, "threads")))
    stale = sorted(runs - threads)
    stats.case(G, "stale run directories", outside_metadata=len(stale))
    assert not stale, stale


def test_run_directory_control():
    # the create path's protection: with a pool (the default) a new thread's run
    # directory is a pool box's fresh one, which would hide the control
    svc = control("rundir", YUXI_SANDBOX_UID_RANGE="off", YUXI_POOL_SIZE="0")
    try:
        leaked, left, out = run_dir_inherited(svc)
        print("run dir control: leaked=%s left_on_disk=%s" % (leaked, left))
        assert stats.control(G, leaked, "run directory handed to the next owner"), out
    finally:
        svc.stop()


# ------------------------------------------------------- per-uid kernel limits
HOLD = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fds = []
while len(fds) < 4096:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print("inotify_held=%d errno=%d" % (len(fds), ctypes.get_errno()), flush=True)
open("/home/yuxi/user-data/workspace/holding", "w").write("%d\n" % len(fds))
time.sleep(float(sys.argv[1]))
"""

# the start of the scripts that use POSIX message queues: struct mq_attr, libc
MQ_HEAD = r"""
import ctypes, os
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long),
                ("pad", ctypes.c_long * 4)]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
"""

MQFILL = MQ_HEAD + r"""
a = Attr(0, 10, 8192, 0)
n = 0
while n < 256:
    q = libc.mq_open(("/yxq%d" % n).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
    if q < 0:
        break
    n += 1
print("mq_made=%d errno=%d" % (n, ctypes.get_errno()))
"""

PROBE = MQ_HEAD + r"""
fd = libc.inotify_init1(0)
print("inotify=%s errno=%d" % ("ok" if fd >= 0 else "fail", ctypes.get_errno()))
a = Attr(0, 10, 8192, 0)
q = libc.mq_open(b"/yxbob", os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
print("mqueue=%s errno=%d" % ("ok" if q >= 0 else "fail", ctypes.get_errno()))
"""


def write_script(svc, who, tid, name, text):
    r = svc.request(who, "POST", "/api/filesystem/write",
                    json={"thread_id": tid, "path": "/workspace/" + name,
                          "content": text, "overwrite": True})
    assert r.status_code == 201, r.text


def per_uid_limits(svc):
    """alice exhausts inotify and mqueue; what does bob's sandbox get?"""
    ta, tb = new_id("ua"), new_id("ub")
    create(svc, "alice", ta)
    create(svc, "bob", tb)
    write_script(svc, "alice", ta, "hold.py", HOLD)
    write_script(svc, "alice", ta, "mqfill.py", MQFILL)
    write_script(svc, "bob", tb, "probe.py", PROBE)
    svc.run(tb, "true", who="bob")		# bob's box exists before the attack
    mq = svc.run(ta, "python3 mqfill.py")["output"]
    holder = {}

    def hold():
        holder["out"] = svc.run(ta, "python3 hold.py 10", timeout=60)["output"]
    th = threading.Thread(target=hold)
    th.start()
    marker = os.path.join(svc.workspace(ta), "holding")
    deadline = time.time() + 30
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.1)
    assert os.path.exists(marker), "holder did not start"
    out = svc.run(tb, "python3 probe.py", who="bob")["output"]
    th.join(60)
    res = {"inotify_ok": "inotify=ok" in out, "mqueue_ok": "mqueue=ok" in out}
    return res, mq.strip(), open(marker).read().strip(), out


def test_per_uid_limits_separated(prod):
    res, mq, held, out = per_uid_limits(prod)
    print("per-uid prod: alice %s, %s inotify held; bob %s" % (mq, held, res))
    stats.measure(G, "alice_inotify_instances_held", int(held))
    stats.case(G, "inotify instances shared across sandboxes",
               escapes=not res["inotify_ok"])
    stats.case(G, "mqueue bytes shared across sandboxes",
               escapes=not res["mqueue_ok"])
    assert int(held) > 0 and "mq_made=" in mq
    assert res["inotify_ok"] and res["mqueue_ok"], out


def test_per_uid_limits_control():
    svc = control("", kind="prod", YUXI_SANDBOX_UID_RANGE="off")
    try:
        res, mq, held, out = per_uid_limits(svc)
        print("per-uid control: alice %s, %s inotify held; bob %s" % (mq, held, res))
        stats.control(G, not res["inotify_ok"], "inotify starved with one shared uid")
        stats.control(G, not res["mqueue_ok"], "mqueue starved with one shared uid")
        assert not res["inotify_ok"] and not res["mqueue_ok"], out
    finally:
        svc.stop()


# ----------------------------------------------------------------- listings
def list_ms(svc, who, ref, n=15):
    """Median ms of who's thread listing, relative to a request that does
    not grow with the store (GET of one of who's threads, `ref`) timed
    right beside it: a loaded machine slows both alike. Returns (the
    listing's median ms, that median over the reference's, the threads)."""
    t, rel = [], []
    for _ in range(n):
        t0 = time.monotonic()
        r = svc.request(who, "GET", "/api/threads")
        t1 = time.monotonic()
        assert r.status_code == 200
        assert svc.request(who, "GET", "/api/threads/" + ref).status_code == 200
        t2 = time.monotonic()
        t.append((t1 - t0) * 1000)
        rel.append((t1 - t0) / max(t2 - t1, 1e-4))
    return statistics.median(t), statistics.median(rel), r.json()["threads"]


def make_foreign(svc, count):
    """bob creates `count` threads through the API (6 clients)."""
    import requests
    ids = ["f%05d-%s" % (i, secrets.token_hex(3)) for i in range(count)]
    local = threading.local()

    def one(tid):
        if not hasattr(local, "s"):
            local.s = requests.Session()
        r = svc.request("bob", "POST", "/api/threads", json={"thread_id": tid},
                        session=local.s)
        return r.status_code
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        codes = list(ex.map(one, ids))
    assert codes.count(201) == count, {c: codes.count(c) for c in set(codes)}
    return time.monotonic() - t0


def listing_cost(svc):
    mine = [new_id("la") for _ in range(3)]
    for tid in mine:
        create(svc, "alice", tid)
    base, rbase, _ = list_ms(svc, "alice", mine[0])
    made = make_foreign(svc, FOREIGN)
    after, rafter, threads = list_ms(svc, "alice", mine[0])
    got = set(t["thread_id"] for t in threads)
    # all of alice's (earlier tests made some too), nothing of bob's
    assert set(mine) <= got and not [t for t in got if t.startswith("f")], got
    return base, after, made, rafter / max(rbase, 0.01)


def test_listing_costs_what_the_caller_owns(prod):
    base, after, made, ratio = listing_cost(prod)
    print("listing prod: alice %.2f ms alone, %.2f ms with %d foreign threads "
          "(%.1fx relative to a thread GET beside it; made in %.1f s)"
          % (base, after, FOREIGN, ratio, made))
    stats.measure(G, "listing_ms_alone", round(base, 2))
    stats.measure(G, "listing_ms_with_%d_foreign" % FOREIGN, round(after, 2))
    # noisy machine: generous, but far below the control's growth
    stats.case(G, "listing scans other users' threads", hangs=ratio > 3)
    assert ratio < 3, (base, after)


def test_listing_control():
    svc = control("ownerindex", YUXI_MAX_THREADS_PER_USER=0)
    try:
        base, after, made, ratio = listing_cost(svc)
        print("listing control: %.2f ms -> %.2f ms (%.1fx relative)" % (base, after, ratio))
        stats.measure(G, "control_listing_ms_with_%d_foreign" % FOREIGN, round(after, 2))
        assert stats.control(G, ratio > 4, "listing cost grows with others' threads"), \
            (base, after)
    finally:
        svc.stop()


# ----------------------------------------------------------- layout repair
def test_swapped_layout_folder_is_repaired(prod):
    """A top-level folder swapped for a symlink (or a file) by the sandbox
    used to make every later execute 403 for good; now it is moved aside,
    made again, and the reply says so. Nothing is followed."""
    tid = new_id("lr")
    create(prod, "alice", tid)
    prod.run(tid, "true")
    out = prod.run(tid, "cd /home/yuxi/user-data && rm -rf large_tool_results outputs "
                        "&& ln -s /etc large_tool_results && echo x > outputs")
    assert out["exit_code"] == 0, out
    r = prod.request("alice", "POST", "/api/execute",
                     json={"thread_id": tid, "command": "ls -a /home/yuxi/user-data"})
    body = r.json() if r.status_code == 200 else {}
    rep = body.get("layout_repaired", [])
    ud = os.path.join(prod.saves, "threads", tid, "user-data")
    ok = (r.status_code == 200 and sorted(rep) == [
        "/home/yuxi/user-data/large_tool_results", "/home/yuxi/user-data/outputs"]
        and os.path.isdir(os.path.join(ud, "large_tool_results"))
        and not os.path.islink(os.path.join(ud, "large_tool_results"))
        and os.path.isdir(os.path.join(ud, "outputs")))
    print("layout repair: %d %s" % (r.status_code, rep))
    stats.case(G, "swapped layout folder blocks the thread", escapes=not ok)
    assert ok, (r.status_code, r.text)
    moved = [n for n in os.listdir(ud) if n.startswith("large_tool_results.moved-")]
    assert len(moved) == 1 and os.readlink(os.path.join(ud, moved[0])) == "/etc"
    # and the next command runs as usual, with nothing to repair
    again = prod.run(tid, "echo fine")
    assert again["output"] == "fine\n" and "layout_repaired" not in again


# ------------------------------------------------------------ worker share
HOLD_S = 8


def commands_hog(svc, poll=False):
    """alice starts 4 commands of HOLD_S seconds at once (3 workers); bob's
    listing and his command then: how long did bob wait, what did alice
    get? Returns (bob's listing s, bob's command s, alice's (status,
    Retry-After, error code) sorted, and with poll, (seconds, wait_capped)
    of an output long-poll of 5 s alice asks for meanwhile)."""
    a, b = new_id("hog"), new_id("bob")
    create(svc, "alice", a)
    create(svc, "bob", b)
    svc.run(a, "true")
    svc.run(b, "true", who="bob")
    got = []
    proc = None
    if poll:	# started first: starting one takes a slot of hers too
        r = svc.request("alice", "POST", "/api/processes",
                        json={"thread_id": a, "command": "sleep 30"})
        assert r.status_code == 201, r.text
        proc = r.json()["process_id"]

    def one():
        with requests.Session() as s:
            r = svc.request("alice", "POST", "/api/execute", session=s,
                            json={"thread_id": a, "command": "sleep %d" % HOLD_S})
            got.append((r.status_code, r.headers.get("Retry-After"),
                        r.json().get("error", {}).get("code", "")))
    ts = [threading.Thread(target=one) for _ in range(4)]
    for t in ts:
        t.start()
    time.sleep(1.5)
    with requests.Session() as s:
        t0 = time.monotonic()
        r = svc.request("bob", "GET", "/api/threads", session=s)
        listing = time.monotonic() - t0
        assert r.status_code == 200, r.text
        t0 = time.monotonic()
        r = svc.request("bob", "POST", "/api/execute", session=s,
                        json={"thread_id": b, "command": "echo bob"})
        command = time.monotonic() - t0
        assert r.status_code == 200 and r.json()["output"] == "bob\n", r.text
        polled = None
        if poll:	# a long-poll holds a worker too: one of alice's slots
            t0 = time.monotonic()
            r = svc.request("alice", "GET", "/api/processes/%s/output?thread_id=%s&wait_ms=5000"
                            % (proc, a), session=s)
            assert r.status_code == 200, r.text
            polled = (time.monotonic() - t0, r.json().get("wait_capped", False))
    for t in ts:
        t.join(HOLD_S + 60)
    return listing, command, sorted(got, key=lambda g: g[0]), polled


def hog(cap, poll=False):
    """commands_hog on a service of 3 workers with YUXI_USER_COMMANDS=cap."""
    if not P.image_present(P.FULL_IMAGE):
        pytest.skip("image %s missing" % P.FULL_IMAGE)
    svc = P.ProofService("prod", YUXI_SANDBOX_IMAGE=P.FULL_IMAGE, YUXI_WORKERS=3,
                         YUXI_USER_COMMANDS=cap).start()
    try:
        return commands_hog(svc, poll)
    finally:
        svc.stop()


def test_one_user_leaves_workers_to_the_others():
    # the production default: YUXI_USER_COMMANDS=0, one fewer than the workers
    listing, command, got, polled = hog(0, poll=True)
    print("worker share: bob's listing %.2f s, his command %.2f s; alice got %s; "
          "her long-poll %s" % (listing, command, got, polled))
    stats.measure(G, "bob_listing_s_beside_alice_commands", round(listing, 2))
    waited = max(listing, command) > HOLD_S / 2
    stats.case(G, "one user's commands make other users wait", hangs=waited)
    assert not waited, (listing, command)
    # two ran; the others were told at once to come back
    assert [g[0] for g in got] == [200, 200, 503, 503], got
    assert all(g[1] == "1" and g[2] == "capacity" for g in got[2:]), got
    # her long-poll too: no slot of hers free, so it answered at once
    assert polled[1] is True and polled[0] < 2.5, polled


def test_worker_share_control():
    # the cap off (a value of YUXI_WORKERS): alice's commands take every worker
    listing, command, got, _ = hog(3)
    print("worker share control: bob's listing %.2f s, his command %.2f s; alice got %s"
          % (listing, command, got))
    assert stats.control(G, listing > HOLD_S / 2, "bob waited for alice's commands"), \
        (listing, command, got)


# ------------------------------------------- stdin writes and process calls
# (issue 27: stdin, process start and control held workers without a slot)
SLOW_READER = "while :; do head -c 65536 >/dev/null; sleep 4.9; done"
STDIN_BYTES = 640 * 1024


def bob_meanwhile(svc, seconds):
    """bob lists his threads every 0.2 s for `seconds`: his slowest (s)."""
    worst = 0.0
    end = time.monotonic() + seconds
    with requests.Session() as s:
        while time.monotonic() < end:
            t0 = time.monotonic()
            r = svc.request("bob", "GET", "/api/threads", session=s)
            worst = max(worst, time.monotonic() - t0)
            assert r.status_code == 200, r.text
            time.sleep(0.2)
    return worst


def stdin_hog(svc):
    """alice: 4 slow readers, then 4 parallel 640 KiB stdin writes into
    them, four times over; bob's slowest listing meanwhile and alice's
    answers (status, bytes written, seconds)."""
    a, b = new_id("in"), new_id("bob")
    create(svc, "alice", a)
    create(svc, "bob", b)
    svc.run(a, "true")
    procs = []
    for _ in range(4):
        r = svc.request("alice", "POST", "/api/processes",
                        json={"thread_id": a, "command": SLOW_READER})
        assert r.status_code == 201, r.text
        procs.append(r.json()["process_id"])
    got = []
    data = b"x" * STDIN_BYTES

    def one(pid):
        with requests.Session() as s:
            for _ in range(4):
                t0 = time.monotonic()
                r = svc.request("alice", "POST", "/api/processes/%s/stdin?thread_id=%s"
                                % (pid, a), session=s, data=data)
                got.append((r.status_code, r.json().get("written"),
                            round(time.monotonic() - t0, 2)))
    ts = [threading.Thread(target=one, args=(p,)) for p in procs]
    for t in ts:
        t.start()
    time.sleep(0.3)
    worst = bob_meanwhile(svc, 6)
    for t in ts:
        t.join(120)
    return worst, got


def hog_service(cap, **kw):
    if not P.image_present(P.FULL_IMAGE):
        pytest.skip("image %s missing" % P.FULL_IMAGE)
    # the attack's bodies (640 KiB): above the harness's 64 KiB body limit
    return P.ProofService("prod", YUXI_SANDBOX_IMAGE=P.FULL_IMAGE, YUXI_WORKERS=4,
                          YUXI_USER_COMMANDS=cap, YUXI_COMMAND_PATH_POLICY="off",
                          YUXI_BODY_LIMIT="1m", **kw).start()


def on_hog_service(cap, attack):
    """attack(svc) on a fresh hog_service(cap), stopped afterwards (also
    when the attack failed): the attack's result."""
    svc = hog_service(cap)
    try:
        return attack(svc)
    finally:
        svc.stop()


def test_stdin_writes_leave_workers_to_the_others():
    worst, got = on_hog_service(0, stdin_hog)	# the default: 3 of the 4 workers per user
    print("stdin hog: bob's slowest listing %.2f s; alice got %s" % (worst, got))
    stats.measure(G, "bob_listing_s_beside_alice_stdin", round(worst, 2))
    stats.case(G, "one user's stdin writes make other users wait", hangs=worst >= 0.5)
    assert worst < 0.5, (worst, got)
    # each write ends within its bound (a few seconds), taking what the reader took
    assert all(g[2] < 6 for g in got if g[0] == 200), got
    assert any(g[0] == 200 and 0 < g[1] < STDIN_BYTES for g in got), got
    # and over her slots, one was told at once to come back
    assert any(g[0] == 503 and g[2] < 1 for g in got), got


def test_stdin_writes_control():
    # the cap off (YUXI_USER_COMMANDS = YUXI_WORKERS): her writes take every worker
    worst, got = on_hog_service(4, stdin_hog)
    print("stdin hog control: bob's slowest listing %.2f s; alice got %s" % (worst, got))
    assert stats.control(G, worst >= 0.5, "bob waited for alice's stdin writes"), (worst, got)


def keeper_flood(svc, seconds=6):
    """alice stops her process's keeper from inside, then 8 clients ask for
    the process, list and kill it, start more, as fast as they can; bob's
    slowest listing meanwhile, alice's answers and their slowest."""
    a, b = new_id("kf"), new_id("bob")
    create(svc, "alice", a)
    create(svc, "bob", b)
    svc.run(a, "true")
    r = svc.request("alice", "POST", "/api/processes",
                    json={"thread_id": a, "command": "echo $PPID > kp; exec sleep 600"})
    assert r.status_code == 201, r.text
    pid = r.json()["process_id"]
    assert P.wait_for(lambda: os.path.exists(os.path.join(svc.workspace(a), "kp")), 10)
    stopper = threading.Thread(target=lambda: svc.request(
        "alice", "POST", "/api/execute",
        json={"thread_id": a, "command": "kill -STOP $(cat kp); sleep %d" % (seconds + 4)}))
    stopper.start()
    time.sleep(1)
    stop_at = time.monotonic() + seconds
    codes, slowest = [], [0.0]

    def flood(i):
        paths = [("GET", "/api/processes/%s?thread_id=%s" % (pid, a), None),
                 ("GET", "/api/processes?thread_id=%s" % a, None),
                 ("GET", "/api/processes/%s/output?thread_id=%s&wait_ms=2000" % (pid, a), None),
                 ("POST", "/api/processes", {"thread_id": a, "command": "sleep 1"})]
        with requests.Session() as s:
            k = i
            while time.monotonic() < stop_at:
                m, p, body = paths[k % len(paths)]
                k += 1
                t0 = time.monotonic()
                r = svc.request("alice", m, p, session=s, json=body)
                slowest[0] = max(slowest[0], time.monotonic() - t0)
                codes.append(r.status_code)
    ts = [threading.Thread(target=flood, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    worst = bob_meanwhile(svc, seconds - 0.5)
    for t in ts:
        t.join(60)
    stopper.join(60)
    svc.run(a, "kill -CONT $(cat kp) 2>/dev/null; true")
    return worst, codes, slowest[0]


def test_process_calls_leave_workers_to_the_others():
    worst, codes, slowest = on_hog_service(0, keeper_flood)
    tally = {c: codes.count(c) for c in set(codes)}
    print("process flood: bob's slowest listing %.2f s; alice's answers %s, slowest %.2f s"
          % (worst, tally, slowest))
    stats.measure(G, "bob_listing_s_beside_alice_process_flood", round(worst, 2))
    stats.case(G, "one user's process calls make other users wait", hangs=worst >= 0.5)
    assert worst < 0.5, (worst, tally)
    # every answer of hers bounded: the keeper's budget, the wait, a start
    assert slowest < 7, slowest
    assert 503 in tally, tally


def test_process_calls_control():
    worst, codes, slowest = on_hog_service(4, keeper_flood)
    print("process flood control: bob's slowest listing %.2f s" % worst)
    assert stats.control(G, worst >= 0.5, "bob waited for alice's process calls"), worst
