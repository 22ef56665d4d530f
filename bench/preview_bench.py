#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a preview costs (issue 30, docs/api.md "Previews"), measured in one
run against nginx itself:

  100 MB     the same file (random bytes) three ways, over HTTPS with curl:
             "nginx disk" (nginx sends it from disk: sendfile), "nginx
             proxy" (nginx proxy_pass, buffering off as for previews, to
             python3 -m http.server on the host's 127.0.0.1) and "preview"
             (https://<capability>.preview.localhost/: nginx's check by a
             worker, the ingress, the box's relay, the same http.server
             inside the sandbox). Interleaved rounds; medians. The issue's
             target: preview >= 0.5x nginx proxy.
  WebSocket  echo round trip of a 32-byte text message over one kept
             connection: through the preview to boxsrv in the box, and
             through nginx proxy_pass to the same boxsrv on the host.
  first byte time from a request's last byte to its response head on a
             kept-alive TLS connection (http.client): GET /healthz (a
             worker answers) vs GET / of a preview served by boxsrv (the check,
             then the proxying to the box), interleaved.

Started with the tests' harness (tests/lib/yxsvc.py, bench/benchsvc.py) on
free 127.0.0.1 ports, image yuxi-sandbox:latest (YUXI_SANDBOX_IMAGE),
previews on (YUXI_PREVIEW_DOMAIN=preview.localhost:<port>).

Usage: bench/preview_bench.py BUILD_DIR [ROUNDS]   (default 7; latency
rounds are 40x that). Prints Markdown.
"""
import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import yxsvc  # noqa: E402
from benchsvc import BenchService  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
SIZE = 100 * 1000 * 1000
BOXSRV = os.path.join(TOP, "tests", "preview", "boxsrv.py")

EXTRA = """		location /bench/disk/ {
			alias %(dir)s/;
		}
		location /bench/proxy/ {
			proxy_pass http://127.0.0.1:%(hp)d/;
			proxy_http_version 1.1;
			proxy_buffering off;
			proxy_request_buffering off;
		}
		location /bench/ws {
			proxy_pass http://127.0.0.1:%(wp)d/ws;
			proxy_http_version 1.1;
			proxy_set_header Upgrade $http_upgrade;
			proxy_set_header Connection "upgrade";
			proxy_buffering off;
			proxy_read_timeout 600s;
		}
"""


def med(v):
    return statistics.median(v)


def p95(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * 0.95))]


def curl(url, cert):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "--cacert", cert, "-w",
                          "%{http_code} %{size_download} %{time_total}", url],
                         capture_output=True, text=True, timeout=600).stdout.split()
    assert out[0] == "200" and int(out[1]) == SIZE, out
    return float(out[2])


def tls_conn(host, port, cert):
    ctx = ssl.create_default_context(cafile=cert)
    raw = socket.create_connection(("127.0.0.1", port), timeout=60)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(raw, server_hostname=host)


def ws_open(host, port, cert, path):
    c = tls_conn(host, port, cert)
    key = base64.b64encode(os.urandom(16)).decode()
    c.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (path, host, port, key)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += c.recv(4096)
    assert buf.split(b" ")[1] == b"101", buf[:200]
    return c


def ws_rtt(c, n):
    msg = b"x" * 32
    k = b"\x01\x02\x03\x04"
    frame = bytes([0x81, 0x80 | len(msg)]) + k + bytes(b ^ k[i % 4] for i, b in enumerate(msg))
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.sendall(frame)
        got = b""
        while len(got) < 2 + len(msg):
            got += c.recv(4096)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def first_byte(conn, host, path):
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Host": host})
    r = conn.getresponse()
    dt = (time.perf_counter() - t0) * 1000
    r.read()
    assert r.status == 200, r.status
    return dt


def main(argv):
    build = argv[0]
    rounds = int(argv[1]) if len(argv) > 1 else 7
    yxsvc.resolve_localhost()
    tmp = tempfile.mkdtemp(prefix="yxpvb-")
    files = os.path.join(tmp, "files")
    os.makedirs(files)
    with open(os.path.join(files, "big.bin"), "wb") as f:
        f.write(os.urandom(SIZE))
    hp, wp = yxsvc.free_port(), yxsvc.free_port()
    host_srv = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                 str(hp), "--directory", files],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    host_ws = subprocess.Popen([sys.executable, BOXSRV, str(wp)], cwd=files,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = BenchService(build, os.path.join(tmp, "svc"), EXTRA % {"dir": files, "hp": hp, "wp": wp},
                     YUXI_SANDBOX_IMAGE=IMAGE)
    s.env["YUXI_PREVIEW_DOMAIN"] = "preview.localhost:%d" % s.port
    try:
        s.start()
        tid = s.thread
        ws = os.path.join(s.thread_dir, "workspace")
        assert s.execute(tid, "true").status_code == 200
        st = os.stat(ws)
        for name, src in (("big.bin", os.path.join(files, "big.bin")), ("boxsrv.py", BOXSRV)):
            shutil.copyfile(src, os.path.join(ws, name))
            os.chown(os.path.join(ws, name), st.st_uid, st.st_gid)
        for cmd in ("exec python3 -m http.server 8000", "exec python3 boxsrv.py 8001"):
            r = s.request("alice", "POST", "/api/processes", json={"thread_id": tid, "command": cmd})
            assert r.status_code == 201, r.text
        urls = {}
        for port in (8000, 8001):
            r = s.request("alice", "POST", "/api/threads/%s/previews" % tid, json={"port": port})
            assert r.status_code == 201, r.text
            urls[port] = r.json()["url"]
        pv_host = urls[8000].split("//")[1].split(":")[0]
        ws_host = urls[8001].split("//")[1].split(":")[0]
        yxsvc.wait_for(lambda: subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", s.cert,
             urls[8001]], capture_output=True, text=True).stdout == "200", 20, 0.2)
        yxsvc.wait_for(lambda: subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", s.cert,
             urls[8000]], capture_output=True, text=True).stdout == "200", 20, 0.2)
        ways = {"nginx disk": s.origin + "/bench/disk/big.bin",
                "nginx proxy": s.origin + "/bench/proxy/big.bin",
                "preview": urls[8000] + "big.bin"}
        t = {k: [] for k in ways}
        for k, u in ways.items():	# warm every path once
            curl(u, s.cert)
        for _ in range(rounds):
            for k, u in ways.items():
                t[k].append(curl(u, s.cert))
        # WebSocket round trips
        n = rounds * 40
        wpv = ws_open(ws_host, s.port, s.cert, "/ws")
        wng = ws_open("localhost", s.port, s.cert, "/bench/ws")
        ws_pv, ws_ng = [], []
        for _ in range(rounds):
            ws_pv += ws_rtt(wpv, 40)
            ws_ng += ws_rtt(wng, 40)
        wpv.close()
        wng.close()
        # first byte, kept-alive TLS
        ctx = ssl.create_default_context(cafile=s.cert)
        ch = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx)
        ch.sock = tls_conn("localhost", s.port, s.cert)
        cp = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx)
        cp.sock = tls_conn(ws_host, s.port, s.cert)
        fb_h, fb_p = [], []
        for i in range(n + 20):
            a = first_byte(ch, "localhost", "/healthz")
            b = first_byte(cp, "%s:%d" % (ws_host, s.port), "/")
            if i >= 20:
                fb_h.append(a)
                fb_p.append(b)
        print("## Previews (issue 30)\n")
        print("One run, %d interleaved rounds of 100 MB (%d bytes) over HTTPS with curl; "
              "medians.\n" % (rounds, SIZE))
        print("| path | time | MB/s | vs nginx proxy |")
        print("| --- | ---: | ---: | ---: |")
        for k in ways:
            m = med(t[k])
            print("| %s | %.3f s | %.0f | %.2fx |" % (k, m, SIZE / 1e6 / m,
                                                      med(t["nginx proxy"]) / m))
        print("\nWebSocket echo, 32 bytes, %d round trips each on one kept connection:\n" % n)
        print("| path | median | p95 |")
        print("| --- | ---: | ---: |")
        print("| preview (box) | %.3f ms | %.3f ms |" % (med(ws_pv), p95(ws_pv)))
        print("| nginx proxy (host) | %.3f ms | %.3f ms |" % (med(ws_ng), p95(ws_ng)))
        print("\nFirst byte on a kept-alive TLS connection, %d requests each, interleaved:\n" % n)
        print("| request | median | p95 |")
        print("| --- | ---: | ---: |")
        print("| GET /healthz | %.3f ms | %.3f ms |" % (med(fb_h), p95(fb_h)))
        print("| GET / of a preview | %.3f ms | %.3f ms |" % (med(fb_p), p95(fb_p)))
        print("\n(raw: %s)" % json.dumps({k: [round(x, 3) for x in v] for k, v in t.items()}))
    finally:
        s.stop()
        for p in (host_srv, host_ws):
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
