# SPDX-License-Identifier: MIT
"""Transactional commands through the real stack (docs/api.md
"Transactions"): a failed command changes nothing and lists what it would
have changed; the same command succeeding is applied; discard never
applies; a path also changed live is a conflict and nothing is applied;
plain commands and file writes go on on the live files while a
transaction runs; a second transaction of the thread is 409; a background
process is killed and the changes not applied; the quota holds inside the
layer; the stream form and a session's command carry the same fields.
Each runs on a plain user-data directory and on a btrfs image."""
import json
import os
import threading
import time

import pytest

from conftest import engine_up

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the privileged helper)"),
]

BTRFS = dict(YUXI_THREAD_DISK_QUOTA="256m", YUXI_THREAD_DISK_FS="btrfs")
KINDS = {"plain": {}, "btrfs": BTRFS}
WS = "/home/yuxi/user-data/workspace"
CMD = "cd %s && echo A2 > a && rm b && echo C > c && exit %%d" % WS


@pytest.fixture(params=sorted(KINDS))
def inst(request, factory):
    if request.param == "btrfs" and not os.path.exists("/sbin/mkfs.btrfs"):
        pytest.skip("no mkfs.btrfs")
    return factory(**KINDS[request.param])


def tx(inst, tid, cmd, mode="commit_on_success", who="alice", **kw):
    body = {"thread_id": tid, "command": cmd, "transaction": mode}
    body.update(kw)
    return inst.request(who, "POST", "/api/execute", json=body)


def run(inst, tid, cmd):
    r = inst.execute(tid, cmd)
    assert r.status_code == 200, r.text
    return r.json()


def seed(inst):
    tid = inst.new_thread()
    assert run(inst, tid, "cd %s && echo A > a && echo B > b" % WS)["exit_code"] == 0
    time.sleep(0.05)	# past the filesystem's timestamp tick (docs/api.md)
    return tid


def files(inst, tid):
    return run(inst, tid, "cd %s && for f in a b c; do [ -e $f ] && echo $f=$(cat $f); done; "
               "true" % WS)["output"]


def changes(reply):
    return {(c["path"].rsplit("/", 1)[1], c["change"]) for c in reply["changes"]}


def test_failure_changes_nothing_success_applies(inst):
    tid = seed(inst)
    r = tx(inst, tid, CMD % 1)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["exit_code"] == 1 and out["applied"] is False
    assert out["not_applied"] == "exit_code"
    assert changes(out) == {("a", "modified"), ("b", "deleted"), ("c", "added")}
    assert out["changes_total"] == 3
    assert all(c["path"].startswith(WS + "/") for c in out["changes"])
    assert files(inst, tid) == "a=A\nb=B\n"
    out = tx(inst, tid, CMD % 0).json()
    assert out["exit_code"] == 0 and out["applied"] is True and "not_applied" not in out, out
    assert files(inst, tid) == "a=A2\nc=C\n"


def test_discard_never_applies(inst):
    tid = seed(inst)
    out = tx(inst, tid, CMD % 0, mode="discard").json()
    assert out["not_applied"] == "discard"
    assert out["applied"] is False and changes(out) == {
        ("a", "modified"), ("b", "deleted"), ("c", "added")}
    assert files(inst, tid) == "a=A\nb=B\n"


def test_a_conflicting_live_write_is_not_applied(inst):
    tid = seed(inst)
    box = {}

    def slow():
        box["r"] = tx(inst, tid, "cd %s && echo TX > a && echo N > n && sleep 3" % WS)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.5)
    # live work goes on meanwhile: a command and a file write
    assert run(inst, tid, "echo LIVE > %s/a" % WS)["exit_code"] == 0
    w = inst.request("alice", "POST", "/api/filesystem/write",
                     json={"thread_id": tid, "path": WS + "/w", "content": "x"})
    assert w.status_code in (200, 201), w.text
    # one transaction at a time
    r2 = tx(inst, tid, "true")
    assert r2.status_code == 409 and r2.json()["error"]["code"] == "thread_busy", r2.text
    t.join()
    out = box["r"].json()
    assert out["exit_code"] == 0 and out["applied"] is False, out
    assert out["conflicts"] == [WS + "/a"] and out["not_applied"] == "conflicts", out
    assert run(inst, tid, "cat %s/a; ls %s" % (WS, WS))["output"] == "LIVE\na\nb\nw\n"


def test_background_process_is_not_allowed(inst):
    tid = seed(inst)
    # what stays in the command's process group dies with it, as always;
    # one that left it (setsid) is found, killed, and nothing is applied
    out = tx(inst, tid, "cd %s && echo X > x && (setsid sleep 30 > /dev/null 2>&1 "
             "< /dev/null &) ; sleep 0.5" % WS).json()
    assert out["applied"] is False and out.get("background_killed") is True, out
    assert out["not_applied"] == "background_process"
    assert "x=" not in run(inst, tid, "ls %s" % WS)["output"]


def test_a_tree_symlinks_and_modes(inst):
    tid = seed(inst)
    out = tx(inst, tid, "cd %s && mkdir -p d/e && echo deep > d/e/f && ln -s a l && "
             "chmod 600 a && rm -rf nothing" % WS).json()
    assert out["applied"] is True, out
    got = run(inst, tid, "cd %s && cat d/e/f && readlink l && stat -c %%a a" % WS)["output"]
    assert got == "deep\na\n600\n"
    # a directory removed whole, and a file made a directory
    out = tx(inst, tid, "cd %s && rm -r d && rm b && mkdir b && echo in > b/x" % WS).json()
    assert out["applied"] is True, out
    assert run(inst, tid, "cd %s && ls -d d 2>&1; cat b/x" % WS)["output"].endswith("in\n")


def test_stream_and_session_forms(inst):
    tid = seed(inst)
    r = inst.request("alice", "POST", "/api/execute", json={
        "thread_id": tid, "command": CMD % 0, "transaction": True, "stream": True})
    assert r.status_code == 200, r.text
    last = json.loads(r.text.strip().splitlines()[-1])
    assert last["applied"] is True and last["changes_total"] == 3, last
    s = inst.request("alice", "POST", "/api/sessions", json={"thread_id": tid})
    assert s.status_code in (200, 201), s.text
    sid = s.json()["session_id"]
    r = inst.request("alice", "POST", "/api/sessions/%s/execute" % sid, json={
        "thread_id": tid, "command": "cd %s && echo S > s" % WS})
    assert r.status_code == 200, r.text
    r = inst.request("alice", "POST", "/api/sessions/%s/execute" % sid, json={
        "thread_id": tid, "command": "echo T > t; pwd", "transaction": "discard"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["applied"] is False and out["output"] == WS + "\n", out
    assert changes(out) == {("t", "added")}


def test_bob_cannot_run_a_transaction_in_alices_thread(inst):
    tid = seed(inst)
    r = tx(inst, tid, "echo B > %s/a" % WS, who="bob")
    assert r.status_code == 404, r.text
    assert files(inst, tid) == "a=A\nb=B\n"


def test_quota_holds_inside_the_layer(factory):
    if not os.path.exists("/sbin/mkfs.btrfs"):
        pytest.skip("no mkfs.btrfs")
    inst = factory(YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs")
    tid = inst.new_thread()
    out = tx(inst, tid, "head -c 300000000 /dev/zero > %s/big; echo rc=$?" % WS).json()
    assert "rc=0" not in out["output"], out
    assert out["applied"] is False
