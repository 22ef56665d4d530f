"""Shared machinery of the security suite (docs/security.md).

Imported by every tests/security/test_*.py (no conftest.py of its own, so
it never collides with tests/e2e/conftest.py, which it loads under another
module name for the Service class and helpers).

- `stack(kind, off, conf)`: a started service, cached for the session:
  kind "prod" is the production yuxi-sandboxd, "control" the test-only
  tests/security/yuxi-sandboxd-control (YX_CONTROL_OFF=off), "cbroker" the
  control daemon with the unsafe broker; conf "dev" is nginx/dev.conf.in as
  shipped, "dev-noblank" the same without the lines that blank client
  identity headers, "dev-nointernal" without `internal;`,
  "dev-unprotected" without the front-end limits (main's 2 x 1,024 worker
  connections, nginx's default timeouts, no limit_conn / limit_req: the
  control of group 11), "prod" the production site file
  nginx/yuxi-sandbox.conf with a local auth service, in an nginx.conf
  whose main context has the settings docs/deployment.md asks for.
  Every instance has its own container prefix and shm name (with our pid).
- `stats`: per-group counters (cases, escapes, leaks, hangs, control cases
  and control catches) and measured figures, written at the end to
  $SEC_RESULTS (JSON) and printed by summary.py.
"""
import atexit
import http.server
import importlib.util
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
TOP_BUILDDIR = os.environ.get("top_builddir") or "/work/build-sec"
os.environ.setdefault("top_builddir", TOP_BUILDDIR)

_spec = importlib.util.spec_from_file_location(
    "yx_e2e_harness", os.path.join(TOP_SRCDIR, "tests", "e2e", "conftest.py"))
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)

BINARIES = {
    "prod": os.path.join(TOP_BUILDDIR, "yuxi-sandboxd"),
    "control": os.path.join(TOP_BUILDDIR, "tests", "security", "yuxi-sandboxd-control"),
    "cbroker": os.path.join(TOP_BUILDDIR, "tests", "security",
                            "yuxi-sandboxd-control-broker"),
}
UPLOAD_LIMIT = 1024 * 1024
GROUP_NAMES = {
    1: "identity and authorization", 2: "path parsing", 4: "downloads",
    5: "uploads", 6: "hostile listings", 10: "fuzzing (corpus replay, params)",
    11: "front-end exhaustion",
}
# The main context docs/deployment.md asks for around the production site
# file (Debian's nginx.conf has 768 worker connections and no rlimit).
PROD_MAIN = "worker_rlimit_nofile 20000;\nevents { worker_connections 8192; }\n"
# Directives of the front-end limits (group 11); "dev-unprotected" drops
# them and restores main's worker_connections.
FRONT_LIMITS = ("worker_rlimit_nofile", "client_header_timeout", "client_body_timeout",
                "send_timeout", "keepalive_timeout", "reset_timedout_connection",
                "limit_conn", "limit_conn_zone", "limit_conn_status", "limit_req",
                "limit_req_zone", "limit_req_status")


# ---------------------------------------------------------------- statistics
class Stats:
    def __init__(self):
        self.g = {}

    def _grp(self, group):
        return self.g.setdefault(group, {"cases": 0, "escapes": 0, "leaks": 0, "hangs": 0,
                                         "control_cases": 0, "control_caught": 0,
                                         "failures": [], "measures": {}})

    def case(self, group, escape=False, leak=False, hang=False, what=""):
        """One production case; returns True when it held."""
        s = self._grp(group)
        s["cases"] += 1
        s["escapes"] += bool(escape)
        s["leaks"] += bool(leak)
        s["hangs"] += bool(hang)
        if (escape or leak or hang) and len(s["failures"]) < 20:
            s["failures"].append(what)
        return not (escape or leak or hang)

    def control(self, group, caught, what=""):
        """One control case: caught is True when the leak was observed."""
        s = self._grp(group)
        s["control_cases"] += 1
        s["control_caught"] += bool(caught)
        return caught

    def measure(self, group, name, value):
        """A measured figure, printed under the group by summary.py."""
        self._grp(group)["measures"][name] = value

    def dump(self):
        path = os.environ.get("SEC_RESULTS")
        if not path:
            return
        old = {}
        try:
            with open(path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            pass
        for k, v in self.g.items():
            o = old.setdefault(str(k), {})
            for kk, vv in v.items():
                if kk == "failures":
                    o[kk] = (o.get(kk, []) + vv)[:20]
                elif kk == "measures":
                    o.setdefault(kk, {}).update(vv)
                else:
                    o[kk] = o.get(kk, 0) + vv
        with open(path, "w") as f:
            json.dump(old, f, indent=1, sort_keys=True)


stats = Stats()
atexit.register(stats.dump)


# ------------------------------------------------------------- auth service
class _Auth(http.server.BaseHTTPRequestHandler):
    tokens = {}

    def do_GET(self):
        user = self.tokens.get(self.headers.get("Authorization", ""))
        if user is None:
            self.send_response(401)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Auth-User", user)
        self.send_header("X-Auth-Role", "admin" if user == "admin" else "")
        self.end_headers()

    def log_message(self, *a):
        pass


def start_auth(tokens):
    handler = type("Auth", (_Auth,), {"tokens": {"Bearer " + t: u for u, t in tokens.items()}})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# ----------------------------------------------------------------- services
def render_prod_conf(svc, auth_port):
    """nginx/yuxi-sandbox.conf as shipped, only the ADJUST values replaced."""
    with open(os.path.join(TOP_SRCDIR, "nginx", "yuxi-sandbox.conf")) as f:
        site = f.read()
    site = site[:site.index("# Redirect plain HTTP")]
    saves = svc.saves
    skills = os.path.join(TOP_SRCDIR, "examples", "skills")
    reps = [
        (r"listen 443 ssl http2;", "listen 127.0.0.1:%d ssl http2;" % svc.port),
        (r"listen \[::\]:443 ssl http2;", ""),
        (r"ssl_certificate /etc/ssl/certs/\S+;", "ssl_certificate %s/cert.pem;" % svc.base),
        (r"ssl_certificate_key /etc/ssl/private/\S+;", "ssl_certificate_key %s/key.pem;" % svc.base),
        (r"http://127\.0\.0\.1:9000/verify", "http://127.0.0.1:%d/verify" % auth_port),
        (r"unix:/run/yuxi-sandbox/fcgi\.sock", "unix:" + svc.env["YUXI_FCGI_SOCKET"]),
        (r"/var/lib/yuxi-sandbox/threads", os.path.join(saves, "threads")),
        (r"/srv/yuxi/skills", skills),
    ]
    for a, b in reps:
        site, n = re.subn(a, b, site)
        assert n >= 1, "production config changed: %s not found" % a
    # optional pieces (the workbench snippet), when the config has them
    site = site.replace("/etc/nginx/snippets/yuxi-workbench.conf",
                        os.path.join(TOP_SRCDIR, "nginx", "workbench.conf"))
    site = site.replace("/usr/share/yuxi-sandbox/web", os.path.join(TOP_SRCDIR, "web"))
    ng = os.path.join(svc.base, "nginx")
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(ng, d), exist_ok=True)
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


class SecService(e2e.Service):
    def __init__(self, kind, off, conf, tag, overrides=None):
        base = tempfile.mkdtemp(prefix=tag + "-")
        super().__init__(base, prefix=tag + "-", shm="/" + tag, overrides=overrides)
        self.kind, self.off, self.conf = kind, off, conf
        self.binary = BINARIES[kind]
        if off:
            self.env["YX_CONTROL_OFF"] = off
        self.env["YUXI_UPLOAD_LIMIT"] = str(UPLOAD_LIMIT)
        self.auth = None
        self.sock = self.env["YUXI_FCGI_SOCKET"]

    def render(self):
        if self.conf == "prod":
            self.auth = start_auth(self.tokens)
            return render_prod_conf(self, self.auth.server_address[1])
        conf = e2e.render_nginx(self.base, self.port, self.tokens)
        with open(conf) as f:
            text = f.read()
        text = text.replace("@WORKBENCH_CONF@", os.path.join(TOP_SRCDIR, "nginx", "workbench.conf"))
        text = text.replace("@WEB_ROOT@", os.path.join(TOP_SRCDIR, "web"))
        if self.conf == "dev-noblank":
            text = re.sub(r"\n\s*fastcgi_param HTTP_(X_YUXI_USER|X_YUXI_ROLE|AUTHORIZATION) \"\";",
                          "", text)
        elif self.conf == "dev-nointernal":
            text = text.replace("internal;", "")
        elif self.conf == "dev-unprotected":
            text = strip_front_limits(text)
        with open(conf, "w") as f:
            f.write(text)
        return conf

    def start(self):
        if not os.access(self.binary, os.X_OK):
            pytest.fail("missing %s (build it: make check builds check_PROGRAMS)" % self.binary)
        if not self.ready:
            self.setup()
        self.log = open(os.path.join(self.base, "sandboxd.log"), "ab")
        self.sandboxd = subprocess.Popen([self.binary], env=self.env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.sock) or self.sandboxd.poll() is not None:
                break
            time.sleep(0.05)
        assert self.sandboxd.poll() is None, "daemon died: " + self.read_log()
        conf = self.render()
        self.nginx = subprocess.Popen(
            [e2e.NGINX, "-p", os.path.join(self.base, "nginx"), "-c", conf,
             "-e", os.path.join(self.base, "nginx-error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                r = self.request(None, "GET", "/healthz", timeout=2)
                if r.status_code == 200:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError("service did not come up:\n" + self.read_log())

    def stop(self):
        super().stop()
        if self.auth is not None:
            self.auth.shutdown()
        if os.environ.get("YUXI_E2E_KEEP") != "1":
            shutil.rmtree(self.base, ignore_errors=True)

    # --- helpers ---------------------------------------------------------
    def request(self, who, method, path, headers=None, **kw):
        """As e2e's, over one kept-alive session per instance (faster)."""
        import requests
        if getattr(self, "_session", None) is None:
            self._session = requests.Session()
        h = dict(headers or {})
        if who is not None:
            h["Authorization"] = "Bearer " + self.tokens[who]
        kw.setdefault("timeout", 90)
        kw.setdefault("allow_redirects", False)
        return self._session.request(method, self.url + path, headers=h,
                                     verify=os.path.join(self.base, "cert.pem"), **kw)

    def user_data(self, tid):
        return os.path.join(self.saves, "threads", tid, "user-data")

    def workspace(self, tid):
        d = os.path.join(self.user_data(tid), "workspace")
        os.makedirs(d, exist_ok=True)
        return d

    def containers(self, thread=None):
        return e2e.containers(self.prefix, thread=thread)

    def raw(self, data, timeout=20):
        """Send raw bytes over TLS; returns the whole raw response (bytes)."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.base, "cert.pem"))
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
_seq = [0]


def stack(kind="prod", off="", conf="dev", **overrides):
    """A started, session-cached service of this kind/off/conf."""
    key = (kind, off, conf, tuple(sorted(overrides.items())))
    s = _cache.get(key)
    if s is not None and s.sandboxd is not None and s.sandboxd.poll() is None:
        return s
    _seq[0] += 1
    s = SecService(kind, off, conf, "yxsec%dn%d" % (os.getpid(), _seq[0]),
                   overrides={k: str(v) for k, v in overrides.items()})
    _cache[key] = s
    s.start()
    return s


def stop_all():
    for s in list(_cache.values()):
        try:
            s.stop()
        except Exception:
            pass
    _cache.clear()


atexit.register(stop_all)


@pytest.fixture(scope="session", autouse=True)
def _sec_session():
    yield
    stop_all()
    stats.dump()
    stats.g.clear()


def new_thread(svc, who="alice"):
    return svc.new_thread(who)


def engine_up():
    return e2e.engine_up()
