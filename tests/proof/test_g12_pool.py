# SPDX-License-Identifier: MIT
"""Group 12: between tenants, pre-started boxes (YUXI_POOL_SIZE,
docs/design.md §2 "Pool").

A pool box serves one thread only. alice's thread takes a box from the pool
and leaves a secret where a box keeps it beyond the thread's own files (its
/tmp, its HOME tmpfs, a process still running); alice deletes the thread;
then bob's new threads take boxes from the pool: none may find alice's
secret, and each must have run in a pool box. Control: the test-only daemon
with YX_CONTROL_OFF=poolsingle (a used box goes back to the pool, its
mounts undone): bob finds the secret.
"""
import os
import secrets

import pytest

import prooffix as P
from prooffix import stats

G = 12
ROUNDS = 3

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount propagation)")


def start(kind, **kw):
    if kind != "prod":
        kw["YX_CONTROL_OFF"] = "poolsingle"
    svc = P.ProofService(kind, YUXI_POOL_SIZE="1", YUXI_SANDBOX_UID_RANGE="off",
                         YUXI_COMMAND_PATH_POLICY="off", **kw).start()
    assert P.yxsvc.wait_for(lambda: pooled(svc) >= 1, 120), svc.read_log()
    return svc


def pooled(svc):
    return sum(1 for s in svc.sandboxes().values() if s["state"] == "pooled")


def create(svc, who):
    tid = "pl-%s" % secrets.token_hex(5)
    r = svc.request(who, "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code in (200, 201), r.text
    return tid


def box_of(svc, tid):
    return svc.sandboxes()[tid]["container"]


def reused_box_leaks(svc):
    """alice leaves a secret in her box, deletes; do bob's threads see it?"""
    token = secrets.token_hex(12)
    tid = create(svc, "alice")
    out = svc.run(tid, "echo %s > /tmp/alice.txt; echo %s > ~/alice.txt; "
                       "(sleep 600 &) ; echo ok" % (token, token))
    assert out["output"].endswith("ok\n"), out
    abox = box_of(svc, tid)
    assert "-pool-" in abox, abox
    r = svc.request("alice", "DELETE", "/api/threads/" + tid)
    assert r.status_code == 204, r.text
    seen, boxes = False, []
    for _ in range(ROUNDS):
        assert P.yxsvc.wait_for(lambda: pooled(svc) >= 1, 120)
        b = create(svc, "bob")
        out = svc.run(b, "cat /tmp/alice.txt ~/alice.txt 2>/dev/null; "
                         "ls /home/yuxi/user-data; ps -eo args | grep -c '^sleep 600'",
                      who="bob")
        seen = seen or token in out["output"]
        boxes.append(box_of(svc, b))
    return seen, abox, boxes


def test_pool_box_serves_one_thread():
    svc = start("prod")
    try:
        seen, abox, boxes = reused_box_leaks(svc)
        print("pool single use prod: seen=%s alice's box %s, bob's %s" % (seen, abox, boxes))
        stats.case(G, "a used pool box reaches the next thread",
                   escapes=seen or abox in boxes)
        assert not seen and abox not in boxes, (abox, boxes)
        assert all("-pool-" in b for b in boxes), boxes   # bob ran in pool boxes
    finally:
        svc.stop()


def test_pool_box_serves_one_thread_control():
    svc = start("control")
    try:
        seen, abox, boxes = reused_box_leaks(svc)
        print("pool single use control: seen=%s alice's box %s, bob's %s"
              % (seen, abox, boxes))
        assert stats.control(G, seen, "used pool box handed to the next thread"), boxes
    finally:
        svc.stop()
