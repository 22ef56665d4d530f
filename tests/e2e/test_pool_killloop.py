# SPDX-License-Identifier: MIT
"""Pool crash safety (docs/design.md §2 "Pool"), through the real stack: a
kill loop SIGKILLs a worker or the reaper at random points while new threads
take pool boxes (assignment) and the reaper starts new ones (refill). Each
round: a new thread with its own marker file, its first command sent, one
of the workers or the reaper killed 0-400 ms later (the master starts a new
one). Afterwards, and checked against the engine, the table and the host's
mount table:

- no box serves two threads: every thread's sandbox is its own container,
  and a command in each thread sees exactly its own marker in user-data;
- no thread has two boxes: one slot per thread, one container per slot;
- no host mount without its box: every mount below <saves>/pool belongs to
  a running container of a slot, and a box still in the pool has nothing
  bound;
- the pool is full again;
- uids (YUXI_SANDBOX_UID_RANGE, the default: every box claims one of its
  own): every box's claim names that box (and its thread, once it serves
  one), no two boxes share a uid, no claim names a box that is gone.

Rounds: YX_POOL_KILL_ROUNDS (default 200). Marked slow (run-e2e.sh runs it
with YUXI_E2E_SLOW=1)."""
import concurrent.futures
import os
import random
import secrets
import signal
import threading
import time

import pytest

from conftest import engine_up, wait_for
from yxsvc import mounts_below

ROUNDS = int(os.environ.get("YX_POOL_KILL_ROUNDS", "200"))
POOL = 2

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount propagation)"),
]


def pooled(inst):
    return [s for s in inst.sandboxes().values() if s["state"] == "pooled"]


def live_children(inst, kind):
    out = []
    for p in inst.pids_from_log(kind):
        try:
            with open("/proc/%d/stat" % p) as f:
                if f.read().split()[2] != "Z":
                    out.append(p)
        except OSError:
            pass
    return out


def write_marker(inst, tid, mark):
    with open(os.path.join(inst.saves, "threads", tid, "user-data", "workspace",
                           "marker"), "w") as f:
        f.write(mark)


def check_box_uids(inst, slots, running):
    """Each running box: its uid file names a uid whose claim names the box
    (and the thread it serves); uids distinct; no claim of a box gone (a
    box being made for the pool meanwhile has a slot)."""
    uids = os.path.join(inst.saves, "uids")
    claims = {}
    for n in os.listdir(uids):
        if not n.startswith("."):
            claims[int(n)] = os.readlink(os.path.join(uids, n))
    now = {s["container"][len(inst.prefix):] for s in inst.sandboxes().values()}
    serving = {s["container"]: t for t, s in slots.items() if s.get("thread_id")}
    mine = {}
    for name in running:
        box = name[len(inst.prefix):]
        if not box.startswith("pool-"):
            continue
        with open(os.path.join(inst.saves, "pool", box, "uid")) as f:
            u = int(f.read())
        assert u not in mine, ("one uid, two boxes", u, box, mine[u])
        mine[u] = box
        want = box + ("/" + serving[name] if name in serving else "")
        assert os.readlink(os.path.join(uids, str(u))) == want, (u, want)
    for n, target in claims.items():
        box = target.split("/")[0]
        if target.startswith("pool-") and box not in now:
            assert mine.get(n) == box, ("claim of a box gone", n, target)
    print("box uids: %d boxes, %d distinct uids" % (len(mine), len(set(mine))))


def test_kill_loop_assignment_and_refill(factory):
    inst = factory(YUXI_POOL_SIZE=str(POOL),
                   YUXI_SANDBOX_MAX_REPLICAS="400", YUXI_SANDBOX_IDLE_TIMEOUT="3600")
    assert wait_for(lambda: len(pooled(inst)) >= POOL, 120), inst.read_log()
    marks = {}
    kills = {"worker": 0, "reaper": 0}
    rng = random.Random(int(os.environ.get("YX_POOL_KILL_SEED", "18")))
    for _ in range(ROUNDS):
        tid = inst.new_thread()
        marks[tid] = secrets.token_hex(8)
        write_marker(inst, tid, marks[tid])
        res = {}

        def first(t=tid):
            try:
                res["r"] = inst.execute(t, "cat /home/yuxi/user-data/workspace/marker")
            except Exception as e:  # the worker serving it may be the one killed
                res["r"] = e
        th = threading.Thread(target=first)
        th.start()
        time.sleep(rng.uniform(0, 0.4))
        kind = rng.choice(["worker", "worker", "reaper"])
        pids = live_children(inst, kind)
        if pids:
            try:
                os.kill(rng.choice(pids), signal.SIGKILL)
                kills[kind] += 1
            except ProcessLookupError:
                pass
        th.join(120)
        r = res.get("r")
        if hasattr(r, "status_code") and r.status_code == 200:
            assert r.json()["output"] == marks[tid], (tid, r.text)
    print("kill loop: %d rounds, %d workers and %d reapers killed"
          % (ROUNDS, kills["worker"], kills["reaper"]))
    assert wait_for(lambda: len(pooled(inst)) >= POOL, 180), inst.read_log()
    time.sleep(5)   # two reaper passes: reconcile and sweep
    # every thread again: its own box, its own files only
    seen = {}
    for tid, mark in marks.items():
        r = inst.execute(tid, "ls /home/yuxi/user-data/workspace; "
                              "cat /home/yuxi/user-data/workspace/marker; echo; hostname")
        assert r.status_code == 200, r.text
        lines = r.json()["output"].split("\n")
        assert lines[0] == "marker" and lines[1] == mark, (tid, r.text)
        assert lines[2] not in seen, ("one box for two threads", tid, seen[lines[2]])
        seen[lines[2]] = tid
    slots = inst.sandboxes()
    conts = [s["container"] for s in slots.values() if s["container"]]
    assert len(conts) == len(set(conts)), "a container in two slots"
    running = {n for _, n in inst.containers(running_only=True)}
    for t in marks:
        assert slots[t]["container"] in running, slots[t]
    ours = {s["container"] for s in slots.values()}
    assert running <= ours, ("containers without a slot", running - ours)
    # host mounts: only below boxes that run, none below a box in the pool
    pool_dir = os.path.join(inst.saves, "pool")
    free = {s["container"][len(inst.prefix):] for s in pooled(inst)}
    for mp in mounts_below(pool_dir):
        rel = os.path.relpath(mp, pool_dir)
        if rel == ".":
            continue
        box = rel.split("/")[0]
        assert inst.prefix + box in running, ("mount without its box", mp)
        assert box not in free, ("a pooled box has a mount", mp)
    check_box_uids(inst, slots, running)
    # threads that lost their box in a kill took a new one above: refilled
    assert wait_for(lambda: len(pooled(inst)) >= POOL, 180), inst.read_log()
    # remove the threads here (their boxes and mounts go with them), so the
    # teardown has few containers left to remove
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda t: inst.request("alice", "DELETE", "/api/threads/" + t),
                    marks))
