# SPDX-License-Identifier: MIT
"""Shared machinery of the proof suites, part B (docs/security.md groups 3,
7, 8 and 9).

Imported by every tests/proof/test_*.py. There is no conftest.py here, so
nothing collides with tests/e2e/conftest.py; the service is
tests/lib/yxsvc.py's (it owns service start-up; this module only chooses
the binary and the nginx variant).

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
  named measurements) merged into $PROOF_RESULTS (JSON) at exit;
  `prooffix.py summary FILE` prints them.
- `SOAK`: true under run-proof-soak.sh (full sizes).
"""
import atexit
import os
import re
import signal
import sys

import yxsvc
from yxsvc import image_present, wait_for  # noqa: F401

TOP_BUILDDIR = yxsvc.builddir()
SOAK = os.environ.get("PROOF_SOAK") == "1"
BINARIES = {
    "prod": yxsvc.build_path("yuxi-sandboxd"),
    "control": yxsvc.build_path("tests", "security", "yuxi-sandboxd-control"),
    "cbroker": yxsvc.build_path("tests", "security", "yuxi-sandboxd-control-broker"),
}
FULL_IMAGE = os.environ.get("YUXI_PROOF_IMAGE", "yuxi-sandbox:latest")
TEST_IMAGE = yxsvc.IMAGE
# every sandbox under gVisor (YUXI_TEST_RUNTIME=runsc, see tests/lib/yxsvc.py)
RUNSC = os.environ.get("YUXI_TEST_RUNTIME") == "runsc"

stats = yxsvc.Stats(
    "proof", "PROOF_RESULTS",
    [("escapes", "escapes", 7), ("host_bytes", "hostb", 6), ("outside_metadata", "meta", 6),
     ("hangs", "hangs", 5), ("lost_requests", "lost", 5), ("leaked_containers", "leaked", 6)],
    {3: "host-side access", 7: "confinement", 8: "resource exhaustion",
     9: "lifecycle, shared memory", 12: "between tenants"}, 24, max_failures=30)
atexit.register(stats.dump)


# ----------------------------------------------------------------- services
_live = []


class ProofService(yxsvc.Service):
    def __init__(self, kind="prod", nginx="dev", **overrides):
        super().__init__(overrides=overrides, binary=BINARIES[kind], keepalive=True,
                         stem="yxpf")
        self.kind, self.nginx_kind = kind, nginx
        _live.append(self)

    def edit_conf(self, text):
        if self.nginx_kind == "symlinks":
            n = text.count("disable_symlinks on")
            assert n >= 1, "nginx/dev.conf.in changed: no disable_symlinks"
            text = re.sub(r"disable_symlinks on[^;]*;", "disable_symlinks off;", text)
        return text

    def stop(self):
        try:
            super().stop()
        finally:
            if self in _live:
                _live.remove(self)

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


atexit.register(yxsvc.stop_all, _live)


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


def kill_quiet(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


if __name__ == "__main__" and sys.argv[1:2] == ["summary"]:
    sys.exit(stats.summary(sys.argv[2]))
