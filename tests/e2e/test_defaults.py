# SPDX-License-Identifier: MIT
"""The defaults are safe and instant (issue 34, docs/configuration.md
"Protections on by default"): an instance started with nothing said about
YUXI_POOL_SIZE or YUXI_THREAD_DISK_QUOTA (both "auto") runs a pool of
pre-started boxes, each its own uid, and gives every new thread a 2 GiB
disk of its own; a new thread's first command takes at most a tenth of
`docker run -d` + `docker exec` (interleaved medians, the same image); two
new threads run as different uids; writing past the quota fails inside
the sandbox with ENOSPC and costs the host only what was written.

On a host that does not give the privileges (the daemon here runs under
setpriv without CAP_SYS_ADMIN in its bounding and inheritable sets, as a
service without it would) the defaults fall back: both off, the start-up
report, /readyz and doctor warn; explicit sizes refuse to start there.
"""
import os
import shutil
import statistics
import subprocess
import time

import pytest

from conftest import build_path, engine_up, wait_for
from yxsvc import IMAGE, Service

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/loop-control"),
                       reason="needs root and loop devices"),
]

QUOTA = 2 << 30


def default_instance(**overrides):
    """A service with the compiled-in defaults of both protections, whatever
    YX_TEST_POOL or YX_TEST_DISK_QUOTA say for the rest of the suite."""
    s = Service(stem="qyxdf", overrides=overrides)
    for k in ("YUXI_POOL_SIZE", "YUXI_THREAD_DISK_QUOTA"):
        if k not in overrides:
            s.env.pop(k, None)
    return s


@pytest.fixture
def plain():
    made = []

    def make(binary=None, **ov):
        s = default_instance(**ov)
        if binary:
            s.binary = binary
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


@pytest.fixture
def nosysadmin(tmp_path):
    """yuxi-sandboxd without CAP_SYS_ADMIN (bounding and inheritable sets
    dropped before exec): what a service without the privilege runs."""
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv (util-linux)")
    w = tmp_path / "sandboxd-nosysadmin"
    w.write_text("#!/bin/sh\nexec setpriv --bounding-set -sys_admin --inh-caps -sys_admin "
                 "%s \"$@\"\n" % build_path("yuxi-sandboxd"))
    w.chmod(0o755)
    return str(w)


def docker_cold(name):
    t0 = time.perf_counter()
    subprocess.run(["docker", "run", "-d", "--name", name, "--network", "none",
                    "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
                    "--init", "--log-driver", "none", "--user", "1000:1000", IMAGE,
                    "sleep", "600"], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run(["docker", "exec", name, "sh", "-c", "echo hi"], check=True,
                       stdout=subprocess.PIPE)
    dt = time.perf_counter() - t0
    assert r.stdout == b"hi\n"
    return dt


def test_defaults_pool_quota_own_uids_and_instant(plain):
    s = plain().start()
    p = s.protections()
    assert p["pool"] == {"on": True, "size": 3, "own_uids": True, "auto": True}, p
    assert p["disk_quota"] == {"on": True, "bytes": QUOTA, "auto": True}, p
    assert "warnings" not in s.request(None, "GET", "/readyz").json()
    assert "protections: pool of 3 pre-started sandboxes" in s.read_log(None)
    assert wait_for(lambda: sum(1 for v in s.sandboxes().values()
                                if v["state"] == "pooled") == 3, 60)
    # interleaved: a new thread's first command, docker run -d + exec
    ours, theirs = [], []
    uids = set()
    try:
        for k in range(5):
            assert wait_for(lambda: sum(1 for v in s.sandboxes().values()
                                        if v["state"] == "pooled") == 3, 60)
            tid = s.new_thread()
            t0 = time.perf_counter()
            r = s.execute(tid, "echo hi; id -u")
            ours.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            out = r.json()["output"].split()
            assert out[0] == "hi"
            uids.add(out[1])
            theirs.append(docker_cold("%sdk%d" % (s.prefix, k)))
    finally:
        subprocess.run(["docker", "rm", "-f"] + ["%sdk%d" % (s.prefix, k) for k in range(5)],
                       capture_output=True)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print("first command %.1f ms, docker run -d + exec %.1f ms: %.3f×" % (
        statistics.median(ours) * 1000, statistics.median(theirs) * 1000, ratio))
    assert ratio <= 0.1, (ours, theirs)
    assert len(uids) == 5, uids		# every new thread its own uid
    acq = [l for l in s.request(None, "GET", "/metrics").text.splitlines()
           if l.startswith('yuxi_sandbox_acquires_total{outcome="pooled"}')]
    assert acq and float(acq[0].split()[1]) >= 5, acq


def test_defaults_quota_enospc_and_the_host_keeps_its_space(plain):
    s = plain().start()
    tid = s.new_thread()
    disk = s.request("alice", "GET", "/api/threads/" + tid).json()["disk"]
    assert disk["quota_bytes"] == QUOTA, disk
    saves = os.statvfs(s.saves)
    before = saves.f_bavail * saves.f_frsize
    # take most of the quota without writing (fallocate), then write past it
    r = s.execute(tid, "cd /home/yuxi/user-data/workspace && "
                  "fallocate -l $(( $(df -k . | tail -1 | awk '{print $4}') - 65536 ))k big && "
                  "dd if=/dev/zero of=f bs=1M count=512 2>&1; echo rc=$?; "
                  "ls -l f | awk '{print $5}'", timeout=120)
    assert r.status_code == 200, r.text
    out = r.json()["output"]
    assert "No space left on device" in out and "rc=1" in out, out
    written = int(out.split()[-1])
    assert 0 < written < 128 << 20, out
    after = os.statvfs(s.saves)
    used = before - after.f_bavail * after.f_frsize
    # the host gave at most what was written (plus the image's metadata),
    # never the 2 GiB the sandbox asked for
    assert used < written + (64 << 20), (used, written)
    assert s.request("alice", "GET", "/api/threads/" + tid).json()["disk"][
        "available_bytes"] < (8 << 20)


def test_without_the_privileges_the_defaults_fall_back_loudly(plain, nosysadmin):
    s = plain(binary=nosysadmin).start()
    j = s.request(None, "GET", "/readyz").json()
    assert j["ready"] is True, j
    p = j["protections"]
    assert not p["pool"]["on"] and p["pool"]["auto"], p
    assert not p["disk_quota"]["on"] and p["disk_quota"]["auto"], p
    assert len(j["warnings"]) == 2, j
    assert "pool" in j["warnings"][0] and "disk quota" in j["warnings"][1], j
    assert not any(x in str(j) for x in (s.base, s.saves)), j
    log = s.read_log(None)
    assert "WARNING: protections: pool OFF" in log and "no CAP_SYS_ADMIN" in log, log
    tid = s.new_thread()
    r = s.execute(tid, "echo hi")
    assert r.status_code == 200 and r.json()["output"] == "hi\n", r.text
    assert s.request("alice", "GET", "/api/threads/" + tid).json()["disk"] is None
    assert not s.helper_pid()
    # doctor, as the running service settled it: a warning, not a failure
    d = subprocess.run([build_path("yuxi-sandbox"), "doctor"], env=dict(s.env),
                       capture_output=True, text=True, timeout=120)
    line = [l for l in d.stdout.splitlines() if l.split()[1:2] == ["protections"]]
    assert line and line[0].split()[0] == "WARN", d.stdout
    assert "FAIL" not in line[0] and "protections" not in d.stderr, d.stdout + d.stderr


def test_explicit_sizes_refuse_a_host_that_cannot_give_them(plain, nosysadmin):
    for ov in ({"YUXI_POOL_SIZE": "2"}, {"YUXI_THREAD_DISK_QUOTA": "1g"}):
        s = plain(binary=nosysadmin, **ov)
        s.setup()
        p = subprocess.run([nosysadmin], env=s.env, capture_output=True, text=True,
                           timeout=60)
        name = list(ov)[0]
        assert p.returncode == 2, (ov, p.stderr)
        assert name in p.stderr and "no CAP_SYS_ADMIN" in p.stderr, p.stderr


def test_explicit_off_is_off_without_a_warning_about_the_host(plain):
    s = plain(YUXI_POOL_SIZE="0", YUXI_THREAD_DISK_QUOTA="0").start()
    j = s.request(None, "GET", "/readyz").json()
    assert "warnings" not in j, j
    assert not j["protections"]["pool"]["on"] and not j["protections"]["pool"]["auto"]
    assert "disk quota off (YUXI_THREAD_DISK_QUOTA=0)" in j["protections"]["detail"], j
