# SPDX-License-Identifier: MIT
"""Preview URLs through the real nginx, ingress and engine (docs/api.md
"Previews"): files served by `python3 -m http.server` in the box, a
WebSocket echoed, server-sent events arriving one by one, 100 MB byte
exact, a large upload, 502 until something listens, forged and expired
URLs 404, a revoke closing an open connection, the thread's deletion
likewise, ownership, the API's checks and limit, a released and a
destroyed sandbox woken, an IPv6-only server, the metrics, and the logs
and audit lines holding the capability's prefix only."""
import hashlib
import json
import os
import re
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import (box, default_image, engine_up, get, http_head, make_preview,  # noqa: F401
                      now, preview_url, start_boxsrv, tls, token_of, until, ws_connect,
                      ws_recv, ws_send)

pytestmark = pytest.mark.skipif(not engine_up() or not default_image(),
                                reason="no engine or default image")
MB = 1000 * 1000


def test_http_server_serves_files_and_502_until_it_listens(pv):
    tid = pv.new_thread()
    url = preview_url(pv, tid, 8000)
    assert re.match(r"^https://[a-z2-7]{32}\.preview\.localhost:%d/$" % pv.port, url), url
    t0 = now()
    r = get(pv, url)
    print("first request (wakes the sandbox): %.0f ms" % ((now() - t0) * 1000))
    assert r.status_code == 502 and "Nothing listens" in r.text, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("text/html")
    w = pv.request("alice", "POST", "/api/filesystem/write",
                   json={"thread_id": tid, "path": "site/index.html", "content": "<h1>hi</h1>\n"})
    assert w.status_code == 201, w.text
    p = pv.request("alice", "POST", "/api/processes",
                   json={"thread_id": tid, "command": "cd site && exec python3 -m http.server 8000"})
    assert p.status_code == 201, p.text
    assert until(lambda: get(pv, url).status_code == 200, 20)
    r = get(pv, url, "index.html")
    assert r.status_code == 200 and r.text == "<h1>hi</h1>\n", r.text
    assert r.headers["Referrer-Policy"] == "same-origin"
    assert get(pv, url, "missing.html").status_code == 404	# the box's own 404


def test_websocket_echo(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    conn, status, head = ws_connect(pv, url)
    assert status == 101, head
    assert "upgrade: websocket" in head.lower()
    rtts = []
    for i in range(20):
        msg = ("hello %d " % i).encode() * (i + 1)
        t0 = now()
        ws_send(conn, msg)
        assert ws_recv(conn) == (1, msg)
        rtts.append((now() - t0) * 1000)
    ws_send(conn, os.urandom(100000), op=2)	# a binary frame of 100 kB
    op, data = ws_recv(conn)
    assert op == 2 and len(data) == 100000
    ws_send(conn, b"\x03\xe8bye", op=8)
    assert ws_recv(conn)[0] == 8
    conn.close()
    rtts.sort()
    print("WebSocket echo round trip: median %.2f ms" % rtts[len(rtts) // 2])


def test_server_sent_events_arrive_one_by_one(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    t0 = now()
    r = get(pv, url, "sse?n=5&gap=0.4", stream=True)
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/event-stream"
    seen, buf = [], b""
    for chunk in r.iter_content(chunk_size=None):
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            seen.append((now() - t0, ev.decode()))
    assert [e.split("\n")[1].split()[1:3] for _, e in seen] == \
        [["event", str(i)] for i in range(5)], seen
    gaps = [b[0] - a[0] for a, b in zip(seen, seen[1:])]
    print("event arrival gaps: %s" % ", ".join("%.2f" % g for g in gaps))
    # not buffered into one piece: the events 0.4 s apart at the box arrive
    # spread out (one late and the next early is a loaded machine's jitter)
    assert sum(gaps) > 1.0 and all(g > 0.1 for g in gaps), gaps


def test_100mb_download_is_byte_exact(pv):
    tid = box(pv)
    r = pv.execute(tid, "head -c %d /dev/urandom > big.bin && sha256sum big.bin" % (100 * MB),
                   timeout=120)
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    want = r.json()["output"].split()[0]
    url = preview_url(pv, tid, 8000)
    h, n, t0 = hashlib.sha256(), 0, now()
    with get(pv, url, "file/big.bin", stream=True) as g:
        assert g.status_code == 200
        for c in g.iter_content(chunk_size=1 << 20):
            h.update(c)
            n += len(c)
    dt = now() - t0
    print("100 MB through the preview: %.2f s, %.0f MB/s" % (dt, n / MB / dt))
    assert n == 100 * MB and h.hexdigest() == want


def test_large_upload_streams_to_the_box(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    body = os.urandom(20 * MB)
    r = requests.post(url + "echo", data=body, verify=pv.cert, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json() == {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}


def test_forged_and_expired_urls_are_404(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    tok = token_of(url)
    assert get(pv, url).status_code == 200
    forged = [
        url.replace(tok, "a" * 32),			# a token that was never made
        url.replace(tok, tok[:-1] + ("a" if tok[-1] != "a" else "b")),	# one character off
        url.replace(tok, tok[:6] + "a" * 26),		# its logged prefix, the rest guessed
    ]
    # names are case-insensitive (nginx lower-cases $host): the same preview
    assert get(pv, url.replace(tok, tok.upper())).status_code == 200
    for f in forged:
        r = get(pv, f)
        assert r.status_code == 404 and "No such preview" in r.text, (f, r.status_code)
    # names that are no preview at all reach no preview server
    short = url.replace(tok, tok[:20])
    assert get(pv, short).status_code in (404, 200)	# the API's server (default), never the box
    assert "boxsrv" not in get(pv, short).text
    exp = preview_url(pv, tid, 8001, ttl=2)
    start_boxsrv(pv, tid, 8001)
    assert get(pv, exp).status_code == 200
    time.sleep(2.5)
    r = get(pv, exp)
    assert r.status_code == 404, r.status_code
    lst = pv.request("alice", "GET", "/api/threads/%s/previews" % tid).json()["previews"]
    assert [p["port"] for p in lst] == [8000]


def hold_open(s, url):
    """A response that never ends by itself (a byte every 0.2 s); the
    response object, after its first bytes."""
    r = get(s, url, "hold", stream=True, timeout=10)
    assert r.status_code == 200
    it = r.iter_content(chunk_size=None)
    assert next(it)
    return r, it


def drained_in(it, limit=5):
    """Seconds until the response ends (the box's side was closed)."""
    t0 = now()
    try:
        for _ in it:
            assert now() - t0 < limit, "the response still gets bytes"
    except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError):
        pass
    return now() - t0


def test_revoke_stops_the_url_and_closes_open_connections(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    r, it = hold_open(pv, url)
    d = pv.request("alice", "DELETE", "/api/threads/%s/previews/8000" % tid)
    assert d.status_code == 204, d.text
    dt = drained_in(it)
    print("open connection ended %.0f ms after the DELETE" % (dt * 1000))
    assert dt < 3
    r.close()
    assert get(pv, url).status_code == 404
    assert pv.request("alice", "DELETE", "/api/threads/%s/previews/8000" % tid).status_code == 404
    # a new preview of the port is a new URL
    url2 = preview_url(pv, tid, 8000)
    assert url2 != url and get(pv, url2).status_code == 200
    assert get(pv, url).status_code == 404


def test_expiry_ends_open_connections(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000, ttl=3)
    r, it = hold_open(pv, url)
    dt = drained_in(it, 8)
    print("open connection ended %.1f s after the preview's start (ttl 3 s)" % dt)
    r.close()
    assert get(pv, url).status_code == 404


def test_thread_delete_ends_its_previews(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    r, it = hold_open(pv, url)
    assert pv.request("alice", "DELETE", "/api/threads/" + tid).status_code == 204
    assert drained_in(it) < 3
    r.close()
    assert get(pv, url).status_code == 404
    # the same id made again by someone else gets nothing of it
    r = pv.request("bob", "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code == 201
    assert get(pv, url).status_code == 404


def test_another_users_thread_is_404_everywhere(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    unknown = "t" + "0" * 12
    for path, method, body in (("/api/threads/%s/previews", "POST", {"port": 8000}),
                               ("/api/threads/%s/previews", "GET", None),
                               ("/api/threads/%s/previews/8000", "DELETE", None)):
        mine = pv.request("bob", method, path % tid, json=body)
        none = pv.request("bob", method, path % unknown, json=body)
        assert mine.status_code == 404 and none.status_code == 404, (path, mine.text)
        assert mine.json()["error"]["code"] == none.json()["error"]["code"] == "not_found"
        assert mine.json()["error"]["message"] == none.json()["error"]["message"]
        assert pv.request(None, method, path % tid, json=body).status_code == 401
    # alice's preview still works, and was not replaced by bob's POST
    assert get(pv, url).status_code == 200
    lst = pv.request("alice", "GET", "/api/threads/%s/previews" % tid).json()["previews"]
    assert [p["url"] for p in lst] == [url]


def test_api_checks_and_limit(factory):
    s = factory(YUXI_PREVIEW_MAX="2", YUXI_PREVIEW_PORTS="8000-8010",
                YUXI_PREVIEW_TTL="600", YUXI_PREVIEW_TTL_MAX="900")
    tid = s.new_thread()
    path = "/api/threads/%s/previews" % tid
    for body in ({}, {"port": 0}, {"port": 7999}, {"port": 8011}, {"port": "8000"},
                 {"port": 8000, "ttl": 0}, {"port": 8000, "ttl": 901}, {"port": 8000, "ttl": "x"}):
        r = s.request("alice", "POST", path, json=body)
        assert r.status_code == 400, (body, r.text)
    r = s.request("alice", "POST", path, json={"port": 8000})
    assert r.status_code == 201, r.text
    p = r.json()
    assert set(p) == {"port", "url", "prefix", "created_at", "expires_at"}
    assert p["url"].split("//")[1].startswith(p["prefix"]) and len(p["prefix"]) == 6
    assert make_preview(s, tid, 8001).status_code == 201
    r = make_preview(s, tid, 8002)
    assert r.status_code == 409 and r.json()["error"]["code"] == "preview_limit", r.text
    assert make_preview(s, tid, 8001).status_code == 201	# replacing is no new one
    lst = s.request("alice", "GET", path).json()["previews"]
    assert [x["port"] for x in lst] == [8000, 8001]
    assert s.request("alice", "DELETE", path + "/8002").status_code == 404
    assert s.request("alice", "DELETE", path + "/abc").status_code == 404
    assert s.request("alice", "DELETE", path + "/8000").status_code == 204
    assert make_preview(s, tid, 8002).status_code == 201


def test_previews_off_is_404(factory):
    s = factory(YUXI_PREVIEW_DOMAIN="")
    tid = s.new_thread()
    r = make_preview(s, tid, 8000)
    assert r.status_code == 404 and "YUXI_PREVIEW_DOMAIN" in r.text


def test_released_and_destroyed_sandboxes_are_woken(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    sb = pv.sandboxes()[tid]
    if re.match(r"^[0-9a-f]{8,64}$", sb["sandbox_id"]):
        r = pv.request("admin", "POST", "/api/admin/sandboxes/%s/release" % sb["sandbox_id"])
        assert r.status_code == 200, r.text
        assert pv.sandboxes()[tid]["state"] == "warm"
        assert get(pv, url).status_code == 200		# still running: served at once
        r = pv.request("admin", "DELETE", "/api/admin/sandboxes/%s" % sb["sandbox_id"])
        assert r.status_code in (200, 204), r.text
        assert tid not in pv.sandboxes()
    else:	# a pool box (YX_TEST_POOL): removed behind the service's back
        assert subprocess.run(["docker", "rm", "-f", sb["container"]],
                              capture_output=True).returncode == 0
    t0 = now()
    r = get(pv, url)		# wakes a new sandbox; its server is gone with the old one
    print("preview request that made a new sandbox: %.0f ms" % ((now() - t0) * 1000))
    assert r.status_code == 502, r.status_code
    assert pv.sandboxes()[tid]["state"] == "active"
    start_boxsrv(pv, tid, 8000)
    assert get(pv, url).status_code == 200


def test_an_open_connection_keeps_its_sandbox(factory):
    """A WebSocket sends no new request: the reaper asks the ingress."""
    s = factory(YUXI_SANDBOX_IDLE_TIMEOUT="3", YUXI_SANDBOX_IDLE_CHECK_INTERVAL="1",
                YUXI_PROCESS_KEEPALIVE="0")
    tid = box(s)
    url = preview_url(s, tid, 8000)
    conn, status, head = ws_connect(s, url)
    assert status == 101, head
    time.sleep(7)		# over twice the idle timeout, not a request
    assert tid in s.sandboxes()
    ws_send(conn, b"still here")
    assert ws_recv(conn) == (1, b"still here")
    conn.close()
    t0 = now()
    assert until(lambda: tid not in s.sandboxes(), 20)	# idle once it closed
    print("reaped %.1f s after the connection closed (idle timeout 3 s)" % (now() - t0))


def test_ipv6_only_server(pv):
    tid = box(pv, 8002, extra="--v6")
    url = preview_url(pv, tid, 8002)
    r = get(pv, url)
    assert r.status_code == 200 and r.text == "boxsrv 8002\n", r.text


def test_metrics(pv):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    assert get(pv, url).status_code == 200
    assert get(pv, url, "file/boxsrv.py").status_code == 200

    def metric(name):
        text = pv.request(None, "GET", "/metrics").text
        m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
        return int(m.group(1)) if m else None
    assert metric("yuxi_previews_open") >= 1
    assert metric('yuxi_preview_connections_total{outcome="handed"}') >= 2
    assert until(lambda: metric('yuxi_preview_bytes_total{direction="out"}') > 10000, 5)
    text = pv.request(None, "GET", "/metrics").text
    assert 'route="/api/threads/{}/previews"' in text
    assert 'route="/_yuxi_preview/auth"' in text


def test_logs_and_audit_keep_a_prefix_only(pv):
    tid = box(pv)
    r = make_preview(pv, tid, 8000)
    url, rid = r.json()["url"], r.headers["X-Request-Id"]
    tok = token_of(url)
    assert get(pv, url, "sse?n=1&gap=0", headers={"Referer": url + "x"}).status_code == 200
    assert get(pv, url.replace(tok, "b" * 32)).status_code == 404
    requests.get(url + "nothing-here", verify=pv.cert, timeout=30)
    d = pv.request("alice", "DELETE", "/api/threads/%s/previews/8000" % tid)
    assert d.status_code == 204
    files = [os.path.join(pv.base, f) for f in ("nginx-access.log", "nginx-error.log",
                                                "sandboxd.log", "audit.jsonl")]
    for f in files:
        with open(f, errors="replace") as fh:
            assert tok not in fh.read(), f
    with open(os.path.join(pv.base, "nginx-access.log")) as fh:
        assert ("preview=%s " % tok[:6]) in fh.read()
    lines = {l["request_id"]: l for l in pv.audit_lines()}
    made, gone = lines[rid], lines[d.headers["X-Request-Id"]]
    assert made["op"] == "preview_create" and made["status"] == 201
    assert made["preview"] == {"port": 8000, "prefix": tok[:6]}
    assert gone["op"] == "preview_delete" and gone["preview"]["prefix"] == tok[:6]
    bad, n = pv.audit_problems()
    assert not bad, bad[:5]


def test_production_snippets(tmp_path):
    """The files `yuxi-sandbox nginx-conf` renders (docs/nginx.md
    "Previews"), in a site's nginx with a server of their own for the
    wildcard name, under a URL prefix: GET, WebSocket, 404, the logs."""
    from yxsvc import SiteService
    s = SiteService("request", url_prefix="/sandbox", stem="qyxps",
                    overrides={"YUXI_SANDBOX_IMAGE": "yuxi-sandbox:latest"})
    s.env["YUXI_PREVIEW_DOMAIN"] = "preview.localhost:%d" % s.port
    try:
        s.start()
        tid = box(s)
        url = preview_url(s, tid, 8000)
        r = get(s, url)
        assert r.status_code == 200 and r.text == "boxsrv 8000\n", r.text
        conn, status, head = ws_connect(s, url)
        assert status == 101, head
        ws_send(conn, b"through the site")
        assert ws_recv(conn) == (1, b"through the site")
        conn.close()
        assert get(s, url.replace(token_of(url), "d" * 32)).status_code == 404
        with open(os.path.join(s.base, "nginx-access.log")) as f:
            log = f.read()
        assert token_of(url) not in log and "preview=%s " % token_of(url)[:6] in log
    finally:
        s.stop()


@pytest.mark.parametrize("args", [(), ("--provisioners", "1")], ids=["standalone", "front"])
def test_the_dev_run_serves_previews(args):
    """./scripts/run.sh --detach (scripts/run-service.sh): previews on at
    https://<capability>.preview.localhost:<port>/, its certificate
    covering them; with --provisioners, through the front."""
    from yxsvc import DevCheckout
    from conftest import IMAGE, boxsrv_source
    d = DevCheckout(IMAGE, args)
    try:
        d.start()
        base, cert = d.info["base"], d.info["cert"]
        hdr = {"Authorization": "Bearer " + d.info["tokens"]["alice"]}

        def api(method, path, **kw):
            return requests.request(method, base + path, headers=hdr, verify=cert, timeout=120,
                                    **kw)
        assert api("POST", "/api/threads", json={"thread_id": "devpv"}).status_code == 201
        assert api("POST", "/api/filesystem/write", json={
            "thread_id": "devpv", "path": "boxsrv.py", "content": boxsrv_source()}).status_code == 201
        r = api("POST", "/api/processes", json={"thread_id": "devpv",
                                                "command": "exec python3 boxsrv.py 8000"})
        assert r.status_code == 201, r.text
        r = api("POST", "/api/threads/devpv/previews", json={"port": 8000})
        assert r.status_code == 201, r.text
        url = r.json()["url"]
        assert url.endswith(".preview.localhost:%d/" % d.port), url
        assert until(lambda: requests.get(url, verify=cert, timeout=30).text == "boxsrv 8000\n", 30)
    finally:
        d.stop()
