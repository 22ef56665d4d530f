# SPDX-License-Identifier: MIT
"""The remote mode under network faults (issue 27 item 6, docs/scaling.md
"Failure"): one healthy sandbox host (p1) and four sick ones, each behind
a fault of our own (tests/remote/netfault.py), all at once:

- slow: every byte from the front reaches the host 2 s late (a relay),
- drop: the host drops 100 % of the packets it gets (iptables in its own
  network namespace),
- hang: the host accepts and never answers (a relay that swallows),
- part: a partition (both ways, its namespace), healed after 10 s.

The protected front (16 workers, YUXI_HOST_CALLS=3) under load (3 clients
on p1's thread, 6 per sick host running `echo <id> >> count.txt`):
p1's answers all 200 with p95 < 1 s; each sick host's answers 200 or a
clear 503 within its bound (connect 3 s, silence 5 s, the call's own
bound 1 + 30 s for the hung one), and no front worker's time for a
request beyond it (the front's log); after healing every host works;
every command answered 200 is in its count file exactly once and no
command twice.

Controls, each the naive behaviour failing what the protection passes:
- no host cap (YUXI_HOST_CALLS = the workers), the same faults and load:
  p1's p95 is over 1 s (the sick hosts hold every worker);
- no silence bound (the control daemon, YX_CONTROL_OFF=hostack): calls on
  kept connections to the dropping host wait until it is healed (> 10 s)
  where the protected front answers 503 within 5 s (and on the hung host,
  whose TCP answers, the call's own bound ends them: 503 at 31 s);
- libcurl's resend (YX_CONTROL_OFF=resend): a connection cut after the
  request went out (relay reset) makes the command run twice; the
  protected front answers 503 "not sent again" and it ran once.
Figures are printed (pytest -s).
"""
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time

import pytest
import requests
from conftest import CONTROL, PROV
from netfault import NsHost, RelayHost, can_make_faults, conns
from yxsvc import FrontService, ProvisionerService, engine_up, make_secret, new_tag, wait_for

CONNECT_S = 3		# YX_REMOTE_CONNECT_MS
ACK_S = 5		# YX_REMOTE_ACK_MS
MARGIN_S = 30		# h_front.c FRONT_MARGIN_MS
CMD_TIMEOUT = 1		# the sick commands' "timeout": their call's bound is 31 s
HANG_BOUND = CMD_TIMEOUT + MARGIN_S
SLACK = 1.5		# client side: nginx, the harness, two busy cores
BOUND = {"slow": CONNECT_S + 2 + 2 + SLACK, "drop": ACK_S + SLACK, "part": ACK_S + SLACK,
         "hang": HANG_BOUND + SLACK}
WORKERS, HOST_CALLS = 16, 3
HEALTHY_CLIENTS, SICK_CLIENTS = 3, 6
SICK = ("slow", "drop", "hang", "part")
COUNT = "/home/yuxi/user-data/count.txt"


class Hosts:
    def __init__(self, token, p1, sick):
        self.token, self.p1, self.sick = token, p1, sick
        self.all = [p1] + [sick[n] for n in SICK]

    def names(self):
        return [h.name for h in self.all]


@pytest.fixture(scope="module")
def hosts():
    if not engine_up():
        pytest.skip("no engine or no test image")
    why = can_make_faults()
    if why:
        pytest.skip("network faults: " + why)
    d = tempfile.mkdtemp(prefix=new_tag("qyxnf") + "-")
    token = make_secret(os.path.join(d, "front.token"))
    made = []
    try:
        p1 = ProvisionerService(token, name="p1", overrides=PROV)
        made.append(p1)
        sick = {"slow": RelayHost(token, "slow", overrides=PROV),
                "hang": RelayHost(token, "hang", overrides=PROV),
                "drop": NsHost(token, "drop", 1, overrides=PROV),
                "part": NsHost(token, "part", 2, overrides=PROV)}
        made += list(sick.values())
        for i, h in enumerate(made):	# every host its own uids (one kernel)
            lo = 2000000000 + 100000 * (i + 11)
            h.env["YUXI_SANDBOX_UID_RANGE"] = "%d-%d" % (lo, lo + 65535)
        for h in made:
            h.start()
        yield Hosts(token, p1, sick)
    finally:
        for h in made:
            try:
                h.stop()
            except Exception as e:	# the others still stop
                print("stopping %s: %s" % (h.name, e))
        shutil.rmtree(d, ignore_errors=True)


def start_front(h, workers, host_calls, binary=None, off=None):
    o = {"YUXI_SANDBOX_UID_RANGE": "off", "YUXI_WORKERS": str(workers),
         "YUXI_HOST_CALLS": str(host_calls)}
    if off:
        o["YX_CONTROL_OFF"] = off
    f = FrontService(h.all, h.token, overrides=o, binary=binary)
    try:
        return f.start()
    except BaseException:
        f.stop()
        raise


def first_choice(names, tid):
    def score(n):
        return int(hashlib.sha256((n + "\n" + tid).encode()).hexdigest()[:16], 16)
    return max(names, key=lambda n: (score(n), -names.index(n)))


def thread_on(f, h, host, stem, who="alice"):
    """A new thread of `who` placed on `host` (its first choice); its
    sandbox started and its count file made."""
    tid = next("%s%03d" % (stem, i) for i in range(1000)
               if first_choice(h.names(), "%s%03d" % (stem, i)) == host)
    r = f.request(who, "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code == 201 and r.json()["host"] == host, r.text
    r = f.execute(tid, "touch %s; echo up" % COUNT, who=who, timeout=60)
    assert r.status_code == 200 and r.json()["output"] == "up\n", r.text
    return tid


def counted(h, host, tid):
    """The ids in the thread's count file on its host, in order."""
    p = [x for x in h.all if x.name == host][0]
    with open(os.path.join(p.saves, "threads", tid, "user-data", "count.txt")) as f:
        return [int(x) for x in f.read().split()]


def warm(f, tid, host_addr, want, conc=1, who="alice", rounds=12):
    """Requests to the thread, conc at once, until `want` of f's workers
    keep a connection to its host (ss; idle workers take turns at the
    socket, so every worker gets some); returns how many do."""
    for _ in range(rounds):
        if conns(f, host_addr) >= want:
            break
        for _ in range(max(1, want // conc)):
            ths = [threading.Thread(target=lambda: f.request(
                who, "GET", "/api/filesystem/ls?thread_id=" + tid, timeout=30))
                for _ in range(conc)]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
    return conns(f, host_addr)


class Load:
    """Clients in threads, by group, until their group is stopped: each
    records (start, seconds, status, error code, id) of every answer."""

    def __init__(self):
        self.stops = {}
        self.threads = []
        self.ids = iter(range(1, 1 << 30))
        self.lock = threading.Lock()

    def next_id(self):
        with self.lock:
            return next(self.ids)

    def run(self, group, fn):
        out = []
        ev = self.stops.setdefault(group, threading.Event())
        t = threading.Thread(target=self._loop, args=(fn, out, ev), daemon=True)
        t.start()
        self.threads.append(t)
        return out

    @staticmethod
    def _loop(fn, out, ev):
        with requests.Session() as s:
            while not ev.is_set():
                t0 = time.monotonic()
                try:
                    st, code, i = fn(s)
                except requests.RequestException as e:
                    st, code, i = 0, type(e).__name__, None
                out.append((t0, time.monotonic() - t0, st, code, i))
                time.sleep(0.05 if st == 200 else 0.3)

    def stop(self, group):
        self.stops[group].set()

    def join(self, wait=90):
        for ev in self.stops.values():
            ev.set()
        for t in self.threads:
            t.join(wait)


def healthy_client(f, tid):
    n = [0]

    def one(s):
        n[0] += 1
        if n[0] % 2:
            r = f.request("bob", "GET", "/api/filesystem/cat?thread_id=%s&path=%s"
                          % (tid, COUNT), session=s, timeout=60)
        else:
            r = f.execute(tid, "echo ok", who="bob", session=s, timeout=60)
        return r.status_code, None, None
    return one


def sick_client(f, tid, load):
    def one(s):
        i = load.next_id()
        r = f.request("alice", "POST", "/api/execute", session=s, timeout=90, json={
            "thread_id": tid, "command": "echo %d >> %s" % (i, COUNT), "timeout": CMD_TIMEOUT})
        code = None
        if r.status_code != 200:
            try:
                code = r.json()["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = "?"
        return r.status_code, code, i
    return one


def p95(xs):
    xs = sorted(xs)
    return xs[int(0.95 * (len(xs) - 1))] if xs else 0.0


def worker_secs(f, tid):
    """The front worker's time (dur_ms) of each request for thread tid."""
    pat = re.compile(r"route=\S+ status=\d+ dur_ms=([0-9.]+) user=\S+ thread=%s " %
                     re.escape(tid))
    return [float(m.group(1)) / 1000 for m in pat.finditer(f.read_log(tail=None))]


def faults_on(h):
    h.sick["slow"].relay.delay(2.0)
    h.sick["hang"].relay.swallow()
    h.sick["drop"].drop()
    h.sick["part"].partition()


def heal_all(h):
    for n in SICK:
        h.sick[n].heal()


def under_faults(f, h, tids, healthy_tid, heal_at):
    """Load on f while the faults are on; heal_at {fault: seconds after
    the start}; a host's clients stop 3 s after it is healed. Returns
    (healthy answers, {fault: sick answers}, seconds until the first heal:
    the window when all four are sick), times relative to the start."""
    load = Load()
    sick = {}
    healed = {}
    faults_on(h)
    t0 = time.monotonic()
    try:
        good = [load.run("p1", healthy_client(f, healthy_tid))
                for _ in range(HEALTHY_CLIENTS)]
        for n in SICK:
            sick[n] = [load.run(n, sick_client(f, tids[n], load))
                       for _ in range(SICK_CLIENTS)]
        events = sorted([(at, "heal", n) for n, at in heal_at.items()] +
                        [(at + 3, "stop", n) for n, at in heal_at.items()])
        for at, what, n in events:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            if what == "heal":
                h.sick[n].heal()
                healed[n] = time.monotonic() - t0
                print("  %5.1f s: %s healed" % (healed[n], n))
            else:
                load.stop(n)
    finally:
        for n in SICK:
            if n not in healed:
                h.sick[n].heal()
        load.join()

    def rel(answers):
        return [(a[0] - t0,) + a[1:] for g in answers for a in g]
    return rel(good), {n: rel(sick[n]) for n in SICK}, min(healed.values())


def latency(answers, until=None):
    """p50, p95, max (s) of the answers started before `until`."""
    lat = sorted(a[1] for a in answers if until is None or a[0] < until)
    return (lat[len(lat) // 2], p95(lat), lat[-1], len(lat)) if lat else (0, 0, 0, 0)


def test_four_faults_at_once(hosts):
    h = hosts
    f = start_front(h, WORKERS, HOST_CALLS)
    try:
        good_tid = thread_on(f, h, "p1", "ok", who="bob")
        tids = {n: thread_on(f, h, n, n[:2]) for n in SICK}
        # some workers keep a connection to each host, as after some use
        kept = {n: warm(f, tids[n], h.sick[n].front_addr(), HOST_CALLS, HOST_CALLS)
                for n in SICK}
        print("\nworkers keeping a connection to each sick host: %s" % kept)
        heal_at = {"part": 10, "slow": 15, "drop": 15, "hang": HANG_BOUND + 4}
        good, sick, window = under_faults(f, h, tids, good_tid, heal_at)

        for what, until in (("all four hosts sick", window), ("the whole run", None)):
            p50, p, mx, n = latency(good, until)
            print("p1 (healthy), %s: %d answers, p50 %.0f ms, p95 %.0f ms, max %.0f ms"
                  % (what, n, 1000 * p50, 1000 * p, 1000 * mx))
            assert n > 0 and p < 1.0, (what, p)
        assert all(a[2] == 200 for a in good), [a for a in good if a[2] != 200][:5]

        for n in SICK:
            ans = sick[n]
            by = {}
            for a in ans:
                by.setdefault((a[2], a[3]), []).append(a[1])
            print("%s: %s; slowest answer %.2f s (bound %.1f s), front worker at most "
                  "%.2f s" % (n, ", ".join("%s%s x%d (max %.2f s)" % (
                      st, "/" + code if code else "", len(v), max(v))
                      for (st, code), v in sorted(by.items(), key=str)),
                      max(a[1] for a in ans), BOUND[n], max(worker_secs(f, tids[n]))))
            assert all(a[2] in (200, 503) for a in ans), [a for a in ans if a[2] not in
                                                          (200, 503)][:5]
            assert all(a[3] in (None, "backend_unavailable", "capacity") for a in ans)
            assert max(a[1] for a in ans) <= BOUND[n], sorted(a[1] for a in ans)[-5:]
            assert max(worker_secs(f, tids[n])) <= BOUND[n], n
            # every command answered 200 ran exactly once; none twice
            ok = [a[4] for a in ans if a[2] == 200]
            sent = {a[4] for a in ans}
            lines = counted(h, n, tids[n])
            assert len(lines) == len(set(lines)), "a command ran twice on %s" % n
            assert set(ok) <= set(lines), set(ok) - set(lines)
            assert set(lines) <= sent, set(lines) - sent
            print("   count file: %d lines, %d commands answered 200, %d ran but answered "
                  "503" % (len(lines), len(ok), len(set(lines) - set(ok))))
        # what each fault did to its host's answers
        assert any(a[2] == 200 and a[1] >= 1.9 for a in sick["slow"]), "slow was not slow"
        for n in ("drop", "part", "hang"):
            assert any(a[3] == "backend_unavailable" for a in sick[n]), n
        assert any(a[3] == "capacity" for a in sick["hang"]), "the cap never refused"

        # healed: every host works again, its files intact
        for n in SICK + ("p1",):
            tid = tids.get(n, good_tid)
            who = "bob" if n == "p1" else "alice"
            r = wait_for(lambda: f.execute(tid, "echo healed; wc -l < %s" % COUNT, who=who,
                                           timeout=60), 20, 0.5)
            assert r.status_code == 200 and r.json()["output"].startswith("healed\n"), \
                (n, r.text)
    finally:
        f.stop()


def test_control_no_host_cap(hosts):
    """The same faults and load on a front whose hosts may take every
    worker: p1's threads wait behind the sick hosts' calls."""
    h = hosts
    f = start_front(h, WORKERS, WORKERS)
    try:
        good_tid = thread_on(f, h, "p1", "cok", who="bob")
        tids = {n: thread_on(f, h, n, "c" + n[:2]) for n in SICK}
        good, sick, window = under_faults(f, h, tids, good_tid,
                                          {"part": 10, "slow": 10, "drop": 10, "hang": 10})
        p50, p, mx, n = latency(good, window)
        print("\ncontrol (no host cap), all four hosts sick: p1 %d answers, p50 %.0f ms, "
              "p95 %.0f ms, max %.0f ms; sick answers %s" % (
                  n, 1000 * p50, 1000 * p, 1000 * mx, {k: len(v) for k, v in sick.items()}))
        assert p > 1.0, "no stall without the cap: the test proves nothing"
    finally:
        f.stop()


def test_kept_connections(hosts):
    """Calls that go out on kept connections (two-worker fronts, both
    workers connected). The dropping host: the protected front answers 503
    within 5 s; the control without keepalive and TCP_USER_TIMEOUT
    (YX_CONTROL_OFF=hostack) waits until the host is healed (12 s). The
    hung host: its TCP answers, so only the call's own bound ends the call:
    503 at 1 + 30 s."""
    h = hosts
    drop, hang = h.sick["drop"], h.sick["hang"]
    fp = start_front(h, 2, 2)
    fc = start_front(h, 2, 2, binary=CONTROL, off="hostack")
    fh = start_front(h, 2, 2)
    try:
        calls = []
        for f, host, stem in ((fp, drop, "ap"), (fc, drop, "ac"), (fh, hang, "ah")):
            tid = thread_on(f, h, host.name, stem)
            assert warm(f, tid, host.front_addr(), 2, 2) == 2, "no kept connections"
            calls += [(f, host.name, tid)] * 2
        out = []

        def one(f, host, tid, i):
            t0 = time.monotonic()
            r = f.request("alice", "POST", "/api/execute", timeout=120, json={
                "thread_id": tid, "command": "echo %d >> %s" % (i, COUNT),
                "timeout": CMD_TIMEOUT})
            out.append((f, host, time.monotonic() - t0, r.status_code, i))
        drop.drop()
        hang.relay.swallow()
        try:
            ths = [threading.Thread(target=one, args=c + (100 + k,))
                   for k, c in enumerate(calls)]
            for t in ths:
                t.start()
            time.sleep(12)
            drop.heal()
            for t in ths:
                t.join(120)
        finally:
            drop.heal()
            hang.heal()

        def got(f):
            return sorted((t, st) for g, _, t, st, _ in out if g is f)
        print("\nkept connections; the dropping host healed after 12 s: protected %s, "
              "control (hostack) %s; the hung host: %s" % tuple(
                  ["%d in %.1f s" % (st, t) for t, st in got(f)] for f in (fp, fc, fh)))
        assert [st for _, st in got(fp)] == [503, 503], got(fp)
        assert max(t for t, _ in got(fp)) <= BOUND["drop"], got(fp)
        assert min(t for t, _ in got(fc)) >= 10, "the control did not wait: proves nothing"
        assert [st for _, st in got(fh)] == [503, 503], got(fh)
        assert all(HANG_BOUND - 0.5 <= t <= BOUND["hang"] for t, _ in got(fh)), got(fh)
        # what the protected fronts refused never ran; the control's ran once
        for g, host, _, st, i in out:
            tid = [c[2] for c in calls if c[0] is g][0]
            assert counted(h, host, tid).count(i) == (1 if st == 200 else 0), (host, st, i)
    finally:
        for f in (fp, fc, fh):
            f.stop()


def test_no_resend(hosts):
    """A kept connection cut (RST) after the command started: the protected
    front answers 503 "not sent again" and the command ran once; the
    control (YX_CONTROL_OFF=resend) lets libcurl send it again: twice."""
    h = hosts
    relay = h.sick["slow"]
    fp = start_front(h, 2, 2)
    fc = start_front(h, 2, 2, binary=CONTROL, off="resend")
    try:
        got = {}
        for f, stem, i in ((fp, "rp", 7001), (fc, "rc", 7002)):
            tid = thread_on(f, h, "slow", stem)
            assert warm(f, tid, relay.front_addr(), 2, 2) == 2, "no kept connections"
            res = {}

            def call():
                res["r"] = f.request("alice", "POST", "/api/execute", timeout=60, json={
                    "thread_id": tid, "command": "echo %d >> %s; sleep 3" % (i, COUNT),
                    "timeout": 20})
            t = threading.Thread(target=call)
            t.start()
            assert wait_for(lambda: i in counted(h, "slow", tid), 10, 0.05), "never ran"
            cut = relay.relay.reset()
            t.join(60)
            got[f] = (res["r"], counted(h, "slow", tid).count(i), cut)
        r, n, cut = got[fp]
        said = [l for l in fp.read_log(tail=None).splitlines() if "not sent again" in l]
        print("\nconnection cut mid-command (%d connections): protected %d %s, ran %d "
              "time(s); its log: %s" % (cut, r.status_code, r.json()["error"]["code"], n,
                                        said[0].split(": ", 1)[-1] if said else None))
        assert r.status_code == 503 and r.json()["error"]["code"] == "backend_unavailable", \
            r.text
        assert r.headers.get("Retry-After") == "5" and said, (r.headers, said)
        assert n == 1, n
        r, n, cut = got[fc]
        print("control (resend): %d, ran %d time(s)" % (r.status_code, n))
        assert n == 2, "the control did not resend: the test proves nothing"
    finally:
        fp.stop()
        fc.stop()
