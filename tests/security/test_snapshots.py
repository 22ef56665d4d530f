# SPDX-License-Identifier: MIT
"""Group 1 (identity and authorization) and group 12 (one tenant against
the others), snapshots and transactions (docs/api.md "Snapshots",
"Transactions"; docs/security.md "Snapshots and transactions").

- Another user gets exactly the 404 of an unknown thread on every
  snapshot route of alice's thread (list, create, delete, restore) and
  on a fork of her snapshot, and changes nothing of hers.
- A transaction's commit cannot be steered out of the thread's files:
  while the command runs, the live sandbox replaces a directory the
  command writes into by a symlink to bob's workspace; the commit reports
  a conflict and writes nothing there.
- A fork cannot copy what a snapshot's symlinks point to: alice's
  snapshot holds links to bob's workspace; her fork has the links, not
  bob's files.

Controls (the daemon built with YX_CONTROL_UNSAFE): authz (no owner
check: bob reads alice's snapshots and restores her thread), txresolve
(the commit opens paths with plain openat: bob's workspace gets the
file), snapcopy (the fork follows symlinks: alice's fork holds bob's
secret). Each must then show the leak."""
import base64
import os
import secrets
import threading
import time

import pytest

from secfix import _sec_session, engine_up, foreign_routes_404, stack, stats  # noqa: F401

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/sbin/mkfs.btrfs"),
                       reason="needs root and mkfs.btrfs"),
]

BTRFS = dict(YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs")
WS = "/home/yuxi/user-data/workspace"


def run(svc, tid, cmd, who="alice"):
    r = svc.execute(tid, cmd, who=who)
    assert r.status_code == 200, r.text
    return r.json()


def hidden(path):
    """A shell word that is the host path, spelt so that the command path
    policy does not see it (a sandbox can always write any link target)."""
    return '"$(echo %s | base64 -d)"' % base64.b64encode(path.encode()).decode()


def snap_routes(tid, sid, fork):
    base = "/api/threads/%s/snapshots" % tid
    return [
        ("list", "GET", base, {}),
        ("create", "POST", base, {"json": {"name": "pwned"}}),
        ("delete", "DELETE", base + "/" + sid, {}),
        ("restore", "POST", base + "/" + sid + "/restore", {}),
        ("fork", "POST", "/api/threads", {"json": {
            "thread_id": fork, "from_snapshot": {"thread_id": tid, "snapshot_id": sid}}}),
    ]


def alice_snapshot(svc):
    tid = svc.new_thread("alice")
    run(svc, tid, "echo secret-of-alice > %s/a" % WS)
    r = svc.request("alice", "POST", "/api/threads/%s/snapshots" % tid, json={})
    assert r.status_code == 201, r.text
    run(svc, tid, "echo changed > %s/a" % WS)
    return tid, r.json()["snapshot_id"]


def test_foreign_snapshot_routes_404():
    svc = stack("prod", **BTRFS)
    tid, sid = alice_snapshot(svc)
    foreign_routes_404(svc, 1, "snapshot",
                       lambda t: snap_routes(t, sid, "f" + secrets.token_hex(6)), tid, code=None)
    # nothing of alice's changed: her files, her one snapshot
    lst = svc.request("alice", "GET", "/api/threads/%s/snapshots" % tid).json()["snapshots"]
    leak = run(svc, tid, "cat %s/a" % WS)["output"] != "changed\n" or len(lst) != 1
    stats.case(12, leak=leak, what="foreign snapshot requests changed alice's thread")
    assert not leak, lst


def test_control_authz_snapshots_leak():
    c = stack("control", off="authz", **BTRFS)
    tid, sid = alice_snapshot(c)
    r = c.request("bob", "GET", "/api/threads/%s/snapshots" % tid)
    listed = r.status_code == 200 and sid in r.text
    r = c.request("bob", "POST", "/api/threads/%s/snapshots/%s/restore" % (tid, sid))
    restored = r.status_code == 200 and run(c, tid, "cat %s/a" % WS)["output"] == \
        "secret-of-alice\n"
    assert stats.control(1, listed and restored, "authz off: bob lists and restores"), r.text


def swap_attack(svc):
    """alice's transaction writes d/x; her live sandbox swaps d for a link
    to bob's workspace meanwhile. (reply, bob's workspace path)."""
    bob = svc.new_thread("bob")
    run(svc, bob, "echo bob > %s/b" % WS, who="bob")
    bws = os.path.join(svc.saves, "threads", bob, "user-data", "workspace")
    tid = svc.new_thread("alice")
    run(svc, tid, "mkdir %s/d" % WS)
    time.sleep(0.05)
    box = {}

    def tx():
        box["r"] = svc.request("alice", "POST", "/api/execute", json={
            "thread_id": tid, "transaction": "commit_on_success",
            "command": "echo pwned > %s/d/x && sleep 3" % WS})

    t = threading.Thread(target=tx)
    t.start()
    time.sleep(1.5)
    assert run(svc, tid, "rm -r %s/d && ln -s %s %s/d" % (WS, hidden(bws), WS))[
        "exit_code"] == 0
    t.join()
    return box["r"], bws


def test_commit_cannot_follow_a_planted_symlink():
    svc = stack("prod", **BTRFS)
    r, bws = swap_attack(svc)
    assert r.status_code == 200, r.text
    out = r.json()
    esc = os.path.exists(os.path.join(bws, "x")) or out["applied"]
    stats.case(12, escape=esc, what="commit through a planted symlink: %r" % out)
    assert not esc, out
    assert out["conflicts"] == [WS + "/d/x"], out


def test_control_txresolve_leaks():
    c = stack("control", off="txresolve", **BTRFS)
    r, bws = swap_attack(c)
    leaked = os.path.exists(os.path.join(bws, "x"))
    assert stats.control(12, leaked, "txresolve off: the commit wrote into bob's files"), \
        r.text


def fork_attack(svc):
    bob = svc.new_thread("bob")
    run(svc, bob, "mkdir -p %s/s && echo secret-of-bob > %s/s/secret" % (WS, WS), who="bob")
    bws = os.path.join(svc.saves, "threads", bob, "user-data", "workspace")
    tid = svc.new_thread("alice")
    assert run(svc, tid, "ln -s %s %s/l && ln -s %s %s/f" % (
        hidden(bws + "/s"), WS, hidden(bws + "/s/secret"), WS))["exit_code"] == 0
    sid = svc.request("alice", "POST", "/api/threads/%s/snapshots" % tid,
                      json={}).json()["snapshot_id"]
    fork = tid + "f"
    r = svc.request("alice", "POST", "/api/threads", json={
        "thread_id": fork, "from_snapshot": {"thread_id": tid, "snapshot_id": sid}})
    assert r.status_code == 201, r.text
    return run(svc, fork, "cat %s/l/secret %s/f 2>/dev/null; ls -l %s | grep -c '^l'; true"
               % (WS, WS, WS))["output"]


def test_fork_copies_symlinks_as_links():
    svc = stack("prod", **BTRFS)
    out = fork_attack(svc)
    esc = "secret-of-bob" in out
    stats.case(12, escape=esc, what="fork through a snapshot's symlinks: %r" % out)
    assert not esc and out.strip().endswith("2"), out


def test_control_snapcopy_leaks():
    c = stack("control", off="snapcopy", **BTRFS)
    out = fork_attack(c)
    assert stats.control(12, "secret-of-bob" in out, "snapcopy off: the fork holds bob's"), out
