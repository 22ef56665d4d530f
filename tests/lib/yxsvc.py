# SPDX-License-Identifier: MIT
"""yxsvc - the one Python harness that starts the real service for tests
and benchmarks: yuxi-sandboxd (master, workers, reaper, FastCGI socket)
behind a real nginx with TLS, exactly as production runs it.

Used by tests/e2e/conftest.py (fixtures), tests/security/secfix.py,
tests/proof/prooffix.py, tests/deepagents/serve.py, tests/web/serve.py and
bench/benchsvc.py. The run-*.sh wrappers put tests/lib on PYTHONPATH; bench
scripts add it themselves (they run from the checkout).

Environment: top_builddir (the build directory holding yuxi-sandboxd; set
by `make check` and the run-*.sh wrappers; there is no fallback: a Service
without an explicit binary fails clearly when it is unset), top_srcdir (the
checkout; default: two levels above this file), YUXI_E2E_IMAGE (sandbox
image, default yuxi-sandbox-test:latest), YUXI_TEST_RUNTIME (the
sandboxes' runtime, YUXI_SANDBOX_RUNTIME: runc, the default, or runsc to
run a suite under gVisor), YX_TEST_DISK_QUOTA (e.g. "2g": every instance
runs with that YUXI_THREAD_DISK_QUOTA, i.e. each thread's user-data is its
own loop-mounted image) and YX_TEST_POOL (e.g. "4": every instance keeps
that many pre-started boxes, YUXI_POOL_SIZE, so new threads run in pool
boxes, each of its own uid when the instance has a uid range). Unset (or
"0"), an instance runs without either, said explicitly: the service's
defaults ("auto", docs/configuration.md "Protections on by default") would
make every one of the suites' hundreds of instances start a pool of 3
boxes and give every thread a loop-mounted 2 GiB image, which the suites
that are not about them pay for in CI time. "auto" (`make check-quota`'s
proof run, tests/e2e/test_defaults.py) leaves them unset: the service's
defaults, on where the host gives the privileges (root here). A test that
needs one on or off whatever the environment says sets it in its
overrides; `Service.pool()` and `Service.disk_quota()` are what the
running instance has (its /readyz "protections").

- `Service(base, prefix, shm, overrides, binary=None, keepalive=False,
  stem=None)`: one instance in directory `base` with its own free 127.0.0.1 port,
  bearer tokens (alice, bob, admin), self-signed pair, shm name and
  container prefix (never an extension of another instance's prefix: a
  reaper's reconcile removes every labelled container under its own).
  Hooks: `binary` (the daemon to run; default $top_builddir/yuxi-sandboxd),
  `edit_conf(text)` (change the rendered nginx/dev.conf.in),
  `render_conf()` (write a whole other nginx.conf) and `nginx_wrap` (the
  command nginx runs under: `["ip", "netns", "exec", NS]` puts it in a
  network namespace, tests/remote/netfault.py). `start()` / `halt()`
  (SIGTERM, containers kept) / `stop()` (also removes the containers, the
  mounts beneath base (thread disk images), the shm object and, when
  `cleanup` is set, the base directory).
  Every answer `request()` gets is remembered (`answers`: method, path,
  X-Request-Id, status); `audit_problems()` checks that each answer of a
  worker to an /api/ path left exactly one line with its request id and
  status in the instance's audit log (`<base>/audit.jsonl`).
  With `stem`, the instance is named "<stem><pid>n<k>" and lives in a fresh
  temporary directory, removed on stop unless YUXI_E2E_KEEP=1.
  The instance's `url` ends in its YUXI_URL_PREFIX (overrides), so paths
  are written without it; `origin` is the bare https://127.0.0.1:port.
  Hook `auth_headers(who)`: how `who` proves its identity (default: its
  bearer token).
- `SiteService(auth, ...)`: an instance behind a site nginx that includes
  the two snippets `yuxi-sandbox nginx-conf` renders (docs/nginx.md) for an
  identity recipe, under an optional URL prefix, next to the site's own
  locations; `nginx_conf_cli()` runs that command; `start_auth(tokens)` is
  a small auth service for auth_request (bearer token -> X-Auth-User).
- Remote mode (docs/scaling.md): `ProvisionerService(token_file, name)` a
  sandbox host (YUXI_MODE=provisioner) behind nginx/provisioner.conf.in,
  requests made as the front makes them, `bare()` ones without the
  credential, `kill()` (SIGKILL of the daemon, nginx kept) and
  `start_daemon()`; `FrontService(provisioners, token_file)` the front
  (YUXI_MODE=front) behind nginx/dev.conf.in plus the snippets of
  scripts/remote-nginx-conf.sh (hook `edit_remote(text)`);
  `Cluster(n)` one front and hosts p1..pn sharing a fresh credential
  (`make_secret`), `hosts_of(tid)` where a thread's files are.
- `started(svc)` and `factory_of(new)`: the bodies of the suites' pytest
  fixtures (`yield from`): one instance started, yielded and stopped; a
  `make(...)` that starts and returns new(...), each stopped at the end.
- `Stats`: per-group counters of the proof suites merged into a results
  JSON file at exit; `Stats.summary(path)` prints the per-group table.
- `serve(svc, info_path, info)`: run a started-on-demand instance (and
  optionally further ones) for a non-Python test runner (deepagents, web)
  until SIGTERM/SIGINT.
"""
import base64
import ctypes
import http.server
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import requests
import urllib3

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
IMAGE = os.environ.get("YUXI_E2E_IMAGE", "yuxi-sandbox-test:latest")
DISK_QUOTA = os.environ.get("YX_TEST_DISK_QUOTA", "")
POOL = os.environ.get("YX_TEST_POOL", "")
# The e2e settings every instance starts from (callers override).
WORKERS = 3
BODY_LIMIT = 64 * 1024
UPLOAD_LIMIT = 1024 * 1024
SOCKET_WAIT = 10	# seconds for the FastCGI socket to appear
HEALTH_WAIT = 15	# seconds for /healthz to answer through nginx
ANSWERS_KEPT = 200000	# answers remembered per instance (benchmarks send more)

urllib3.disable_warnings()


class HarnessError(RuntimeError):
    """The harness cannot do what was asked (no build, service down)."""


def builddir():
    """$top_builddir, as the build system sets it; HarnessError when unset."""
    d = os.environ.get("top_builddir")
    if not d:
        raise HarnessError("top_builddir is not set: run the suite through `make check` "
                           "or set top_builddir to the build directory")
    return os.path.abspath(d)


def build_path(*parts):
    return os.path.join(builddir(), *parts)


# ------------------------------------------------------------------ helpers
def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A port of 127.0.0.1 that is free now, below the kernel's ephemeral
    range: no outgoing connection of the parallel suites can take it as its
    source port before nginx binds it (a port the kernel hands out for
    bind(0) can be)."""
    low = min(_ephemeral_low(), 32768)
    for _ in range(200):
        port = random.randrange(low // 2, low)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise HarnessError("no free port below %d" % low)


def docker_rm_prefix(prefix):
    """Remove every container whose name starts with prefix; return the names."""
    try:
        out = subprocess.run(
            ["docker", "ps", "-a", "--filter", "name=^/" + prefix, "--format", "{{.Names}}"],
            capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = [n for n in out if n.startswith(prefix)]
    if names:
        subprocess.run(["docker", "rm", "-f"] + names, capture_output=True, timeout=120)
    return names


def containers(prefix, thread=None, running_only=False):
    """[(full id, name)] of the containers named <prefix>..., optionally of one thread."""
    cmd = ["docker", "ps", "--no-trunc", "--filter", "name=^/" + prefix,
           "--format", "{{.ID}} {{.Names}}"]
    if not running_only:
        cmd.insert(2, "-a")
    if thread is not None:
        cmd[2:2] = ["--filter", "label=io.yuxi.sandbox.thread=" + thread]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [l.split(" ", 1) for l in out.stdout.splitlines() if l.strip()]
    return [(i, n) for i, n in rows if n.startswith(prefix)]


def mounts_below(path):
    """Mount points at or beneath path (deepest first), from mountinfo."""
    path = os.path.realpath(path).rstrip("/")
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4]
                # mountinfo escapes space, tab, newline and backslash in octal
                mp = mp.encode().decode("unicode_escape").encode("latin-1").decode(
                    "utf-8", "surrogateescape")
                if mp == path or mp.startswith(path + "/"):
                    out.append(mp)
    except OSError:
        pass
    return sorted(set(out), key=len, reverse=True)


def loops_below(base):
    """Loop devices whose backing file lies beneath base."""
    n = 0
    for dev in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % dev) as f:
                n += f.read().startswith(base + "/")
        except OSError:
            pass
    return n


def unmount_below(path):
    """Lazily unmount everything at or beneath path (thread disk images are
    kept mounted across a daemon's restarts); their loop devices go with
    their last user. umount2(2) itself: umount(8) reads the whole mount
    table for each, which with thousands of images takes minutes. Returns
    the mount points."""
    mps = mounts_below(path)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        libc = None
    for mp in mps:
        if libc is None or libc.umount2(os.fsencode(mp), 2) != 0:	# MNT_DETACH
            subprocess.run(["umount", "-l", mp], capture_output=True)
    return mps


def shm_unlink(name):
    try:
        os.unlink("/dev/shm/" + name.lstrip("/"))
    except OSError:
        pass


def image_present(image):
    try:
        return subprocess.run(["docker", "image", "inspect", image],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def engine_has_runsc():
    """Does the engine list a runtime named runsc (scripts/setup.sh adds it)?"""
    try:
        out = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return '"runsc"' in out


def engine_up():
    """True when the engine answers and has the test image."""
    return image_present(IMAGE)


_getaddrinfo = socket.getaddrinfo


def _getaddrinfo_localhost(host, *args, **kw):
    if isinstance(host, str) and host.endswith(".localhost"):
        host = "127.0.0.1"
    return _getaddrinfo(host, *args, **kw)


def resolve_localhost():
    """Resolve every NAME.localhost to 127.0.0.1 in this process, as curl and
    Chromium do (glibc here does not): a preview's URL
    (https://<capability>.preview.localhost:PORT/) then works with
    requests, with the name as Host and SNI. Nothing else changes."""
    socket.getaddrinfo = _getaddrinfo_localhost


def wait_for(pred, timeout, step=0.2):
    """Poll pred() every step seconds until truthy or `timeout` seconds
    have passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def service_env(base, prefix, shm):
    """The daemon's environment: ours without YUXI_*, plus the e2e settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    env.update({
        # an installed /etc/yuxi-sandbox/yuxi-sandbox.conf never reaches tests
        "YUXI_CONFIG": "none",
        "YUXI_SAVES_DIR": os.path.join(base, "saves"),
        "YUXI_SKILLS_DIR": os.path.join(TOP_SRCDIR, "examples", "skills"),
        "YUXI_AGENTS_FILE": os.path.join(TOP_SRCDIR, "examples", "agents.json"),
        "YUXI_FCGI_SOCKET": os.path.join(base, "run", "fcgi.sock"),
        "YUXI_SANDBOX_IMAGE": IMAGE,
        "YUXI_SANDBOX_CONTAINER_PREFIX": prefix,
        "YUXI_SHM_NAME": shm,
        "YUXI_SANDBOX_IDLE_TIMEOUT": "30",
        "YUXI_SANDBOX_IDLE_CHECK_INTERVAL": "2",
        "YUXI_SANDBOX_EXEC_TIMEOUT": "30",
        "YUXI_WORKERS": str(WORKERS),
        # no cap on one user's commands: six tests send parallel commands
        # from a plain client, which the cap answers with 503s (test_capacity
        # x2, test_limits, test_pool, test_remote spread, test_g9_reload under
        # load; every other suite passes with the default); test_g12_tenants
        # and test_remote check the cap itself
        "YUXI_USER_COMMANDS": "256",
        "YUXI_BODY_LIMIT": str(BODY_LIMIT),
        "YUXI_UPLOAD_LIMIT": str(UPLOAD_LIMIT),
        "YUXI_AUDIT_LOG": os.path.join(base, "audit.jsonl"),
    })
    if os.environ.get("YUXI_TEST_RUNTIME"):
        env["YUXI_SANDBOX_RUNTIME"] = os.environ["YUXI_TEST_RUNTIME"]
    # off unless asked for (module docstring); "auto": the service's defaults
    if DISK_QUOTA != "auto":
        env["YUXI_THREAD_DISK_QUOTA"] = DISK_QUOTA or "0"
    if POOL != "auto":
        env["YUXI_POOL_SIZE"] = POOL or "0"
    return env


def nginx_dirs(base):
    """nginx's prefix under base with every temp directory; returns it."""
    ng = os.path.join(base, "nginx")
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(ng, d), exist_ok=True)
    return ng


def render_dev_conf(base, port, tokens):
    """nginx/dev.conf.in with this instance's values (writes tokens.map);
    returns the text."""
    ng = nginx_dirs(base)
    with open(os.path.join(ng, "tokens.map"), "w") as f:
        f.write('map $http_authorization $yuxi_user {\n\tdefault "";\n')
        for user, tok in tokens.items():
            f.write('\t"Bearer %s" %s;\n' % (tok, user))
        f.write('}\nmap $http_authorization $yuxi_role {\n\tdefault "";\n')
        f.write('\t"Bearer %s" admin;\n}\n' % tokens["admin"])
    subs = {
        "@PREFIX@": ng, "@PORT@": str(port),
        "@SOCKET@": os.path.join(base, "run", "fcgi.sock"),
        "@SAVES@": os.path.join(base, "saves"),
        "@SKILLS@": os.path.join(TOP_SRCDIR, "examples", "skills"),
        "@CERT@": os.path.join(base, "cert.pem"), "@KEY@": os.path.join(base, "key.pem"),
        "@TOKENS@": os.path.join(ng, "tokens.map"),
        "@ERRLOG@": os.path.join(base, "nginx-error.log"),
        "@ACCESSLOG@": os.path.join(base, "nginx-access.log"),
        "@PIDFILE@": os.path.join(ng, "nginx.pid"),
        "@WEB_ROOT@": os.path.join(TOP_SRCDIR, "web"),
        "@WORKBENCH_CONF@": os.path.join(TOP_SRCDIR, "nginx", "workbench.conf"),
    }
    with open(os.path.join(TOP_SRCDIR, "nginx", "dev.conf.in")) as f:
        text = f.read()
    for k, v in subs.items():
        text = text.replace(k, v)
    return text


# ------------------------------------------------------------------ service
_tags = [0]


def new_tag(stem):
    """A name no other instance of this process has: "<stem><pid>n<k>"."""
    _tags[0] += 1
    return "%s%dn%d" % (stem, os.getpid(), _tags[0])


class Service:
    """A running service and helpers to talk to it as alice, bob, admin or anonymous."""

    def __init__(self, base=None, prefix=None, shm=None, overrides=None, binary=None,
                 keepalive=False, stem=None):
        """With stem, base, prefix and shm are "<stem><pid>n<k>" (base a fresh
        temporary directory, removed on stop unless YUXI_E2E_KEEP=1);
        without, base must exist and prefix and shm default to qyxe2e<pid>."""
        self.cleanup = False		# stop() removes base too
        if stem is not None:
            tag = new_tag(stem)
            base = tempfile.mkdtemp(prefix=tag + "-")
            prefix, shm = tag + "-", "/" + tag
            self.cleanup = os.environ.get("YUXI_E2E_KEEP") != "1"
        self.base = base
        self.pid = os.getpid()
        self.prefix = prefix or "qyxe2e%d-" % self.pid
        self.shm = shm or "/qyxe2e%d" % self.pid
        self.port = free_port()
        self.origin = "https://127.0.0.1:%d" % self.port
        self.cert = os.path.join(base, "cert.pem")
        self.tokens = {u: secrets.token_hex(24) for u in ("alice", "bob", "admin")}
        self.env = service_env(base, self.prefix, self.shm)
        self.env.update({k: str(v) for k, v in (overrides or {}).items()})
        self.url_prefix = self.env.get("YUXI_URL_PREFIX", "")
        self.url = self.origin + self.url_prefix	# paths are written without the prefix
        self.workers = int(self.env["YUXI_WORKERS"])
        self.saves = self.env["YUXI_SAVES_DIR"]
        self.sock = self.env["YUXI_FCGI_SOCKET"]
        self.binary = binary or build_path("yuxi-sandboxd")
        self.keepalive = keepalive	# one kept-alive session per instance
        self.nginx_wrap = []		# what nginx runs under (["ip", "netns", "exec", NS])
        self.wait_scale = 1		# start-up waits × this (a daemon under valgrind)
        self.sandboxd = None
        self.nginx = None
        self.log = None
        self.ready = False
        self._protections = None	# /readyz "protections" of the running instance
        self._session = None
        self.answers = []	# (method, path, X-Request-Id, status) of every answer

    def setup(self):
        """One-time preparation: run directory and the self-signed pair."""
        os.makedirs(os.path.join(self.base, "run"), exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,DNS:*.preview.localhost,"
                        "IP:127.0.0.1",
                        "-keyout", os.path.join(self.base, "key.pem"),
                        "-out", self.cert],
                       check=True, capture_output=True)
        self.ready = True

    # --- hooks -------------------------------------------------------------
    def auth_headers(self, who):
        """The headers by which `who` (not None) proves its identity."""
        return {"Authorization": "Bearer " + self.tokens[who]}

    def edit_conf(self, text):
        """Change the rendered dev configuration (default: as shipped)."""
        return text

    def render_conf(self):
        """Write nginx.conf for this instance; returns its path."""
        text = self.edit_conf(render_dev_conf(self.base, self.port, self.tokens))
        conf = os.path.join(self.base, "nginx", "nginx.conf")
        with open(conf, "w") as f:
            f.write(text)
        return conf

    # --- life --------------------------------------------------------------
    def start(self):
        """Start the daemon and nginx (again, after halt()) and wait for
        /healthz; returns self."""
        if not os.access(self.binary, os.X_OK):
            raise HarnessError("no daemon at %s (make check builds it; top_builddir?)"
                               % self.binary)
        if not self.ready:
            self.setup()
        self.log = open(os.path.join(self.base, "sandboxd.log"), "ab")
        self.sandboxd = subprocess.Popen([self.binary], env=self.env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(self.sock) or self.sandboxd.poll() is not None,
                 SOCKET_WAIT * self.wait_scale, 0.05)
        if self.sandboxd.poll() is not None:
            raise HarnessError("%s died: %s" % (os.path.basename(self.binary),
                                                self.read_log()))
        conf = self.render_conf()
        self.nginx = subprocess.Popen(
            self.nginx_wrap + [NGINX, "-p", os.path.join(self.base, "nginx"), "-c", conf,
             "-e", os.path.join(self.base, "nginx-error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        up = []

        def done():	# nginx gone, or the first /healthz that answered
            if self.nginx.poll() is not None:
                return True
            if self._healthy():
                up.append(True)
            return bool(up)
        wait_for(done, HEALTH_WAIT * self.wait_scale, 0.1)
        if not up:
            raise HarnessError("service did not come up:\n" + self.read_log() +
                               "\nnginx: " + self.nginx_errors()[-2000:])
        self._protections = None
        return self

    def protections(self):
        """The protections the running instance settled (/readyz
        "protections": pool, disk_quota), asked once per start; {} when
        it does not say (a front, an older daemon)."""
        if self._protections is None:
            try:
                r = self.request(None, "GET", "/readyz", timeout=30)
                self._protections = r.json().get("protections") or {}
            except (requests.RequestException, ValueError):
                return {}
        return self._protections

    def pool(self):
        """Pre-started boxes the instance keeps (0: no pool): an explicit
        YUXI_POOL_SIZE, else what the defaults gave on this host."""
        v = self.env.get("YUXI_POOL_SIZE", "auto")
        if v not in ("", "auto"):
            return int(v)
        return int((self.protections().get("pool") or {}).get("size") or 0)

    def disk_quota(self):
        """Bytes of a new thread's disk quota (0: none), like pool()."""
        return int((self.protections().get("disk_quota") or {}).get("bytes") or 0)

    def nginx_errors(self):
        """nginx's error log of this instance ("" when there is none)."""
        try:
            with open(os.path.join(self.base, "nginx-error.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _healthy(self):
        try:
            return self.request(None, "GET", "/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def read_log(self, tail=4000):
        """The service log (its last `tail` characters; all with tail=None)."""
        try:
            with open(os.path.join(self.base, "sandboxd.log"), "rb") as f:
                text = f.read().decode("utf-8", "replace")
                return text if tail is None else text[-tail:]
        except OSError:
            return ""

    def halt(self):
        """SIGTERM nginx and the master, wait; containers stay. Returns the master's status."""
        for p in (self.nginx, self.sandboxd):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in (self.nginx, self.sandboxd):
            if p is None:
                continue
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.log is not None:
            self.log.close()
            self.log = None
        status = self.sandboxd.returncode if self.sandboxd is not None else None
        self.nginx = self.sandboxd = None
        return status

    def stop(self):
        """halt(), then remove the containers, the shm object and (cleanup) base."""
        try:
            self.halt()
            docker_rm_prefix(self.prefix)
            unmount_below(self.base)
            shm_unlink(self.shm)
        finally:
            self._session = None
            if self.cleanup:
                shutil.rmtree(self.base, ignore_errors=True)

    # --- requests ------------------------------------------------------------
    def request(self, who, method, path, headers=None, session=None, **kw):
        """One HTTPS request as `who` (None: anonymous), over `session`, the
        instance's kept-alive session (keepalive) or a new connection."""
        if session is None and self.keepalive:
            if self._session is None:
                self._session = requests.Session()
            session = self._session
        h = dict(headers or {})
        if who is not None:
            h.update(self.auth_headers(who))
        kw.setdefault("timeout", 90)
        kw.setdefault("allow_redirects", False)
        r = (session or requests).request(method, self.url + path, headers=h,
                                          verify=self.cert, **kw)
        if len(self.answers) < ANSWERS_KEPT:
            self.answers.append((method, path, r.headers.get("X-Request-Id"), r.status_code))
        return r

    # --- the audit log -------------------------------------------------------
    def audit_path(self):
        """The audit log file, or None when the instance has none."""
        p = self.env.get("YUXI_AUDIT_LOG", "")
        return p if p not in ("", "off") else None

    def audit_lines(self, rotated=True):
        """The audit log's lines, parsed (a line that is not JSON fails);
        with rotated, those of a rotated "<file>.1" first."""
        p = self.audit_path()
        out = []
        for f in ([p + ".1"] if rotated and p else []) + [p]:
            if f is None or not os.path.exists(f):
                continue
            with open(f, "rb") as fh:
                out += [json.loads(l) for l in fh.read().decode("utf-8").splitlines()]
        return out

    def audit_problems(self):
        """Answers of a worker (those with an X-Request-Id) to /api/ paths
        without exactly one audit line of that id and status. Answers nginx
        made itself (429, 413, 502) carry no id and are not counted.
        Returns (problems, answers checked)."""
        if self.audit_path() is None:
            return [], 0
        api = "/api/"	# request() paths are below the URL prefix
        by_id = {}
        for line in self.audit_lines():
            by_id.setdefault(line.get("request_id"), []).append(line)
        bad, n = [], 0
        for method, path, rid, status in list(self.answers):
            if rid is None or not path.startswith(api):
                continue
            n += 1
            got = by_id.get(rid, [])
            if len(got) != 1 or got[0].get("status") != status:
                bad.append((method, path.split("?")[0], rid, status,
                            [(g.get("op"), g.get("status")) for g in got]))
        return bad, n

    def worker_pids(self):
        """Children of the master: workers and the reaper, not the
        privileged helper (named yuxi-priv) nor the egress proxy's or the
        preview ingress's supervisor (named yuxi-egress, yuxi-ingress)."""
        out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(self.sandboxd.pid)],
                             capture_output=True, text=True).stdout.split("\n")
        return sorted(int(l.split()[0]) for l in out
                      if l.strip() and l.split()[1:] not in (["yuxi-priv"], ["yuxi-egress"],
                                                             ["yuxi-ingress"]))

    def egress_pids(self):
        """The egress proxy's supervisor (named yuxi-egress, a child of the
        master) and the proxy it runs, when there are."""
        out = subprocess.run(["ps", "-eo", "pid=,ppid=,comm="],
                             capture_output=True, text=True).stdout.split("\n")
        rows = [l.split() for l in out if len(l.split()) == 3]
        sup = [int(p) for p, pp, c in rows if int(pp) == self.sandboxd.pid and c == "yuxi-egress"]
        return sup + [int(p) for p, pp, c in rows if sup and int(pp) == sup[0]]

    def helper_pid(self):
        """The privileged helper's pid (None when there is none)."""
        out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(self.sandboxd.pid)],
                             capture_output=True, text=True).stdout.split("\n")
        pids = [int(l.split()[0]) for l in out if l.split()[1:] == ["yuxi-priv"]]
        return pids[0] if pids else None

    def pids_from_log(self, kind):
        """Pids the master logged as started `kind` (worker/reaper), in order."""
        out = []
        for line in self.read_log(tail=None).splitlines():
            i = line.find("started %s pid " % kind)
            if i >= 0:
                out.append(int(line[i:].split()[3]))
        return out

    def client(self, who):
        return Client(self, who)

    def new_thread(self, who="alice", agent_id="coder"):
        """Create a fresh thread of `who`; returns its id."""
        tid = "t%s" % secrets.token_hex(6)
        r = self.request(who, "POST", "/api/threads",
                         json={"thread_id": tid, "agent_id": agent_id})
        assert r.status_code == 201, r.text
        return tid

    def execute(self, tid, command, who="alice", session=None, **kw):
        """POST /api/execute; returns the response."""
        body = {"thread_id": tid, "command": command}
        return self.request(who, "POST", "/api/execute", json=body, session=session, **kw)

    def sandboxes(self):
        """The admin listing: {thread_id: slot} (slots without a thread keyed by container)."""
        r = self.request("admin", "GET", "/api/admin/sandboxes")
        assert r.status_code == 200, r.text
        return {(s["thread_id"] or s["container"]): s for s in r.json()["sandboxes"]}

    def containers(self, thread=None, running_only=False):
        """[(id, name)] of the instance's containers (of one thread). With a
        pool (YUXI_POOL_SIZE), boxes waiting in the pool or being made belong to no
        thread and are left out, and a thread's pool box (no thread label:
        the table says whose it is) is counted as its container."""
        got = containers(self.prefix, thread=thread, running_only=running_only)
        if self.pool() == 0:
            return got
        try:
            slots = self.sandboxes()
        except requests.RequestException:
            return got  # halted: no table to ask, every container counts
        if thread is None:  # waiting, or being made for the pool (no thread yet)
            waiting = {v["container"] for v in slots.values()
                       if v["state"] == "pooled" or not v.get("thread_id")}
            return [(i, n) for i, n in got if n not in waiting]
        box = (slots.get(thread) or {}).get("container") or ""
        if "-pool-" in box:
            got += [(i, n) for i, n in containers(self.prefix, running_only=running_only)
                    if n == box]
        return got


def started(svc):
    """The body of a pytest fixture of one instance, as `yield from
    started(Service(...))`: starts svc, yields it and stops it afterwards,
    also when its start failed or the test did."""
    try:
        svc.start()
        yield svc
    finally:
        svc.stop()


def factory_of(new):
    """The body of a pytest `factory` fixture, as `yield from factory_of(new)`:
    yields make(*args, **kw), which starts new(*args, **kw) (a Service not
    yet started) and returns it; afterwards each one made is stopped, also
    one whose start failed."""
    made = []

    def make(*args, **kw):
        s = new(*args, **kw)
        made.append(s)
        s.start()
        return s
    yield make
    for s in made:
        s.stop()


def stop_all(services):
    """Stop each of services (a copy is taken), ignoring errors: for atexit
    and the end of a session."""
    for s in list(services):
        try:
            s.stop()
        except Exception:
            pass


class Client:
    def __init__(self, svc, who):
        self.svc = svc
        self.who = who

    def get(self, path, **kw):
        return self.svc.request(self.who, "GET", path, **kw)

    def post(self, path, **kw):
        return self.svc.request(self.who, "POST", path, **kw)

    def delete(self, path, **kw):
        return self.svc.request(self.who, "DELETE", path, **kw)

    def put(self, path, **kw):
        return self.svc.request(self.who, "PUT", path, **kw)

    def patch(self, path, **kw):
        return self.svc.request(self.who, "PATCH", path, **kw)

    def request(self, method, path, **kw):
        return self.svc.request(self.who, method, path, **kw)


# ------------------------------------------------- a checkout's dev run
def dev_user_env(**extra):
    """A user's shell: nothing of the test harness's YUXI_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    env.update(extra)
    return env


class DevCheckout:
    """A checkout of its own in a temporary directory - the files
    scripts/run-service.sh uses and a build tree beside them whose programs
    are this build's - started with `scripts/run-service.sh --detach`
    (extra arguments: `args`) as `./scripts/run.sh --detach` would, with
    YUXI_DEV_PORT and YUXI_INSTANCE of its own. `info`: top, port,
    instance, prefix, base, cert, tokens. `stop()` runs `--stop`, then
    removes what is left of the instance."""
    PROGRAMS = ("yuxi-sandboxd", "yuxi-sandbox", "yuxi-run", "yuxi-agent")

    def __init__(self, image, args=()):
        self.image, self.args = image, list(args)
        self.top = tempfile.mkdtemp(prefix="yxdev-")
        os.chmod(self.top, 0o755)
        self.instance = "readme%d" % os.getpid()
        self.port = free_port()
        self.env = dev_user_env(YUXI_DEV_PORT=str(self.port), YUXI_INSTANCE=self.instance,
                                YUXI_SANDBOX_IMAGE=image,
                                BUILD_DIR=os.path.join(self.top, "build"))
        self.info = {"top": self.top, "port": self.port, "instance": self.instance,
                     "prefix": "yuxi-sandbox.%s-" % self.instance,
                     "base": "https://127.0.0.1:%d" % self.port,
                     "cert": os.path.join(self.top, "var", "tls", "cert.pem")}

    def _lay_out(self):
        top = self.top
        for d in ("nginx", "web", "examples"):
            shutil.copytree(os.path.join(TOP_SRCDIR, d), os.path.join(top, d))
        os.makedirs(os.path.join(top, "scripts"))
        for f in ("run-service.sh", "remote-nginx-conf.sh"):
            shutil.copy2(os.path.join(TOP_SRCDIR, "scripts", f), os.path.join(top, "scripts"))
        os.makedirs(os.path.join(top, "conf"))
        shutil.copy2(os.path.join(TOP_SRCDIR, "conf", "yuxi-sandbox.conf.in"),
                     os.path.join(top, "conf"))
        build = os.path.join(top, "build")
        os.makedirs(build)
        for p in self.PROGRAMS:
            shutil.copy2(build_path(p), os.path.join(build, p))
        # what makes a directory a configured build tree of this checkout
        open(os.path.join(build, "config.status"), "w").close()
        with open(os.path.join(build, "Makefile"), "w") as f:
            f.write("abs_top_builddir = %s\nabs_top_srcdir = %s\n" % (build, top))

    def run_service(self, *args, timeout=180):
        return subprocess.run([os.path.join(self.top, "scripts", "run-service.sh")] + list(args),
                              cwd=self.top, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def start(self):
        self._lay_out()
        r = self.run_service("--detach", *self.args)
        if r.returncode != 0:
            raise HarnessError("run-service.sh --detach failed:\n" + r.stdout + r.stderr)
        with open(os.path.join(self.top, "var", "dev-tokens")) as f:
            self.info["tokens"] = {l.split()[0]: l.split()[1] for l in f if l.strip()}
        return self

    def stop(self):
        try:
            self.run_service("--stop", timeout=240)
        finally:
            docker_rm_prefix(self.info["prefix"])
            for n in ("yuxi-sandbox." + self.instance, "yuxi-sandbox.%s.lock" % self.instance):
                try:
                    os.unlink("/dev/shm/" + n)
                except OSError:
                    pass
            shutil.rmtree(self.top, ignore_errors=True)


# ------------------------------------------------------- site with snippets
class _Auth(http.server.BaseHTTPRequestHandler):
    """auth_request's auth service: 200 with X-Auth-User (and X-Auth-Role:
    admin for "admin") for a known bearer token, else 401."""
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
    """A running auth service on 127.0.0.1 for {user: token}; .shutdown() it."""
    handler = type("Auth", (_Auth,), {"tokens": {"Bearer " + t: u for u, t in tokens.items()}})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def nginx_conf_cli(env, out, args):
    """`yuxi-sandbox nginx-conf ARGS --out OUT` with the configuration of the
    daemon's environment env, this checkout's templates and web/; returns
    the completed process (check: a failure raises)."""
    cmd = [build_path("yuxi-sandbox"), "nginx-conf", "--templates",
           os.path.join(TOP_SRCDIR, "nginx"), "--web-root", os.path.join(TOP_SRCDIR, "web"),
           "--out", out] + list(args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True)


def site_conf(svc, http_conf, server_conf, server_extra="", http_extra="", preview_conf=None):
    """nginx.conf of a site that already serves other things (server_extra:
    its own locations) and includes the two snippets; returns the text.
    The main context and the server-level settings are those docs/nginx.md
    asks the site for. preview_conf: the previews' snippet, in a server of
    its own for *.preview.localhost (the self-signed pair covers it)."""
    ng = nginx_dirs(svc.base)
    after = ""
    if preview_conf:	# after the site's: never the default server
        after = """
	server {
		listen 127.0.0.1:%(port)d ssl;
		server_name *.preview.localhost;
		ssl_certificate %(base)s/cert.pem;
		ssl_certificate_key %(base)s/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		include %(conf)s;
	}
""" % {"port": svc.port, "base": svc.base, "conf": preview_conf}
    temp = "".join("\t%s_temp_path %s/%s;\n" % (d, ng, d)
                   for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return """user root;
worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
pid %(ng)s/nginx.pid;
error_log %(base)s/nginx-error.log info;
events { worker_connections 8192; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log %(base)s/nginx-access.log;
	sendfile on;
	server_tokens off;
%(temp)s	include %(http)s;
%(http_extra)s
	server {
		listen 127.0.0.1:%(port)d ssl;
		server_name localhost;
		ssl_certificate %(base)s/cert.pem;
		ssl_certificate_key %(base)s/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		client_header_timeout 10s;
		keepalive_timeout 15s;
%(server_extra)s
		include %(server)s;
	}
%(after)s}
""" % {"ng": ng, "base": svc.base, "temp": temp, "http": http_conf, "server": server_conf,
       "port": svc.port, "server_extra": server_extra, "http_extra": http_extra,
       "after": after}


class SiteService(Service):
    """An instance behind a site nginx that includes the rendered snippets.

    auth: the recipe ("basic", "request" or "header"); args: more options of
    nginx-conf (--admin, --trusted-proxy, ...). basic: `passwords` {user:
    password} go to an htpasswd file and `who` signs in with them; request:
    an auth service (start_auth) knows the bearer tokens. url_prefix becomes
    YUXI_URL_PREFIX; server_extra/http_extra are the site's own lines. Hook
    `edit_snippets(http_text, server_text)` changes the rendered snippets
    (control configurations)."""

    def __init__(self, auth, args=(), url_prefix="", passwords=None, server_extra="",
                 http_extra="", overrides=None, stem="qyxst", **kw):
        o = dict(overrides or {})
        if url_prefix:
            o["YUXI_URL_PREFIX"] = url_prefix
        super().__init__(overrides=o, stem=stem, **kw)
        self.auth, self.args = auth, list(args)
        self.passwords = dict(passwords or {})
        self.server_extra, self.http_extra = server_extra, http_extra
        self.htpasswd = os.path.join(self.base, "htpasswd")
        self.snippets = os.path.join(self.base, "nginx", "snippets")
        self.auth_srv = None

    def setup(self):
        super().setup()
        with open(self.htpasswd, "w") as f:
            for user, pw in self.passwords.items():
                h = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=pw,
                                   capture_output=True, text=True, check=True).stdout.strip()
                f.write("%s:%s\n" % (user, h))

    def auth_headers(self, who):
        if self.auth == "basic":
            cred = "%s:%s" % (who, self.passwords[who])
            return {"Authorization": "Basic " + base64.b64encode(cred.encode()).decode()}
        return super().auth_headers(who)

    def edit_snippets(self, http_text, server_text):
        return http_text, server_text

    def nginx_args(self):
        a = ["--auth", self.auth]
        if self.auth == "basic":
            a += ["--htpasswd", self.htpasswd]
        elif self.auth == "request":
            if self.auth_srv is None:
                self.auth_srv = start_auth(self.tokens)
            a += ["--auth-url", "http://127.0.0.1:%d/verify" % self.auth_srv.server_address[1]]
        if self.env.get("YUXI_PREVIEW_DOMAIN"):
            a += ["--preview-access-log", os.path.join(self.base, "nginx-access.log"),
                  "--preview-error-log", os.path.join(self.base, "nginx-error.log")]
        return a + self.args

    def render_conf(self):
        os.makedirs(self.snippets, exist_ok=True)
        nginx_conf_cli(self.env, self.snippets, self.nginx_args())
        paths = [os.path.join(self.snippets, n)
                 for n in ("yuxi-sandbox-http.conf", "yuxi-sandbox-server.conf")]
        texts = []
        for p in paths:
            with open(p) as f:
                texts.append(f.read())
        for p, t in zip(paths, self.edit_snippets(*texts)):
            with open(p, "w") as f:
                f.write(t)
        preview = os.path.join(self.snippets, "yuxi-sandbox-preview.conf")
        conf = os.path.join(self.base, "nginx", "nginx.conf")
        with open(conf, "w") as f:
            f.write(site_conf(self, paths[0], paths[1], self.server_extra, self.http_extra,
                              preview if os.path.exists(preview) else None))
        return conf

    def stop(self):
        try:
            super().stop()
        finally:
            if self.auth_srv is not None:
                self.auth_srv.shutdown()
                self.auth_srv = None

    def requests_seen(self):
        """The request lines of the daemon's log: [(method, path)]."""
        out = []
        for line in self.read_log(tail=None).splitlines():
            if " route=" in line and ": " in line:
                w = line.split(": ", 1)[1].split()
                if len(w) >= 2:
                    out.append((w[0], w[1]))
        return out


# -------------------------------------------------------------- statistics
class Stats:
    """Per-group counters of a proof suite, merged at exit into the JSON file
    named by the environment variable `env`, and the table that prints it.

    columns: [(counter, header, width)] of the counters that fail a group
    when non-zero (escapes, leaks, hangs, ...); every group also counts
    cases, control_cases and control_caught. names: {group: title}.
    aliases: keyword names of case() for counters (escape= for escapes)."""

    def __init__(self, title, env, columns, names, name_width, aliases=None,
                 max_failures=20):
        self.title, self.env, self.columns = title, env, columns
        self.bad = [c[0] for c in columns]
        self.counters = ["cases"] + self.bad + ["control_cases", "control_caught"]
        self.names, self.name_width = names, name_width
        self.aliases = aliases or {}
        self.max_failures = max_failures
        self.g = {}

    def _grp(self, group):
        s = self.g.get(group)
        if s is None:
            s = {k: 0 for k in self.counters}
            s["failures"] = []
            s["measures"] = {}
            self.g[group] = s
        return s

    def _fail(self, s, what):
        if len(s["failures"]) < self.max_failures:
            s["failures"].append(what)

    def case(self, group, what="", **bad):
        """One production case; bad counters (e.g. escapes=) are added.
        Returns True when the case held (all of them zero)."""
        s = self._grp(group)
        s["cases"] += 1
        hit = {}
        for k, v in bad.items():
            k = self.aliases.get(k, k)
            assert k in self.bad, k
            s[k] += int(v)
            if v:
                hit[k] = v
        if hit:
            self._fail(s, "%s: %s" % (what, hit))
        return not hit

    def add(self, group, **counts):
        s = self._grp(group)
        for k, v in counts.items():
            assert k in self.counters, k
            s[k] += int(v)

    def control(self, group, caught, what=""):
        """One control case: caught is True when the leak was observed."""
        s = self._grp(group)
        s["control_cases"] += 1
        s["control_caught"] += bool(caught)
        if not caught:
            self._fail(s, "control missed: " + what)
        return caught

    def measure(self, group, name, value):
        """A measured figure, printed under the group by summary()."""
        self._grp(group)["measures"][name] = value

    def dump(self):
        """Merge the counters into $env (JSON) and clear them."""
        path = os.environ.get(self.env)
        if not path or not self.g:
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
                    o[kk] = (o.get(kk, []) + vv)[:self.max_failures]
                elif kk == "measures":
                    o.setdefault(kk, {}).update(vv)
                else:
                    o[kk] = o.get(kk, 0) + vv
        with open(path, "w") as f:
            json.dump(old, f, indent=1, sort_keys=True)
        self.g.clear()

    def summary(self, path):
        """Print the per-group table of results file `path`; 1 when a group
        has a bad counter or a control case that did not catch its leak (or
        there are no results), else 0."""
        try:
            with open(path) as f:
                res = json.load(f)
        except (OSError, ValueError):
            print("%s: no results in %s" % (self.title, path))
            return 1
        nw = self.name_width
        print("%-5s %-*s %7s " % ("group", nw, "", "cases") +
              " ".join("%*s" % (w, h) for _, h, w in self.columns) + " %9s" % "control")
        bad = 0
        for g in sorted(res, key=int):
            s = res[g]
            get = lambda k: s.get(k, 0)
            print("%-5s %-*s %7d " % (g, nw, self.names.get(int(g), ""), get("cases")) +
                  " ".join("%*d" % (w, get(k)) for k, _, w in self.columns) +
                  " %4d/%-4d" % (get("control_caught"), get("control_cases")))
            for k, v in sorted(s.get("measures", {}).items()):
                print("      %s = %s" % (k, v))
            if any(get(k) for k in self.bad) or get("control_caught") != get("control_cases"):
                bad += 1
                for w in s.get("failures", []):
                    print("      failed: %s" % w)
        return 1 if bad else 0


# ------------------------------------------------------------------ serving
def serve(svc, info_path, info=None, check=None, keep=False, also=()):
    """Start svc and the services of `also`, run check(svc) if given, write
    info(svc) (a dict, with url, base, prefix, saves and image added) to
    info_path atomically, then run until SIGTERM/SIGINT or until a service
    process exits; stop everything (nginx, the daemons, every container with
    their prefixes) and remove their directories unless keep. Returns the
    exit status (0 or 1)."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    name = os.path.basename(sys.argv[0])
    rc = 0
    try:
        svc.start()
        for s in also:
            s.start()
        if check is not None:
            check(svc)
        out = {"url": svc.url, "base": svc.base, "prefix": svc.prefix,
               "saves": svc.saves, "image": svc.env["YUXI_SANDBOX_IMAGE"]}
        out.update(info(svc) if info else {})
        tmp = info_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.rename(tmp, info_path)
        print("%s: up at %s (image %s, state %s)" % (name, svc.url, out["image"], svc.base),
              flush=True)
        while not done.wait(1):
            if any(s.sandboxd.poll() is not None or s.nginx.poll() is not None
                   for s in (svc,) + tuple(also)):
                print("%s: a service process exited early" % name, file=sys.stderr)
                print(svc.read_log(), file=sys.stderr)
                rc = 1
                break
    except Exception as e:  # report and still clean up
        print("%s: %s" % (name, e), file=sys.stderr)
        for log in ("nginx-error.log", "sandboxd.log"):
            try:
                with open(os.path.join(svc.base, log), errors="replace") as f:
                    sys.stderr.write(f.read()[-3000:])
            except OSError:
                pass
        rc = 1
    finally:
        for s in (svc,) + tuple(also):
            s.cleanup = not keep
            s.stop()
            left = docker_rm_prefix(s.prefix)
            if left:
                print("%s: removed leftover containers %s" % (name, left), file=sys.stderr)
    return rc


# ------------------------------------------------ remote mode (docs/scaling.md)
def make_secret(path):
    """Write a fresh front<->provisioner credential to path (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


class ProvisionerService(Service):
    """A sandbox host: yuxi-sandboxd with YUXI_MODE=provisioner behind its
    own nginx (nginx/provisioner.conf.in) on a free 127.0.0.1 port, with
    its own saves directory, shm name and container prefix. request() talks
    to it as the front does (its credential, X-Yuxi-User); `bare` requests
    carry no credential. kill() SIGKILLs the daemon (master and children)
    and leaves nginx up; start_daemon() starts the daemon again."""

    def __init__(self, token_file, name="p1", stem="qyxpv", overrides=None, **kw):
        o = {"YUXI_MODE": "provisioner", "YUXI_PROVISIONER_TOKEN_FILE": token_file}
        o.update(overrides or {})
        super().__init__(stem=stem, overrides=o, **kw)
        self.name, self.token_file = name, token_file

    def secret(self):
        with open(self.token_file) as f:
            return f.read().strip()

    def spec(self):
        """This host in YUXI_SANDBOX_PROVISIONER_URL."""
        return "%s=%s" % (self.name, self.origin)

    def auth_headers(self, who):
        return {"Authorization": "Bearer " + self.secret(), "X-Yuxi-User": who,
                "X-Yuxi-Role": "admin" if who == "admin" else ""}

    def bare(self, method, path, headers=None, **kw):
        """A request without the front's credential."""
        kw.setdefault("timeout", 30)
        return requests.request(method, self.url + path, headers=headers or {},
                                verify=self.cert, **kw)

    def render_conf(self):
        ng = nginx_dirs(self.base)
        subs = {
            "@PREFIX@": ng, "@PORT@": str(self.port), "@SOCKET@": self.sock,
            "@SAVES@": self.saves, "@SKILLS@": self.env["YUXI_SKILLS_DIR"],
            "@CERT@": self.cert, "@KEY@": os.path.join(self.base, "key.pem"),
            "@ERRLOG@": os.path.join(self.base, "nginx-error.log"),
            "@ACCESSLOG@": os.path.join(self.base, "nginx-access.log"),
            "@PIDFILE@": os.path.join(ng, "nginx.pid"),
            "@UPLOAD@": self.env.get("YUXI_UPLOAD_LIMIT", "64m"),
        }
        with open(os.path.join(TOP_SRCDIR, "nginx", "provisioner.conf.in")) as f:
            text = f.read()
        for k, v in subs.items():
            text = text.replace(k, v)
        conf = os.path.join(ng, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.edit_conf(text))
        return conf

    def daemon_pids(self):
        """The master and its children."""
        if self.sandboxd is None:
            return []
        return [self.sandboxd.pid] + self.worker_pids()

    def kill(self):
        """SIGKILL the master and every child of it; nginx stays up."""
        pids = self.daemon_pids()
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.sandboxd.wait(timeout=30)
        for p in pids:
            wait_for(lambda: not os.path.exists("/proc/%d" % p) or
                     open("/proc/%d/stat" % p).read().split()[2] == "Z", 10, 0.05)
        self.sandboxd = None
        return pids

    def start_daemon(self):
        """Start the daemon again (after kill()) and wait for /healthz."""
        self.log = self.log or open(os.path.join(self.base, "sandboxd.log"), "ab")
        self.sandboxd = subprocess.Popen([self.binary], env=self.env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        if not wait_for(lambda: self._healthy() or self.sandboxd.poll() is not None,
                        HEALTH_WAIT, 0.1) or self.sandboxd.poll() is not None:
            raise HarnessError("provisioner did not come back:\n" + self.read_log())

    def _healthy(self):
        try:
            r = self.bare("GET", "/healthz", timeout=2)
            return r.status_code == 200 and r.json().get("status") == "ok"
        except (requests.RequestException, ValueError):
            return False

    def has_thread(self, tid):
        return os.path.isdir(os.path.join(self.saves, "threads", tid))


# where the front's remote snippets go in the rendered nginx/dev.conf.in
FRONT_HTTP_MARK = "\tmap_hash_bucket_size 128;\n"
FRONT_SERVER_MARK = "\t\t# X-Accel-Redirect targets"
FRONT_PREVIEW_MARK = "server_name \"~^[a-z2-7]{32}\\.preview\\.localhost$\";"
FRONT_PREVIEW_SERVER = """server {
		listen 127.0.0.1:%(port)d ssl;
		server_name "~^[a-z2-7]{32}\\.preview\\.localhost$";
		ssl_certificate %(base)s/cert.pem;
		ssl_certificate_key %(base)s/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		access_log %(access)s yuxi_preview;
		include %(conf)s;
	}
}
"""


class FrontService(Service):
    """The public API of the remote mode: yuxi-sandboxd with YUXI_MODE=front
    behind nginx/dev.conf.in plus the snippets of
    scripts/remote-nginx-conf.sh (the internal locations that proxy
    downloads to the hosts). The hosts' certificates are its CA bundle.
    Hook edit_remote(server_text): change the server snippet (controls)."""

    def __init__(self, provisioners, token_file, stem="qyxfr", overrides=None, **kw):
        o = {"YUXI_MODE": "front", "YUXI_PROVISIONER_TOKEN_FILE": token_file,
             "YUXI_SANDBOX_PROVISIONER_URL": ",".join(p.spec() for p in provisioners)}
        o.update(overrides or {})
        super().__init__(stem=stem, overrides=o, **kw)
        self.provisioners = list(provisioners)
        self.token_file = token_file
        self.ca = os.path.join(self.base, "hosts-ca.pem")
        self.env.setdefault("YUXI_PROVISIONER_CA", self.ca)
        self.remote_dir = os.path.join(self.base, "nginx", "remote")

    def setup(self):
        super().setup()
        with open(self.ca, "w") as out:
            for p in self.provisioners:
                with open(p.cert) as f:
                    out.write(f.read())

    def edit_remote(self, server_text):
        return server_text

    def edit_conf(self, text):
        subprocess.run(["sh", os.path.join(TOP_SRCDIR, "scripts", "remote-nginx-conf.sh"),
                        "--out", self.remote_dir, "--token-file", self.token_file,
                        "--ca", self.ca, "--ssl-name", "localhost",
                        "--prefix", self.url_prefix, "--fcgi-socket", self.sock,
                        self.env["YUXI_SANDBOX_PROVISIONER_URL"]],
                       check=True, capture_output=True, text=True)
        server = os.path.join(self.remote_dir, "yuxi-remote-server.conf")
        with open(server) as f:
            st = f.read()
        with open(server, "w") as f:
            f.write(self.edit_remote(st))
        assert FRONT_HTTP_MARK in text and FRONT_SERVER_MARK in text, \
            "nginx/dev.conf.in changed: no place for the remote snippets"
        text = text.replace(FRONT_HTTP_MARK, FRONT_HTTP_MARK + "\tinclude %s;\n" % os.path.join(
            self.remote_dir, "yuxi-remote-http.conf"), 1)
        text = text.replace(FRONT_SERVER_MARK, "\t\tinclude %s;\n\n" % server +
                            FRONT_SERVER_MARK, 1)
        # the previews' server: the front's locations, which proxy to hosts
        i = text.index(FRONT_PREVIEW_MARK)
        i = text.rindex("server {", 0, i)
        return text[:i] + FRONT_PREVIEW_SERVER % {
            "port": self.port, "base": self.base, "access": os.path.join(
                self.base, "nginx-access.log"),
            "conf": os.path.join(self.remote_dir, "yuxi-remote-preview.conf")}


class Cluster:
    """One front and n provisioners on the one engine, as
    `scripts/run.sh --provisioners N` runs them: the hosts p1..pn first,
    then the front. front_binary / prov_binary: other daemons (the control
    build); overrides go to the front / to every host."""

    def __init__(self, n=2, front_overrides=None, prov_overrides=None, front_binary=None,
                 prov_binary=None, front_cls=None):
        self.dir = tempfile.mkdtemp(prefix=new_tag("qyxcl") + "-")
        self.token_file = make_secret(os.path.join(self.dir, "front.token"))
        self.provs = [ProvisionerService(self.token_file, name="p%d" % (i + 1),
                                         overrides=prov_overrides, binary=prov_binary)
                      for i in range(n)]
        self.front = (front_cls or FrontService)(self.provs, self.token_file,
                                                 overrides=front_overrides, binary=front_binary)

    def start(self):
        try:
            for p in self.provs:
                p.start()
            self.front.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        for s in [self.front] + self.provs:
            try:
                s.stop()
            except Exception:
                pass
        if os.environ.get("YUXI_E2E_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    def prov(self, name):
        return [p for p in self.provs if p.name == name][0]

    def hosts_of(self, tid):
        """Names of the hosts that have thread tid's files."""
        return [p.name for p in self.provs if p.has_thread(tid)]
