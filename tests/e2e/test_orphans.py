# SPDX-License-Identifier: MIT
"""Sandboxes no live instance owns (issue 27, docs/operations.md "Orphaned
sandboxes").

- An instance whose master and every child were SIGKILLed leaves its
  containers running (before the fix: for good). `yuxi-sandbox gc
  --orphans` lists them, and not the containers of a live instance nor the
  CLI's own; `--remove --prefix P` removes those and nothing else.
- The reaper of an instance with YUXI_REAP_ORPHANS=<prefix> removes such
  containers by itself within a pass.
- `scripts/run-service.sh --stop` of a dev run with a sandbox host leaves
  no container of that host.
"""
import json
import os
import signal
import subprocess

import pytest
import requests

from conftest import wait_for
from yxsvc import DevCheckout, build_path, containers, dev_user_env, docker_rm_prefix, \
    image_present


def kill_instance(inst):
    """SIGKILL the master and every process of the instance (its children)."""
    master = inst.sandboxd.pid
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True,
                          text=True).stdout.split()
    grand = []
    for k in kids:
        grand += subprocess.run(["ps", "-o", "pid=", "--ppid", k], capture_output=True,
                                text=True).stdout.split()
    for p in [master] + [int(k) for k in kids + grand]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    inst.sandboxd.wait(10)
    # the lock goes with the last process of the instance
    assert wait_for(lambda: all(not os.path.exists("/proc/%s" % k) for k in kids + grand), 10)


def gc_orphans(*args):
    r = subprocess.run([build_path("yuxi-sandbox"), "gc", "--orphans", "--json"] + list(args),
                       env=dev_user_env(YUXI_CONFIG="none"), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def with_sandboxes(inst, n=2):
    for _ in range(n):
        tid = inst.new_thread()
        r = inst.execute(tid, "true")
        assert r.status_code == 200, r.text
    return [name for _, name in containers(inst.prefix)]


def test_gc_orphans_lists_and_removes_a_dead_instances_sandboxes(factory):
    live = factory()
    dead = factory()
    mine = with_sandboxes(live)
    gone = with_sandboxes(dead)
    assert len(mine) == 2 and len(gone) == 2
    before = {o["container"] for o in gc_orphans()["orphans"]}
    assert not (set(gone) & before), "listed while its instance lives"
    kill_instance(dead)
    # they keep running: nothing of the dead instance can see them
    assert {n for _, n in containers(dead.prefix, running_only=True)} == set(gone)
    got = gc_orphans()
    names = {o["container"] for o in got["orphans"]}
    print("orphans listed: %s" % sorted(names))
    assert set(gone) <= names and not (set(mine) & names), (names, gone, mine)
    assert got["removed"] == 0
    assert {n for _, n in containers(dead.prefix)} == set(gone), "listing removed something"
    got = gc_orphans("--remove", "--prefix", dead.prefix)
    assert got["removed"] == 2 and {o["container"] for o in got["orphans"]} == set(gone), got
    assert containers(dead.prefix) == []
    assert {n for _, n in containers(live.prefix)} == set(mine), "a live instance's went too"


def test_reaper_removes_orphans_when_asked(factory):
    dead = factory()
    gone = with_sandboxes(dead, 1)
    kill_instance(dead)
    reaper = factory(YUXI_REAP_ORPHANS=dead.prefix, YUXI_SANDBOX_IDLE_CHECK_INTERVAL="1")
    mine = with_sandboxes(reaper, 1)
    assert wait_for(lambda: containers(dead.prefix) == [], 20), containers(dead.prefix)
    assert "removed 1 orphaned sandbox" in reaper.read_log(tail=None), reaper.read_log()
    assert {n for _, n in containers(reaper.prefix)} == set(mine), (gone, mine)


@pytest.mark.skipif(os.geteuid() != 0 or not image_present("yuxi-sandbox-test:latest"),
                    reason="needs root and the test image")
def test_run_service_stop_leaves_no_host_container():
    d = DevCheckout("yuxi-sandbox-test:latest", args=("--provisioners", "1"))
    host = "yuxi-%s-host1-" % d.instance	# run-service.sh's host_name
    try:
        d.start()
        tok = d.info["tokens"]["alice"]
        h = {"Authorization": "Bearer " + tok}
        r = requests.post(d.info["base"] + "/api/threads", json={"thread_id": "orph1"},
                          headers=h, verify=d.info["cert"], timeout=60)
        assert r.status_code == 201, r.text
        r = requests.post(d.info["base"] + "/api/execute", json={"thread_id": "orph1",
                                                                 "command": "true"},
                          headers=h, verify=d.info["cert"], timeout=120)
        assert r.status_code == 200, r.text
        assert containers(host), "the host made no container"
        r = d.run_service("--stop", timeout=240)
        assert r.returncode == 0, r.stdout + r.stderr
        left = containers(host)
        print("after --stop: %d container(s) of host 1" % len(left))
        assert left == [], left
    finally:
        d.stop()
        docker_rm_prefix(host)
