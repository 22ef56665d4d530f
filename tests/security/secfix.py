# SPDX-License-Identifier: MIT
"""Shared machinery of the security suite (docs/security.md).

Imported by every tests/security/test_*.py (no conftest.py of its own, so
it never collides with tests/e2e/conftest.py); the service itself is
tests/lib/yxsvc.py's, with this suite's daemon and nginx variants as hooks.

- `stack(kind, off, conf)`: a started service, cached for the session:
  kind "prod" is the production yuxi-sandboxd, "control" the test-only
  tests/security/yuxi-sandboxd-control (YX_CONTROL_OFF=off), "cbroker" the
  control daemon with the unsafe broker; conf "dev" is nginx/dev.conf.in as
  shipped, "dev-noblank" the same without the lines that blank client
  identity headers, "dev-nointernal" without `internal;`,
  "dev-unprotected" without the front-end limits (main's 2 x 1,024 worker
  connections, nginx's default timeouts, no limit_conn / limit_req: the
  control of group 11), "prod" the production site file
  nginx/yuxi-sandbox.conf around the snippets `yuxi-sandbox nginx-conf
  --auth request` renders, with a local auth service, in an nginx.conf
  whose main context has the settings docs/deployment.md asks for.
  Every instance has its own container prefix and shm name (with our pid).
- `stats`: per-group counters (cases, escapes, leaks, hangs, control cases
  and control catches) and measured figures, written at the end to
  $SEC_RESULTS (JSON) and printed by `secfix.py summary FILE`.
- `foreign_routes_404(svc, group, what, routes_on, tid)`: bob on each
  route of alice's thread gets exactly the 404 of an unknown thread.
"""
import atexit
import os
import re
import secrets
import socket
import ssl
import sys

import pytest

import yxsvc
from yxsvc import TOP_SRCDIR, engine_up  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_BUILDDIR = yxsvc.builddir()
BINARIES = {
    "prod": yxsvc.build_path("yuxi-sandboxd"),
    "control": yxsvc.build_path("tests", "security", "yuxi-sandboxd-control"),
    "cbroker": yxsvc.build_path("tests", "security", "yuxi-sandboxd-control-broker"),
}
UPLOAD_LIMIT = 1024 * 1024
# The main context docs/deployment.md asks for around the production site
# file (Debian's nginx.conf has 768 worker connections and no rlimit).
PROD_MAIN = "worker_rlimit_nofile 20000;\nevents { worker_connections 8192; }\n"
# Directives of the front-end limits (group 11); "dev-unprotected" drops
# them and restores main's worker_connections.
FRONT_LIMITS = ("worker_rlimit_nofile", "client_header_timeout", "client_body_timeout",
                "send_timeout", "keepalive_timeout", "reset_timedout_connection",
                "limit_conn", "limit_conn_zone", "limit_conn_status", "limit_req",
                "limit_req_zone", "limit_req_status")

stats = yxsvc.Stats(
    "security", "SEC_RESULTS",
    [("escapes", "escapes", 7), ("leaks", "leaks", 6), ("hangs", "hangs", 6)],
    {1: "identity and authorization", 2: "path parsing", 4: "downloads", 5: "uploads",
     6: "hostile listings", 10: "fuzzing", 11: "front-end exhaustion",
     17: "profiles and egress"}, 28,
    aliases={"escape": "escapes", "leak": "leaks", "hang": "hangs"})
atexit.register(stats.dump)


# ------------------------------------------------------------ foreign routes
def masked_body(r, tid):
    """r's body with the thread id tid and r's own X-Request-Id masked."""
    return r.content.replace(tid.encode(), b"<tid>").replace(
        r.headers.get("X-Request-Id", "-").encode(), b"<rid>")


def foreign_routes_404(svc, group, what, routes_on, tid, code=b"not_found"):
    """Group `group`: bob's request on every route of alice's thread tid
    (routes_on(tid): [(name, method, url, request kwargs)]) must answer
    exactly what the same route on a thread that does not exist answers: a
    404, the same bytes but for the thread id and the request's own id, and
    (unless code is None) naming the error code `code`. Each route is a case
    (escape when not so, `what` names the object); asserts none escaped."""
    unknown = "t" + secrets.token_hex(6)
    for (name, m, u, kw), (_, m2, u2, kw2) in zip(routes_on(tid), routes_on(unknown)):
        r = svc.request("bob", m, u, **kw)
        r2 = svc.request("bob", m2, u2, **kw2)
        body, body2 = masked_body(r, tid), masked_body(r2, unknown)
        esc = r.status_code != 404 or r2.status_code != 404 or body != body2 or \
            (code is not None and code not in body)
        stats.case(group, escape=esc, what="foreign %s %s -> %d %r" % (what, name, r.status_code,
                                                                      body[:80]))
        assert not esc, (name, r.status_code, r.text, r2.status_code, r2.text)


# ------------------------------------------------------------- auth service
start_auth = yxsvc.start_auth


# ----------------------------------------------------------------- services
def render_prod_conf(svc, auth_port):
    """nginx/yuxi-sandbox.conf as shipped around the two snippets that
    `yuxi-sandbox nginx-conf --auth request` renders for this instance; only
    the ADJUST values and the snippets' directory replaced."""
    ng = yxsvc.nginx_dirs(svc.base)
    out = os.path.join(ng, "snippets")
    os.makedirs(out, exist_ok=True)
    # client_max_body_size at the documented default (64m), as in the dev
    # configuration: group 11's slow 10 MB bodies must pass nginx's size
    # check to meet limit_conn (with the suite's 1 MiB they get 413 at once)
    env = dict(svc.env, YUXI_UPLOAD_LIMIT="64m")
    yxsvc.nginx_conf_cli(env, out, ["--auth", "request", "--auth-url",
                                    "http://127.0.0.1:%d/verify" % auth_port])
    with open(os.path.join(TOP_SRCDIR, "nginx", "yuxi-sandbox.conf")) as f:
        site = f.read()
    site = site[:site.index("# Redirect plain HTTP")]
    reps = [
        (r"listen 443 ssl http2;", "listen 127.0.0.1:%d ssl http2;" % svc.port),
        (r"listen \[::\]:443 ssl http2;", ""),
        (r"ssl_certificate /etc/ssl/certs/\S+;", "ssl_certificate %s/cert.pem;" % svc.base),
        (r"ssl_certificate_key /etc/ssl/private/\S+;", "ssl_certificate_key %s/key.pem;" % svc.base),
        (r"include /etc/nginx/yuxi-sandbox/", "include %s/" % out),
    ]
    for a, b in reps:
        site, n = re.subn(a, b, site)
        assert n >= 1, "production config changed: %s not found" % a
    text = ("user root;\nworker_processes 2;\ndaemon off;\npid %s/nginx.pid;\n"
            "error_log %s/nginx-error.log info;\n%s"
            "http {\ninclude /etc/nginx/mime.types;\ndefault_type application/octet-stream;\n"
            "access_log %s/nginx-access.log;\n" % (ng, svc.base, PROD_MAIN, svc.base))
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        text += "%s_temp_path %s/%s;\n" % (d, ng, d)
    text += site + "\n}\n"
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        f.write(text)
    return conf


class SecService(yxsvc.Service):
    """kind: the daemon (BINARIES); off: its YX_CONTROL_OFF; conf: the
    nginx variant (see the top of this file)."""

    def __init__(self, kind, off, conf, overrides):
        super().__init__(overrides=overrides, binary=BINARIES[kind], keepalive=True,
                         stem="yxsec")
        self.kind, self.off, self.conf = kind, off, conf
        if off:
            self.env["YX_CONTROL_OFF"] = off
        self.env["YUXI_UPLOAD_LIMIT"] = str(UPLOAD_LIMIT)
        self.auth = None

    def render_conf(self):
        if self.conf == "prod":
            self.auth = start_auth(self.tokens)
            return render_prod_conf(self, self.auth.server_address[1])
        return super().render_conf()

    def edit_conf(self, text):
        if self.conf == "dev-noblank":
            text = re.sub(r"\n\s*fastcgi_param HTTP_(X_YUXI_USER|X_YUXI_ROLE|AUTHORIZATION) \"\";",
                          "", text)
        elif self.conf == "dev-nointernal":
            text = text.replace("internal;", "")
        elif self.conf == "dev-unprotected":
            text = strip_front_limits(text)
        return text

    def stop(self):
        try:
            super().stop()
        finally:
            if self.auth is not None:
                self.auth.shutdown()

    # --- helpers ---------------------------------------------------------
    def user_data(self, tid):
        return os.path.join(self.saves, "threads", tid, "user-data")

    def workspace(self, tid):
        d = os.path.join(self.user_data(tid), "workspace")
        os.makedirs(d, exist_ok=True)
        return d

    def raw(self, data, timeout=20):
        """Send raw bytes over TLS; returns the whole raw response (bytes)."""
        ctx = ssl.create_default_context(cafile=self.cert)
        ctx.check_hostname = False
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(data)
                out = b""
                try:
                    while True:
                        c = t.recv(65536)
                        if not c:
                            break
                        out += c
                except (socket.timeout, ssl.SSLError, ConnectionError):
                    pass
        return out

    def raw_get(self, target, headers=(), who=None, method="GET"):
        """A hand-made HTTP/1.1 request (duplicate headers, raw bytes in the
        target); returns (status, header list, body)."""
        lines = [b"%s %s HTTP/1.1" % (method.encode(), target if isinstance(target, bytes)
                                      else target.encode()),
                 b"Host: localhost", b"Connection: close"]
        if who is not None:
            lines.append(b"Authorization: Bearer " + self.tokens[who].encode())
        for h in headers:
            lines.append(h if isinstance(h, bytes) else h.encode())
        out = self.raw(b"\r\n".join(lines) + b"\r\n\r\n")
        head, _, body = out.partition(b"\r\n\r\n")
        hl = head.split(b"\r\n")
        try:
            status = int(hl[0].split()[1])
        except (IndexError, ValueError):
            status = 0
        hdrs = []
        for l in hl[1:]:
            k, _, v = l.partition(b":")
            hdrs.append((k.strip().lower().decode("latin-1"), v.strip()))
        if any(k == "transfer-encoding" and v.lower() == b"chunked" for k, v in hdrs):
            body = dechunk(body)
        return status, hdrs, body


def strip_front_limits(text):
    """The dev configuration as it was before group 11: no front-end
    limits, 1,024 connections per worker."""
    text = re.sub(r"\n[ \t]*(%s)[ \t][^;]*;" % "|".join(FRONT_LIMITS), "", text)
    text, n = re.subn(r"worker_connections \d+;", "worker_connections 1024;", text)
    bare = re.sub(r"#[^\n]*", "", text)
    assert n == 1 and not re.search(r"\b(%s)\b" % "|".join(FRONT_LIMITS), bare), \
        "nginx/dev.conf.in changed: front-end limits not stripped"
    return text


def dechunk(b):
    out = b""
    while b:
        line, _, b = b.partition(b"\r\n")
        try:
            n = int(line.split(b";")[0], 16)
        except ValueError:
            break
        if n == 0:
            break
        out += b[:n]
        b = b[n + 2:]
    return out


_cache = {}


def stack(kind="prod", off="", conf="dev", **overrides):
    """A started, session-cached service of this kind/off/conf."""
    key = (kind, off, conf, tuple(sorted(overrides.items())))
    s = _cache.get(key)
    if s is not None and s.sandboxd is not None and s.sandboxd.poll() is None:
        return s
    s = SecService(kind, off, conf, overrides)
    _cache[key] = s
    s.start()
    return s


def stop_all():
    yxsvc.stop_all(_cache.values())
    _cache.clear()


atexit.register(stop_all)


@pytest.fixture(scope="session", autouse=True)
def _sec_session():
    yield
    stop_all()
    stats.dump()


if __name__ == "__main__" and sys.argv[1:2] == ["summary"]:
    sys.exit(stats.summary(sys.argv[2]))
