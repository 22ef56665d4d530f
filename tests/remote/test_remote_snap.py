# SPDX-License-Identifier: MIT
"""Snapshots and transactions through a front (docs/scaling.md, docs/api.md
"Snapshots", "Transactions"): one front and two sandbox hosts whose threads
are on btrfs images. Through the front: a transaction that fails changes
nothing and lists its changes, one that succeeds is applied; a snapshot,
a change, a restore gives the old files back; a fork lands on the source
thread's host with the snapshot's files and diverges; bob gets the same
404 on every snapshot route and on a fork of alice's snapshot."""
import os

import pytest

from conftest import PROV, engine_up, make_cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/sbin/mkfs.btrfs"),
                                reason="needs root and mkfs.btrfs")

WS = "/home/yuxi/user-data/workspace"


@pytest.fixture(scope="module")
def cl():
    if not engine_up():
        pytest.skip("no engine or no test image")
    prov = dict(PROV, YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs")
    c = make_cluster(prov_overrides=prov)
    c.start()
    yield c
    c.stop()


def run(f, tid, cmd, who="alice"):
    r = f.execute(tid, cmd, who=who)
    assert r.status_code == 200, r.text
    return r.json()


def test_transaction_through_the_front(cl):
    f = cl.front
    tid = f.new_thread()
    run(f, tid, "cd %s && echo A > a && echo B > b" % WS)
    body = {"thread_id": tid, "transaction": "commit_on_success",
            "command": "cd %s && echo A2 > a && rm b && echo C > c && exit 1" % WS}
    out = f.request("alice", "POST", "/api/execute", json=body).json()
    assert out["applied"] is False and out["changes_total"] == 3, out
    assert run(f, tid, "cat %s/a %s/b" % (WS, WS))["output"] == "A\nB\n"
    body["command"] = body["command"].replace("exit 1", "true")
    out = f.request("alice", "POST", "/api/execute", json=body).json()
    assert out["applied"] is True, out
    assert run(f, tid, "cat %s/a %s/c" % (WS, WS))["output"] == "A2\nC\n"


def test_snapshot_restore_fork_through_the_front(cl):
    f = cl.front
    tid = f.new_thread()
    run(f, tid, "echo one > %s/a" % WS)
    r = f.request("alice", "POST", "/api/threads/%s/snapshots" % tid, json={"name": "one"})
    assert r.status_code == 201, r.text
    sid = r.json()["snapshot_id"]
    run(f, tid, "echo two > %s/a" % WS)
    lst = f.request("alice", "GET", "/api/threads/%s/snapshots" % tid).json()["snapshots"]
    assert [s["snapshot_id"] for s in lst] == [sid]
    r = f.request("alice", "POST", "/api/threads/%s/snapshots/%s/restore" % (tid, sid))
    assert r.status_code == 200, r.text
    assert run(f, tid, "cat %s/a" % WS)["output"] == "one\n"
    # the fork goes to the source's host
    r = f.request("alice", "POST", "/api/threads", json={
        "thread_id": tid + "f", "from_snapshot": {"thread_id": tid, "snapshot_id": sid}})
    assert r.status_code == 201, r.text
    src = f.request("alice", "GET", "/api/threads/" + tid).json()["host"]
    assert r.json()["host"] == src
    run(f, tid + "f", "echo forked > %s/a" % WS)
    assert run(f, tid, "cat %s/a" % WS)["output"] == "one\n"
    assert run(f, tid + "f", "cat %s/a" % WS)["output"] == "forked\n"
    # bob: the same 404 everywhere
    base = "/api/threads/%s/snapshots" % tid
    for method, path, kw in (("GET", base, {}), ("POST", base, {"json": {}}),
                             ("DELETE", base + "/" + sid, {}),
                             ("POST", base + "/" + sid + "/restore", {}),
                             ("POST", "/api/threads", {"json": {
                                 "thread_id": "bobfork", "from_snapshot": {
                                     "thread_id": tid, "snapshot_id": sid}}})):
        r = f.request("bob", method, path, **kw)
        assert r.status_code == 404, (method, path, r.text)
    r = f.request("alice", "DELETE", base + "/" + sid)
    assert r.status_code == 204, r.text
