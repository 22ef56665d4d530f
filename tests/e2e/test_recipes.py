# SPDX-License-Identifier: MIT
"""The identity recipes of `yuxi-sandbox nginx-conf` (docs/nginx.md) end to
end: the two rendered snippets in a site nginx (tests/lib/yxsvc.py
SiteService), the real daemon, under the URL prefix /sandbox.

- basic: an htpasswd file; YUXI_USER is the user whose password nginx
  checked. A wrong password is 401 from nginx and never reaches the
  daemon. Control: the snippet without its auth_basic lines hands the
  unchecked $remote_user to the daemon -> the leak.
- request: auth_request to a small auth service (bearer token -> user;
  the identity source is external by nature). Control: the identity taken
  from the client's X-Auth-User instead of the auth service's answer ->
  the leak.
- header: a trusted header (X-Forwarded-User) set by a single sign-on
  proxy; a small Python reverse proxy (SsoProxy: cookie -> user) stands in
  for oauth2-proxy and connects from 127.0.0.2, the configured trusted
  proxy. A client sending the same header directly (from 127.0.0.3, or
  127.0.0.1) gets 401. Control: the client's address rendered as a
  trusted proxy too -> the leak.
In every recipe spoofed identity headers (X-Yuxi-User, YUXI_USER-like,
X-Auth-User, X-Forwarded-User, ...) have no effect, and the nginx layer
alone stops X-Yuxi-User in front of the control daemon that trusts it
(tests/security/yuxi-sandboxd-control, YX_CONTROL_OFF=identity); its
control, the same snippet without the blanking lines, lets it through.
--admin names exact, case-sensitive users (control: a plain map key, which
nginx compares without case, makes "ADMIN" an administrator).

Only loopback traffic: nginx on 127.0.0.1, clients bound to 127.0.0.x.
"""
import base64
import http.client
import http.server
import json
import re
import secrets
import ssl
import threading

import pytest

import yxsvc

PREFIX = "/sandbox"
PROXY_ADDR = "127.0.0.2"	# the single sign-on proxy's source address
CLIENT_ADDR = "127.0.0.3"	# a client that talks to nginx directly
USERS = ("alice", "bob", "admin", "ADMIN")
CONTROL = yxsvc.build_path("tests", "security", "yuxi-sandboxd-control")


# ------------------------------------------------------------------ clients
def _ctx(svc):
    ctx = ssl.create_default_context(cafile=svc.cert)
    ctx.check_hostname = False
    return ctx


def call(svc, method, path, headers=(), body=None, source="127.0.0.1"):
    """One HTTPS request to nginx from `source` with exactly these headers
    (duplicates and odd names allowed); path without the URL prefix.
    Returns (status, body bytes)."""
    conn = http.client.HTTPSConnection("127.0.0.1", svc.port, context=_ctx(svc),
                                       source_address=(source, 0), timeout=60)
    return send(conn, method, svc.url_prefix + path, headers, body)


def send(conn, method, url, headers, body):
    """Send one request on conn with exactly these headers (and a JSON
    body when body is not None), then close it; (status, body bytes)."""
    try:
        conn.putrequest(method, url, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


class SsoProxy:
    """oauth2-proxy's part: a signed-in browser (cookie sso=<session>) is
    forwarded to nginx with X-Forwarded-User set to its user, whatever
    X-Forwarded-User the client sent; unknown sessions get 401. Connects to
    nginx from PROXY_ADDR. Plain HTTP on 127.0.0.1."""

    def __init__(self, svc, sessions):
        proxy = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                m = re.search(r"(?:^|;\s*)sso=([0-9a-f]+)", self.headers.get("Cookie", ""))
                user = sessions.get(m.group(1)) if m else None
                if user is None:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPSConnection("127.0.0.1", svc.port, context=_ctx(svc),
                                                   source_address=(PROXY_ADDR, 0), timeout=90)
                try:
                    conn.putrequest(self.command, self.path, skip_host=True,
                                    skip_accept_encoding=True)
                    for k, v in self.headers.items():
                        if k.lower() not in ("x-forwarded-user", "cookie", "connection"):
                            conn.putheader(k, v)
                    conn.putheader("X-Forwarded-User", user)
                    conn.endheaders(body)
                    r = conn.getresponse()
                    data = r.read()
                    proxy.forwarded += 1	# before the client can see the answer
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_DELETE = do_HEAD = forward

            def log_message(self, *a):
                pass

        self.forwarded = 0
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def request(self, method, path, headers=(), body=None):
        """Through the proxy (path without the prefix); (status, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=90)
        return send(conn, method, PREFIX + path, headers, body)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# ----------------------------------------------------------------- services
class Site(yxsvc.SiteService):
    """A recipe's site under /sandbox; `edit` changes the rendered snippets
    (control configurations). Header recipe: the SSO proxy is part of it,
    and `who` talks through it."""

    def __init__(self, auth, args=(), edit=None, binary=None, off=""):
        super().__init__(auth, args=args, url_prefix=PREFIX, binary=binary,
                         passwords={u: secrets.token_hex(8) for u in USERS})
        self.edit = edit
        if off:
            self.env["YX_CONTROL_OFF"] = off
        self.sessions = {secrets.token_hex(16): u for u in USERS}
        self.cookie = {u: "sso=" + s for s, u in self.sessions.items()}
        self.proxy = None

    def edit_snippets(self, http_text, server_text):
        if self.edit is None:
            return http_text, server_text
        return self.edit(http_text, server_text)

    def start(self):
        super().start()
        if self.auth == "header" and self.proxy is None:
            self.proxy = SsoProxy(self, self.sessions)
        return self

    def stop(self):
        try:
            super().stop()
        finally:
            if self.proxy is not None:
                self.proxy.close()
                self.proxy = None

    def as_user(self, who, method, path, headers=(), body=None):
        """`who` signed in the recipe's way, plus headers; (status, body)."""
        if self.auth == "header":
            return self.proxy.request(method, path, [("Cookie", self.cookie[who])] +
                                      list(headers), body)
        return call(self, method, path, list(self.auth_headers(who).items()) + list(headers),
                    body)

    def new_thread(self, who="alice", agent_id="coder", headers=()):
        tid = "t%s" % secrets.token_hex(6)
        st, body = self.as_user(who, "POST", "/api/threads", headers,
                                body=json.dumps({"thread_id": tid}).encode())
        assert st == 201, (st, body)
        return tid


def strip_auth_basic(http_text, server_text):
    return http_text, re.sub(r"\n[ \t]*auth_basic[^\n]*", "", server_text)


def client_auth_user(http_text, server_text):
    return http_text, server_text.replace("$upstream_http_x_auth_user", "$http_x_auth_user")


def plain_admin_key(http_text, server_text):
    return http_text.replace("~^admin$\t", "admin\t"), server_text


def noblank(http_text, server_text):
    return http_text, re.sub(r'\n[ \t]*fastcgi_param HTTP_(X_YUXI_USER|X_YUXI_ROLE|'
                             r'AUTHORIZATION) "";', "", server_text)


RECIPE_ARGS = {
    "basic": ["--admin", "admin"],
    "request": [],
    "header": ["--trusted-proxy", PROXY_ADDR, "--admin", "admin"],
}
_sites = {}


def site(auth, variant="prod"):
    """A started Site of this recipe and variant, cached for the session:
    prod (as rendered), and the controls: ctl-blank (the control daemon
    that trusts X-Yuxi-User, snippets as rendered), ctl-noblank (the same
    without the blanking lines), ctl-recipe (the recipe's own protection
    removed), ctl-admin (a plain, case-blind admin key)."""
    key = (auth, variant)
    s = _sites.get(key)
    if s is not None:
        return s
    args = list(RECIPE_ARGS[auth])
    kw = {}
    if variant in ("ctl-blank", "ctl-noblank"):
        kw = {"binary": CONTROL, "off": "identity"}
    if variant == "ctl-noblank":
        kw["edit"] = noblank
    elif variant == "ctl-recipe":
        if auth == "header":
            args[1] += "," + CLIENT_ADDR	# the client counts as a proxy
        else:
            kw["edit"] = {"basic": strip_auth_basic, "request": client_auth_user}[auth]
    elif variant == "ctl-admin":
        kw["edit"] = plain_admin_key
    s = Site(auth, args, **kw)
    _sites[key] = s
    s.start()
    return s


@pytest.fixture(scope="module", autouse=True)
def _stop_sites():
    yield
    yxsvc.stop_all(_sites.values())
    _sites.clear()


def threads_of(body):
    try:
        return [t["thread_id"] for t in json.loads(body)["threads"]]
    except (ValueError, KeyError, TypeError):
        return []


# ------------------------------------------------------------------ spoofs
SPOOFS = [
    [("X-Yuxi-User", "alice")], [("x-yuxi-user", "alice")], [("X_Yuxi_User", "alice")],
    [("Yuxi-User", "alice")], [("YUXI_USER", "alice")], [("Yuxi_User", "alice")],
    [("X-Yuxi-User", "alice"), ("X-Yuxi-Role", "admin")], [("X-Yuxi-Role", "admin")],
    [("YUXI_ROLE", "admin")], [("X-Auth-User", "alice")],
    [("X-Auth-User", "alice"), ("X-Auth-Role", "admin")],
    [("X-Forwarded-User", "alice")], [("X-Forwarded-User", "alice"), ("X-Forwarded-User", "alice")],
    [("X-Remote-User", "alice")], [("Remote-User", "alice")], [("X-User", "alice")],
]


def spoof_cases(s, tid):
    """(what, status, body, anonymous) of every spoof, anonymous (direct,
    from the client's address) and as bob (the recipe's way), on the list,
    the thread and the admin listing."""
    for spoof in SPOOFS:
        for path in ("/api/threads", "/api/threads/" + tid, "/api/admin/sandboxes"):
            st, body = call(s, "GET", path, spoof, source=CLIENT_ADDR)
            yield "anon %s %r" % (path, spoof), st, body, True
            st, body = s.as_user("bob", "GET", path, spoof)
            yield "bob %s %r" % (path, spoof), st, body, False


def escaped(tid, path_what, st, body, anonymous):
    if tid.encode() in body:
        return True
    if "/api/admin/" in path_what and st == 200:
        return True
    return anonymous and st not in (401, 403)


@pytest.mark.parametrize("auth", ["basic", "request", "header"])
def test_recipe_identity_and_spoofs(auth):
    s = site(auth)
    tid = s.new_thread("alice")
    # the real identity works, users are told apart
    st, body = s.as_user("alice", "GET", "/api/threads")
    assert st == 200 and tid in threads_of(body), (st, body)
    st, body = s.as_user("bob", "GET", "/api/threads")
    assert st == 200 and tid not in threads_of(body), (st, body)
    assert s.as_user("bob", "GET", "/api/threads/" + tid)[0] == 404
    # no identity: 401
    for src in (CLIENT_ADDR, "127.0.0.1"):
        assert call(s, "GET", "/api/threads", source=src)[0] == 401
    n = 0
    for what, st, body, anon in spoof_cases(s, tid):
        assert not escaped(tid, what, st, body, anon), (auth, what, st, body[:200])
        n += 1
    print("%s: %d spoofed requests, none acted as alice or admin" % (auth, n))


@pytest.mark.parametrize("auth", ["basic", "request", "header"])
def test_recipe_nginx_blanks_x_yuxi_user(auth):
    """The control daemon trusts X-Yuxi-User; the rendered snippet blanks
    it (nothing leaks), the snippet without the blanking lines does not
    (the leak: bob acts as alice)."""
    leaks = {}
    for variant in ("ctl-blank", "ctl-noblank"):
        s = site(auth, variant)
        tid = s.new_thread("alice")
        st, body = s.as_user("bob", "GET", "/api/threads", [("X-Yuxi-User", "alice")])
        assert st == 200, (variant, st, body)
        leaks[variant] = tid in threads_of(body)
    assert leaks == {"ctl-blank": False, "ctl-noblank": True}, leaks


def cred(user, password):
    return ("Authorization", "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode())


def test_basic_wrong_password_never_reaches_daemon():
    s = site("basic")
    tid = s.new_thread("alice")
    before = len(s.requests_seen())
    for h in ([cred("alice", "wrong")], [cred("alice", "")], [cred("nosuch", "x")],
              [cred("alice", s.passwords["bob"])], [cred("Alice", s.passwords["alice"])],
              [("Authorization", "Basic !!!")], [("Authorization", "Bearer x")], []):
        for path in ("/api/threads", "/api/threads/" + tid, "/"):
            st, body = call(s, "GET", path, h, source=CLIENT_ADDR)
            assert st == 401 and tid.encode() not in body, (h, path, st)
        st, _ = call(s, "POST", "/api/execute", h,
                     json.dumps({"thread_id": tid, "command": "true"}).encode())
        assert st == 401
    assert len(s.requests_seen()) == before, s.requests_seen()[before:]
    # control: without auth_basic, $remote_user is whatever the client wrote
    c = site("basic", "ctl-recipe")
    ctid = c.new_thread("alice")
    st, body = call(c, "GET", "/api/threads", [cred("alice", "wrong")], source=CLIENT_ADDR)
    assert st == 200 and ctid in threads_of(body), "control did not leak: %d %r" % (st, body)


def test_request_identity_only_from_auth_service():
    s = site("request")
    tid = s.new_thread("alice")
    bob = list(s.auth_headers("bob").items())
    st, body = call(s, "GET", "/api/threads", bob + [("X-Auth-User", "alice")])
    assert st == 200 and tid not in threads_of(body)
    assert call(s, "GET", "/api/threads", [("X-Auth-User", "alice")])[0] == 401
    assert call(s, "GET", "/api/admin/sandboxes", list(s.auth_headers("admin").items()))[0] == 200
    assert call(s, "GET", "/api/admin/sandboxes", bob + [("X-Auth-Role", "admin")])[0] == 403
    # control: the identity from the client's header
    c = site("request", "ctl-recipe")
    ctid = c.new_thread("alice", headers=[("X-Auth-User", "alice")])
    st, body = call(c, "GET", "/api/threads", list(c.auth_headers("bob").items()) +
                    [("X-Auth-User", "alice")])
    assert st == 200 and ctid in threads_of(body), "control did not leak: %d %r" % (st, body)


def test_header_only_from_trusted_proxy():
    s = site("header")
    tid = s.new_thread("alice")
    fwd = s.proxy.forwarded
    st, body = s.as_user("alice", "GET", "/api/threads")
    assert st == 200 and tid in threads_of(body)
    assert s.proxy.forwarded == fwd + 1
    # the same header sent directly: 401, from every other address
    for src in (CLIENT_ADDR, "127.0.0.1", "127.0.0.4"):
        st, body = call(s, "GET", "/api/threads", [("X-Forwarded-User", "alice")], source=src)
        assert st == 401 and tid.encode() not in body, (src, st, body)
        st, _ = call(s, "POST", "/api/threads", [("X-Forwarded-User", "alice")],
                     json.dumps({"thread_id": "t" + secrets.token_hex(6)}).encode(), source=src)
        assert st == 401
    # the proxy replaces what a signed-in client sends; signed out: its 401
    st, body = s.as_user("bob", "GET", "/api/threads", [("X-Forwarded-User", "alice")])
    assert st == 200 and tid not in threads_of(body)
    assert s.proxy.request("GET", "/api/threads", [("X-Forwarded-User", "alice")])[0] == 401
    assert s.as_user("admin", "GET", "/api/admin/sandboxes")[0] == 200
    assert s.as_user("ADMIN", "GET", "/api/admin/sandboxes")[0] == 403
    # control: the client's own address rendered as a trusted proxy too
    c = site("header", "ctl-recipe")
    ctid = c.new_thread("alice")
    st, body = call(c, "GET", "/api/threads", [("X-Forwarded-User", "alice")],
                    source=CLIENT_ADDR)
    assert st == 200 and ctid in threads_of(body), "control did not leak: %d %r" % (st, body)


def test_admin_names_are_case_sensitive():
    s = site("basic")
    assert s.as_user("admin", "GET", "/api/admin/sandboxes")[0] == 200
    for who in ("ADMIN", "alice"):
        assert s.as_user(who, "GET", "/api/admin/sandboxes")[0] == 403, who
    # control: a plain map key, which nginx compares without case
    c = site("basic", "ctl-admin")
    assert c.as_user("ADMIN", "GET", "/api/admin/sandboxes")[0] == 200, "control did not leak"

