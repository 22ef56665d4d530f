# SPDX-License-Identifier: MIT
"""Per-user limits and fair eviction (docs/design.md §2, docs/api.md) through
the real stack: nginx, workers, reaper, real containers.

- YUXI_MAX_THREADS_PER_USER: the user at the limit gets 429 thread_limit with
  Retry-After, an existing id is still answered, other users are unaffected,
  a delete makes room; racing creates from many connections (all workers)
  never overshoot. Control: the test-only daemon with YX_CONTROL_OFF=limitlock
  (counted without the owner lock) must overshoot.
- Fair eviction at a full table (YUXI_SANDBOX_MAX_REPLICAS=3): alice's burst
  of new threads evicts her own idle sandboxes, never bob's, and with all of
  hers busy she gets 503 capacity rather than bob's idle one. Control:
  YX_CONTROL_OFF=fairevict (global LRU) must evict bob's.
- YUXI_MAX_SANDBOXES_PER_USER: a new sandbox evicts the user's own idle one;
  with none idle, 429 sandbox_limit with Retry-After; others unaffected.
- GET /api/admin/users and the per-user gauges of /metrics agree with all that.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import Service, build_path, containers, engine_up, wait_for

CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")


@pytest.fixture
def instance():
    """instance(control_off=None, **YUXI_overrides) -> a started Service; the
    test-only control daemon with YX_CONTROL_OFF=control_off when given."""
    made = []

    def make(control_off=None, **overrides):
        binary = None
        if control_off:
            overrides["YX_CONTROL_OFF"] = control_off
            binary = CONTROL
        s = Service(stem="qyxlm", overrides=overrides, binary=binary)
        made.append(s)
        return s.start()
    yield make
    for s in made:
        s.stop()


def create(inst, who, tid, session=None):
    return inst.request(who, "POST", "/api/threads", json={"thread_id": tid},
                        session=session)


def users(inst):
    r = inst.request("admin", "GET", "/api/admin/users")
    assert r.status_code == 200, r.text
    return r.json()


def metric(inst, line_start):
    r = inst.request(None, "GET", "/metrics")
    assert r.status_code == 200
    for line in r.text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return None


# ------------------------------------------------------------ thread limit
def test_thread_limit_429_with_retry_after(instance):
    inst = instance(YUXI_MAX_THREADS_PER_USER=3)
    for i in range(3):
        r = create(inst, "alice", "lim%d" % i)
        assert r.status_code == 201, r.text
    r = create(inst, "alice", "lim3")
    assert r.status_code == 429, r.text
    assert r.json()["error"]["code"] == "thread_limit"
    assert "at most 3 threads per user" in r.json()["error"]["message"]
    assert int(r.headers["Retry-After"]) > 0
    print("thread limit: 429 %s, Retry-After: %s" % (r.json()["error"]["code"],
                                                     r.headers["Retry-After"]))
    # no thread was made; an existing id of hers is still answered
    assert inst.request("alice", "GET", "/api/threads/lim3").status_code == 404
    assert create(inst, "alice", "lim1").status_code == 200
    # a server-made id is refused alike; bob is not limited by alice's
    r = inst.request("alice", "POST", "/api/threads", json={})
    assert r.status_code == 429 and r.json()["error"]["code"] == "thread_limit"
    assert create(inst, "bob", "bob0").status_code == 201
    u = users(inst)
    assert u["users"]["alice"]["threads"] == 3, u
    assert u["users"]["bob"]["threads"] == 1, u
    assert u["max_threads_per_user"] == 3
    assert metric(inst, 'yuxi_user_limit{kind="threads"}') == 3
    assert metric(inst, 'yuxi_user_max{of="threads"}') == 3
    assert metric(inst, 'yuxi_users{with="threads"}') == 2
    assert metric(inst, 'yuxi_http_requests_total{method="POST",route="/api/threads",'
                        'status="429"}') == 2
    # a delete makes room again
    assert inst.request("alice", "DELETE", "/api/threads/lim0").status_code == 204
    assert create(inst, "alice", "lim3").status_code == 201
    assert create(inst, "alice", "lim4").status_code == 429


def race(inst, n, tag):
    """n creates of alice at once over n connections; the status counts."""
    sessions = [requests.Session() for _ in range(n)]
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        return create(inst, "alice", "%s%02d" % (tag, i), session=sessions[i]).status_code
    try:
        with ThreadPoolExecutor(max_workers=n) as ex:
            codes = list(ex.map(one, range(n)))
    finally:
        for s in sessions:
            s.close()
    return {c: codes.count(c) for c in set(codes)}


def listed(inst):
    r = inst.request("alice", "GET", "/api/threads")
    assert r.status_code == 200
    return [t["thread_id"] for t in r.json()["threads"]]


LIMIT, RACERS = 5, 30


def test_racing_creates_never_overshoot(instance):
    inst = instance(YUXI_MAX_THREADS_PER_USER=LIMIT)
    for rnd in range(3):
        codes = race(inst, RACERS, "r%d" % rnd)
        have = listed(inst)
        print("round %d: %s, alice has %d" % (rnd, codes, len(have)))
        assert codes.get(201, 0) == LIMIT and codes.get(429, 0) == RACERS - LIMIT, codes
        assert len(have) == LIMIT, have
        for tid in have:
            assert inst.request("alice", "DELETE", "/api/threads/" + tid).status_code == 204


def test_racing_creates_control_overshoots(instance):
    inst = instance(control_off="limitlock", YUXI_MAX_THREADS_PER_USER=LIMIT)
    worst = 0
    for rnd in range(5):
        codes = race(inst, RACERS, "c%d" % rnd)
        have = listed(inst)
        worst = max(worst, len(have))
        print("control round %d: %s, alice has %d" % (rnd, codes, len(have)))
        if worst > LIMIT:
            break
        for tid in have:
            inst.request("alice", "DELETE", "/api/threads/" + tid)
    assert worst > LIMIT, "without the owner lock the limit was never overshot"


# ---------------------------------------------------------- fair eviction
def burst(inst, n):
    """bob's one idle sandbox, then alice's n new threads one after another
    at a full table. Returns (bob's thread, alice's threads, the index of
    alice's thread whose execute evicted bob's sandbox, or None)."""
    tb = inst.new_thread("bob")
    r = inst.execute(tb, "echo b", who="bob")
    assert r.status_code == 200 and r.json()["output"] == "b\n", r.text
    box_b = containers(inst.prefix, tb)
    assert len(box_b) == 1
    mine, evicted_at = [], None
    for i in range(n):
        t = inst.new_thread("alice")
        r = inst.execute(t, "echo a%d" % i)
        assert r.status_code == 200 and r.json()["output"] == "a%d\n" % i, r.text
        mine.append(t)
        if evicted_at is None and containers(inst.prefix, tb) != box_b:
            evicted_at = i
    return tb, mine, evicted_at


FAIR = dict(YUXI_SANDBOX_MAX_REPLICAS=3, YUXI_SANDBOX_IDLE_TIMEOUT=300,
            YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1)


@pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")
def test_burst_never_evicts_another_users_idle_sandbox(instance):
    inst = instance(**FAIR)
    t0 = time.monotonic()
    tb, mine, evicted_at = burst(inst, 4)
    print("fair: burst of 4 in %.1f s, bob's evicted at %s" % (time.monotonic() - t0,
                                                               evicted_at))
    assert evicted_at is None, "alice's burst evicted bob's idle sandbox"
    # alice's two most recent run; her older ones made room
    assert set(inst.sandboxes()) == {tb, mine[2], mine[3]}
    assert metric(inst, "yuxi_sandbox_evictions_total") == 2
    u = users(inst)
    assert u["users"]["alice"]["sandboxes"] == 2 and u["users"]["bob"]["sandboxes"] == 1, u
    assert u["fair_share"] == 2, u
    assert metric(inst, "yuxi_sandbox_fair_share") == 2
    assert metric(inst, 'yuxi_users_by_sandboxes{le="1"}') == 1
    assert metric(inst, 'yuxi_users_by_sandboxes{le="2"}') == 2
    # all of alice's busy: her next new thread gets 503, bob's stays
    out = {}

    def long(tid):
        out[tid] = inst.execute(tid, "sleep 3; echo slept")
    runners = [threading.Thread(target=long, args=(t,)) for t in mine[2:]]
    for t in runners:
        t.start()
    try:
        assert wait_for(lambda: all(inst.sandboxes()[t]["holds"] > 0 for t in mine[2:]), 10)
        r = inst.execute(inst.new_thread("alice"), "echo x")
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "capacity"
        assert "fair share" in r.json()["error"]["message"]
        assert int(r.headers["Retry-After"]) > 0
    finally:
        for t in runners:
            t.join(60)
    assert all(out[t].status_code == 200 for t in mine[2:]), out
    assert tb in inst.sandboxes(), "bob's idle sandbox went for alice's busy burst"
    r = inst.execute(tb, "echo again", who="bob")
    assert r.status_code == 200 and r.json()["output"] == "again\n"


@pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")
def test_burst_control_global_lru_evicts_bob(instance):
    inst = instance(control_off="fairevict", **FAIR)
    tb, mine, evicted_at = burst(inst, 3)
    print("control fairevict: bob's idle sandbox evicted at alice's thread %s" % evicted_at)
    assert evicted_at == 2, "the control (global LRU) did not evict bob's sandbox"


# ------------------------------------------------- running sandboxes per user
@pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")
def test_sandbox_limit_evicts_own_then_429(instance):
    inst = instance(YUXI_MAX_SANDBOXES_PER_USER=1, YUXI_SANDBOX_MAX_REPLICAS=4,
                    YUXI_SANDBOX_IDLE_TIMEOUT=300)
    t1, t2 = inst.new_thread(), inst.new_thread()
    tb = inst.new_thread("bob")
    assert inst.execute(t1, "echo 1").status_code == 200
    assert inst.execute(tb, "echo b", who="bob").status_code == 200
    assert inst.execute(t2, "echo 2").status_code == 200
    assert containers(inst.prefix, t1) == [], "alice's idle first sandbox was kept"
    assert len(containers(inst.prefix, tb)) == 1
    out = {}
    runner = threading.Thread(target=lambda: out.update(r=inst.execute(t2, "sleep 3; echo ok")))
    runner.start()
    try:
        assert wait_for(lambda: inst.sandboxes()[t2]["holds"] > 0, 10)
        r = inst.execute(t1, "echo 1")
        assert r.status_code == 429, r.text
        assert r.json()["error"]["code"] == "sandbox_limit"
        assert int(r.headers["Retry-After"]) > 0
        print("sandbox limit: 429 %s, Retry-After: %s, %r" % (
            r.json()["error"]["code"], r.headers["Retry-After"],
            r.json()["error"]["message"]))
        assert containers(inst.prefix, t1) == []
        assert inst.execute(tb, "echo b2", who="bob").status_code == 200
        u = users(inst)
        assert u["users"]["alice"]["sandboxes"] == 1, u
        assert u["users"]["alice"]["active"] == 1, u
        assert u["max_sandboxes_per_user"] == 1
    finally:
        runner.join(60)
    assert out["r"].status_code == 200 and out["r"].json()["output"] == "ok\n"
    r = inst.execute(t1, "echo 1 again")      # t2 idle again: it makes room
    assert r.status_code == 200, r.text
    assert containers(inst.prefix, t2) == []


def test_admin_users_needs_the_role(svc, alice, anon, admin):
    assert alice.get("/api/admin/users").status_code == 403
    assert anon.get("/api/admin/users").status_code == 401
    r = admin.get("/api/admin/users")
    assert r.status_code == 200, r.text
    u = r.json()
    assert isinstance(u["users"], dict) and not u["truncated"], u
    assert u["max_threads_per_user"] == 1000 and u["max_sandboxes_per_user"] == 0, u
    for name, v in u["users"].items():
        assert set(v) == {"threads", "sandboxes", "active", "warm", "creating"}, v
