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

A box's mount table (/proc/self/mountinfo) names no host path of the saves
root: its own directories are masked as a created sandbox's mounts are.
Control: YX_CONTROL_OFF=mask, the box's directories show.
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
        kw.setdefault("YX_CONTROL_OFF", "poolsingle")
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


def box_mountinfo(svc):
    """A new thread's pool box: its /proc/self/mountinfo as the API answers."""
    tid = create(svc, "alice")
    out = svc.run(tid, "cat /proc/self/mountinfo")["output"]
    assert "-pool-" in box_of(svc, tid), box_of(svc, tid)
    return out


def saves_paths(svc, text):
    """Lines of text naming the instance's saves root (host paths)."""
    return [ln for ln in text.split("\n") if svc.saves in ln]


def test_pool_box_mountinfo_has_no_host_path():
    """A box's own directories (the sources of its slave mounts) show in its
    mount table; the output is masked as a created sandbox's is: no host
    path of the saves root, the mounts named where they are inside."""
    svc = start("prod")
    try:
        out = box_mountinfo(svc)
        leaked = saves_paths(svc, out)
        print("pool mountinfo prod: %d line(s) with a host path" % len(leaked))
        stats.case(G, "a pool box's mount table names host paths", escapes=bool(leaked))
        assert not leaked, leaked
        assert " /home/yuxi/user-data /home/yuxi/user-data " in out, out
    finally:
        svc.stop()


def test_pool_box_mountinfo_has_no_host_path_control():
    svc = start("control", YX_CONTROL_OFF="mask")
    try:
        leaked = saves_paths(svc, box_mountinfo(svc))
        print("pool mountinfo control: %d line(s) with a host path" % len(leaked))
        assert stats.control(G, bool(leaked), "pool box mount table unmasked"), leaked
    finally:
        svc.stop()
