# SPDX-License-Identifier: MIT
"""Fixtures of the preview suite (docs/api.md "Previews") over the shared
harness tests/lib/yxsvc.py: the real service (master, workers, reaper,
ingress, nginx with TLS, dockerd) on its own port, shm name, container
prefix and temporary directory, with YUXI_PREVIEW_DOMAIN=preview.localhost:
<port> and the default image (python3: the box's server is boxsrv.py).

`pv` is one instance for the session; `factory(control_off=None,
edit=None, **YUXI_overrides)` makes further instances (the control daemon
with those protections off; `edit(text, svc)` changes the rendered nginx
configuration), all stopped afterwards. Every *.localhost name resolves to
127.0.0.1 in this process (yxsvc.resolve_localhost), so a preview's URL is
used as a browser would: its name as Host and SNI.

Helpers: `box(svc, port, who)` a new thread of `who` running boxsrv on
`port` (a background process), `make_preview(svc, tid, port, **body)` the
POST's answer, `get(svc, url, **kw)` a GET of a preview URL,
`tls(svc, url)` a TLS socket to it for raw HTTP and WebSocket,
`ws_connect`, `ws_send`, `ws_recv`.
"""
import base64
import os
import secrets
import socket
import ssl
import struct
import sys
import time
import urllib.parse

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from yxsvc import Service, build_path, engine_up, factory_of, resolve_localhost, \
    started, wait_for  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE = "yuxi-sandbox:latest"
CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")
resolve_localhost()


def default_image():
    from yxsvc import image_present
    return image_present(IMAGE)


def preview_service(stem, overrides=None, binary=None, control_off=None, edit=None):
    """A (not started) instance with previews on."""
    o = {"YUXI_SANDBOX_IMAGE": IMAGE}
    o.update(overrides or {})
    s = Service(stem=stem, overrides=o, binary=binary)
    s.env.setdefault("YUXI_PREVIEW_DOMAIN", "preview.localhost:%d" % s.port)
    if control_off:
        s.env["YX_CONTROL_OFF"] = control_off
    if edit is not None:
        s.edit_conf = lambda text: edit(text, s)
    return s


@pytest.fixture(scope="session")
def pv():
    yield from started(preview_service("qyxpv"))


@pytest.fixture
def factory():
    def new(control_off=None, edit=None, **overrides):
        return preview_service("qyxpf", overrides, CONTROL if control_off else None,
                               control_off, edit)
    yield from factory_of(new)


def agent_magic():
    """The agent protocol's magic (src/guest/agent_proto.h)."""
    with open(os.path.join(HERE, "..", "..", "src", "guest", "agent_proto.h")) as f:
        for line in f:
            if line.startswith("#define YX_AGENT_MAGIC"):
                return line.split('"')[1]
    raise AssertionError("no YX_AGENT_MAGIC in agent_proto.h")


def boxsrv_source():
    with open(os.path.join(HERE, "boxsrv.py")) as f:
        return f.read()


def start_boxsrv(s, tid, port, who="alice", extra=""):
    """Put boxsrv.py in the thread's workspace and run it on port (a
    background process); waits until it answers inside the box."""
    r = s.request(who, "POST", "/api/filesystem/write",
                  json={"thread_id": tid, "path": "boxsrv.py", "content": boxsrv_source(),
                        "overwrite": True})
    assert r.status_code == 201, r.text
    r = s.request(who, "POST", "/api/processes",
                  json={"thread_id": tid, "command": "exec python3 boxsrv.py %d %s" % (port, extra)})
    assert r.status_code == 201, r.text
    probe = ("python3 -c \"import socket,sys; s=socket.socket(socket.AF_INET6 if '--v6' in "
             "'%s' else socket.AF_INET); s.connect(('::1' if '--v6' in '%s' else '127.0.0.1', %d))\""
             % (extra, extra, port))
    assert wait_for(lambda: s.execute(tid, probe, who=who).json()["exit_code"] == 0, 20, 0.2)
    return r.json()["process_id"]


def box(s, port=8000, who="alice", extra=""):
    """A new thread of `who` whose sandbox runs boxsrv on port."""
    tid = s.new_thread(who)
    start_boxsrv(s, tid, port, who, extra)
    return tid


def make_preview(s, tid, port, who="alice", **body):
    b = {"port": port}
    b.update(body)
    return s.request(who, "POST", "/api/threads/%s/previews" % tid, json=b)


def preview_url(s, tid, port, who="alice", **body):
    r = make_preview(s, tid, port, who, **body)
    assert r.status_code == 201, r.text
    return r.json()["url"]


def get(s, url, path="", **kw):
    kw.setdefault("timeout", 60)
    kw.setdefault("verify", s.cert)
    kw.setdefault("allow_redirects", False)
    return requests.get(url.rstrip("/") + "/" + path.lstrip("/"), **kw)


def token_of(url):
    return urllib.parse.urlsplit(url).hostname.split(".")[0]


def tls(s, url, timeout=30):
    """A TLS connection to the preview's host (SNI and verification by name)."""
    host = urllib.parse.urlsplit(url).hostname
    ctx = ssl.create_default_context(cafile=s.cert)
    raw = socket.create_connection(("127.0.0.1", s.port), timeout=timeout)
    return ctx.wrap_socket(raw, server_hostname=host), host


def http_head(conn):
    """Read a response's head from conn; (status, headers text, rest)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = conn.recv(65536)
        if not c:
            break
        buf += c
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    return status, head.decode("latin-1"), rest


def ws_connect(s, url, path="/ws"):
    """Open a WebSocket through the preview; (socket, status, head)."""
    conn, host = tls(s, url)
    key = base64.b64encode(os.urandom(16)).decode()
    conn.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                  "Sec-WebSocket-Version: 13\r\nOrigin: https://%s:%d\r\n\r\n"
                  % (path, host, s.port, key, host, s.port)).encode())
    status, head, rest = http_head(conn)
    conn.pending = rest
    return conn, status, head


def ws_send(conn, data, op=1):
    n = len(data)
    h = bytes([0x80 | op])
    if n < 126:
        h += bytes([0x80 | n])
    elif n < 65536:
        h += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        h += bytes([0x80 | 127]) + struct.pack("!Q", n)
    k = os.urandom(4)
    conn.sendall(h + k + bytes(b ^ k[i % 4] for i, b in enumerate(data)))


def _read_n(conn, n):
    while len(conn.pending) < n:
        c = conn.recv(65536)
        if not c:
            raise EOFError("connection closed")
        conn.pending += c
    out, conn.pending = conn.pending[:n], conn.pending[n:]
    return out


def ws_recv(conn):
    """One frame from the server: (opcode, payload)."""
    h = _read_n(conn, 2)
    op, n = h[0] & 0x0F, h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", _read_n(conn, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", _read_n(conn, 8))[0]
    return op, _read_n(conn, n)


def new_tid():
    return "t%s" % secrets.token_hex(6)


def until(pred, timeout=20, step=0.2):
    return wait_for(pred, timeout, step)


def now():
    return time.monotonic()
