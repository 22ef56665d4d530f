# SPDX-License-Identifier: MIT
"""The remote mode with real processes (issue 15, docs/scaling.md): one
front and two sandbox hosts (real yuxi-sandboxd and nginx each, TLS
between them) on the one engine.

- 40 new threads through the front spread over both hosts (each at least
  25 %); execute, write, cat, viewer tree and file and download work for
  every one; another user's answers are the same 404 as on one host.
- SIGKILL one host (master, workers, reaper): its threads answer 503
  backend_unavailable with Retry-After at once, the other host's threads
  answer 200 throughout, a new thread goes to the host that is up; the
  host started again: its threads see their files; no thread is on two
  hosts, no container is outside its host's table.
- 200 MB through the front: the bytes intact, the front worker's time for
  the download independent of the size.
- execute with "stream": true through the front: each event as the
  command writes it; the host's request id is the front's.
- background processes through the front: start, list, get, stdin, the
  output long-poll, delete; the front's own long-poll slot (one here): a
  second long-poll at once answers at once with "wait_capped"; another
  user gets the same 404 on every process route.
- the front caps one user's commands (YUXI_USER_COMMANDS) with its own
  workers: one more answers 503 capacity with Retry-After: 1 at once.
- the egress proxy (profiles with network) runs on each sandbox host and
  not on the front, which runs no sandboxes.
Measured figures are printed (pytest -s).
"""
import concurrent.futures
import hashlib
import json
import re
import subprocess
import threading
import time

import pytest
import requests
import routes
from conftest import FRONT, engine_up, make_cluster
from yxsvc import wait_for

N = 40
OPS_WORKERS = 4


def placement(f, who="alice"):
    """{thread_id: host} of the front's records of `who`."""
    r = f.request(who, "GET", "/api/threads")
    assert r.status_code == 200, r.text
    return {t["thread_id"]: t.get("host") for t in r.json()["threads"]}


def every_op(f, tid):
    """execute, write, cat, viewer tree/file, download on thread tid."""
    r = f.execute(tid, "echo $((6*7)) > /home/yuxi/user-data/outputs/n.txt; "
                       "cat /home/yuxi/user-data/outputs/n.txt")
    assert r.status_code == 200 and r.json()["output"] == "42\n", (tid, r.text)
    r = f.request("alice", "POST", "/api/filesystem/write",
                  json={"thread_id": tid, "path": "/workspace/w.txt", "content": "w-" + tid})
    assert r.status_code == 201, (tid, r.text)
    r = f.request("alice", "GET", "/api/filesystem/cat?thread_id=%s&path=w.txt&format=raw" % tid)
    assert r.status_code == 200 and r.json()["content"] == "w-" + tid, (tid, r.text)
    r = f.request("alice", "GET", "/api/viewer/filesystem/tree?thread_id=%s&path=/outputs" % tid)
    assert r.status_code == 200 and [e["name"] for e in r.json()["entries"]] == ["n.txt"], r.text
    r = f.request("alice", "GET",
                  "/api/viewer/filesystem/file?thread_id=%s&path=/outputs/n.txt" % tid)
    assert r.status_code == 200 and r.json()["content"] == "42\n", (tid, r.text)
    r = f.request("alice", "GET", "/api/filesystem/download?thread_id=%s&path=w.txt" % tid)
    assert r.status_code == 200 and r.content == ("w-" + tid).encode(), (tid, r.status_code)
    assert "attachment" in r.headers.get("Content-Disposition", ""), r.headers
    return tid


def foreign_requests(tid):
    """What bob tries on a thread of alice: (name, method, url, kwargs), one
    per route of the front's route table that needs the caller's thread
    (tests/lib/routes.py)."""
    return routes.thread_requests(tid, "/workspace/w.txt", mode="front")


def without_id(text):
    """An answer's body without its own request id (every error has one)."""
    try:
        o = json.loads(text)
    except ValueError:
        return text
    if isinstance(o, dict) and isinstance(o.get("error"), dict):
        o["error"].pop("request_id", None)
    return json.dumps(o, sort_keys=True)


def answers(svc, tid, headers=None):
    out = {}
    for name, m, url, kw in foreign_requests(tid):
        kw = dict(kw, headers=dict(kw.get("headers") or {}, **(headers or {})))
        r = svc.request("bob", m, url, **kw)
        out[name] = (r.status_code, r.headers.get("Content-Type"), without_id(r.text))
    return out


def test_spread_and_every_op(cluster, standalone):
    f = cluster.front
    ids = ["sp%02d" % i for i in range(N)]
    hosts = {}
    for tid in ids:
        r = f.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "coder"})
        assert r.status_code == 201, r.text
        hosts[tid] = r.json()["host"]
    per = {p.name: sum(1 for h in hosts.values() if h == p.name) for p in cluster.provs}
    print("\nplacement of %d threads: %s" % (N, per))
    assert all(n >= N // 4 for n in per.values()), per
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(OPS_WORKERS) as ex:
        done = list(ex.map(lambda t: every_op(f, t), ids))
    print("every operation on %d threads: %.1f s" % (len(done), time.monotonic() - t0))
    for tid in ids:	# the files are where the record says, and only there
        assert cluster.hosts_of(tid) == [hosts[tid]], tid
    recs = placement(f)
    assert all(recs[t] == hosts[t] for t in ids)

    # another user: the same 404 as on one host, for a thread on either host
    ts = standalone.new_thread("alice")
    want = answers(standalone, ts)
    unknown = answers(standalone, "nosuch")
    assert want == unknown
    for tid in (ids[0], next(t for t in ids if hosts[t] != hosts[ids[0]])):
        got = answers(f, tid)
        assert got == {k: (s, c, b.replace(ts, tid)) for k, (s, c, b) in want.items()}, got
        # a client's identity header changes nothing
        assert answers(f, tid, headers={"X-Yuxi-User": "alice"}) == got
    assert set(s for s, _, _ in want.values()) == {404}


def rendezvous(name, tid):
    return int(hashlib.sha256((name + "\n" + tid).encode()).hexdigest()[:16], 16)


def first_choice(names, tid):
    return max(names, key=lambda n: (rendezvous(n, tid), -names.index(n)))


def test_kill_one_host(cluster):
    f = cluster.front
    names = [p.name for p in cluster.provs]
    victim, other = cluster.provs[0], cluster.provs[1]
    mine = {victim.name: [], other.name: []}
    for i in range(60):	# a few threads on each host
        tid = "kl%02d" % i
        h = first_choice(names, tid)
        if len(mine[h]) < 3:
            r = f.request("alice", "POST", "/api/threads", json={"thread_id": tid})
            assert r.status_code == 201 and r.json()["host"] == h, (h, r.text)
            mine[h].append(tid)
    assert all(len(v) == 3 for v in mine.values()), mine
    for tid in mine[victim.name] + mine[other.name]:
        r = f.execute(tid, "echo mark-%s > /home/yuxi/user-data/outputs/mark.txt" % tid)
        assert r.status_code == 200, r.text

    # the other host's threads, all along
    stop, seen, bad = threading.Event(), [0], []

    def steady():
        while not stop.is_set():
            for tid in mine[other.name]:
                r = f.request("alice", "GET",
                              "/api/filesystem/cat?thread_id=%s&path=/outputs/mark.txt" % tid,
                              timeout=30)
                seen[0] += 1
                if r.status_code != 200:
                    bad.append((tid, r.status_code, r.text[:200]))
            r = f.execute(mine[other.name][0], "echo ok", timeout=60)
            seen[0] += 1
            if r.status_code != 200:
                bad.append(("execute", r.status_code, r.text[:200]))

    bg = threading.Thread(target=steady)
    bg.start()
    try:
        killed = victim.kill()
        print("\nSIGKILLed %s: pids %s" % (victim.name, killed))
        times = []
        for tid in mine[victim.name]:
            for m, url, kw in (
                    ("GET", "/api/filesystem/ls?thread_id=" + tid, {}),
                    ("GET", "/api/threads/" + tid, {}),
                    ("POST", "/api/execute", {"json": {"thread_id": tid, "command": "true"}})):
                t0 = time.monotonic()
                r = f.request("alice", m, url, timeout=60, **kw)
                times.append(time.monotonic() - t0)
                assert r.status_code == 503, (tid, url, r.text)
                assert r.json()["error"]["code"] == "backend_unavailable"
                assert r.headers.get("Retry-After") == "5"
        print("answers for the killed host's threads: 503 in at most %.0f ms" %
              (max(times) * 1000))
        # a new thread whose first choice is the dead host goes to the other
        tid = next("nw%02d" % i for i in range(100)
                   if first_choice(names, "nw%02d" % i) == victim.name)
        r = f.request("alice", "POST", "/api/threads", json={"thread_id": tid})
        assert r.status_code == 201 and r.json()["host"] == other.name, r.text
        assert cluster.hosts_of(tid) == [other.name]
        victim.start_daemon()
        for tid in mine[victim.name]:
            r = wait_for(lambda: f.request(
                "alice", "GET", "/api/filesystem/cat?thread_id=%s&path=/outputs/mark.txt"
                "&format=raw" % tid), 20)
            assert r.status_code == 200 and r.json()["content"] == "mark-%s\n" % tid, r.text
            r = f.execute(tid, "cat /home/yuxi/user-data/outputs/mark.txt")
            assert r.status_code == 200 and r.json()["output"] == "mark-%s\n" % tid, r.text
        time.sleep(1)
    finally:
        stop.set()
        bg.join(120)
    print("the other host's threads: %d requests during the outage and restart, %d not 200"
          % (seen[0], len(bad)))
    assert seen[0] > 0 and bad == [], bad[:5]

    # no thread on two hosts: the files are where the record says, only there
    recs = placement(f)
    for tid, h in recs.items():
        assert cluster.hosts_of(tid) == [h], (tid, h, cluster.hosts_of(tid))

    # no container outside its host's table; one per thread, on its host
    listing = []

    def tables_match():
        r = f.request("admin", "GET", "/api/admin/sandboxes")
        if r.status_code != 200 or r.json()["unavailable_hosts"]:
            return False
        listing[:] = r.json()["sandboxes"]
        listed = {(s["host"], s["container"]) for s in listing}
        running = {(p.name, n) for p in cluster.provs for _, n in p.containers()}
        return listed == running and running
    assert wait_for(tables_match, 30, 0.5), "a container outside its host's table"
    tids = [s["thread_id"] for s in listing]
    assert len(tids) == len(set(tids)), tids
    assert all(recs[s["thread_id"]] == s["host"] for s in listing), listing
    print("%d containers, each in its host's table and of a thread placed there" % len(tids))


def front_busy_ms(svc, tid):
    """dur_ms of the front worker's download answers for thread tid, in order."""
    pat = re.compile(r"GET /api/filesystem/download route=\S+ status=200 dur_ms=([0-9.]+) "
                     r"user=alice thread=%s\b" % re.escape(tid))
    return [float(m.group(1)) for m in pat.finditer(svc.read_log(tail=None))]


def fetch(f, tid, path):
    h = hashlib.sha256()
    n = 0
    t0 = time.monotonic()
    with f.request("alice", "GET", "/api/filesystem/download?thread_id=%s&path=%s" % (tid, path),
                   stream=True, timeout=300) as r:
        assert r.status_code == 200, r.text
        for chunk in r.iter_content(1 << 20):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n, (time.monotonic() - t0) * 1000


def test_download_200mb(cluster):
    f = cluster.front
    tid = f.new_thread("alice")
    r = f.request("alice", "POST", "/api/execute", timeout=300, json={
        "thread_id": tid, "timeout": 240,
        "command": "cd /home/yuxi/user-data/outputs && "
                   "head -c 209715200 /dev/urandom > big.bin && "
                   "head -c 1048576 /dev/urandom > small.bin && sha256sum big.bin small.bin"})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    sums = {l.split()[1]: l.split()[0] for l in r.json()["output"].splitlines()}
    try:
        small = fetch(f, tid, "/outputs/small.bin")
        big = fetch(f, tid, "/outputs/big.bin")
        assert small[:2] == (sums["small.bin"], 1 << 20)
        assert big[:2] == (sums["big.bin"], 200 << 20)
        busy = front_busy_ms(f, tid)
        assert len(busy) == 2, busy
        print("\n1 MiB: %.0f ms, front worker %.2f ms; 200 MiB: %.0f ms (%.0f MiB/s), "
              "front worker %.2f ms" % (small[2], busy[0], big[2], 200 / (big[2] / 1000),
                                         busy[1]))
        assert busy[1] <= max(5 * busy[0], busy[0] + 20), busy
        assert busy[1] < big[2] / 10, (busy, big[2])
    finally:
        f.request("alice", "POST", "/api/filesystem/delete",
                  json={"thread_id": tid, "path": "/outputs/big.bin"})


def test_stream_through_the_front(cluster):
    f = cluster.front
    tid = f.new_thread("alice")
    assert f.execute(tid, "true").status_code == 200	# the sandbox up
    t0 = time.monotonic()
    out = []
    with f.request("alice", "POST", "/api/execute", stream=True, timeout=60, json={
            "thread_id": tid, "stream": True,
            "command": "for i in 1 2 3; do echo $i; sleep 1; done"}) as r:
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("application/x-ndjson"), r.headers
        rid = r.headers.get("X-Request-Id")
        for line in r.iter_lines():
            if line:
                out.append((time.monotonic() - t0, json.loads(line)))
    data = [(t, e["data"]) for t, e in out if e["type"] == "output"]
    assert [d for _, d in data] == ["1\n", "2\n", "3\n"], out
    assert out[-1][1]["type"] == "exit" and out[-1][1]["exit_code"] == 0
    print("\nstream through the front: events at %s s" % ", ".join(
        "%.2f" % t for t, _ in data))
    assert data[0][0] < 0.8 and data[2][0] - data[0][0] >= 1.6, data
    # the host's log names the request by the front's id
    host = cluster.prov(cluster.hosts_of(tid)[0])
    assert rid and ("rid=%s" % rid) in host.read_log(tail=None), rid


def test_processes_through_the_front(cluster):
    f = cluster.front
    tid = f.new_thread("alice")
    r = f.request("alice", "POST", "/api/processes",
                  json={"thread_id": tid, "command": "read l; echo got $l; sleep 60"})
    assert r.status_code == 201, r.text
    pid = r.json()["process_id"]
    one = "/api/processes/%s?thread_id=%s" % (pid, tid)
    out = "/api/processes/%s/output?thread_id=%s" % (pid, tid)
    stdin = "/api/processes/%s/stdin?thread_id=%s" % (pid, tid)
    r = f.request("alice", "GET", "/api/processes?thread_id=" + tid)
    assert r.status_code == 200 and [p["process_id"] for p in r.json()["processes"]] == [pid], \
        r.text
    r = f.request("alice", "GET", one)
    assert r.status_code == 200 and r.json()["state"] == "running", r.text
    r = f.request("alice", "POST", stdin, data=b"hello\n",
                  headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200 and r.json()["written"] == 6, r.text
    text, off, deadline = "", 0, time.monotonic() + 20
    while "got hello" not in text and time.monotonic() < deadline:
        r = f.request("alice", "GET", out + "&offset=%d&wait_ms=2000" % off)
        assert r.status_code == 200, r.text
        text += r.json()["data"]
        off = r.json()["next_offset"]
    assert text == "got hello\n", text

    # the front's one slot: of two long-polls at once, one waits, one not
    def poll():
        t0 = time.monotonic()
        r = f.request("alice", "GET", out + "&offset=%d&wait_ms=3000" % off)
        return time.monotonic() - t0, r.status_code, r.json()
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        res = sorted(ex.map(lambda _: poll(), range(2)), key=lambda x: x[0])
    print("\ntwo long-polls through the front (one slot): %.2f s capped=%s, %.2f s capped=%s"
          % (res[0][0], res[0][2].get("wait_capped"), res[1][0], res[1][2].get("wait_capped")))
    assert [x[1] for x in res] == [200, 200], res
    assert res[0][2].get("wait_capped") is True and res[0][0] < 2.0, res
    assert "wait_capped" not in res[1][2] and res[1][0] >= 2.5, res

    # another user: the one 404 of a thread that is not theirs, on every route
    for m, url, kw in [("GET", "/api/processes?thread_id=" + tid, {}), ("GET", one, {}),
                       ("GET", out, {}), ("POST", stdin, {"data": b"x"}), ("DELETE", one, {}),
                       ("POST", "/api/processes",
                        {"json": {"thread_id": tid, "command": "true"}})]:
        r = f.request("bob", m, url, **kw)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", \
            (m, url, r.text)
    # a process id that cannot exist is the front's own 404
    r = f.request("alice", "GET", "/api/processes/nope?thread_id=" + tid)
    assert r.status_code == 404, r.text
    r = f.request("alice", "DELETE", one)
    assert r.status_code == 200 and r.json()["forgotten"] is True, r.text
    assert f.request("alice", "GET", one).status_code == 404


def test_sessions_through_the_front(cluster):
    """Sessions (docs/api.md "Sessions") through the front: create, a
    command's state kept for the next, the stream form, the end, the one
    404 for another user, DELETE; and a terminal's resize."""
    f = cluster.front
    tid = f.new_thread("alice")
    r = f.request("alice", "POST", "/api/sessions", json={"thread_id": tid})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    ex = "/api/sessions/%s/execute" % sid
    one = "/api/sessions/%s?thread_id=%s" % (sid, tid)
    r = f.request("alice", "POST", ex, json={"thread_id": tid,
                                             "command": "mkdir -p d && cd d && X=front"})
    assert r.status_code == 200 and r.json()["cwd"].endswith("/workspace/d"), r.text
    r = f.request("alice", "POST", ex, json={"thread_id": tid, "command": "echo $X; pwd",
                                             "stream": True})
    assert r.status_code == 200, r.text
    events = [json.loads(line) for line in r.text.splitlines() if line]
    assert "".join(e.get("data", "") for e in events if e["type"] == "output").startswith(
        "front\n"), events
    assert events[-1]["type"] == "exit" and events[-1]["cwd"].endswith("/workspace/d")
    r = f.request("alice", "GET", "/api/sessions?thread_id=" + tid)
    assert [x["session_id"] for x in r.json()["sessions"]] == [sid], r.text
    for m, url, kw in [("GET", one, {}), ("DELETE", one, {}),
                       ("POST", ex, {"json": {"thread_id": tid, "command": "echo $X"}}),
                       ("GET", "/api/sessions?thread_id=" + tid, {}),
                       ("POST", "/api/sessions", {"json": {"thread_id": tid}})]:
        r = f.request("bob", m, url, **kw)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", \
            (m, url, r.text)
    r = f.request("alice", "GET", "/api/sessions/nope?thread_id=" + tid)
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found", r.text
    r = f.request("alice", "POST", ex, json={"thread_id": tid, "command": "exit 4"})
    assert r.status_code == 200 and r.json()["session_ended"] is True, r.text
    r = f.request("alice", "POST", ex, json={"thread_id": tid, "command": "true"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found", r.text
    r = f.request("alice", "DELETE", one)
    assert r.status_code == 200 and r.json()["forgotten"] is True, r.text
    # a terminal, resized through the front (thread_id in the query, size
    # in the body)
    r = f.request("alice", "POST", "/api/processes",
                  json={"thread_id": tid, "command": "sleep 20", "pty": {"cols": 80, "rows": 24}})
    assert r.status_code == 201 and r.json()["pty"] == {"cols": 80, "rows": 24}, r.text
    pid = r.json()["process_id"]
    r = f.request("alice", "POST", "/api/processes/%s/resize?thread_id=%s" % (pid, tid),
                  json={"cols": 90, "rows": 30})
    assert r.status_code == 200 and r.json() == {"cols": 90, "rows": 30}, r.text
    f.request("alice", "DELETE", "/api/processes/%s?thread_id=%s" % (pid, tid))


def children(svc):
    """The command names of svc's master's children."""
    out = subprocess.run(["ps", "-o", "comm=", "--ppid", str(svc.sandboxd.pid)],
                         capture_output=True, text=True).stdout
    return out.split()


def test_egress_proxy_on_hosts_only(cluster):
    assert "yuxi-egress" not in children(cluster.front), children(cluster.front)
    for p in cluster.provs:
        assert children(p).count("yuxi-egress") == 1, (p.name, children(p))


def test_front_caps_one_users_commands():
    """The front's workers hold a forwarded command as long as the host's:
    YUXI_USER_COMMANDS caps them per user on the front too (one here, of 3
    workers). A second streamed command of alice's answers 503 capacity
    with Retry-After: 1 at once; bob's command runs meanwhile."""
    if not engine_up():
        pytest.skip("no engine or no test image")
    cl = make_cluster(1, front_overrides=dict(FRONT, YUXI_USER_COMMANDS="1")).start()
    try:
        f = cl.front
        a, b = f.new_thread("alice"), f.new_thread("bob")
        assert f.execute(a, "true").status_code == 200
        assert f.execute(b, "true", who="bob").status_code == 200
        got = {}

        def hold():
            with requests.Session() as s:
                got["r"] = f.request("alice", "POST", "/api/execute", session=s,
                                     json={"thread_id": a, "command": "sleep 5"})
        t = threading.Thread(target=hold)
        t.start()
        time.sleep(1.5)
        with requests.Session() as s:
            t0 = time.monotonic()
            r = f.request("alice", "POST", "/api/execute", session=s,
                          json={"thread_id": a, "command": "echo two", "stream": True})
            refused = time.monotonic() - t0
            assert r.status_code == 503 and r.json()["error"]["code"] == "capacity", r.text
            assert r.headers.get("Retry-After") == "1", r.headers
            r = f.request("bob", "POST", "/api/execute", session=s,
                          json={"thread_id": b, "command": "echo bob"})
            assert r.status_code == 200 and r.json()["output"] == "bob\n", r.text
        t.join(60)
        assert got["r"].status_code == 200, got["r"].text
        assert refused < 2, refused
        # the slot is back: alice runs again
        assert f.execute(a, "echo again").json()["output"] == "again\n"
    finally:
        cl.stop()
