"""Bring up the real service (yuxi-sandboxd + nginx, TLS) for the deepagents
adapter tests (clients/deepagents-js).

Reuses the end-to-end harness (tests/e2e/conftest.py: temporary saves
directory, its own shared-memory name and container prefix, a free
127.0.0.1 port, generated bearer tokens, the self-signed certificate) with
the settings a deepagents agent meets in production: the default sandbox
image (yuxi-sandbox:latest, which has python3; YUXI_DA_IMAGE overrides it),
the shipped body/upload limits and execute timeout, and the command path
policy as shipped (strict; nothing here sets YUXI_COMMAND_PATH_POLICY).

usage: serve.py INFO_JSON   writes {"url","token","ca","prefix",...} to
INFO_JSON once /healthz answers, then runs until SIGTERM/SIGINT and stops
everything (nginx, yuxi-sandboxd, every container with the run's prefix).
"""
import json
import os
import shutil
import signal
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
os.environ["YUXI_E2E_IMAGE"] = os.environ.get("YUXI_DA_IMAGE", "yuxi-sandbox:latest")

import conftest  # noqa: E402

# The shipped defaults (docs/configuration.md), not the e2e suite's small ones.
OVERRIDES = {
    "YUXI_BODY_LIMIT": str(8 * 1024 * 1024),
    "YUXI_UPLOAD_LIMIT": str(64 * 1024 * 1024),
    "YUXI_SANDBOX_EXEC_TIMEOUT": "120",
    "YUXI_SANDBOX_IDLE_TIMEOUT": "120",
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py INFO_JSON")
    info_path = sys.argv[1]
    if not os.access(conftest.SANDBOXD, os.X_OK):
        sys.exit("serve.py: no yuxi-sandboxd in %s (set top_builddir)" % conftest.TOP_BUILDDIR)
    tag = "yxda%d" % os.getpid()
    base = tempfile.mkdtemp(prefix=tag + "-")
    svc = conftest.Service(base, prefix=tag + "-", shm="/" + tag, overrides=OVERRIDES)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    rc = 0
    try:
        svc.start()
        info = {"url": svc.url, "token": svc.tokens["alice"], "token_bob": svc.tokens["bob"],
                "ca": os.path.join(base, "cert.pem"), "base": base, "prefix": svc.prefix,
                "saves": svc.saves, "image": conftest.IMAGE}
        tmp = info_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.rename(tmp, info_path)
        print("serve.py: up at %s (image %s, state %s)" % (svc.url, conftest.IMAGE, base),
              flush=True)
        while not done.wait(1):
            if svc.sandboxd.poll() is not None or svc.nginx.poll() is not None:
                print("serve.py: a service process exited early", file=sys.stderr)
                print(svc.read_log(), file=sys.stderr)
                rc = 1
                break
    except Exception as e:  # report and still clean up
        print("serve.py: %s" % e, file=sys.stderr)
        for log in ("nginx-error.log", "sandboxd.log"):
            try:
                with open(os.path.join(base, log), errors="replace") as f:
                    sys.stderr.write(f.read()[-3000:])
            except OSError:
                pass
        rc = 1
    finally:
        svc.stop()
        left = conftest.docker_rm_prefix(svc.prefix)
        if left:
            print("serve.py: removed leftover containers %s" % left, file=sys.stderr)
        if os.environ.get("YUXI_DA_KEEP") != "1":
            shutil.rmtree(base, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
