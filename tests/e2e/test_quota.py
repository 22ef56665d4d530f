# SPDX-License-Identifier: MIT
"""Per-thread disk quota through the real stack (docs/configuration.md
YUXI_THREAD_DISK_QUOTA, docs/api.md): what the API, the admin listing and
/metrics say about a thread's disk, a restart after a reboot (the images
unmounted) mounts them again with their files, the CLI gives the threads it
creates an image too, and a service without the quota keeps plain
directories. The attacks and their controls are the proof suite's
(tests/proof/test_g8_quota.py)."""
import os
import subprocess

import pytest

from conftest import build_path, engine_up, wait_for
from yxsvc import loops_below, mounts_below

QUOTA = 16 << 20

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/loop-control"),
                       reason="needs root and loop devices"),
]


def user_data(inst, tid):
    return os.path.join(inst.saves, "threads", tid, "user-data")


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def test_disk_figures_in_the_api_listing_and_metrics(factory):
    inst = factory(YUXI_THREAD_DISK_QUOTA="16m")
    tid = inst.new_thread()
    r = inst.execute(tid, "head -c 3000000 /dev/zero > /home/yuxi/user-data/workspace/f; "
                     "df -k /home/yuxi/user-data | tail -1")
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    disk = inst.request("alice", "GET", "/api/threads/" + tid).json()["disk"]
    assert disk["quota_bytes"] == QUOTA
    assert 3000000 <= disk["used_bytes"] < 4000000, disk
    assert QUOTA * 7 // 10 < disk["used_bytes"] + disk["available_bytes"] <= QUOTA, disk
    slot = inst.sandboxes()[tid]
    assert slot["disk"]["quota_bytes"] == QUOTA, slot
    m = inst.request(None, "GET", "/metrics").text
    assert metric(m, "yuxi_thread_disk_quota_bytes") == QUOTA
    assert metric(m, 'yuxi_thread_disk_images{state="mounted"}') == 1
    assert metric(m, "yuxi_thread_disk_used_bytes") >= 3000000
    # another user sees nothing of it
    assert inst.request("bob", "GET", "/api/threads/" + tid).status_code == 404


def test_restart_after_reboot_mounts_again(factory):
    inst = factory(YUXI_THREAD_DISK_QUOTA="16m", YUXI_SANDBOX_IDLE_TIMEOUT=300)
    tid = inst.new_thread()
    r = inst.execute(tid, "echo kept > /home/yuxi/user-data/workspace/k.txt")
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    assert inst.halt() == 0
    # what a reboot does: containers and mounts gone
    subprocess.run(["docker", "rm", "-f"] + [n for _, n in inst.containers()],
                   capture_output=True)
    ud = user_data(inst, tid)
    assert subprocess.run(["umount", ud], capture_output=True).returncode == 0
    assert ud not in mounts_below(inst.base)
    assert wait_for(lambda: loops_below(inst.base) == 0, 10, 0.1)
    inst.start()
    assert ud in mounts_below(inst.base)
    assert "disk image(s) mounted again" in inst.read_log(None)
    r = inst.execute(tid, "cat /home/yuxi/user-data/workspace/k.txt")
    assert r.status_code == 200 and r.json()["output"] == "kept\n", r.text
    assert loops_below(inst.base) == 1


def test_cli_made_thread_gets_its_image(factory):
    inst = factory(YUXI_THREAD_DISK_QUOTA="16m")
    env = dict(inst.env)
    p = subprocess.run([build_path("yuxi-sandbox"), "exec", "--owner", "alice", "c1", "--",
                        "df", "-k", "/home/yuxi/user-data"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert user_data(inst, "c1") in mounts_below(inst.base)
    assert "/dev/loop" in p.stdout, p.stdout
    assert inst.request("alice", "DELETE", "/api/threads/c1").status_code == 204
    assert wait_for(lambda: loops_below(inst.base) == 0, 10, 0.1)
    assert not mounts_below(os.path.join(inst.saves, "threads"))


def test_without_quota_threads_are_plain_directories(factory):
    # also under YX_TEST_DISK_QUOTA; no pool either (its boxes' binds are
    # mounts below the saves directory)
    inst = factory(YUXI_THREAD_DISK_QUOTA="0", YUXI_POOL_SIZE="0")
    tid = inst.new_thread()
    assert not mounts_below(inst.base)
    assert not os.path.exists(os.path.join(inst.saves, "threads", tid, "user-data.img"))
    assert inst.request("alice", "GET", "/api/threads/" + tid).json()["disk"] is None
    assert "yuxi_thread_disk" not in inst.request(None, "GET", "/metrics").text
    # the helper runs anyway (images of earlier threads, a reload), alone
    # with CAP_SYS_ADMIN
    assert inst.helper_pid() is not None
