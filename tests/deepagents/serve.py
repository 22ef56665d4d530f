# SPDX-License-Identifier: MIT
"""Bring up the real service (yuxi-sandboxd + nginx, TLS) for the deepagents
adapter tests (clients/deepagents-js).

Uses the shared harness (tests/lib/yxsvc.py: temporary saves directory, its
own shared-memory name and container prefix, a free 127.0.0.1 port,
generated bearer tokens, the self-signed certificate) with the settings a
deepagents agent meets in production: the default sandbox image
(yuxi-sandbox:latest, which has python3; YUXI_DA_IMAGE overrides it), the
shipped body/upload limits and execute timeout, and the command path
policy as shipped (strict; nothing here sets YUXI_COMMAND_PATH_POLICY).

usage: serve.py INFO_JSON   writes {"url","token","ca","prefix",...} to
INFO_JSON once /healthz answers, then runs until SIGTERM/SIGINT and stops
everything (nginx, yuxi-sandboxd, every container with the run's prefix).
"""
import os
import sys
import tempfile

import yxsvc

# The shipped defaults (docs/configuration.md), not the e2e suite's small ones.
OVERRIDES = {
    "YUXI_SANDBOX_IMAGE": os.environ.get("YUXI_DA_IMAGE", "yuxi-sandbox:latest"),
    "YUXI_BODY_LIMIT": str(8 * 1024 * 1024),
    "YUXI_UPLOAD_LIMIT": str(64 * 1024 * 1024),
    "YUXI_SANDBOX_EXEC_TIMEOUT": "120",
    "YUXI_SANDBOX_IDLE_TIMEOUT": "120",
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py INFO_JSON")
    tag = "yxda%d" % os.getpid()
    svc = yxsvc.Service(tempfile.mkdtemp(prefix=tag + "-"), prefix=tag + "-",
                        shm="/" + tag, overrides=OVERRIDES)
    sys.exit(yxsvc.serve(svc, sys.argv[1], lambda s: {
        "token": s.tokens["alice"], "token_bob": s.tokens["bob"], "ca": s.cert},
        keep=os.environ.get("YUXI_DA_KEEP") == "1"))


if __name__ == "__main__":
    main()
