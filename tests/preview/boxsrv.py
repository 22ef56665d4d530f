# SPDX-License-Identifier: MIT
"""boxsrv - the server the preview suite runs inside a sandbox (standard
library only; the default image's python3): `python3 boxsrv.py PORT`
listens on 127.0.0.1:PORT (and [::1]:PORT with `--v6`) and serves

  GET /                 "boxsrv <port>"
  GET /file/<name>      a file of the working directory (big downloads)
  GET /sse?n=N&gap=S    N server-sent events, S seconds apart, each flushed
  GET /slow?s=S         answers after S seconds
  GET /hold             a byte every 0.2 s until the connection ends
  GET /ws               a WebSocket that echoes every message (RFC 6455)
  GET /cookie?domain=D  Set-Cookie: c<port>=v; Domain=D; Path=/
  GET /cookies          the Cookie header it got
  GET /headers          the request headers it got, as JSON
  GET /accel?to=URI     answers with X-Accel-Redirect: URI (nginx must ignore it)
  GET /page             an HTML page that shows its cookies and storage
  GET /jscookie?domain=D  a page whose script sets a cookie for Domain=D
  POST /echo            the body's length and SHA-256
Every connection on its own thread."""
import base64
import hashlib
import http.server
import json
import os
import socket
import socketserver
import struct
import sys
import time
import urllib.parse

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("boxsrv: " + (fmt % args) + "\n")

    def reply(self, code, body, ctype="text/plain", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        p = u.path
        if p == "/":
            return self.reply(200, "boxsrv %d\n" % self.server.server_address[1])
        if p.startswith("/file/"):
            return self.file(p[6:])
        if p == "/sse":
            return self.sse(int(q.get("n", "5")), float(q.get("gap", "0.3")))
        if p == "/slow":
            time.sleep(float(q.get("s", "6")))
            return self.reply(200, "slow done\n")
        if p == "/hold":
            return self.hold()
        if p == "/ws":
            return self.ws()
        if p == "/cookie":
            port = self.server.server_address[1]
            return self.reply(200, "set\n", headers=[
                ("Set-Cookie", "c%d=v; Domain=%s; Path=/" % (port, q.get("domain", "")))])
        if p == "/cookies":
            return self.reply(200, self.headers.get("Cookie", "") + "\n")
        if p == "/headers":
            return self.reply(200, json.dumps(dict(self.headers.items())), "application/json")
        if p == "/accel":
            return self.reply(200, "accel\n", headers=[("X-Accel-Redirect", q.get("to", "/"))])
        if p == "/page":
            return self.reply(200, PAGE, "text/html")
        if p == "/jscookie":
            port = self.server.server_address[1]
            js = "document.cookie = 'js%d=v; domain=%s; path=/';\n" % (
                port, q.get("domain", "").replace("'", ""))
            return self.reply(200, PAGE.replace("<script>\n", "<script>\n" + js, 1), "text/html")
        return self.reply(404, "not here\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        h, left = hashlib.sha256(), n
        while left > 0:
            b = self.rfile.read(min(left, 1 << 20))
            if not b:
                break
            h.update(b)
            left -= len(b)
        return self.reply(200, json.dumps({"bytes": n - left, "sha256": h.hexdigest()}),
                          "application/json")

    def file(self, name):
        try:
            f = open(os.path.basename(name), "rb")
        except OSError:
            return self.reply(404, "no file\n")
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                self.wfile.write(b)

    def sse(self, n, gap):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for i in range(n):
            self.wfile.write(("id: %d\ndata: event %d %.3f\n\n" % (i, i, time.time())).encode())
            self.wfile.flush()
            time.sleep(gap)
        self.close_connection = True

    def hold(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b".")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass
        self.close_connection = True

    def ws(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        if self.headers.get("Upgrade", "").lower() != "websocket" or not key:
            return self.reply(400, "not a websocket request\n")
        acc = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        while True:
            fr = ws_read(self.rfile)
            if fr is None:
                return
            op, data = fr
            if op == 8:		# close: answer it
                self.wfile.write(ws_frame(8, data[:2]))
                return
            if op == 9:		# ping
                self.wfile.write(ws_frame(10, data))
                continue
            self.wfile.write(ws_frame(op, data))
            self.wfile.flush()


def ws_read(f):
    """One frame (opcode, unmasked payload); None at the end."""
    h = f.read(2)
    if len(h) < 2:
        return None
    op, n = h[0] & 0x0F, h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", f.read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", f.read(8))[0]
    mask = f.read(4) if h[1] & 0x80 else b"\0\0\0\0"
    data = bytearray(f.read(n))
    for i in range(len(data)):
        data[i] ^= mask[i % 4]
    return op, bytes(data)


def ws_frame(op, data, mask=False):
    """A final frame (clients mask, servers do not)."""
    n = len(data)
    h = bytes([0x80 | op])
    mb = 0x80 if mask else 0
    if n < 126:
        h += bytes([mb | n])
    elif n < 65536:
        h += bytes([mb | 126]) + struct.pack("!H", n)
    else:
        h += bytes([mb | 127]) + struct.pack("!Q", n)
    if not mask:
        return h + data
    k = os.urandom(4)
    return h + k + bytes(b ^ k[i % 4] for i, b in enumerate(data))


PAGE = """<!doctype html><meta charset="utf-8"><title>boxsrv page</title>
<p id="out">page</p>
<script>
document.getElementById("out").textContent = JSON.stringify({
  cookie: document.cookie,
  local: Object.keys(localStorage),
  session: Object.keys(sessionStorage),
  origin: location.origin,
});
</script>
"""


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    port = int(sys.argv[1])
    if "--v6" in sys.argv:
        srv = Server6(("::1", port), Handler)
    else:
        srv = Server(("127.0.0.1", port), Handler)
    sys.stderr.write("boxsrv: listening on %d\n" % port)
    sys.stderr.flush()
    srv.serve_forever()


if __name__ == "__main__":
    main()
