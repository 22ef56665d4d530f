# SPDX-License-Identifier: MIT
"""Shim groups (issue 34, docs/configuration.md "Shim groups"): with the
grouping shim first on the engine's PATH (scripts/setup.sh starts dockerd
so), the sandboxes of a group share one engine shim process, the control
(YUXI_SHIM_GROUP_SIZE=0) gives each its own; a group's shim killed ends its
sandboxes, and each thread's next command runs in a new one with its files;
deleting the threads leaves no container and no shim of theirs.

Skipped when the engine's containerd does not run the grouping shim (an
engine started without it: `yuxi-sandbox doctor` says `WARN shim-groups`).
"""
import os
import signal
import subprocess

import pytest

from conftest import build_path, engine_up, wait_for
from yxsvc import Service


def grouping_engine():
    d = subprocess.run([build_path("yuxi-sandbox"), "doctor"], capture_output=True,
                       text=True, timeout=120,
                       env=dict(os.environ, YUXI_SHM_NAME="/yxshimprobe-none"))
    return any(l.split()[:2] == ["ok", "shim-groups"] and " on:" in l
               for l in d.stdout.splitlines())


pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (reads the shims' /proc)"),
]


@pytest.fixture(scope="module")
def grouping():
    if not grouping_engine():
        pytest.skip("the engine's containerd does not run the grouping shim")


@pytest.fixture
def svc():
    made = []

    def make(**ov):
        s = Service(stem="qyxsg", overrides=dict({"YUXI_SANDBOX_MAX_REPLICAS": "4"}, **ov))
        made.append(s)
        return s.start()
    yield make
    for s in made:
        s.stop()


def shim_of(cid):
    """The engine shim serving container cid: the parent of its init."""
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", cid],
                         capture_output=True, text=True).stdout.strip()
    if not pid or pid == "0":
        return None
    with open("/proc/%s/status" % pid) as f:
        ppid = [l.split()[1] for l in f if l.startswith("PPid:")][0]
    with open("/proc/%s/comm" % ppid) as f:
        assert f.read().startswith("containerd-shim"), ppid
    return int(ppid)


def three_threads(s):
    tids = []
    for k in range(3):
        tid = s.new_thread()
        r = s.execute(tid, "echo kept-%d > /home/yuxi/user-data/workspace/f; echo ok" % k)
        assert r.status_code == 200 and r.json()["output"] == "ok\n", r.text
        tids.append(tid)
    return tids


def shims(s, tids):
    out = {}
    for tid in tids:
        cs = s.containers(thread=tid, running_only=True)
        assert len(cs) == 1, cs
        out[tid] = shim_of(cs[0][0])
    return out


def test_a_group_shares_one_shim_and_the_control_does_not(grouping, svc):
    # 4 replicas, 4 per shim: one group, all three in one shim
    s = svc(YUXI_SHIM_GROUP_SIZE="4")
    by = shims(s, three_threads(s))
    assert len(set(by.values())) == 1, by
    env = subprocess.run(["docker", "inspect", "-f", "{{json .Config.Env}}",
                          s.containers(thread=list(by)[0])[0][0]],
                         capture_output=True, text=True).stdout
    assert "YUXI_SHIM_GROUP=%sg0" % s.prefix in env, env
    # control: grouping off, a shim each (what the engine does alone)
    c = svc(YUXI_SHIM_GROUP_SIZE="0")
    cby = shims(c, three_threads(c))
    assert len(set(cby.values())) == 3, cby


def test_a_dead_group_shim_ends_its_sandboxes_and_threads_go_on(grouping, svc):
    s = svc(YUXI_SHIM_GROUP_SIZE="4")
    tids = three_threads(s)
    (shim,) = set(shims(s, tids).values())
    os.kill(shim, signal.SIGKILL)
    assert wait_for(lambda: not s.containers(running_only=True), 30), s.containers()
    for k, tid in enumerate(tids):
        r = s.execute(tid, "cat /home/yuxi/user-data/workspace/f")
        assert r.status_code == 200 and r.json()["output"] == "kept-%d\n" % k, r.text
    again = shims(s, tids)
    assert len(set(again.values())) == 1 and shim not in again.values(), again
    (shim2,) = set(again.values())
    for tid in tids:
        assert s.request("alice", "DELETE", "/api/threads/" + tid).status_code in (200, 204)
    assert wait_for(lambda: not s.containers(), 30), s.containers()
    # the group's shim leaves with its last sandbox
    assert wait_for(lambda: gone(shim2), 30)


def gone(pid):
    """pid has exited (gone, or a zombie its new parent did not reap yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
