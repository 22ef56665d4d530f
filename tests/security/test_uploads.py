# SPDX-License-Identifier: MIT
"""Group 5: uploads (docs/security.md).

Over the limit, aborted mid-body (through nginx and straight at the worker),
disk full (a 256 KiB tmpfs mounted as the thread's user-data), collisions
with directories, FIFOs and symlinks: the answer is an error, the target is
either absent or intact (never half-written), no temporary file stays
visible, nothing is written outside. Control: the unsafe broker (writes in
place, follows symlinks) -> a symlink target outside is overwritten and a
disk-full upload leaves a truncated file.
"""
import glob
import os
import subprocess
import time
import urllib.parse

import pytest

import fcgi
from secfix import UPLOAD_LIMIT, _sec_session, stack, stats  # noqa: F401

G = 5
OLD = b"OLD-CONTENT\n"


def upload(svc, tid, path, data, **kw):
    q = "thread_id=%s&path=%s" % (tid, urllib.parse.quote(path, safe="/"))
    return svc.request("alice", "POST", "/api/filesystem/upload?" + q, data=data,
                       headers={"Content-Type": "application/octet-stream"}, **kw)


def write(svc, tid, path, content):
    return svc.request("alice", "POST", "/api/filesystem/write",
                       json={"thread_id": tid, "path": path, "content": content,
                             "overwrite": True})


def temps(root):
    return [p for p in glob.glob(os.path.join(root, "**", ".*"), recursive=True)
            if ".yx-" in os.path.basename(p)]


def fresh(svc):
    tid = svc.new_thread("alice")
    ws = svc.workspace(tid)
    with open(os.path.join(ws, "keep.txt"), "wb") as f:
        f.write(OLD)
    return tid, ws


def intact(ws, name="keep.txt"):
    try:
        with open(os.path.join(ws, name), "rb") as f:
            return f.read() == OLD
    except OSError:
        return False


def check(svc, tid, ws, what, r_status, ok_status, new_name=None):
    """Record one case: the status, the old file, the temps, the new name."""
    half = new_name is not None and os.path.lexists(os.path.join(ws, new_name))
    leak = bool(temps(svc.user_data(tid))) or not intact(ws) or half
    bad = r_status not in ok_status
    stats.case(G, escape=bad, leak=leak, what="%s -> %s" % (what, r_status))
    assert not bad and not leak, (what, r_status, temps(svc.user_data(tid)), intact(ws), half)


def test_over_limit():
    svc = stack("prod")
    tid, ws = fresh(svc)
    big = b"x" * (UPLOAD_LIMIT + 1)
    r = upload(svc, tid, "/workspace/keep.txt", big)
    check(svc, tid, ws, "over limit onto existing", r.status_code, (413,))
    r = upload(svc, tid, "/workspace/new.bin", big)
    check(svc, tid, ws, "over limit new", r.status_code, (413,), "new.bin")
    r = upload(svc, tid, "/workspace/chunked.bin", (big[i:i + 65536]
                                                    for i in range(0, len(big), 65536)))
    check(svc, tid, ws, "over limit chunked", r.status_code, (413,), "chunked.bin")
    r = upload(svc, tid, "/workspace/exact.bin", b"y" * UPLOAD_LIMIT)
    assert r.status_code == 201 and os.path.getsize(os.path.join(ws, "exact.bin")) == UPLOAD_LIMIT
    stats.case(G)


def test_aborted_mid_body():
    svc = stack("prod")
    tid, ws = fresh(svc)
    # through nginx: announce 600 KB, send 100 KB, vanish
    for name in ("keep.txt", "aborted.bin"):
        q = "thread_id=%s&path=/workspace/%s" % (tid, name)
        head = ("POST /api/filesystem/upload?%s HTTP/1.1\r\nHost: localhost\r\n"
                "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"
                "Content-Length: 600000\r\nConnection: close\r\n\r\n" % (q, svc.tokens["alice"]))
        import socket
        import ssl
        ctx = ssl.create_default_context(cafile=os.path.join(svc.base, "cert.pem"))
        ctx.check_hostname = False
        with socket.create_connection(("127.0.0.1", svc.port), timeout=10) as s:
            with ctx.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(head.encode() + b"z" * 100000)
        time.sleep(0.5)
        check(svc, tid, ws, "aborted via nginx " + name, 0, (0,),
              "aborted.bin" if name == "aborted.bin" else None)
    # straight at the worker (nginx buffers bodies; the worker must cope too)
    for name in ("keep.txt", "aborted2.bin"):
        params = fcgi.api_params("POST", "/api/filesystem/upload",
                                 "thread_id=%s&path=/workspace/%s" % (tid, name), user="alice")
        params = [(k, "600000" if k == "CONTENT_LENGTH" else v) for k, v in params]
        fcgi.request_abort(svc.sock, params, b"z" * 100000)
        time.sleep(0.5)
        check(svc, tid, ws, "aborted at worker " + name, 0, (0,),
              "aborted2.bin" if name == "aborted2.bin" else None)
    # the workers are all still serving
    for _ in range(6):
        assert svc.request("alice", "GET", "/api/filesystem/ls?thread_id=" + tid).status_code == 200


@pytest.fixture
def small_fs():
    """A service thread whose user-data is a 256 KiB tmpfs."""
    mounted = []

    def make(svc):
        tid, ws = fresh(svc)
        ud = svc.user_data(tid)
        # owned like the user-data it replaces (the thread's own uid)
        st = os.stat(ud)
        opts = "size=256k,mode=0755,uid=%d,gid=%d" % (st.st_uid, st.st_gid)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "yxsecfull",
                           ud], capture_output=True).returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
        mounted.append(ud)
        ws = svc.workspace(tid)
        with open(os.path.join(ws, "keep.txt"), "wb") as f:
            f.write(OLD)
        return tid, ws
    yield make
    for ud in mounted:
        subprocess.run(["umount", "-l", ud], capture_output=True)


def test_disk_full(small_fs):
    svc = stack("prod")
    tid, ws = small_fs(svc)
    data = b"F" * (600 * 1024)
    r = upload(svc, tid, "/workspace/keep.txt", data)
    check(svc, tid, ws, "disk full overwrite", r.status_code, (507, 413))
    r = upload(svc, tid, "/workspace/full.bin", data)
    check(svc, tid, ws, "disk full new", r.status_code, (507, 413), "full.bin")
    r = write(svc, tid, "/workspace/keep.txt", "W" * (600 * 1024 - 100))
    check(svc, tid, ws, "disk full write", r.status_code, (507, 413))
    # space is back: a small upload works
    r = upload(svc, tid, "/workspace/small.bin", b"s" * 1000)
    assert r.status_code == 201, r.text
    stats.case(G)


def plant_victim(svc):
    """<base>/outside/victim.txt holding VICTIM, beside every thread; returns
    the directory."""
    outside = os.path.join(svc.base, "outside")
    os.makedirs(outside, exist_ok=True)
    with open(os.path.join(outside, "victim.txt"), "wb") as f:
        f.write(b"VICTIM")
    return outside


def test_collisions():
    svc = stack("prod")
    tid, ws = fresh(svc)
    outside = plant_victim(svc)
    os.mkdir(os.path.join(ws, "adir"))
    os.mkfifo(os.path.join(ws, "fifo"))
    os.symlink(os.path.join(outside, "victim.txt"), os.path.join(ws, "lnk"))
    os.symlink(outside, os.path.join(ws, "ldir"))
    os.symlink("lnk", os.path.join(ws, "lnk2"))
    os.symlink("/nonexistent/x", os.path.join(ws, "dangling"))
    cases = [("adir", (400,)), ("fifo", (400, 403)), ("lnk", (403, 400)),
             ("lnk2", (403, 400)), ("ldir/new.txt", (403, 400, 404)),
             ("ldir/victim.txt", (403, 400, 404)), ("keep.txt/x", (400, 403, 404, 409)),
             ("dangling", (403, 400))]
    for name, ok in cases:
        for how in ("upload", "write"):
            t0 = time.time()
            if how == "upload":
                r = upload(svc, tid, "/workspace/" + name, b"PWNED", timeout=15)
            else:
                r = write(svc, tid, "/workspace/" + name, "PWNED")
            hang = time.time() - t0 > 10
            with open(os.path.join(outside, "victim.txt"), "rb") as f:
                victim = f.read() == b"VICTIM"
            created = sorted(os.listdir(outside)) != ["victim.txt"]
            bad = r.status_code not in ok or not victim or created
            leak = bool(temps(svc.user_data(tid))) or not intact(ws)
            stats.case(G, escape=bad, leak=leak, hang=hang,
                       what="%s %s -> %d" % (how, name, r.status_code))
            assert not (bad or leak or hang), (how, name, r.status_code, r.text, victim, created)
    assert os.path.isdir(os.path.join(ws, "adir")) and os.path.islink(os.path.join(ws, "lnk"))


def test_control_broker_leaks(small_fs):
    c = stack("cbroker")
    tid, ws = fresh(c)
    outside = plant_victim(c)
    os.symlink(os.path.join(outside, "victim.txt"), os.path.join(ws, "lnk"))
    upload(c, tid, "/workspace/lnk", b"PWNED")
    with open(os.path.join(outside, "victim.txt"), "rb") as f:
        assert stats.control(G, f.read() == b"PWNED", "unsafe broker: symlink followed")
    tid, ws = small_fs(c)
    upload(c, tid, "/workspace/keep.txt", b"F" * (600 * 1024))
    assert stats.control(G, not intact(ws), "unsafe broker: half-written visible")


def delete(svc, tid, path, recursive=False):
    return svc.request("alice", "POST", "/api/filesystem/delete",
                       json={"thread_id": tid, "path": path, "recursive": recursive})


def delete_through_links(svc):
    """A symlinked directory and a link chain planted in the workspace: can
    a delete reach the victim outside? Returns (statuses, victim gone)."""
    tid, ws = fresh(svc)
    outside = os.path.join(svc.base, "outside-del")
    os.makedirs(outside, exist_ok=True)
    victim = os.path.join(outside, "victim.txt")
    with open(victim, "wb") as f:
        f.write(b"VICTIM")
    os.symlink(outside, os.path.join(ws, "ldir"))
    os.symlink("ldir", os.path.join(ws, "ldir2"))
    st = [delete(svc, tid, "/workspace/ldir/victim.txt").status_code,
          delete(svc, tid, "/workspace/ldir2/victim.txt").status_code,
          delete(svc, tid, "/workspace/ldir", recursive=True).status_code]
    return st, not os.path.exists(victim), ws


def test_delete_never_follows_a_symlink():
    svc = stack("prod")
    st, gone, ws = delete_through_links(svc)
    # the links' targets are refused; the link itself is removed as a link
    bad = gone or st[:2] != [403, 403] or st[2] != 200
    stats.case(G, escape=bad, what="delete through planted links -> %r" % st)
    assert not bad, st
    assert not os.path.lexists(os.path.join(ws, "ldir"))
    # the thread's own layout folders stay, their contents can go
    tid, ws = fresh(svc)
    r = delete(svc, tid, "/workspace", recursive=True)
    stats.case(G, escape=r.status_code != 403, what="delete /workspace -> %d" % r.status_code)
    assert r.status_code == 403 and os.path.isdir(ws)
    r = delete(svc, tid, "/workspace/keep.txt")
    assert r.status_code == 200 and not os.path.exists(os.path.join(ws, "keep.txt"))


def test_delete_control_follows():
    c = stack("cbroker")
    st, gone, _ = delete_through_links(c)
    assert stats.control(G, gone, "unsafe broker: delete through a symlinked parent"), st
