# SPDX-License-Identifier: MIT
"""Transactions and snapshots of a thread served by a pool box
(YUXI_POOL_SIZE) and of a thread under gVisor (YUXI_SANDBOX_RUNTIME=runsc),
on btrfs images: the transaction's own container runs with the thread's
settings (its runtime too) while the box or the gVisor sandbox keeps the
live files; a failed transaction changes nothing, a successful one is seen
by the thread's sandbox at once; a restore gives a new box or sandbox the
snapshot's files."""
import os
import time

import pytest

from conftest import engine_has_runsc, engine_up, wait_for

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/sbin/mkfs.btrfs"),
                       reason="needs root and mkfs.btrfs"),
]

WS = "/home/yuxi/user-data/workspace"
BTRFS = dict(YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs")


def run(inst, tid, cmd):
    r = inst.execute(tid, cmd)
    assert r.status_code == 200, r.text
    return r.json()


def tx(inst, tid, cmd):
    r = inst.request("alice", "POST", "/api/execute", json={
        "thread_id": tid, "command": cmd, "transaction": "commit_on_success"})
    assert r.status_code == 200, r.text
    return r.json()


def scenario(inst, tid):
    assert run(inst, tid, "echo A > %s/a" % WS)["exit_code"] == 0
    time.sleep(0.05)
    out = tx(inst, tid, "echo A2 > %s/a && echo C > %s/c && exit 3" % (WS, WS))
    assert out["exit_code"] == 3 and out["applied"] is False and out["changes_total"] == 2
    assert run(inst, tid, "cat %s/a; ls %s" % (WS, WS))["output"] == "A\na\n"
    out = tx(inst, tid, "echo A2 > %s/a && echo C > %s/c" % (WS, WS))
    assert out["applied"] is True, out
    # the thread's own sandbox sees the commit at once
    assert run(inst, tid, "cat %s/a %s/c" % (WS, WS))["output"] == "A2\nC\n"
    r = inst.request("alice", "POST", "/api/threads/%s/snapshots" % tid, json={})
    assert r.status_code == 201, r.text
    sid = r.json()["snapshot_id"]
    run(inst, tid, "rm %s/c" % WS)
    r = inst.request("alice", "POST", "/api/threads/%s/snapshots/%s/restore" % (tid, sid))
    assert r.status_code == 200, r.text
    assert run(inst, tid, "cat %s/c" % WS)["output"] == "C\n"


def test_in_a_pool_box(factory):
    inst = factory(YUXI_POOL_SIZE=2, **BTRFS)
    assert wait_for(lambda: sum(s["state"] == "pooled" for s in inst.sandboxes().values())
                    >= 2, 120, 0.1), "the pool did not fill"
    tid = inst.new_thread()
    assert run(inst, tid, "true")["exit_code"] == 0
    slot = inst.sandboxes()[tid]
    assert slot["sandbox_id"].startswith("pool-"), slot
    scenario(inst, tid)


@pytest.mark.skipif(not engine_has_runsc(), reason="no runsc runtime in the engine")
def test_under_runsc(factory):
    inst = factory(YUXI_SANDBOX_RUNTIME="runsc", **BTRFS)
    tid = inst.new_thread()
    gv = run(inst, tid, "dmesg 2>/dev/null | grep -c gVisor; true")["output"].strip()
    assert gv not in ("", "0"), gv	# the thread's sandbox is under gVisor
    out = tx(inst, tid, "dmesg 2>/dev/null | grep -c gVisor; true")
    assert out["output"].strip() not in ("", "0"), out	# the transaction under gVisor too
    scenario(inst, tid)
