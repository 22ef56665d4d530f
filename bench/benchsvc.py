#!/usr/bin/python3
"""Start and stop the real service (nginx TLS -> yuxi-sandboxd) for a benchmark.

Reuses the end-to-end harness (tests/e2e/conftest.py: Service renders
nginx/dev.conf.in on a free 127.0.0.1 port with fresh bearer tokens and a
self-signed pair) with bench names: container prefix and shm name
"yxbsvc<pid>n<k>" (pid of the starting process), idle timeout 600 s.
`extra_conf` is nginx text inserted into the server block (bench-only
locations); it is applied by wrapping the harness's render_nginx.

Library:  BenchService(build, base, extra_conf=None, **YUXI_overrides)
          .start() .stop() .thread (alice's thread) .thread_dir (its host
          user-data directory) .worker_pids() .token .url .cert
Command:  benchsvc.py start BUILD STATEDIR [--extra-conf FILE] [VAR=VALUE...]
              starts, creates a thread, writes STATEDIR/env.sh (shell
              variables for the scripts) and returns; the service keeps running
          benchsvc.py stop STATEDIR
              stops nginx and yuxi-sandboxd by their pids, removes the
              containers under the prefix and the shm object
"""
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
_count = [0]


def _conftest(build):
    os.environ["top_builddir"] = os.path.abspath(build)
    os.environ.setdefault("top_srcdir", TOP)
    import conftest
    conftest.TOP_BUILDDIR = os.path.abspath(build)
    conftest.SANDBOXD = os.path.join(conftest.TOP_BUILDDIR, "yuxi-sandboxd")
    return conftest


class BenchService:
    def __init__(self, build, base, extra_conf=None, **overrides):
        self.ct = _conftest(build)
        _count[0] += 1
        tag = "yxbsvc%dn%d" % (os.getpid(), _count[0])
        ov = {"YUXI_SANDBOX_IDLE_TIMEOUT": "600", "YUXI_SANDBOX_IDLE_CHECK_INTERVAL": "5"}
        ov.update({k: str(v) for k, v in overrides.items()})
        os.makedirs(base, exist_ok=True)
        self.svc = self.ct.Service(base, prefix=tag + "-", shm="/" + tag, overrides=ov)
        self.extra = extra_conf
        self.base = base
        self.thread = None

    @property
    def url(self):
        return self.svc.url

    @property
    def cert(self):
        return os.path.join(self.base, "cert.pem")

    @property
    def token(self):
        return self.svc.tokens["alice"]

    @property
    def thread_dir(self):
        return os.path.join(self.svc.saves, "threads", self.thread, "user-data")

    def start(self):
        orig = self.ct.render_nginx
        extra = self.extra

        def render(base, port, tokens):
            conf = orig(base, port, tokens)
            if extra:
                with open(conf) as f:
                    text = f.read()
                mark = "\t\t# the workbench page"
                assert mark in text, "nginx/dev.conf.in changed: no insertion mark"
                text = text.replace(mark, extra.rstrip("\n") + "\n\n" + mark, 1)
                with open(conf, "w") as f:
                    f.write(text)
            return conf
        self.ct.render_nginx = render
        try:
            self.svc.start()
        finally:
            self.ct.render_nginx = orig
        self.thread = self.svc.new_thread("alice")
        return self

    def stop(self):
        self.svc.stop()

    def worker_pids(self):
        """Pids of the live FastCGI workers (from the master's "started worker" lines)."""
        pids = [int(p) for p in re.findall(r"started worker pid (\d+)",
                                           self.svc.read_log(tail=None))]
        return [p for p in pids if os.path.exists("/proc/%d" % p)]

    def write_env(self, path):
        v = {"URL": self.url, "PORT": self.svc.port, "TOKEN": self.token,
             "CERT": self.cert, "THREAD": self.thread, "THREAD_DIR": self.thread_dir,
             "SANDBOXD_PID": self.svc.sandboxd.pid, "NGINX_PID": self.svc.nginx.pid,
             "WORKER_PIDS": " ".join(map(str, self.worker_pids())),
             "PREFIX": self.svc.prefix, "SHM": self.svc.shm,
             "LOG": os.path.join(self.base, "sandboxd.log"),
             "WORKERS": self.svc.workers}
        with open(path, "w") as f:
            for k, x in v.items():
                f.write("%s=%s\n" % (k, shlex.quote(str(x))))


def _stop_state(statedir):
    env = {}
    try:
        with open(os.path.join(statedir, "env.sh")) as f:
            for line in f:
                k, _, x = line.rstrip("\n").partition("=")
                env[k] = shlex.split(x)[0] if x else ""
    except OSError:
        return 1
    pids = [int(env[k]) for k in ("NGINX_PID", "SANDBOXD_PID") if env.get(k)]
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for _ in range(300):
        if not any(os.path.exists("/proc/%d" % p) and
                   open("/proc/%d/stat" % p).read().split()[2] != "Z" for p in pids):
            break
        time.sleep(0.1)
    else:
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    ct = _conftest(os.environ.get("top_builddir", "/work/build-bench"))
    if env.get("PREFIX"):
        ct.docker_rm_prefix(env["PREFIX"])
    if env.get("SHM"):
        ct.shm_unlink(env["SHM"])
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "start":
        build, statedir, rest = argv[1], argv[2], argv[3:]
        extra = None
        if rest[:1] == ["--extra-conf"]:
            with open(rest[1]) as f:
                extra = f.read()
            rest = rest[2:]
        ov = dict(a.split("=", 1) for a in rest)
        s = BenchService(build, statedir, extra, **ov)
        try:
            s.start()
            s.write_env(os.path.join(statedir, "env.sh"))
        except BaseException:
            s.stop()
            raise
        # the children outlive us: detach them from our stdout/stderr
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        return _stop_state(argv[1])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
