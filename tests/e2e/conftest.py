"""End-to-end harness: the real yuxi-sandboxd behind a real nginx (TLS).

The session fixture `svc` starts the service exactly like production does
(master, workers, reaper, FastCGI socket, nginx in front) with a temporary
saves directory, the test image, short idle settings, its own shared-memory
name and container prefix, and nginx rendered from nginx/dev.conf.in on a
free 127.0.0.1 port with generated bearer tokens. Teardown stops both and
removes every container carrying the prefix.

Environment: top_srcdir (the checkout), top_builddir (build dir holding
yuxi-sandboxd; default /work/build-svc), YUXI_E2E_IMAGE (default
yuxi-sandbox-test:latest).

The function fixture `factory` makes further, separate instances with custom
settings (e.g. factory(YUXI_SANDBOX_MAX_REPLICAS="2")): each has its own
base directory, port, tokens, shared-memory name and container prefix
("yxlc<pid>n<k>-", never an extension of another instance's prefix, since a
reaper's reconcile removes every labelled container under its own prefix).
An instance can be halted (SIGTERM, containers kept) and started again on
the same saves dir, shm name and prefix. Teardown stops every instance and
removes its containers, its /dev/shm object and (unless YUXI_E2E_KEEP=1)
its directory.
"""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import requests
import urllib3

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
TOP_BUILDDIR = os.environ.get("top_builddir") or "/work/build-svc"
SANDBOXD = os.path.join(TOP_BUILDDIR, "yuxi-sandboxd")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
IMAGE = os.environ.get("YUXI_E2E_IMAGE", "yuxi-sandbox-test:latest")
WORKERS = 3
BODY_LIMIT = 64 * 1024
UPLOAD_LIMIT = 1024 * 1024

urllib3.disable_warnings()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long-running e2e test (run-e2e.sh skips it unless YUXI_E2E_SLOW=1)")


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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


def shm_unlink(name):
    try:
        os.unlink("/dev/shm/" + name.lstrip("/"))
    except OSError:
        pass


def service_env(base, prefix, shm):
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    env.update({
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
        "YUXI_BODY_LIMIT": str(BODY_LIMIT),
        "YUXI_UPLOAD_LIMIT": str(UPLOAD_LIMIT),
    })
    return env


def render_nginx(base, port, tokens):
    ng = os.path.join(base, "nginx")
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(ng, d), exist_ok=True)
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
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        f.write(text)
    return conf


class Service:
    """A running service and helpers to talk to it as alice, bob, admin or anonymous."""

    def __init__(self, base, prefix=None, shm=None, overrides=None):
        self.base = base
        self.pid = os.getpid()
        self.prefix = prefix or "qyxe2e%d-" % self.pid
        self.shm = shm or "/qyxe2e%d" % self.pid
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.tokens = {u: secrets.token_hex(24) for u in ("alice", "bob", "admin")}
        self.env = service_env(base, self.prefix, self.shm)
        self.env.update(overrides or {})
        self.workers = int(self.env["YUXI_WORKERS"])
        self.saves = self.env["YUXI_SAVES_DIR"]
        self.sandboxd = None
        self.nginx = None
        self.log = None
        self.ready = False

    def setup(self):
        """One-time preparation: run directory and the self-signed pair."""
        os.makedirs(os.path.join(self.base, "run"), exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", os.path.join(self.base, "key.pem"),
                        "-out", os.path.join(self.base, "cert.pem")],
                       check=True, capture_output=True)
        self.ready = True

    def start(self):
        """Start yuxi-sandboxd and nginx (again, after halt()) and wait for /healthz."""
        if not self.ready:
            self.setup()
        self.log = open(os.path.join(self.base, "sandboxd.log"), "ab")
        self.sandboxd = subprocess.Popen([SANDBOXD], env=self.env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        sock = self.env["YUXI_FCGI_SOCKET"]
        for _ in range(100):
            if os.path.exists(sock) or self.sandboxd.poll() is not None:
                break
            time.sleep(0.05)
        assert self.sandboxd.poll() is None, "yuxi-sandboxd died: " + self.read_log()
        conf = render_nginx(self.base, self.port, self.tokens)
        self.nginx = subprocess.Popen(
            [NGINX, "-p", os.path.join(self.base, "nginx"), "-c", conf,
             "-e", os.path.join(self.base, "nginx-error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                if requests.get(self.url + "/healthz", verify=False, timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError("service did not come up:\n" + self.read_log())

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
        self.halt()
        docker_rm_prefix(self.prefix)
        shm_unlink(self.shm)

    # --- requests ------------------------------------------------------------
    def request(self, who, method, path, headers=None, **kw):
        h = dict(headers or {})
        if who is not None:
            h["Authorization"] = "Bearer " + self.tokens[who]
        kw.setdefault("timeout", 90)
        kw.setdefault("allow_redirects", False)
        return requests.request(method, self.url + path, headers=h,
                                verify=os.path.join(self.base, "cert.pem"), **kw)

    def worker_pids(self):
        out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(self.sandboxd.pid)],
                             capture_output=True, text=True).stdout.split("\n")
        return sorted(int(l.split()[0]) for l in out if l.strip())

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
        if session is None:
            return self.request(who, "POST", "/api/execute", json=body, **kw)
        kw.setdefault("timeout", 90)
        return session.post(self.url + "/api/execute", json=body,
                            headers={"Authorization": "Bearer " + self.tokens[who]},
                            verify=os.path.join(self.base, "cert.pem"), **kw)

    def sandboxes(self):
        """The admin listing: {thread_id: slot} (slots without a thread keyed by container)."""
        r = self.request("admin", "GET", "/api/admin/sandboxes")
        assert r.status_code == 200, r.text
        return {(s["thread_id"] or s["container"]): s for s in r.json()["sandboxes"]}


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


@pytest.fixture(scope="session")
def svc():
    if not os.access(SANDBOXD, os.X_OK):
        pytest.fail("no yuxi-sandboxd in %s (set top_builddir)" % TOP_BUILDDIR)
    base = tempfile.mkdtemp(prefix="yxe2e-")
    s = Service(base)
    try:
        s.start()
        yield s
    finally:
        s.stop()
        if os.environ.get("YUXI_E2E_KEEP") != "1":
            shutil.rmtree(base, ignore_errors=True)


_instances = [0]


def make_instance(**overrides):
    """A new (not yet started) Service with the given YUXI_* overrides."""
    if not os.access(SANDBOXD, os.X_OK):
        pytest.fail("no yuxi-sandboxd in %s (set top_builddir)" % TOP_BUILDDIR)
    _instances[0] += 1
    tag = "qyxlc%dn%d" % (os.getpid(), _instances[0])
    base = tempfile.mkdtemp(prefix=tag + "-")
    return Service(base, prefix=tag + "-", shm="/" + tag,
                   overrides={k: str(v) for k, v in overrides.items()})


def drop_instance(s):
    try:
        s.stop()
    finally:
        if os.environ.get("YUXI_E2E_KEEP") != "1":
            shutil.rmtree(s.base, ignore_errors=True)


@pytest.fixture
def factory():
    """factory(**YUXI_overrides) -> a started separate Service; all stopped afterwards."""
    made = []

    def make(**overrides):
        s = make_instance(**overrides)
        made.append(s)
        s.start()
        return s
    yield make
    for s in made:
        drop_instance(s)


@pytest.fixture(scope="session")
def alice(svc):
    return Client(svc, "alice")


@pytest.fixture(scope="session")
def bob(svc):
    return Client(svc, "bob")


@pytest.fixture(scope="session")
def admin(svc):
    return Client(svc, "admin")


@pytest.fixture(scope="session")
def anon(svc):
    return Client(svc, None)


@pytest.fixture
def thread(alice):
    """A fresh thread of alice (agent coder), deleted afterwards."""
    tid = "t%s" % secrets.token_hex(6)
    r = alice.post("/api/threads", json={"thread_id": tid, "agent_id": "coder"})
    assert r.status_code == 201, r.text
    yield tid
    alice.delete("/api/threads/" + tid)


def engine_up():
    try:
        return subprocess.run(["docker", "image", "inspect", IMAGE],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
