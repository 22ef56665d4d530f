# SPDX-License-Identifier: MIT
"""Group 3: host-side access against what the sandbox does to its own tree
(docs/security.md), driven from inside a real sandbox through
POST /api/execute.

A process in the thread's container (default image, python3 for the
renameat2 racer) plants symlinks to a host secret, a symlinked directory,
magic links through /proc, a relative link into another user's thread, a
FIFO, a unix socket, setuid and mode-000 files, a mode-000 directory and a
hardlink; the test adds what only a privileged sandbox could (a character
device, a hardlink to a host file) and, under gVisor, which creates no FIFO
on a bind mount, the FIFO. Every host-side reader (agent cat, ls,
glob, grep, downloads; viewer tree, file, download through nginx) and every
writer (upload, write) is then aimed at them, and, while a racer inside the
container loops renameat2(RENAME_EXCHANGE) between a real directory/file and
a symlink to the host, the file read, the tree listing and the nginx
download are tried 1,000 times each (10,000 under PROOF_SOAK=1). gVisor
has no RENAME_EXCHANGE (EINVAL): under runsc the racer swaps with three
renames through a spare name, the same race with a wider window.

Outcome per case: host bytes (the secret's token in any answer), outside
metadata (the host marker name or the secret's size in any answer, a host
file changed or created), hangs (no answer within 15 s). All must be 0.
Control: the security suite's yuxi-sandboxd-control-broker (broker follows
symlinks, blocks on FIFOs, writes in place) behind nginx with
`disable_symlinks off` must show the leak of every protection test.
"""
import errno
import hashlib
import os
import secrets
import shutil
import stat
import tempfile
import threading
import time
import urllib.parse

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 3
TRIES = 10000 if P.SOAK else 1000
SECRET_SIZE = 77777
HANG_S = 15

pytestmark = pytest.mark.skipif(not P.image_present(P.FULL_IMAGE),
                                reason="image %s not built" % P.FULL_IMAGE)


# ----------------------------------------------------------------- the host
class Host:
    """A host directory the sandbox must never reach: a secret file with a
    unique token and size, a marker file name, a hardlink target."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="yxpf-host-")
        os.chmod(self.dir, 0o755)
        self.token = "YXPROOFSECRET" + secrets.token_hex(8)
        self.marker = "HOSTONLY" + secrets.token_hex(6)
        line = (self.token + "\n").encode()
        data = line * (SECRET_SIZE // len(line))
        self.data = data + b"x" * (SECRET_SIZE - len(data))
        self.secret = os.path.join(self.dir, "f")
        with open(self.secret, "wb") as f:
            f.write(self.data)
        with open(os.path.join(self.dir, self.marker), "w") as f:
            f.write("marker\n")
        self.hl_target = os.path.join(self.dir, "hltarget")
        with open(self.hl_target, "wb") as f:
            f.write(b"host hardlink target\n")
        self.snap = self.snapshot()

    def snapshot(self):
        out = {}
        for n in sorted(os.listdir(self.dir)):
            p = os.path.join(self.dir, n)
            st = os.lstat(p)
            with open(p, "rb") as f:
                out[n] = (st.st_mode, st.st_size, st.st_mtime_ns,
                          hashlib.sha256(f.read()).hexdigest())
        return out

    def changed(self):
        return self.snapshot() != self.snap

    def leak(self, body):
        """(host_bytes, outside_metadata) seen in one answer body (bytes)."""
        hb = self.token.encode() in body
        md = self.marker.encode() in body or (b'"size":%d' % SECRET_SIZE) in body.replace(
            b" ", b"")
        return hb, md

    def fini(self):
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------ the sandbox
PLANT = r"""
set -u
cd /home/yuxi/user-data/workspace
H=%(host)s
ln -s $H/f link_file
ln -s $H link_dir
ln -s /proc/self/root$H/f magic_self
ln -s /proc/1/root$H/f magic_1
ln -s /proc/self/cwd/../../../../..$H/f magic_cwd
ln -s ../../../%(other)s/user-data/workspace/bob.txt link_other
ln -s link_file chain
mkdir -p sub; ln -s ../link_dir sub/up
mkfifo fifo
python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("sock")'
mknod devnode c 1 5 2>/dev/null && echo MKNOD_WORKED
echo suid > suid; chmod 6755 suid
echo noperm > noperm; chmod 000 noperm
mkdir nodir; echo hidden > nodir/x.txt; chmod 000 nodir
echo victim > victim; ln victim hardlink
mkdir rd; echo benign > rd/f
echo benign > rf
ln -s $H rl
ln -s $H/f rs
echo planted
"""

RACER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT = -100
pairs = [(b"rd", b"rl"), (b"rf", b"rs")]
end = time.time() + float(sys.argv[1])
n = 0
# gVisor has no RENAME_EXCHANGE (EINVAL): there the swap is three renames
xchg = libc.renameat2(AT, b"rd", AT, b"rl", 2) == 0 or ctypes.get_errno() != 22


def swap(a, b):
    if xchg:
        return libc.renameat2(AT, a, AT, b, 2) == 0
    try:
        os.rename(a, b"rtmp")
        os.rename(b, a)
        os.rename(b"rtmp", b)
        return True
    except OSError:
        return False


while time.time() < end and not os.path.exists("stop"):
    for _ in range(2000):
        for a, b in pairs:
            n += swap(a, b)
print("exchanges", n, "atomic" if xchg else "three-renames")
"""

READ_EPS = ("/api/filesystem/cat", "/api/viewer/filesystem/file",
            "/api/filesystem/download", "/api/viewer/filesystem/download")
LIST_EPS = ("/api/filesystem/ls", "/api/viewer/filesystem/tree")
LINKS = ("link_file", "link_dir/f", "magic_self", "magic_1", "magic_cwd", "link_other",
         "chain", "sub/up/f", "rl/f", "rs")
ODD = ("fifo", "sock", "devnode", "suid", "noperm", "nodir/x.txt", "hardlink")


def q(tid, path, **extra):
    d = {"thread_id": tid, "path": path}
    d.update(extra)
    return urllib.parse.urlencode(d)


def get(svc, path, session=None):
    """GET as alice; returns (status, body bytes) or (None, b"") on a hang."""
    try:
        r = svc.request("alice", "GET", path, timeout=HANG_S, session=session)
        return r.status_code, r.content
    except requests.exceptions.Timeout:
        return None, b""
    except requests.RequestException as e:
        return -1, str(e).encode()


def post(svc, path, session=None, **kw):
    try:
        r = svc.request("alice", "POST", path, timeout=HANG_S, session=session, **kw)
        return r.status_code, r.content
    except requests.exceptions.Timeout:
        return None, b""
    except requests.RequestException as e:
        return -1, str(e).encode()


class Env:
    """One service (prod or control) with a planted thread and bob's thread."""

    def __init__(self, kind, host):
        nginx = "symlinks" if kind == "cbroker" else "dev"
        self.svc = P.ProofService(kind, nginx, YUXI_SANDBOX_IMAGE=P.FULL_IMAGE,
                                  YUXI_COMMAND_PATH_POLICY="off",
                                  YUXI_SANDBOX_EXEC_TIMEOUT="600").start()
        self.host = host
        self.kind = kind
        svc = self.svc
        self.bob = svc.new_thread("bob")
        r = svc.request("bob", "POST", "/api/filesystem/write",
                        json={"thread_id": self.bob, "path": "/workspace/bob.txt",
                              "content": host.token + " bob's private file\n"})
        assert r.status_code == 201, r.text
        self.tid = svc.new_thread("alice")
        out = svc.run(self.tid, PLANT % {"host": host.dir, "other": self.bob}, timeout=60)
        assert "planted" in out["output"], out
        self.mknod_worked = "MKNOD_WORKED" in out["output"]
        ws = svc.workspace(self.tid)
        self.ws = ws
        # gVisor makes no FIFO on a bind mount (mkfifo fails inside): the
        # host plants it, so the readers still meet one
        self.fifo_inside = os.path.exists(os.path.join(ws, "fifo"))
        if not self.fifo_inside:
            os.mkfifo(os.path.join(ws, "fifo"), 0o644)
        # what only a privileged sandbox could plant: a device, a hardlink out
        if not os.path.exists(os.path.join(ws, "devnode")):
            os.mknod(os.path.join(ws, "devnode"), 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        try:
            os.link(host.hl_target, os.path.join(ws, "hl_out"))
            self.hl_out = True
        except OSError as e:
            # user-data a disk image of its own (YUXI_THREAD_DISK_QUOTA):
            # a hardlink to a host file cannot exist there at all
            if e.errno != errno.EXDEV:
                raise
            self.hl_out = False

    def unblock_fifo(self):
        """Release a reader blocked on the FIFO (control only)."""
        p = os.path.join(self.ws, "fifo")
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass

    def fini(self):
        self.unblock_fifo()
        self.svc.stop()


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.fini()


@pytest.fixture(scope="module")
def prod(host):
    e = Env("prod", host)
    yield e
    e.fini()


@pytest.fixture(scope="module")
def ctl(host):
    e = Env("cbroker", host)
    yield e
    e.fini()


def judge(env, what, status, body):
    """Classify one answer; record it (prod) and return (bad, hang)."""
    hb, md = env.host.leak(body)
    hang = status is None
    if env.host.changed():
        md = True
    if env.kind == "prod":
        stats.case(G, "%s -> %s" % (what, status), host_bytes=hb, outside_metadata=md,
                   hangs=hang)
    return (hb or md), hang


# ------------------------------------------------------------------ reads
def read_cases(env):
    """All static read/list attempts; returns {case: (leaked, hung)}."""
    svc, tid = env.svc, env.tid
    res = {}
    for name in LINKS + ODD + ("hl_out",):
        for ep in READ_EPS:
            if name == "fifo" and env.kind != "prod" and ep != READ_EPS[0]:
                continue  # one blocked control worker is proof enough
            st, body = get(svc, ep + "?" + q(tid, "/workspace/" + name))
            # a device's or socket's "content" served is a leak as well
            odd = name in ("devnode", "sock") and st == 200
            if odd and env.kind == "prod":
                stats.case(G, "%s %s served" % (ep, name), escapes=1)
            leaked, hung = judge(env, "%s %s" % (ep, name), st, body)
            res[(ep, name)] = (leaked or odd, hung)
            if st is None:
                env.unblock_fifo()
    for d in ("", "link_dir", "rl", "sub/up", "sub", "nodir"):
        for ep in LIST_EPS:
            st, body = get(svc, ep + "?" + q(tid, "/workspace/" + d))
            res[(ep, d)] = judge(env, "%s %s" % (ep, d or "."), st, body)
    st, body = get(svc, "/api/filesystem/grep?" + q(tid, "/workspace", pattern=env.host.token))
    res[("grep", "token")] = judge(env, "grep token", st, body)
    st, body = get(svc, "/api/filesystem/grep?" + q(tid, "/workspace", pattern="marker"))
    res[("grep", "marker")] = judge(env, "grep marker", st, body)
    st, body = get(svc, "/api/filesystem/glob?" + q(tid, "/workspace", pattern="**/*"))
    res[("glob", "**")] = judge(env, "glob **", st, body)
    return res


def test_static_reads_prod(prod):
    res = read_cases(prod)
    print("static reads prod: %d cases; FIFO planted by the %s"
          % (len(res), "sandbox" if prod.fifo_inside else "host (none made inside)"))
    bad = {k: v for k, v in res.items() if v[0] or v[1]}
    assert not bad, bad
    assert not prod.mknod_worked, "mknod succeeded inside the sandbox"


def test_static_reads_control(ctl):
    res = read_cases(ctl)
    must = [("/api/filesystem/cat", "link_file"), ("/api/viewer/filesystem/file", "link_file"),
            ("/api/filesystem/cat", "magic_self"), ("/api/filesystem/cat", "link_other"),
            ("/api/viewer/filesystem/download", "link_file"),
            ("/api/filesystem/ls", "link_dir"), ("/api/viewer/filesystem/tree", "link_dir"),
            ("/api/viewer/filesystem/file", "devnode"), ("grep", "token")]
    if ctl.svc.disk_quota() > 0:
        # user-data is a disk image mounted nodev (the default quota, or
        # YX_TEST_DISK_QUOTA): the device node cannot be opened even
        # without the broker's check, so there is no leak to see
        must.remove(("/api/viewer/filesystem/file", "devnode"))
    for k in must:
        leaked, hung = res[k]
        stats.control(G, leaked, "control read %s" % (k,))
    fifo = res[("/api/filesystem/cat", "fifo")]
    stats.control(G, fifo[1], "control FIFO read blocks")
    missed = [k for k in must if not res[k][0]]
    assert not missed, "control did not leak for %s" % missed
    assert fifo[1], "control FIFO read did not hang"


# ----------------------------------------------------------------- writes
def write_cases(env):
    """Uploads and writes aimed at the planted names; returns {case: ...}."""
    svc, tid, ws = env.svc, env.tid, env.ws
    res = {}
    body = b"uploaded by the proof suite\n"
    for name in ("link_file", "link_dir/new.txt", "magic_self", "chain", "sub/up/new2.txt",
                 "fifo", "sock", "devnode", "hardlink", "hl_out", "suid", "noperm",
                 "nodir/x.txt"):
        st, rb = post(svc, "/api/filesystem/upload?" + q(tid, "/workspace/" + name),
                      data=body, headers={"Content-Type": "application/octet-stream"})
        leaked, hung = judge(env, "upload " + name, st, rb)
        extra = False
        if name == "hardlink":
            with open(os.path.join(ws, "victim"), "rb") as f:
                extra = f.read() != b"victim\n"
        if name == "suid" and st == 201:
            m = os.lstat(os.path.join(ws, "suid")).st_mode
            extra = bool(m & (stat.S_ISUID | stat.S_ISGID))
        if extra and env.kind == "prod":
            stats.case(G, "upload %s side effect" % name, escapes=1)
        res[("upload", name)] = (leaked or extra, hung)
        if hung:
            env.unblock_fifo()
    for name in ("link_file", "magic_1", "link_other"):
        st, rb = post(svc, "/api/filesystem/write",
                      json={"thread_id": tid, "path": "/workspace/" + name,
                            "content": "overwritten\n", "overwrite": True})
        leaked, hung = judge(env, "write " + name, st, rb)
        if name == "link_other":
            with open(os.path.join(svc.workspace(env.bob), "bob.txt")) as f:
                leaked = leaked or "overwritten" in f.read()
        res[("write", name)] = (leaked, hung)
    return res


def test_writes_prod(prod, host):
    res = write_cases(prod)
    bad = {k: v for k, v in res.items() if v[0] or v[1]}
    assert not bad, bad
    assert not host.changed()
    assert sorted(os.listdir(host.dir)) == sorted(host.snap)


def test_writes_control(ctl, host):
    res = write_cases(ctl)
    for k in (("upload", "link_file"), ("upload", "hl_out"), ("upload", "hardlink"),
              ("upload", "suid"), ("write", "link_other")):
        if k[1] == "hl_out" and not ctl.hl_out:
            continue	# no host hardlink on a disk image: nothing to leak
        stats.control(G, res[k][0], "control %s" % (k,))
        assert res[k][0], "control did not leak for %s" % (k,)
    # restore the host directory for the race tests
    shutil.rmtree(host.dir, ignore_errors=True)
    host.__init__()


# ------------------------------------------------------------------- race
def race(env, tries, stop_at_first=False):
    """Run the renameat2 racer in the sandbox while trying the file read, the
    tree listing and the nginx download `tries` times each (two clients).
    Returns {kind: [host-byte leaks, metadata-only leaks, hangs, tries, 200s]}
    and the racer's output."""
    svc, tid, host = env.svc, env.tid, env.host
    racer_out = {}
    stop = os.path.join(env.ws, "stop")
    if os.path.exists(stop):
        os.unlink(stop)
    # the racer's names must exist afresh (the static tests may have changed them)
    svc.run(tid, "cd /home/yuxi/user-data/workspace && rm -rf rd rf rl rs rtmp && mkdir rd && "
            "echo benign > rd/f && echo benign > rf && ln -s %s rl && ln -s %s/f rs"
            % (host.dir, host.dir), timeout=30)
    budget = 560 if P.SOAK else 240

    def run_racer():
        try:
            racer_out["r"] = svc.request(
                "alice", "POST", "/api/execute", session=requests.Session(),
                json={"thread_id": tid, "timeout": budget + 20,
                      "command": "python3 -c '%s' %d" % (RACER.replace("'", "'\"'\"'"), budget)},
                timeout=budget + 60).json()
        except Exception as e:
            racer_out["r"] = {"error": str(e)}

    rt = threading.Thread(target=run_racer, daemon=True)
    rt.start()
    time.sleep(1.5)
    kinds = {
        "file": ("/api/viewer/filesystem/file", "/workspace/rd/f"),
        "cat": ("/api/filesystem/cat", "/workspace/rf"),
        "tree": ("/api/viewer/filesystem/tree", "/workspace/rd"),
        "download": ("/api/viewer/filesystem/download", "/workspace/rd/f"),
        "download_file": ("/api/filesystem/download", "/workspace/rf"),
    }
    out = {k: [0, 0, 0, 0, 0] for k in kinds}  # bytes, metadata, hangs, done, ok
    lock = threading.Lock()

    def client(ks, n):
        sess = requests.Session()
        for k in ks:
            ep, path = kinds[k]
            url = ep + "?" + q(tid, path)
            for _ in range(n):
                st, body = get(svc, url, session=sess)
                hb, md = host.leak(body)
                with lock:
                    out[k][0] += hb
                    out[k][1] += md and not hb
                    out[k][2] += st is None
                    out[k][3] += 1
                    out[k][4] += st == 200
                if stop_at_first and (hb or md):
                    break

    per = tries
    ts = [threading.Thread(target=client, args=(("file", "tree", "download"), per // 2)),
          threading.Thread(target=client, args=(("file", "tree", "download"), per - per // 2)),
          threading.Thread(target=client, args=(("cat", "download_file"), max(1, per // 5)))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(stop, "w") as f:
        f.write("stop\n")
    rt.join(timeout=60)
    return out, racer_out.get("r", {})


def test_race_prod(prod):
    out, racer = race(prod, TRIES)
    print("race prod:", out, racer)
    assert "exchanges" in str(racer.get("output", "")), racer
    exchanges = int(racer["output"].split()[1])
    # gVisor's three-rename swap goes through its gofer (measured ~1,600
    # swaps/s against ~50,000 atomic exchanges/s under runc): there the bound
    # is per try, at least two swaps for each try of a reader
    need = 10000 if "atomic" in racer["output"] else 2 * TRIES
    assert exchanges > need, "the racer barely ran: %r" % racer
    stats.measure(G, "race_exchanges_prod", exchanges)
    for k, (hb, md, hangs, done, ok) in out.items():
        stats.add(G, cases=done, host_bytes=hb, outside_metadata=md, hangs=hangs)
        stats.measure(G, "race_%s_tries" % k, done)
        stats.measure(G, "race_%s_benign_200" % k, ok)
    assert all(v[0] == 0 and v[1] == 0 and v[2] == 0 for v in out.values()), out


def test_race_control(ctl):
    out, racer = race(ctl, min(TRIES, 300), stop_at_first=True)
    print("race control:", out, racer)
    for k in ("file", "tree", "download"):
        stats.control(G, out[k][0] + out[k][1] > 0, "control race %s" % k)
    assert all(out[k][0] + out[k][1] > 0 for k in ("file", "tree", "download")), out
