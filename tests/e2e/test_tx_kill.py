# SPDX-License-Identifier: MIT
"""A transaction's commit killed at every step (docs/design.md §10
"Crashes"): the control daemon (tests/security/yuxi-sandboxd-control)
SIGKILLs the worker at step N of the commit (YX_TX_KILL_AT=N: the journal
begun, before each change, all written, committed, after each rename or
deletion). Then either the service goes on (the worker alone died: the
reaper's next pass recovers the thread) or every process of the service
is SIGKILLed too and it starts again (its reaper recovers at start). Each
time every file is either old or new - never one of each, never a file
lost - and the whole commit is applied exactly when the kill came after
its commit point. A run without a kill checks the step count."""
import os
import signal
import time

import pytest

from conftest import build_path, engine_up, wait_for
from yxsvc import Service

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the privileged helper)"),
]

CONTROL = build_path("tests/security/yuxi-sandboxd-control")
WS = "/home/yuxi/user-data/workspace"
OLD = "a=A\nb=B\n"
NEW = "a=A2\nc=C\n"
STEPS = 8	# header, 2 between the 3 changes, written, committed, 3 applied
COMMITTED_FROM = 5


def service(kind, step):
    env = dict(YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1, YX_TX_KILL_AT=step)
    if kind == "btrfs":
        env.update(YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs")
    s = Service(stem="qyxtk", overrides=env, binary=CONTROL)
    s.start()
    return s


def files(s, tid):
    r = s.execute(tid, "cd %s && for f in a b c; do [ -e $f ] && echo $f=$(cat $f); done; "
                  "ls -A | grep -c yxtx; true" % WS)
    assert r.status_code == 200, r.text
    return r.json()["output"]


def journal(s, tid):
    t = os.path.join(s.saves, "threads", tid)
    return any(os.path.exists(os.path.join(t, p, "journal")) for p in ("tx", "vol/tx"))


def kill_all(s):
    """SIGKILL the master and every process it started, at once."""
    master = s.sandboxd.pid
    kids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                        kids.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    for pid in [master] + kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    s.sandboxd.wait()
    s.halt()


@pytest.mark.parametrize("kind", ["plain", "btrfs"])
@pytest.mark.parametrize("how", ["worker", "service"])
def test_commit_killed_at_every_step(kind, how):
    if kind == "btrfs" and not os.path.exists("/sbin/mkfs.btrfs"):
        pytest.skip("no mkfs.btrfs")
    for step in range(1, STEPS + 2):
        s = service(kind, step)
        try:
            tid = s.new_thread()
            assert s.execute(tid, "cd %s && echo A > a && echo B > b" % WS).status_code == 200
            time.sleep(0.05)
            r = s.request("alice", "POST", "/api/execute", json={
                "thread_id": tid, "transaction": "commit_on_success",
                "command": "cd %s && echo A2 > a && rm b && echo C > c" % WS})
            if step > STEPS:	# no kill: the count of steps is right
                assert r.status_code == 200 and r.json()["applied"] is True, r.text
                assert files(s, tid) == NEW + "0\n"
                continue
            assert r.status_code >= 500, (step, r.status_code, r.text)
            if how == "service":
                kill_all(s)
                s.start()
            assert wait_for(lambda: not journal(s, tid), 30), "not recovered"
            want = NEW if step >= COMMITTED_FROM else OLD
            got = files(s, tid)
            assert got == want + "0\n", (kind, how, step, got)
        finally:
            s.stop()
