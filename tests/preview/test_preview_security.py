# SPDX-License-Identifier: MIT
"""The protections of previews (docs/security.md "Previews"), each shown
against a control that must see the leak: workers are not held by
preview connections (control: the worker-proxied design), nginx connects
only to the ingress's sockets, never to one the sandbox can place
(control: a socket in the box's agent directory), nothing a box answers
steers nginx (control: X-Accel-Redirect honoured), a cookie for a wider
Domain stays with its preview (control: Domain kept), nginx's check is
never answered from a cache (control: a cache the operator set up, not
switched off), and from inside a box nothing new is reachable, another
box's ports least of all."""
import os
import socket
import threading
import time

import pytest
import requests

from conftest import (agent_magic, box, default_image, engine_up, get, now,  # noqa: F401
                      preview_url, token_of, until)

pytestmark = pytest.mark.skipif(not engine_up() or not default_image(),
                                reason="no engine or default image")

PROXY_PASS = "proxy_pass http://unix:"


def preview_server(text):
    """The preview server{} of a rendered dev configuration: (start, end)."""
    i = text.index("server_name \"~^[a-z2-7]{32}")
    return text.rindex("server {", 0, i), len(text)


def in_preview_server(text, old, new):
    a, b = preview_server(text)
    assert old in text[a:b], old
    return text[:a] + text[a:b].replace(old, new) + text[b:]


# ---- workers -------------------------------------------------------------

def slow_and_execute(s, n=16, secs=6):
    """n preview requests of `secs` each held open at once; meanwhile an
    execute of echo. Returns (its seconds, statuses of the n)."""
    tid = box(s)
    url = preview_url(s, tid, 8000)
    other = s.new_thread()
    assert s.execute(other, "true").status_code == 200	# its sandbox runs
    out = []

    def one():
        try:
            out.append(get(s, url, "slow?s=%d" % secs, timeout=60).status_code)
        except requests.RequestException as e:
            out.append(repr(e))
    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    time.sleep(1.5)		# all of them in flight
    t0 = now()
    r = s.execute(other, "echo hi")
    dt = now() - t0
    assert r.status_code == 200 and r.json()["output"] == "hi\n"
    for t in ts:
        t.join()
    return dt, out


def test_preview_connections_hold_no_worker(pv, factory):
    dt, out = slow_and_execute(pv)
    print("execute during 16 slow preview requests (3 workers): %.0f ms" % (dt * 1000))
    assert out == [200] * 16, out
    assert dt < 1.0
    # control: the worker fetches each response itself before nginx does
    c = factory(control_off="previewproxy", edit=lambda t, _: in_preview_server(
        t, "fastcgi_param YUXI_PREVIEW_HOST $host;",
        "fastcgi_param YUXI_PREVIEW_HOST $host;\nfastcgi_param YUXI_PREVIEW_URI $request_uri;"))
    dt, out = slow_and_execute(c)
    print("control (worker-proxied): execute took %.0f ms" % (dt * 1000))
    assert dt >= 1.0, "the control did not hold the workers"


# ---- where nginx connects ----------------------------------------------------

class Trap:
    """A host socket that answers every connection with TRAP and counts."""

    def __init__(self, path):
        self.path, self.n = path, 0
        self.s = socket.socket(socket.AF_UNIX)
        self.s.bind(path)
        self.s.listen(16)
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.n += 1
            c.settimeout(5)
            try:
                c.recv(65536)
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nTRAP\n")
            except OSError:
                pass
            c.close()

    def close(self):
        self.s.close()


def plant(s, tid, trap):
    """From inside the box: every name a socket of previews could have in
    its agent directory becomes a symlink to the host's trap (a script:
    the command path policy refuses a host path on the command line)."""
    r = s.request("alice", "POST", "/api/filesystem/write", json={
        "thread_id": tid, "path": "plant.sh", "overwrite": True,
        "content": "for n in preview-8000.sock preview.sock ingress.sock 8000.sock; do "
                   "ln -sfn %s /opt/yuxi/run/$n; done; ls /opt/yuxi/run\n" % trap.path})
    assert r.status_code == 201, r.text
    r = s.execute(tid, "sh plant.sh")
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return r.json()["output"]


def test_nginx_connects_only_to_the_ingress(pv, factory, tmp_path):
    trap = Trap(str(tmp_path / "trap.sock"))
    try:
        tid = box(pv)
        url = preview_url(pv, tid, 8000)
        print(plant(pv, tid, trap))
        for _ in range(3):
            r = get(pv, url)
            assert r.status_code == 200 and r.text == "boxsrv 8000\n", r.text
        assert trap.n == 0
        # control: nginx proxies to a socket in the box's agent directory
        c = factory(control_off="previewsock", edit=lambda t, _: in_preview_server(
            t, t[t.index(PROXY_PASS):t.index("\n", t.index(PROXY_PASS))],
            "proxy_pass http://unix:$yuxi_preview_sock:;"))
        tid = box(c)
        url = preview_url(c, tid, 8000)
        plant(c, tid, trap)
        r = get(c, url)
        print("control: %d %r, trap connections %d" % (r.status_code, r.text, trap.n))
        assert trap.n >= 1 and r.text == "TRAP\n", "the control did not reach the trap"
    finally:
        trap.close()


# ---- what the box answers ----------------------------------------------------

FILES_LOCATION = """location /_yuxi_files/ {
			internal;
			alias %s/threads/;
			disable_symlinks on from=%s/threads;
		}
		location @yuxi_preview_404 {"""


def with_files_location(t, s):
    """An operator's server that also sends downloads (the download
    location inside the preview server)."""
    return in_preview_server(t, "location @yuxi_preview_404 {",
                             FILES_LOCATION % (s.saves, s.saves))


def without_ignore_headers(t, s):
    t = with_files_location(t, s)
    a = t.index("proxy_ignore_headers X-Accel-Redirect")
    return t[:a] + t[t.index(";", a) + 1:]


def accel_probe(s):
    """bob's secret; alice's box answers X-Accel-Redirect to it."""
    victim = s.new_thread("bob")
    r = s.request("bob", "POST", "/api/filesystem/write",
                  json={"thread_id": victim, "path": "secret.txt", "content": "bob's secret\n"})
    assert r.status_code == 201, r.text
    tid = box(s)
    url = preview_url(s, tid, 8000)
    to = "/_yuxi_files/%s/user-data/workspace/secret.txt" % victim
    return get(s, url, "accel?to=" + to)


def test_x_accel_redirect_from_the_box_is_ignored(factory):
    s = factory(edit=with_files_location)
    r = accel_probe(s)
    assert r.status_code == 200 and r.text == "accel\n", r.text
    assert "X-Accel-Redirect" not in r.headers
    # control: the same server without proxy_ignore_headers
    c = factory(edit=without_ignore_headers)
    r = accel_probe(c)
    print("control: %d %r" % (r.status_code, r.text))
    assert r.text == "bob's secret\n", "the control did not leak the file"


def cookie_run(s):
    """Preview A sets a cookie for the whole preview domain; what does a
    cookie jar send to preview B? (Set-Cookie as A sent it, B's Cookie)"""
    ta, tb = box(s), box(s, 8001)
    a, b = preview_url(s, ta, 8000), preview_url(s, tb, 8001)
    jar = requests.Session()
    r = jar.get(a + "cookie?domain=preview.localhost", verify=s.cert, timeout=30)
    assert r.status_code == 200
    sent = jar.get(b + "cookies", verify=s.cert, timeout=30).text
    mine = jar.get(a + "cookies", verify=s.cert, timeout=30).text
    return r.headers["Set-Cookie"], sent, mine, a.split("/")[2].split(":")[0]


def test_a_wider_cookie_stays_with_its_preview(pv, factory):
    set_cookie, sent, mine, host = cookie_run(pv)
    print("production: Set-Cookie %r; B got %r; A got %r" % (set_cookie, sent, mine))
    assert set_cookie == "c8000=v; Domain=%s; Path=/" % host
    assert sent == "\n" and mine == "c8000=v\n"
    c = factory(edit=lambda t, _: in_preview_server(t, "proxy_cookie_domain ~^.+$ $host;", ""))
    set_cookie, sent, mine, host = cookie_run(c)
    print("control: Set-Cookie %r; B got %r" % (set_cookie, sent))
    assert sent == "c8000=v\n", "the control did not leak the cookie"


# ---- nginx's check is never cached ----------------------------------------------

def operator_cache(t, base):
    """An operator's http-level FastCGI cache that ignores Cache-Control,
    keyed without the host."""
    return t.replace("http {\n", "http {\n\tfastcgi_cache_path %s/fcache keys_zone=op:1m;\n"
                     "\tfastcgi_cache op;\n\tfastcgi_cache_key $request_uri;\n"
                     "\tfastcgi_cache_valid 200 10m;\n"
                     "\tfastcgi_ignore_headers Cache-Control Expires Set-Cookie;\n" % base, 1)


def cache_run(s):
    tid = box(s)
    url = preview_url(s, tid, 8000)
    assert get(s, url).text == "boxsrv 8000\n"
    forged = url.replace(token_of(url), "c" * 32)
    return get(s, forged)


def test_the_check_is_never_cached(factory):
    s = factory(edit=lambda t, svc: operator_cache(t, svc.base))
    r = cache_run(s)
    assert r.status_code == 404, (r.status_code, r.text)
    c = factory(edit=lambda t, svc: in_preview_server(operator_cache(t, svc.base),
                                                      "fastcgi_cache off;", ""))
    r = cache_run(c)
    print("control: a forged URL got %d %r" % (r.status_code, r.text))
    assert r.text == "boxsrv 8000\n", "the control did not reuse the check"


# ---- from inside the box -----------------------------------------------------

RELAY_PROBE = r'''
import array, socket, struct
def fr(t, p=b""):
    return t.encode() + struct.pack("!I", len(p)) + p
def via_relay(port):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/opt/yuxi/run/agent.sock")
    s.sendall(fr("H", MAGIC) + fr("N"))
    a, b = socket.socketpair()
    s.sendmsg([fr("J", str(port).encode())],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [b.fileno()]))])
    b.close()
    a.settimeout(5)
    got = b""
    try:
        a.sendall(b"GET / HTTP/1.0\r\n\r\n")
        while True:
            c = a.recv(4096)
            if not c:
                break
            got += c
    except OSError as e:
        got += repr(e).encode()
    return got.split(b"\r\n\r\n")[-1].decode(errors="replace").strip() or "<nothing>"
def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as e:
        return e.__class__.__name__
units = open("/proc/net/unix").read()
print("relay-own", via_relay(8000))
print("relay-other", via_relay(9000))
print("tcp-other", tcp("127.0.0.1", 9000))
print("tcp-nginx", tcp("127.0.0.1", NGINX))
print("unix-preview", sum("/preview/" in l for l in units.splitlines()))
import os
print("run-dir", " ".join(sorted(os.listdir("/opt/yuxi/run"))))
'''


def test_nothing_new_is_reachable_from_inside(pv):
    a = box(pv)
    b = box(pv, 9000)
    ub = preview_url(pv, b, 9000)
    assert get(pv, ub).text == "boxsrv 9000\n"
    ua = preview_url(pv, a, 8000)
    assert get(pv, ua).status_code == 200		# a's relay runs
    r = pv.request("alice", "POST", "/api/filesystem/write",
                   json={"thread_id": a, "path": "probe.py",
                         "content": RELAY_PROBE.replace("NGINX", str(pv.port)).replace(
                             "MAGIC", repr(agent_magic().encode()))})
    assert r.status_code == 201
    r = pv.execute(a, "python3 probe.py")
    assert r.status_code == 200, r.text
    out = r.json()["output"]
    print(out)
    assert "relay-own" in out, out
    got = dict(l.split(" ", 1) for l in out.splitlines()
               if l.startswith(("relay", "tcp", "unix", "run-dir")))
    assert got["relay-own"] == "boxsrv 8000"		# the relay reaches its own loopback
    # ... and nothing of b's: the connection ends unanswered (reset, as
    # the request was unread; or closed before the request was written)
    assert got["relay-other"] in ("<nothing>", "ConnectionResetError(104, "
                                  "'Connection reset by peer')",
                                  "BrokenPipeError(32, 'Broken pipe')"), got
    assert got["tcp-other"] == "ConnectionRefusedError"
    assert got["tcp-nginx"] == "ConnectionRefusedError"	# the host's nginx: not on its loopback
    assert got["unix-preview"] == "0"			# no ingress socket in its namespace
    names = set(got["run-dir"].split())	# the agent's and its keepers', no more
    assert names - {n for n in names if n.startswith("proc.")} == \
        {"agent.sock", "agent.sock.lock"}, names
