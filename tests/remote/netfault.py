# SPDX-License-Identifier: MIT
"""Network faults of our own making for the remote-mode fault tests
(test_remote_faults.py), confined to this test's own hosts:

- `Relay`: a TCP relay of ours on 127.0.0.1 in the place of a host (the
  front's URL names the relay, which forwards to the host's nginx):
  `delay(s)` makes every byte from the front reach the host s seconds late
  (a host s slower), `swallow()` accepts and reads and never answers (a
  host that hangs), `reset()` cuts every connection with a RST (a
  connection lost mid-request), `heal()` passes bytes again (the
  connections whose bytes it swallowed are cut: their TLS is broken).
- `NsHost`: a sandbox host whose nginx runs in a network namespace of ours
  (`ip netns exec`), reached over a veth pair on a 10.213.x.y/30 of ours
  (the daemon stays outside: its FastCGI socket is a file). `drop()` and
  `partition()` add iptables rules inside that namespace only (nothing of
  the machine's own tables, qdiscs or `lo` is touched), `heal()` flushes
  them; `stop()` deletes the namespace and the veth pair with it.

The kernel here has no netem (CONFIG_NET_SCH_NETEM is off), hence the
relay for the slow host. Needs root, `ip` and `iptables`.
"""
import os
import queue
import shutil
import socket
import struct
import subprocess
import threading
import time

from yxsvc import ProvisionerService, free_port


def can_make_faults():
    """None when namespaces and iptables can be used here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "iptables", "ss"):
        if shutil.which(tool) is None:
            return "no %s" % tool
    return None


class _Pair:
    """One connection through the relay: front side c, host side u."""

    def __init__(self, relay, c, u):
        self.relay, self.c, self.u = relay, c, u
        self.q = queue.Queue()
        self.swallowed = False
        self.closed = False
        for fn in (self._up_read, self._up_write, self._down):
            threading.Thread(target=fn, daemon=True).start()

    def _up_read(self):		# front -> host: delayed, or swallowed
        while True:
            try:
                data = self.c.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.q.put((0, None))
                return
            if self.relay.swallowing:
                self.swallowed = True
                continue
            self.q.put((time.monotonic() + self.relay.delay_s, data))

    def _up_write(self):
        while True:
            due, data = self.q.get()
            if data is None:
                self._shut(self.u)
                return
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                self.u.sendall(data)
            except OSError:
                self.close()
                return

    def _down(self):		# host -> front: as it comes, unless swallowed
        while True:
            try:
                data = self.u.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._shut(self.c)
                return
            if self.relay.swallowing:
                self.swallowed = True
                continue
            try:
                self.c.sendall(data)
            except OSError:
                self.close()
                return

    @staticmethod
    def _shut(s):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def reset(self):
        """Cut: a RST to the front, the host's side closed."""
        try:
            self.c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def close(self):
        """Both sides closed. A socket a reader thread is blocked on is only
        released (and its RST or FIN sent) when that read returns: shutting
        the reading side down wakes it first."""
        if self.closed:
            return
        self.closed = True
        for s, how in ((self.c, socket.SHUT_RD), (self.u, socket.SHUT_RDWR)):
            try:
                s.shutdown(how)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass


class Relay:
    """127.0.0.1:port -> 127.0.0.1:upstream_port (see the module's text)."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.delay_s = 0.0
        self.swallowing = False
        self.pairs = []
        self.lock = threading.Lock()
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.port = free_port()
        self.ls.bind(("127.0.0.1", self.port))
        self.ls.listen(256)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.upstream, timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.pairs = [p for p in self.pairs if not p.closed]
                self.pairs.append(_Pair(self, c, u))

    def _each(self, pred, act):
        with self.lock:
            ps = [p for p in self.pairs if not p.closed and pred(p)]
        for p in ps:
            act(p)
        return len(ps)

    def delay(self, s):
        self.delay_s = s

    def swallow(self):
        self.swallowing = True

    def heal(self):
        """Bytes pass at once again; connections that lost bytes are cut."""
        self.delay_s = 0.0
        self.swallowing = False
        return self._each(lambda p: p.swallowed, _Pair.reset)

    def reset(self):
        """Every connection cut (RST to the front); returns how many."""
        return self._each(lambda p: True, _Pair.reset)

    def close(self):
        try:
            self.ls.close()
        except OSError:
            pass
        self.reset()


class RelayHost(ProvisionerService):
    """A sandbox host on 127.0.0.1 that the front reaches through a Relay."""

    def __init__(self, token_file, name, **kw):
        super().__init__(token_file, name=name, **kw)
        self.relay = Relay(self.port)

    def spec(self):
        return "%s=https://127.0.0.1:%d" % (self.name, self.relay.port)

    def front_addr(self):
        return ("127.0.0.1", self.relay.port)

    def heal(self):
        self.relay.heal()

    def stop(self):
        try:
            super().stop()
        finally:
            self.relay.close()


def _run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def _net_in_use(prefix):
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    return prefix in out or prefix in routes


class NsHost(ProvisionerService):
    """A sandbox host whose nginx is in a network namespace of ours (k: its
    index, 1..60, for the names and the /30 it gets)."""

    def __init__(self, token_file, name, k, **kw):
        super().__init__(token_file, name=name, **kw)
        tag = "%d%d" % (os.getpid() % 100000, k)
        self.ns = "yxnf" + tag
        self.veth, self.peer = "yxnf%sa" % tag, "yxnf%sb" % tag
        third = 100 + os.getpid() % 100
        while _net_in_use("10.213.%d.%d" % (third, 4 * k)):
            third = 100 + (third + 1 - 100) % 150
        self.gw = "10.213.%d.%d" % (third, 4 * k + 1)
        self.addr = "10.213.%d.%d" % (third, 4 * k + 2)
        self.origin = "https://%s:%d" % (self.addr, self.port)
        self.url = self.origin + self.url_prefix
        self.nginx_wrap = ["ip", "netns", "exec", self.ns]
        self.made_ns = False

    def setup(self):
        """The namespace and veth pair, then the pair of keys for its
        address (and localhost, the name the front's nginx checks)."""
        _run("ip", "netns", "add", self.ns)
        self.made_ns = True
        _run("ip", "link", "add", self.veth, "type", "veth", "peer", "name", self.peer)
        _run("ip", "link", "set", self.peer, "netns", self.ns)
        _run("ip", "addr", "add", self.gw + "/30", "dev", self.veth)
        _run("ip", "link", "set", self.veth, "up")
        for cmd in (["ip", "addr", "add", self.addr + "/30", "dev", self.peer],
                    ["ip", "link", "set", self.peer, "up"], ["ip", "link", "set", "lo", "up"]):
            _run("ip", "netns", "exec", self.ns, *cmd)
        os.makedirs(os.path.join(self.base, "run"), exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:%s" % self.addr,
                        "-keyout", os.path.join(self.base, "key.pem"), "-out", self.cert],
                       check=True, capture_output=True)
        self.ready = True

    def edit_conf(self, text):
        old = "listen 127.0.0.1:%d " % self.port
        assert old in text, "nginx/provisioner.conf.in changed: no listen line"
        return text.replace(old, "listen %s:%d " % (self.addr, self.port))

    def front_addr(self):
        return (self.addr, self.port)

    def iptables(self, *args):
        _run("ip", "netns", "exec", self.ns, "iptables", *args)

    def drop(self):
        """Every packet to the host dropped (nothing answered, no RST)."""
        self.iptables("-A", "INPUT", "-p", "tcp", "--dport", str(self.port), "-j", "DROP")

    def partition(self):
        """Both ways cut."""
        self.drop()
        self.iptables("-A", "OUTPUT", "-p", "tcp", "--sport", str(self.port), "-j", "DROP")

    def heal(self):
        self.iptables("-F", "INPUT")
        self.iptables("-F", "OUTPUT")

    def stop(self):
        try:
            super().stop()
        finally:
            if self.made_ns:
                subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
                self.made_ns = False
            subprocess.run(["ip", "link", "del", self.veth], capture_output=True)


def conns(svc, addr):
    """Established TCP connections of svc's processes (its workers) to
    addr (host, port)."""
    pids = set(svc.worker_pids())
    out = subprocess.run(["ss", "-Htnp", "state", "established", "dst", "%s:%d" % addr],
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines()
               if any("pid=%d," % p in line for p in pids))
