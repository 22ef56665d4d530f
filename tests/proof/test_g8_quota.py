# SPDX-License-Identifier: MIT
"""Group 8: a thread's disk quota, enforced by the kernel (docs/security.md,
docs/configuration.md YUXI_THREAD_DISK_QUOTA).

A service with a 16 MiB quota (every thread's user-data its own sparse
ext4 image, loop-mounted by the privileged helper), through nginx, in real
sandboxes:

- alice's thread: a 32 MiB upload onto an existing file answers 507
  quota_exceeded and leaves the old file and no temporary; `dd` of 32 MiB
  inside the sandbox fails with "No space left on device" having written
  less than the quota; a `write` through the API on the full disk is 507
  quota_exceeded; after `rm`, commands and uploads write again;
- bob's thread writes 1 MiB every 0.2 s all along: no failure;
- the image on the host never holds more than the quota;
- deleting the thread leaves no mount, no loop device, no image;
- the workers and the reaper hold no CAP_SYS_ADMIN (effective, permitted,
  bounding); the helper does; the master keeps it permitted only (never
  effective, not in the bounding set), to start a new helper when one
  dies.

Controls: the test-only daemon with YX_CONTROL_OFF=quota (no image: the
user-data is a directory of the host's filesystem) lets the same dd write
all 32 MiB and the same upload succeed; with YX_CONTROL_OFF=privdrop the
workers keep CAP_SYS_ADMIN.
"""
import os
import re
import threading
import time
import urllib.parse

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 8
QUOTA = 16 << 20
CAP_SYS_ADMIN = 21

pytestmark = [
    pytest.mark.skipif(not P.image_present(P.TEST_IMAGE),
                       reason="image %s not built" % P.TEST_IMAGE),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/loop-control"),
                       reason="needs root and loop devices"),
]


def quota_service(kind="prod", **kw):
    env = {"YUXI_THREAD_DISK_QUOTA": "16m", "YUXI_UPLOAD_LIMIT": "48m"}
    env.update(kw)
    return P.ProofService(kind, **env).start()


def upload(svc, tid, path, data, who="alice"):
    q = "thread_id=%s&path=%s" % (tid, urllib.parse.quote(path, safe="/"))
    return svc.request(who, "POST", "/api/filesystem/upload?" + q, data=data,
                       headers={"Content-Type": "application/octet-stream"})


def code(r):
    try:
        return r.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def user_data(svc, tid):
    return os.path.join(svc.saves, "threads", tid, "user-data")


def is_mount(path):
    return path in P.yxsvc.mounts_below(path)


loops_below = P.yxsvc.loops_below


def caps(pid):
    """{CapEff, CapPrm, CapBnd} of pid as ints."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("CapEff", "CapPrm", "CapBnd"):
                out[k] = int(v.strip(), 16)
    return out


def has_sys_admin(pid):
    """Names of the sets of pid holding CAP_SYS_ADMIN."""
    return sorted(k for k, v in caps(pid).items() if v >> CAP_SYS_ADMIN & 1)


class Writer:
    """bob writes 1 MiB into his own thread every 0.2 s."""

    def __init__(self, svc, tid):
        self.svc, self.tid = svc, tid
        self.ok = self.fail = 0
        self.errors = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._loop)

    def _loop(self):
        sess = requests.Session()
        while not self.stop.is_set():
            try:
                r = self.svc.execute(
                    self.tid, "dd if=/dev/zero of=/home/yuxi/user-data/workspace/w "
                    "bs=65536 count=16 2>&1 && echo written", who="bob", session=sess,
                    timeout=60)
                good = r.status_code == 200 and r.json()["exit_code"] == 0 and \
                    "written" in r.json()["output"]
                if not good:
                    self.errors.append(r.text[:200])
            except requests.RequestException as e:
                good = False
                self.errors.append(str(e))
            self.ok += good
            self.fail += not good
            time.sleep(0.2)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join(timeout=120)


DD = ("dd if=/dev/zero of=/home/yuxi/user-data/workspace/big bs=1048576 count=32 2>&1; "
      "echo rc=$?; ls -l /home/yuxi/user-data/workspace/big")


def big_size(out):
    m = re.search(r"\s(\d+)\s+\w{3}\s+\d+\s+[\d:]+\s+/home/yuxi/user-data/workspace/big", out)
    return int(m.group(1)) if m else None


@pytest.fixture(scope="module")
def prod():
    svc = quota_service()
    yield svc
    svc.stop()


def test_quota_holds_for_one_thread_only(prod):
    svc = prod
    tid = svc.new_thread("alice")
    bobs = svc.new_thread("bob")
    ud = user_data(svc, tid)
    assert is_mount(ud), P.yxsvc.mounts_below(svc.base)
    img = os.path.join(svc.saves, "threads", tid, "user-data.img")
    with Writer(svc, bobs) as bob:
        # an existing file, then twice the quota onto it
        r = upload(svc, tid, "/workspace/keep.txt", b"old content")
        assert r.status_code == 201, r.text
        t0 = time.time()
        r = upload(svc, tid, "/workspace/keep.txt", b"U" * (2 * QUOTA))
        up_s = time.time() - t0
        with open(os.path.join(ud, "workspace", "keep.txt"), "rb") as f:
            kept = f.read()
        temps = [n for n in os.listdir(os.path.join(ud, "workspace")) if n.startswith(".yx-")]
        held = r.status_code == 507 and code(r) == "quota_exceeded" and \
            kept == b"old content" and not temps
        stats.case(G, "32 MiB upload on a 16 MiB quota: %d %s, old file %s, temps %s"
                   % (r.status_code, code(r), "kept" if kept == b"old content" else kept[:20],
                      temps), escapes=not held)
        stats.measure(G, "quota_upload_refused_s", round(up_s, 2))
        assert held, (r.status_code, r.text, kept[:40], temps)
        # dd past the quota inside the sandbox
        out = svc.execute(tid, DD).json()["output"]
        size = big_size(out)
        held = "No space left on device" in out and "rc=0" not in out and \
            size is not None and size < QUOTA
        stats.case(G, "dd 32 MiB on a 16 MiB quota: %s bytes written" % size,
                   escapes=not held)
        stats.measure(G, "quota_dd_written_bytes", size)
        assert held, out
        # the API on the disk filled to the last block
        svc.execute(tid, "cat /dev/zero > /home/yuxi/user-data/workspace/rest")
        r = svc.request("alice", "POST", "/api/filesystem/write",
                        json={"thread_id": tid, "path": "/workspace/w.txt",
                              "content": "w" * 60000})
        held = r.status_code == 507 and code(r) == "quota_exceeded"
        stats.case(G, "write on a full quota: %d %s" % (r.status_code, code(r)),
                   escapes=not held)
        assert held, r.text
        st = os.stat(img)
        host = st.st_blocks * 512
        stats.case(G, "image on the host: %d bytes" % host, escapes=host > QUOTA)
        stats.measure(G, "quota_image_host_bytes_full", host)
        # rm: usable again, commands and uploads
        out = svc.execute(tid, "rm /home/yuxi/user-data/workspace/big "
                          "/home/yuxi/user-data/workspace/rest && "
                          "echo again > /home/yuxi/user-data/workspace/a.txt && "
                          "cat /home/yuxi/user-data/workspace/a.txt").json()
        r = upload(svc, tid, "/workspace/small.bin", b"s" * (1 << 20))
        again = out["exit_code"] == 0 and out["output"] == "again\n" and r.status_code == 201
        stats.case(G, "writes after rm: %s %d" % (out["output"].strip(), r.status_code),
                   escapes=not again)
        assert again, (out, r.text)
        time.sleep(0.5)
    stats.case(G, "bob's writes meanwhile: %d ok, %d failed" % (bob.ok, bob.fail),
               lost_requests=bob.fail)
    stats.measure(G, "quota_neighbour_writes", {"ok": bob.ok, "failed": bob.fail})
    assert bob.fail == 0 and bob.ok > 0, bob.errors[:3]
    # delete: no mount, no loop device, no image; bob's image stays
    assert svc.request("alice", "DELETE", "/api/threads/" + tid).status_code == 204
    threads = os.path.join(svc.saves, "threads")
    loops_ok = P.yxsvc.wait_for(lambda: loops_below(svc.base) == 1, 10, 0.1)
    mounts = [m for m in P.yxsvc.mounts_below(threads) if m != user_data(svc, bobs)]
    left = [n for n in os.listdir(threads) if n.startswith(".trash-") or n == tid]
    gone = loops_ok and not mounts and not left
    stats.case(G, "delete: loops %d, mounts %s, left %s" % (loops_below(svc.base), mounts, left),
               outside_metadata=not gone)
    assert gone, (loops_below(svc.base), mounts, left)


def sockets(pid):
    """Inodes of the sockets pid holds open."""
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            out.add(t)
    return out


def test_workers_cannot_mount(prod):
    svc = prod
    helper = svc.helper_pid()
    egress = svc.egress_pids()	# supervisor and proxy: forked after the drop
    kids = svc.worker_pids() + egress
    bad = {p: has_sys_admin(p) for p in kids if has_sys_admin(p)}
    # permitted only: the master starts a new helper when one dies
    master = [k for k in has_sys_admin(svc.sandboxd.pid) if k != "CapPrm"]
    # the proxy parses what sandboxes send: it keeps none of the master's
    # sockets, the privileged helper's included
    shared = {p: sorted(sockets(p) & sockets(svc.sandboxd.pid)) for p in egress}
    shared = {p: v for p, v in shared.items() if v}
    ok = helper is not None and has_sys_admin(helper) and not bad and not master and \
        len(egress) == 2 and not shared
    stats.case(G, "CAP_SYS_ADMIN: helper %s, master %s, workers+reaper+egress %s; "
               "egress %s holding the master's sockets %s"
               % (has_sys_admin(helper) if helper else None, master, bad, egress, shared),
               escapes=not ok)
    assert ok, (helper, master, bad, egress, shared)


def test_control_without_quota_fills_the_host():
    svc = quota_service("control", YX_CONTROL_OFF="quota")
    try:
        tid = svc.new_thread("alice")
        ud = user_data(svc, tid)
        out = svc.execute(tid, DD).json()["output"]
        size = big_size(out)
        r = upload(svc, tid, "/workspace/up.bin", b"U" * (2 * QUOTA))
        caught = not is_mount(ud) and size == 32 << 20 and r.status_code == 201
        stats.control(G, caught, "quota off: dd wrote %s bytes, upload %d, mounted %s"
                      % (size, r.status_code, is_mount(ud)))
        stats.measure(G, "control_quota_off_dd_bytes", size)
        assert caught, (out, r.status_code)
        svc.request("alice", "DELETE", "/api/threads/" + tid)
    finally:
        svc.stop()


def test_control_workers_keep_cap_sys_admin():
    svc = quota_service("control", YX_CONTROL_OFF="privdrop")
    try:
        bad = {p: has_sys_admin(p) for p in svc.worker_pids() if has_sys_admin(p)}
        caught = len(bad) == svc.workers + 1
        stats.control(G, caught, "privdrop off: %d of %d workers+reaper hold CAP_SYS_ADMIN"
                      % (len(bad), svc.workers + 1))
        assert caught, bad
    finally:
        svc.stop()
