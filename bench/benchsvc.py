#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Start and stop the real service (nginx TLS -> yuxi-sandboxd) for a benchmark.

A Service of the shared harness (tests/lib/yxsvc.py: nginx/dev.conf.in on a
free 127.0.0.1 port with fresh bearer tokens and a self-signed pair) with
bench names: container prefix and shm name "yxbsvc<pid>n<k>" (pid of the
starting process), idle timeout 600 s, the daemon of the build directory
given. `extra_conf` is nginx text inserted into the server block
(bench-only locations).

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
import shlex
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "lib"))
import yxsvc  # noqa: E402

# Where bench-only locations go in nginx/dev.conf.in's server block.
EXTRA_MARK = "\t\t# the workbench page"


class BenchService(yxsvc.Service):
    def __init__(self, build, base, extra_conf=None, **overrides):
        tag = yxsvc.new_tag("yxbsvc")
        ov = {"YUXI_SANDBOX_IDLE_TIMEOUT": "600", "YUXI_SANDBOX_IDLE_CHECK_INTERVAL": "5"}
        ov.update(overrides)
        os.makedirs(base, exist_ok=True)
        super().__init__(base, tag + "-", "/" + tag, ov,
                         binary=os.path.join(os.path.abspath(build), "yuxi-sandboxd"))
        self.extra = extra_conf
        self.thread = None

    @property
    def token(self):
        return self.tokens["alice"]

    @property
    def thread_dir(self):
        return os.path.join(self.saves, "threads", self.thread, "user-data")

    def edit_conf(self, text):
        if self.extra:
            assert EXTRA_MARK in text, "nginx/dev.conf.in changed: no insertion mark"
            text = text.replace(EXTRA_MARK, self.extra.rstrip("\n") + "\n\n" + EXTRA_MARK, 1)
        return text

    def start(self):
        super().start()
        self.thread = self.new_thread("alice")
        return self

    def worker_pids(self):
        """Pids of the live FastCGI workers (from the master's "started worker" lines)."""
        return [p for p in self.pids_from_log("worker") if os.path.exists("/proc/%d" % p)]

    def write_env(self, path):
        v = {"URL": self.url, "PORT": self.port, "TOKEN": self.token,
             "CERT": self.cert, "THREAD": self.thread, "THREAD_DIR": self.thread_dir,
             "SANDBOXD_PID": self.sandboxd.pid, "NGINX_PID": self.nginx.pid,
             "WORKER_PIDS": " ".join(map(str, self.worker_pids())),
             "PREFIX": self.prefix, "SHM": self.shm,
             "LOG": os.path.join(self.base, "sandboxd.log"),
             "WORKERS": self.workers}
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
    if env.get("PREFIX"):
        yxsvc.docker_rm_prefix(env["PREFIX"])
    if env.get("SHM"):
        yxsvc.shm_unlink(env["SHM"])
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
