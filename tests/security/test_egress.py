# SPDX-License-Identifier: MIT
"""Group 17 (part 1): network egress by allowlist (docs/security.md).

The fetcher profile of examples/agents.json allows only allowed.test on
ports 80 and 443 (allowed to resolve to a private address); the tests give
it the ports of their upstreams instead. Every byte stays on this
machine: the test upstreams (plain HTTP and TLS with a self-signed
certificate for allowed.test, which the test hands to python inside) listen
on 127.0.0.1, and the proxy's resolver override (YUXI_EGRESS_HOSTS) maps
allowed.test and denied.test to 127.0.0.1 and redirects connections to
169.254.169.254 and 203.0.113.9 to 127.0.0.1 (only ever used by the
controls, whose proxy does connect).

From inside a sandbox, with python3 (default image):
- http:// and https:// (CONNECT) to allowed.test reach the upstream through
  the relay and the proxy;
- denied.test, an IP literal (203.0.113.9), 127.0.0.1 and 169.254.169.254
  are refused with the proxy's 403 and its reason, and the upstream sees
  nothing. Control: the control daemon with YX_CONTROL_OFF=egress (the
  proxy skips its checks): each of them reaches the upstream;
- a socket to any address fails at once (no interface but lo; the host's
  127.0.0.1 is not the sandbox's) and a raw socket is refused. Control: a
  service with YUXI_SANDBOX_NETWORK=bridge shows an interface (nothing is
  sent);
- a profile without network has no proxy variable and nothing listening on
  the relay's port. Control: the fetcher profile has both;
- the example's fetcher names its ports: CONNECT allowed.test:<the
  service's own nginx port> (allowed.test is 127.0.0.1 here) is refused.
  Control: the same profile with "allowed.test:*" reaches the service's
  nginx, and the daemon warns at start of such a rule.
"""
import http.server
import json
import os
import secrets
import ssl
import subprocess
import threading

import pytest

from secfix import _sec_session, stack, stats  # noqa: F401
import yxsvc

G = 17
IMAGE = "yuxi-sandbox:latest"
UD = "/home/yuxi/user-data"

pytestmark = pytest.mark.skipif(not yxsvc.image_present(IMAGE),
                                reason="default image %s not built" % IMAGE)


class _Up(http.server.BaseHTTPRequestHandler):
    hits = None

    def do_GET(self):
        self.hits.append(self.path)
        body = ("upstream saw %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Upstreams, the hosts file and the CA the sandbox trusts."""
    d = tmp_path_factory.mktemp("egress")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=allowed.test", "-addext",
                    "subjectAltName=DNS:allowed.test,DNS:denied.test",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    hits = []
    handler = type("Up", (_Up,), {"hits": hits})
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(d / "cert.pem"), str(d / "key.pem"))
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    for srv in (plain, tls):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    (d / "hosts").write_text("127.0.0.1 allowed.test denied.test\n"
                             "redirect 169.254.169.254 127.0.0.1\n"
                             "redirect 203.0.113.9 127.0.0.1\n")
    w = {"dir": str(d), "hosts": str(d / "hosts"), "ca": (d / "cert.pem").read_text(),
         "hits": hits,
         "p1": plain.server_address[1], "p2": tls.server_address[1]}
    yield w
    plain.shutdown()
    tls.shutdown()


def agents_file(world, allow, name):
    """examples/agents.json with the fetcher's allowlist replaced."""
    with open(os.path.join(yxsvc.TOP_SRCDIR, "examples", "agents.json")) as f:
        ag = json.load(f)
    for p in ag["profiles"]:
        if p["id"] == "fetcher":
            p["network"]["allow"] = allow
    path = os.path.join(world["dir"], name)
    with open(path, "w") as f:
        json.dump(ag, f)
    return path


def service(world, kind="prod", off="", allow=None, **ov):
    """A service whose fetcher may reach the test upstreams (their ports)."""
    if allow is None:
        allow = ["allowed.test:%d" % world["p1"], "allowed.test:%d" % world["p2"]]
    ov.setdefault("YUXI_AGENTS_FILE", agents_file(world, allow, "agents-%d.json" % len(allow)))
    return stack(kind, off, "dev", YUXI_EGRESS_HOSTS=world["hosts"],
                 YUXI_SANDBOX_IMAGE=IMAGE, YUXI_COMMAND_PATH_POLICY="off", **ov)


FETCH = r'''
import ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile="ca.pem")
for u in sys.argv[1:]:
    try:
        r = urllib.request.urlopen(u, context=ctx, timeout=15)
        print("OK", u, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print("HTTP", e.code, u, e.reason)
    except Exception as e:
        print("ERR", u, type(e).__name__, e)
'''


def fetcher(svc, world):
    tid = "t%s" % secrets.token_hex(6)
    r = svc.request("alice", "POST", "/api/threads",
                    json={"thread_id": tid, "agent_id": "fetcher"})
    assert r.status_code == 201, r.text
    for name, text in (("ca.pem", world["ca"]), ("fetch.py", FETCH)):
        r = svc.request("alice", "POST", "/api/filesystem/write",
                        json={"thread_id": tid, "path": UD + "/workspace/" + name,
                              "content": text})
        assert r.status_code == 201, r.text
    return tid


def fetch(svc, tid, urls):
    """{url: line} of fetch.py inside the sandbox."""
    r = svc.execute(tid, "python3 fetch.py " + " ".join(urls))
    assert r.status_code == 200, r.text
    out = {}
    for line in r.json()["output"].splitlines():
        for u in urls:
            if (" %s " % u) in line or line.endswith(" " + u):
                out[u] = line
    return out


def refused_urls(world):
    p1, p2 = world["p1"], world["p2"]
    return {
        "name not on the allowlist": "http://denied.test:%d/denied" % p1,
        "name not on the allowlist (https)": "https://denied.test:%d/denied-tls" % p2,
        "IP literal": "http://203.0.113.9:%d/literal" % p1,
        "loopback": "http://127.0.0.1:%d/loopback" % p1,
        "metadata": "http://169.254.169.254:%d/latest/meta-data/" % p1,
    }


def test_allowed_http_and_https(world):
    svc = service(world)
    tid = fetcher(svc, world)
    urls = ["http://allowed.test:%d/x" % world["p1"], "https://allowed.test:%d/y" % world["p2"]]
    out = fetch(svc, tid, urls)
    ok = all(out.get(u, "").startswith("OK ") for u in urls)
    stats.case(G, escape=not ok, what="allowed fetches: %s" % out)
    assert ok, out
    assert "upstream saw /x" in out[urls[0]] and "upstream saw /y" in out[urls[1]], out


def test_refused_with_a_clear_error(world):
    svc = service(world)
    tid = fetcher(svc, world)
    urls = refused_urls(world)
    before = len(world["hits"])
    out = fetch(svc, tid, list(urls.values()))
    for what, u in urls.items():
        line = out.get(u, "")
        held = ("403" in line and "yuxi egress proxy" in line) and "upstream saw" not in line
        stats.case(G, leak=not held, what="%s: %s" % (what, line))
        assert held, (what, line)
    assert len(world["hits"]) == before, world["hits"][before:]


def test_decisions_in_the_audit_trail(world):
    """Each decision of the proxy is one line of the audit log (op
    "egress"): the allowed fetch with the address it went to, the refused
    one with its reason."""
    svc = service(world)
    tid = fetcher(svc, world)
    ok_url = "http://allowed.test:%d/audited" % world["p1"]
    no_url = "http://denied.test:%d/audited" % world["p1"]
    out = fetch(svc, tid, [ok_url, no_url])
    assert out.get(ok_url, "").startswith("OK ") and "HTTP 403" in out.get(no_url, ""), out
    lines = [l for l in svc.audit_lines() if l.get("op") == "egress" and l.get("thread") == tid]
    allowed = [l for l in lines if l["outcome"] == "allowed"]
    refused = [l for l in lines if l["outcome"] == "refused"]
    stats.case(G, leak=not (allowed and refused), what="egress audit lines: %s" % lines)
    assert len(allowed) == 1 and allowed[0]["host"] == "allowed.test" and \
        allowed[0]["port"] == world["p1"] and allowed[0]["status"] == 200 and \
        allowed[0]["address"] == "127.0.0.1", lines
    assert len(refused) == 1 and refused[0]["host"] == "denied.test" and \
        refused[0]["status"] == 403 and "allowlist" in refused[0]["reason"] and \
        refused[0]["address"] is None, lines


def test_control_filter_off_leaks(world):
    """The same requests through the control daemon's proxy, checks off."""
    svc = service(world, kind="control", off="egress")
    tid = fetcher(svc, world)
    urls = refused_urls(world)
    out = fetch(svc, tid, list(urls.values()))
    for what, u in urls.items():
        line = out.get(u, "")
        stats.control(G, "upstream saw" in line, "egress off, %s: %s" % (what, line))
        assert "upstream saw" in line, (what, line)


PROBE = r'''
import errno, socket
print("ifaces", " ".join(sorted(n for _, n in socket.if_nameindex())))
for host, port in (("192.0.2.1", 80), ("127.0.0.1", %d)):
    s = socket.socket(); s.settimeout(3)
    print("connect", host, errno.errorcode.get(s.connect_ex((host, port)), "OK"))
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("raw OK")
except OSError as e:
    print("raw", errno.errorcode.get(e.errno))
'''


def probe(svc, world, agent="plain"):
    tid = "t%s" % secrets.token_hex(6)
    r = svc.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": agent})
    assert r.status_code == 201, r.text
    r = svc.execute(tid, "python3 -c '%s'" % (PROBE % world["p1"]).replace("'", "'\\''"))
    assert r.status_code == 200, r.text
    return r.json()["output"]


def test_no_route_out(world):
    out = probe(service(world), world, agent="fetcher")
    lines = dict(l.split(" ", 1) for l in out.splitlines() if " " in l)
    held = (lines.get("ifaces") == "lo" and "192.0.2.1 OK" not in out and
            "127.0.0.1 OK" not in out and "raw OK" not in out)
    stats.case(G, escape=not held, what="raw sockets: %s" % out)
    assert held, out


def test_control_bridge_has_an_interface(world):
    if os.environ.get("YUXI_TEST_RUNTIME") == "runsc":
        pytest.skip("the runsc runtime entry forces --network=none")
    svc = service(world, YUXI_SANDBOX_NETWORK="bridge")
    tid = "t%s" % secrets.token_hex(6)
    svc.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "plain"})
    r = svc.execute(tid, "python3 -c 'import socket; print(sorted(n for _, n in "
                         "socket.if_nameindex()))'")
    caught = r.status_code == 200 and "eth0" in r.json()["output"]
    stats.control(G, caught, "bridge network: %s" % r.text)
    assert caught, r.text


RELAY = ("env | grep -ci _proxy=; python3 -c 'import socket; "
         "print(socket.socket().connect_ex((\"127.0.0.1\", 3128)))'")


def test_no_network_no_proxy(world):
    svc = service(world)
    for agent, want, control in (("plain", ["0", "111"], False),
                                 ("reviewer", ["0", "111"], False),
                                 ("fetcher", ["4", "0"], True)):
        tid = "t%s" % secrets.token_hex(6)
        svc.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": agent})
        r = svc.execute(tid, RELAY)
        got = r.json()["output"].split()
        if control:
            stats.control(G, got == want, "fetcher has the variables and the relay: %s" % got)
        else:
            stats.case(G, leak=got != want, what="%s: %s" % (agent, got))
        assert got == want, (agent, got)


# --------------------------------------------------- the example's named ports
CONNECT_PROBE = r'''
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n"
           % (sys.argv[1], sys.argv[1])).encode())
print(s.recv(200).decode("latin-1").splitlines()[0])
'''


def connect_own_nginx(svc):
    """From a fetcher box: CONNECT allowed.test:<the service's own TLS port>."""
    tid = "t%s" % secrets.token_hex(6)
    r = svc.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "fetcher"})
    assert r.status_code == 201, r.text
    r = svc.request("alice", "POST", "/api/filesystem/write",
                    json={"thread_id": tid, "path": UD + "/workspace/c.py", "content": CONNECT_PROBE})
    assert r.status_code == 201, r.text
    r = svc.execute(tid, "python3 c.py %d" % svc.port)
    assert r.status_code == 200, r.text
    return r.json()["output"].strip()


def test_example_fetcher_names_its_ports(world):
    with open(os.path.join(yxsvc.TOP_SRCDIR, "examples", "agents.json")) as f:
        ag = json.load(f)
    allow = [p for p in ag["profiles"] if p["id"] == "fetcher"][0]["network"]["allow"]
    assert allow and all(not a.endswith(":*") for a in allow), allow
    svc = service(world, allow=allow, YUXI_AGENTS_FILE=os.path.join(
        yxsvc.TOP_SRCDIR, "examples", "agents.json"))
    line = connect_own_nginx(svc)
    print("example fetcher, CONNECT allowed.test:%d: %s" % (svc.port, line))
    stats.case(G, "the example rule reaches the host's own nginx", escapes="200" in line)
    assert " 403 " in line, line
    assert "opens every port of this host" not in svc.read_log(tail=None), "warned of a named port"


def test_port_wildcard_to_loopback_control(world):
    svc = service(world, allow=["allowed.test:*"])
    line = connect_own_nginx(svc)
    print("fetcher with allowed.test:*, CONNECT allowed.test:%d: %s" % (svc.port, line))
    assert stats.control(G, " 200 " in line, "a port wildcard reaches the service's nginx"), line
    # and the daemon said so when it started
    log = svc.read_log(tail=None)
    assert "opens every port of this host" in log and "allowed.test resolves to 127.0.0.1" in log, \
        log[-2000:]
