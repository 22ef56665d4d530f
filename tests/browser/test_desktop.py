# SPDX-License-Identifier: MIT
"""The browser box's desktop through a preview (docs/browser.md "Watching",
docs/api.md "Previews"), real nginx, real engine:

- the preview of port 6080 serves noVNC's vnc.html (and vnc_lite.html,
  what the workbench's Desktop tab frames); a WebSocket to its /websockify
  gets 101 and the VNC server's RFB greeting, then a framebuffer update of
  the desktop's size after the RFB handshake;
- the URL needs no token (a plain TLS client with none), and another user
  can neither make, list nor revoke a preview of the thread (404), nor
  reach the desktop by a forged URL (404);
- under gVisor the same (when the engine has runsc).

The workbench's Desktop tab in headless Chromium: tests/web.
"""
import base64
import os
import secrets
import socket
import ssl
import struct
import urllib.parse

import pytest
import requests

from conftest import agents_file, make_service, new_browser_thread
import yxsvc

yxsvc.resolve_localhost()


@pytest.fixture(scope="module")
def pv(tmp_path_factory):
    s = make_service(YUXI_AGENTS_FILE=agents_file(tmp_path_factory.mktemp("agents")),
                     previews=True)
    try:
        yield s
    finally:
        s.stop()


def preview(s, tid, who="alice", port=6080):
    return s.request(who, "POST", "/api/threads/%s/previews" % tid, json={"port": port})


def rfb_session(s, url):
    """A WebSocket to the preview's /websockify with no credentials: the
    upgrade's status, the server's RFB greeting, and the first framebuffer
    update's width and height after a shared, no-auth RFB 3.8 handshake."""
    host = urllib.parse.urlsplit(url).hostname
    ctx = ssl.create_default_context(cafile=s.cert)
    c = ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port), timeout=30),
                        server_hostname=host)
    c.sendall(("GET /websockify HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: binary\r\n\r\n"
               % (host, s.port, base64.b64encode(os.urandom(16)).decode())).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        assert d, buf
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status != 101:
        return status, b"", None
    data, pay = bytearray(rest), bytearray()

    def more():		# one more server frame's payload into pay
        while True:
            if len(data) >= 2:
                n, off = data[1] & 127, 2
                if n == 126 and len(data) >= 4:
                    n, off = struct.unpack("!H", bytes(data[2:4]))[0], 4
                elif n == 127 and len(data) >= 10:
                    n, off = struct.unpack("!Q", bytes(data[2:10]))[0], 10
                if (data[1] & 127) < 126 or off > 2:
                    if len(data) >= off + n:
                        pay.extend(data[off:off + n])
                        del data[:off + n]
                        return
            d = c.recv(65536)
            assert d, "closed"
            data.extend(d)

    def frames(n):	# exactly n bytes of the server's stream
        while len(pay) < n:
            more()
        out = bytes(pay[:n])
        del pay[:n]
        return out

    def send(b):
        m = os.urandom(4)
        c.sendall(bytes([0x82, 0x80 | len(b)]) + m + bytes(x ^ m[i % 4] for i, x in enumerate(b)))

    greeting = frames(12)
    send(b"RFB 003.008\n")
    n = frames(1)[0]			# security types
    types = frames(n)
    assert 1 in types, types		# "None": the server is loopback-only
    send(b"\x01")
    assert frames(4) == b"\0\0\0\0"	# security result: OK
    send(b"\x01")			# ClientInit: shared
    w, h = struct.unpack("!HH", frames(4))
    c.close()
    return status, greeting, (w, h)


def test_preview_of_6080_serves_novnc_and_its_websocket(pv):
    tid, _ = new_browser_thread(pv)
    r = preview(pv, tid)
    assert r.status_code == 201, r.text
    url = r.json()["url"]
    for page in ("vnc.html", "vnc_lite.html"):
        g = requests.get(url + page, verify=pv.cert, timeout=60)	# no token
        assert g.status_code == 200 and "noVNC" in g.text, (page, g.status_code)
    status, greeting, size = rfb_session(pv, url)
    assert status == 101
    assert greeting.startswith(b"RFB 003.00"), greeting
    assert size == (1280, 800), size	# the display's RESOLUTION
    # the owner revokes: the desktop is gone for whoever had the URL
    assert pv.request("alice", "DELETE", "/api/threads/%s/previews/6080" % tid).status_code == 204
    assert requests.get(url + "vnc.html", verify=pv.cert, timeout=60).status_code == 404


def test_another_user_cannot_reach_the_desktop(pv):
    tid, _ = new_browser_thread(pv)
    for m, path, body in (("POST", "/api/threads/%s/previews" % tid, {"port": 6080}),
                          ("GET", "/api/threads/%s/previews" % tid, None),
                          ("DELETE", "/api/threads/%s/previews/6080" % tid, None)):
        r = pv.request("bob", m, path, json=body) if body else pv.request("bob", m, path)
        assert r.status_code == 404, (m, path, r.status_code, r.text)
    assert pv.request("alice", "GET", "/api/threads/%s/previews" % tid).json()["previews"] == []
    # a URL of the right shape that nobody made
    host = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz234567") for _ in range(32))
    forged = "https://%s.preview.localhost:%d/" % (host, pv.port)
    assert requests.get(forged + "vnc.html", verify=pv.cert, timeout=60).status_code == 404
    status, _, _ = rfb_session(pv, forged)
    assert status == 404


@pytest.mark.skipif(not yxsvc.engine_has_runsc(), reason="the engine has no runsc runtime")
def test_desktop_under_gvisor(tmp_path):
    s = make_service(YUXI_AGENTS_FILE=agents_file(tmp_path, runtime="runsc"), previews=True)
    try:
        tid, took = new_browser_thread(s)
        r = preview(s, tid)
        assert r.status_code == 201, r.text
        url = r.json()["url"]
        assert requests.get(url + "vnc.html", verify=s.cert, timeout=60).status_code == 200
        status, greeting, size = rfb_session(s, url)
        assert status == 101 and greeting.startswith(b"RFB 003.00") and size == (1280, 800)
    finally:
        s.stop()
