"""Shared machinery of the proof suites, part B (docs/security.md groups 3,
7, 8 and 9).

Imported by every tests/proof/test_*.py. There is no conftest.py here, so
nothing collides with tests/e2e/conftest.py, which is loaded under another
module name for the Service class and its helpers (the e2e harness owns
service start-up; this module only chooses the binary and the nginx
variant).

- `ProofService(kind, nginx, **YUXI_overrides)`: a service with its own base
  directory, port, tokens, container prefix "yxpf<pid>n<k>-" and shm name
  "/yxpf<pid>n<k>". kind "prod" is the production yuxi-sandboxd, "control"
  the test-only control daemon of the security suite (-DYX_CONTROL_UNSAFE:
  YX_CONTROL_OFF switches single protections off), "cbroker" the same also
  built with -DYX_BROKER_CONTROL_UNSAFE (the broker follows symlinks, blocks
  on FIFOs and writes in place). nginx "dev" is nginx/dev.conf.in as shipped,
  "symlinks" the same with `disable_symlinks off` (the control of the
  download race: nginx follows what the sandbox swapped in).
- `stats`: per-group counters (cases, escapes, host bytes, outside metadata,
  hangs, lost requests, leaked containers, control cases and catches, and
  named measurements) merged into $PROOF_RESULTS (JSON) at exit; summary.py
  prints them.
- `SOAK`: true under run-proof-soak.sh (full sizes).
"""
import atexit
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
TOP_BUILDDIR = os.environ.get("top_builddir") or "/work/build-proof"
os.environ.setdefault("top_builddir", TOP_BUILDDIR)

_spec = importlib.util.spec_from_file_location(
    "yx_e2e_harness_proof", os.path.join(TOP_SRCDIR, "tests", "e2e", "conftest.py"))
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)

SOAK = os.environ.get("PROOF_SOAK") == "1"
BINARIES = {
    "prod": os.path.join(TOP_BUILDDIR, "yuxi-sandboxd"),
    "control": os.path.join(TOP_BUILDDIR, "tests", "security",
                            "yuxi-sandboxd-control"),
    "cbroker": os.path.join(TOP_BUILDDIR, "tests", "security",
                            "yuxi-sandboxd-control-broker"),
}
FULL_IMAGE = os.environ.get("YUXI_PROOF_IMAGE", "yuxi-sandbox:latest")
TEST_IMAGE = os.environ.get("YUXI_E2E_IMAGE", "yuxi-sandbox-test:latest")
GROUP_NAMES = {
    3: "host-side access vs. the sandbox's own tree",
    7: "confinement inside the container",
    8: "resource exhaustion",
    9: "lifecycle and shared memory",
    12: "between tenants",
}
COUNTERS = ("cases", "escapes", "host_bytes", "outside_metadata", "hangs",
            "lost_requests", "leaked_containers", "control_cases", "control_caught")


# ---------------------------------------------------------------- statistics
class Stats:
    def __init__(self):
        self.g = {}

    def _grp(self, group):
        s = self.g.get(group)
        if s is None:
            s = {k: 0 for k in COUNTERS}
            s["failures"] = []
            s["measures"] = {}
            self.g[group] = s
        return s

    def case(self, group, what="", **bad):
        """One production case; bad counters (escapes=, host_bytes=, ...) are
        added. Returns True when the case held (all of them zero)."""
        s = self._grp(group)
        s["cases"] += 1
        failed = False
        for k, v in bad.items():
            assert k in COUNTERS, k
            s[k] += int(v)
            failed = failed or bool(v)
        if failed and len(s["failures"]) < 30:
            s["failures"].append("%s: %s" % (what, {k: v for k, v in bad.items() if v}))
        return not failed

    def add(self, group, **counts):
        s = self._grp(group)
        for k, v in counts.items():
            assert k in COUNTERS, k
            s[k] += int(v)

    def control(self, group, caught, what=""):
        """One control case: caught is True when the leak was observed."""
        s = self._grp(group)
        s["control_cases"] += 1
        s["control_caught"] += bool(caught)
        if not caught and len(s["failures"]) < 30:
            s["failures"].append("control missed: " + what)
        return caught

    def measure(self, group, name, value):
        self._grp(group)["measures"][name] = value

    def dump(self):
        path = os.environ.get("PROOF_RESULTS")
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
                    o[kk] = (o.get(kk, []) + vv)[:30]
                elif kk == "measures":
                    o.setdefault(kk, {}).update(vv)
                else:
                    o[kk] = o.get(kk, 0) + vv
        with open(path, "w") as f:
            json.dump(old, f, indent=1, sort_keys=True)
        self.g.clear()


stats = Stats()
atexit.register(stats.dump)


# ----------------------------------------------------------------- services
_seq = [0]
_live = []


class ProofService(e2e.Service):
    def __init__(self, kind="prod", nginx="dev", **overrides):
        _seq[0] += 1
        tag = "yxpf%dn%d" % (os.getpid(), _seq[0])
        base = tempfile.mkdtemp(prefix=tag + "-")
        ov = {k: str(v) for k, v in overrides.items()}
        super().__init__(base, prefix=tag + "-", shm="/" + tag, overrides=ov)
        self.kind, self.nginx_kind = kind, nginx
        self.binary = BINARIES[kind]
        self.sock = self.env["YUXI_FCGI_SOCKET"]
        self._session = None
        _live.append(self)

    def start(self):
        if not os.access(self.binary, os.X_OK):
            pytest.fail("missing %s (make check builds it)" % self.binary)
        if not self.ready:
            self.setup()
        self.log = open(os.path.join(self.base, "sandboxd.log"), "ab")
        self.sandboxd = subprocess.Popen([self.binary], env=self.env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(self.sock) or self.sandboxd.poll() is not None:
                break
            time.sleep(0.05)
        assert self.sandboxd.poll() is None, "daemon died: " + self.read_log()
        conf = e2e.render_nginx(self.base, self.port, self.tokens)
        if self.nginx_kind == "symlinks":
            with open(conf) as f:
                text = f.read()
            n = text.count("disable_symlinks on")
            assert n >= 1, "nginx/dev.conf.in changed: no disable_symlinks"
            import re
            text = re.sub(r"disable_symlinks on[^;]*;", "disable_symlinks off;", text)
            with open(conf, "w") as f:
                f.write(text)
        self.nginx = subprocess.Popen(
            [e2e.NGINX, "-p", os.path.join(self.base, "nginx"), "-c", conf,
             "-e", os.path.join(self.base, "nginx-error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(150):
            try:
                if self.request(None, "GET", "/healthz", timeout=2).status_code == 200:
                    return self
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError("service did not come up:\n" + self.read_log())

    def stop(self):
        try:
            super().stop()
        finally:
            self._session = None
            if os.environ.get("YUXI_E2E_KEEP") != "1":
                shutil.rmtree(self.base, ignore_errors=True)
            if self in _live:
                _live.remove(self)

    def request(self, who, method, path, headers=None, session=None, **kw):
        """As e2e's, over one kept-alive session per instance (or `session`)."""
        import requests
        if session is None:
            if self._session is None:
                self._session = requests.Session()
            session = self._session
        h = dict(headers or {})
        if who is not None:
            h["Authorization"] = "Bearer " + self.tokens[who]
        kw.setdefault("timeout", 90)
        kw.setdefault("allow_redirects", False)
        return session.request(method, self.url + path, headers=h,
                               verify=os.path.join(self.base, "cert.pem"), **kw)

    def run(self, tid, command, who="alice", timeout=None, **kw):
        """POST /api/execute; returns the decoded body (asserting 200)."""
        body = {"thread_id": tid, "command": command}
        if timeout is not None:
            body["timeout"] = timeout
        r = self.request(who, "POST", "/api/execute", json=body, **kw)
        assert r.status_code == 200, "%d %s" % (r.status_code, r.text[:500])
        return r.json()

    def workspace(self, tid):
        return os.path.join(self.saves, "threads", tid, "user-data", "workspace")

    def containers(self, thread=None, running_only=False):
        return e2e.containers(self.prefix, thread=thread, running_only=running_only)

    def pids_from_log(self, kind):
        """Pids the master logged as started `kind` (worker/reaper), in order."""
        out = []
        for line in self.read_log(tail=None).splitlines():
            i = line.find("started %s pid " % kind)
            if i >= 0:
                out.append(int(line[i:].split()[3]))
        return out

    def alive_children(self):
        if self.sandboxd is None:
            return []
        return self.worker_pids()


def stop_all():
    for s in list(_live):
        try:
            s.stop()
        except Exception:
            pass


atexit.register(stop_all)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def percentile(vals, p):
    if not vals:
        return None
    v = sorted(vals)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def engine_up():
    try:
        return subprocess.run(["docker", "version"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_present(image):
    try:
        return subprocess.run(["docker", "image", "inspect", image],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def kill_quiet(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except OSError:
        pass
