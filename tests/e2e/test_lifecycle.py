# SPDX-License-Identifier: MIT
"""Sandbox lifecycle through the real stack (docs/design.md §1-§3): a worker
SIGKILLed mid-execute, the idle reaper, a full service restart that must
rediscover its containers, and reconcile of orphan containers."""
import hashlib
import os
import re
import secrets
import signal
import subprocess
import threading
import time

import pytest
import requests

from conftest import IMAGE, containers, engine_up, wait_for

pytestmark = pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")


def reaper_pid(inst):
    pids = re.findall(r"started reaper pid (\d+)", inst.read_log(None))
    return int(pids[-1]) if pids else None


def busy_workers(inst):
    """Worker pids holding an accepted FastCGI connection (serving a request)."""
    sock = inst.env["YUXI_FCGI_SOCKET"]
    inodes = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            # Num RefCount Protocol Flags Type St Inode [Path]; St 03 = connected
            if len(parts) >= 8 and parts[7] == sock and parts[5] == "03":
                inodes.add(parts[6])
    busy = []
    for pid in inst.worker_pids():
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            m = re.match(r"socket:\[(\d+)\]", link)
            if m and m.group(1) in inodes:
                busy.append(pid)
                break
    return busy


def test_sigkill_worker_mid_execute(factory):
    inst = factory(YUXI_WORKERS=3)
    tid = inst.new_thread()
    r = inst.execute(tid, "echo warm")
    assert r.status_code == 200 and r.json()["output"] == "warm\n", r.text
    before = containers(inst.prefix, tid)
    assert len(before) == 1
    workers = [p for p in inst.worker_pids() if p != reaper_pid(inst)]
    assert len(workers) == 3, workers

    long = {}

    def run_long():
        long["r"] = inst.execute(tid, "sleep 5; echo done", timeout=60)
    lt = threading.Thread(target=run_long)
    lt.start()
    victim = wait_for(lambda: busy_workers(inst), 5, 0.05)
    assert len(victim) == 1, "expected exactly one busy worker, saw %r" % victim
    victim = victim[0]
    assert victim in workers

    stream = []
    stop = threading.Event()

    def run_stream():
        with requests.Session() as s:
            while not stop.is_set():
                try:
                    rr = s.get(inst.url + "/api/threads", timeout=30,
                               headers={"Authorization": "Bearer " + inst.tokens["alice"]},
                               verify=os.path.join(inst.base, "cert.pem"))
                    stream.append(rr.status_code)
                except requests.RequestException as e:
                    stream.append(repr(e))
    st = threading.Thread(target=run_stream)
    st.start()
    try:
        time.sleep(0.5)
        os.kill(victim, signal.SIGKILL)
        time.sleep(2.0)
    finally:
        stop.set()
        st.join(60)
        lt.join(60)
    assert stream and all(c == 200 for c in stream), [c for c in stream if c != 200][:5]
    assert len(stream) >= 10, "too few requests during the kill: %d" % len(stream)
    assert long["r"].status_code in (502, 504), (long["r"].status_code, long["r"].text)

    # respawned: worker count back to YUXI_WORKERS (+ reaper), victim gone
    def respawned():
        now = inst.worker_pids()
        return victim not in now and len(now) == inst.workers + 1
    assert wait_for(respawned, 15), inst.worker_pids()
    assert "child %d exited on signal 9" % victim in inst.read_log(None)
    # no hold left behind by the dead worker
    assert wait_for(lambda: inst.sandboxes()[tid]["holds"] == 0, 10), inst.sandboxes()[tid]
    # no container leaked or replaced; the thread keeps working in the same box
    assert containers(inst.prefix, tid) == before
    r = inst.execute(tid, "echo again")
    assert r.status_code == 200 and r.json()["output"] == "again\n", r.text
    assert containers(inst.prefix, tid) == before
    assert len(containers(inst.prefix)) == 1


def test_reaper_idle_and_busy(factory):
    inst = factory(YUXI_SANDBOX_IDLE_TIMEOUT=3, YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1)
    idle, busy = inst.new_thread(), inst.new_thread()
    r = inst.execute(idle, "echo kept > keep.txt")
    assert r.status_code == 200, r.text
    first = containers(inst.prefix, idle)
    assert len(first) == 1
    out = {}

    def run_busy():
        out["r"] = inst.execute(busy, "sleep 20; echo done", timeout=60)
    bt = threading.Thread(target=run_busy)
    t0 = time.time()
    bt.start()
    busy_box = wait_for(lambda: containers(inst.prefix, busy), 15)
    assert len(busy_box) == 1
    # DELETE while a command runs deletes nothing (docs/api.md): 503 capacity
    time.sleep(0.5)
    d = inst.request("alice", "DELETE", "/api/threads/" + busy)
    assert d.status_code == 503 and d.json()["error"]["code"] == "capacity", d.text
    assert inst.request("alice", "GET", "/api/threads/" + busy).status_code == 200
    idle_gone = None
    try:
        # sample: the busy box stays for the whole command; the idle one goes
        while bt.is_alive():
            if idle_gone is None and not containers(inst.prefix, idle):
                idle_gone = time.time() - t0
            if bt.is_alive():
                assert containers(inst.prefix, busy) == busy_box, \
                    "reaper removed a sandbox with a command in flight"
            time.sleep(0.5)
    finally:
        bt.join(60)
    assert out["r"].status_code == 200, out["r"].text
    assert out["r"].json()["output"] == "done\n"
    assert time.time() - t0 >= 19
    assert idle_gone is not None and idle_gone <= 12, idle_gone
    assert "reaper: destroyed" in inst.read_log(None)
    assert idle not in inst.sandboxes()
    # user data survives the destroy
    host = os.path.join(inst.saves, "threads", idle, "user-data", "workspace", "keep.txt")
    with open(host) as f:
        assert f.read() == "kept\n"
    # the reaped thread works again, in a new container that sees the data
    r = inst.execute(idle, "cat keep.txt")
    assert r.status_code == 200 and r.json()["output"] == "kept\n", r.text
    again = containers(inst.prefix, idle)
    assert len(again) == 1 and again[0][0] != first[0][0]
    # and the busy one, idle now, goes too
    assert wait_for(lambda: not containers(inst.prefix, busy), 12)


def docker_run_orphan(name, thread, sid):
    """Start a labelled container under a temporary name, then rename it to
    `name` once it runs: reconcile must see it running (a container still
    being created is removed by reconcile, see the report)."""
    tmp = "yxlctmp%d-%s" % (os.getpid(), secrets.token_hex(4))
    p = subprocess.run(["docker", "run", "-d", "--init", "--label", "io.yuxi.sandbox=1",
                        "--label", "io.yuxi.sandbox.thread=" + thread,
                        "--label", "io.yuxi.sandbox.id=" + sid,
                        "--name", tmp, "--network", "none", IMAGE],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cid = p.stdout.strip()
    r = subprocess.run(["docker", "rename", tmp, name], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return cid


def test_restart_rediscovers_and_reconciles_orphans(factory):
    inst = factory(YUXI_SANDBOX_IDLE_TIMEOUT=300, YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1)
    tids = [inst.new_thread() for _ in range(3)]
    for tid in tids:
        r = inst.execute(tid, "echo %s > mark.txt" % tid)
        assert r.status_code == 200, r.text
    boxes = {tid: containers(inst.prefix, tid) for tid in tids}
    assert all(len(b) == 1 for b in boxes.values()), boxes
    status = inst.halt()
    assert status == 0, inst.read_log()
    assert not os.path.exists("/dev/shm/" + inst.shm.lstrip("/")), "table left in /dev/shm"
    # a stop keeps the sandboxes running
    running = containers(inst.prefix, running_only=True)
    assert sorted(running) == sorted(b[0] for b in boxes.values())
    inst.start()
    for tid in tids:
        r = inst.execute(tid, "cat mark.txt")
        assert r.status_code == 200 and r.json()["output"] == tid + "\n", r.text
        assert containers(inst.prefix, tid) == boxes[tid], "restart did not reuse the container"
    assert len(containers(inst.prefix)) == 3
    listing = inst.sandboxes()
    for tid in tids:
        assert listing[tid]["container_id"] == boxes[tid][0][0]

    # orphans: one named <prefix><its sandbox id> (adoptable), one whose name
    # does not match its id label (not ours to adopt: removed)
    othread = "orph" + secrets.token_hex(4)
    osid = hashlib.sha256(othread.encode()).hexdigest()[:8]
    adopt_id = docker_run_orphan(inst.prefix + osid, othread, osid)
    bad_id = docker_run_orphan(inst.prefix + "0badc0de", "orph" + secrets.token_hex(4), "feedface")

    def adopted():
        s = inst.sandboxes().get(othread)
        return s if s and s["container_id"] == adopt_id else None
    slot = wait_for(adopted, 8)
    assert slot, inst.sandboxes()
    assert slot["state"] == "warm" and slot["sandbox_id"] == osid
    assert wait_for(lambda: not [c for c in containers(inst.prefix) if c[0] == bad_id], 8), \
        "unadoptable orphan not removed"
    assert [c for c in containers(inst.prefix) if c[0] == adopt_id]
    assert len(containers(inst.prefix)) == 4
    # the adopted sandbox is destroyable like any other
    r = inst.request("admin", "DELETE", "/api/admin/sandboxes/" + osid)
    assert r.status_code == 204, r.text
    assert not [c for c in containers(inst.prefix) if c[0] == adopt_id]
