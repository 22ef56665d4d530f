# SPDX-License-Identifier: MIT
"""Group 8: resource exhaustion inside one sandbox (docs/security.md).

An attacker thread runs, one after another, a fork bomb, a memory bomb, an
output flood and a disk fill (the /tmp and $HOME tmpfs; never the host-backed
user-data) through POST /api/execute with a short timeout, while an observer
thread of another user (bob) keeps running `echo` in its
own sandbox. Reported per attack: the observer's p50/p99 latency against its
baseline, its failed requests (each one a lost request: must be 0), the
attack's own answer (exit code, timed_out, truncated) and whether the
attacked sandbox answers `echo` afterwards (usable or cleanly recreated).

Control: with the protection "one sandbox per thread" taken away (the fork
bomb runs in the observer's own sandbox) the observer's measurements must
show it (failed requests or p99 above 3x the baseline).
"""
import os
import threading
import time

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 8
ATTACK_S = 20 if P.SOAK else 6

ATTACKS = {
    # a fork bomb that lasts: sleepers hold what they take, and the shell
    # waits by exec (no fork: a plain bomb's own shell cannot fork its
    # last command once the pids limit is met, and it all ends at once)
    "fork_bomb": "while :; do sleep 60 & done & f(){ f | f & }; f; exec sleep 30",
    "memory_bomb": "tail /dev/zero",
    "output_flood": "yes yuxi-flood-line",
    "disk_fill": "dd if=/dev/zero of=/tmp/fill bs=1048576 count=100000; "
                 "dd if=/dev/zero of=$HOME/fill bs=1048576 count=100000; df -k /tmp $HOME; "
                 "sleep 30",
}

pytestmark = pytest.mark.skipif(not P.image_present(P.TEST_IMAGE),
                                reason="image %s not built" % P.TEST_IMAGE)


class Observer:
    def __init__(self, svc, tid):
        self.svc, self.tid = svc, tid
        self.lat, self.fail = [], 0
        self.stop = threading.Event()
        self.t = None

    def _loop(self):
        sess = requests.Session()
        while not self.stop.is_set():
            t0 = time.time()
            try:
                r = self.svc.request("bob", "POST", "/api/execute", session=sess,
                                     json={"thread_id": self.tid, "command": "echo obs"},
                                     timeout=60)
                good = r.status_code == 200 and r.json()["output"] == "obs\n"
            except requests.RequestException:
                good = False
            dt = time.time() - t0
            if good:
                self.lat.append(dt)
            else:
                self.fail += 1
            time.sleep(0.05)

    def start(self):
        self.lat, self.fail = [], 0
        self.stop.clear()
        self.t = threading.Thread(target=self._loop)
        self.t.start()

    def finish(self):
        self.stop.set()
        self.t.join(timeout=120)
        return {"n": len(self.lat), "failed": self.fail,
                "p50_ms": round(1000 * (P.percentile(self.lat, 50) or 0), 1),
                "p99_ms": round(1000 * (P.percentile(self.lat, 99) or 0), 1)}


@pytest.fixture(scope="module")
def env():
    svc = P.ProofService("prod", "dev", YUXI_WORKERS="4", YUXI_SANDBOX_IMAGE=P.TEST_IMAGE,
                         YUXI_SANDBOX_EXEC_TIMEOUT="120",
                         YUXI_COMMAND_PATH_POLICY="off").start()
    try:
        victim = svc.new_thread("alice")
        obs = svc.new_thread("bob")
        svc.run(victim, "true")
        svc.run(obs, "true", who="bob")
        o = Observer(svc, obs)
        o.start()
        time.sleep(3)
        base = o.finish()
        stats.measure(G, "baseline_p99_ms", base["p99_ms"])
        stats.measure(G, "baseline_p50_ms", base["p50_ms"])
        yield svc, victim, o, base
    finally:
        svc.stop()


def usable(svc, tid):
    """The attacked sandbox answers echo (retrying briefly): (ok, tries)."""
    for i in range(10):
        try:
            r = svc.request("alice", "POST", "/api/execute",
                            json={"thread_id": tid, "command": "echo alive"}, timeout=60)
            if r.status_code == 200 and r.json()["output"] == "alive\n":
                return True, i + 1
        except requests.RequestException:
            pass
        time.sleep(1)
    return False, 10


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack(env, attack):
    svc, victim, obs, base = env
    box = [c[0] for c in svc.containers(thread=victim)]
    obs.start()
    time.sleep(0.5)
    t0 = time.time()
    try:
        r = svc.request("alice", "POST", "/api/execute",
                        json={"thread_id": victim, "command": ATTACKS[attack],
                              "timeout": ATTACK_S}, timeout=ATTACK_S + 90)
        ans = (r.status_code, r.json() if r.headers.get("content-type", "").startswith(
            "application/json") else r.text[:200])
    except requests.RequestException as e:
        ans = (None, str(e))
    took = time.time() - t0
    time.sleep(0.5)
    m = obs.finish()
    ok, tries = usable(svc, victim)
    leaked = max(0, len(svc.containers()) - 2)
    body = ans[1] if isinstance(ans[1], dict) else {}
    summary = {"status": ans[0], "exit": body.get("exit_code"), "timed_out": body.get("timed_out"),
               "truncated": body.get("truncated"), "seconds": round(took, 1),
               "output_bytes": len(body.get("output", "")), "usable_after_tries": tries,
               # a new box: the attack killed the old one (under gVisor the
               # host's OOM killer takes the whole sandbox on a memory bomb)
               "recreated": box != [c[0] for c in svc.containers(thread=victim)]}
    print(attack, summary, "observer", m, "baseline", base)
    stats.measure(G, attack + "_observer_p99_ms", m["p99_ms"])
    stats.measure(G, attack + "_observer_p50_ms", m["p50_ms"])
    stats.measure(G, attack + "_observer_requests", m["n"])
    stats.measure(G, attack + "_answer", summary)
    stats.case(G, "%s: %s observer %s" % (attack, summary, m),
               lost_requests=m["failed"], hangs=ans[0] is None or took > ATTACK_S + 60,
               escapes=not ok, leaked_containers=leaked)
    assert ans[0] == 200, ans
    assert m["failed"] == 0 and m["n"] > 0, m
    assert ok, "attacked sandbox unusable after %s" % attack
    assert leaked == 0
    if attack == "output_flood":
        assert body["truncated"] is True
        assert len(body["output"].encode()) <= 256 * 1024 + 4096
        full = body.get("full_output_path", "")
        host = os.path.join(svc.saves, "threads", victim, "user-data",
                            full.replace("/home/yuxi/user-data/", "", 1))
        size = os.path.getsize(host) if full and os.path.exists(host) else -1
        stats.measure(G, "output_flood_saved_bytes", size)
        assert 0 < size <= 64 * 1024 * 1024, size
    if attack == "disk_fill":
        svc.run(victim, "rm -f /tmp/fill $HOME/fill")


def test_observer_control(env):
    """Control: without per-sandbox isolation (the fork bomb runs in the
    observer's own sandbox) the observer's measurements must show it: failed
    requests or a p99 far above the baseline (the same lasting bomb as the
    attack above)."""
    svc, victim, obs, base = env
    for attempt in (1, 2):	# a second bomb when the first left no mark
        obs.start()
        time.sleep(0.5)
        try:
            r = svc.request("bob", "POST", "/api/execute",
                            json={"thread_id": obs.tid, "command": ATTACKS["fork_bomb"],
                                  "timeout": 4}, timeout=90)
            bomb = (r.status_code, r.json().get("exit_code"), r.json().get("timed_out"))
        except (requests.RequestException, ValueError) as e:
            bomb = repr(e)
        time.sleep(0.5)
        m = obs.finish()
        caught = m["failed"] > 0 or m["p99_ms"] > 3 * base["p99_ms"]
        print("\ncontrol, bomb %d %s: observer %s vs baseline %s" % (attempt, bomb, m, base))
        if caught:
            break
    stats.control(G, caught, "observer sharing the attacked sandbox: %s vs %s (bomb %s)" % (
        m, base, bomb))
    stats.measure(G, "control_shared_sandbox_observer", m)
    assert caught, (m, base, bomb)
    ok, _ = usable(svc, victim)
    assert ok
