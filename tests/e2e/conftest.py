# SPDX-License-Identifier: MIT
"""End-to-end fixtures over the shared harness (tests/lib/yxsvc.py).

The session fixture `svc` starts the service exactly like production does
(master, workers, reaper, FastCGI socket, nginx in front) with a temporary
saves directory, the test image, short idle settings, its own shared-memory
name and container prefix, and nginx rendered from nginx/dev.conf.in on a
free 127.0.0.1 port with generated bearer tokens. Teardown stops both and
removes every container carrying the prefix. Before that, every answer a
worker gave to an /api/ request of the session must have left exactly one
line with its request id (the X-Request-Id the client saw) and its status in
the instance's audit log (yxsvc.Service.audit_problems); the teardown fails
otherwise, for the session instance and for every `factory` instance.

Environment: top_srcdir (the checkout), top_builddir (build dir holding
yuxi-sandboxd; required, set by `make check` and run-e2e.sh),
YUXI_E2E_IMAGE (default yuxi-sandbox-test:latest).

The function fixture `factory` makes further, separate instances with custom
settings (e.g. factory(YUXI_SANDBOX_MAX_REPLICAS="2")): each has its own
base directory, port, tokens, shared-memory name and container prefix
("qyxlc<pid>n<k>-", never an extension of another instance's prefix, since a
reaper's reconcile removes every labelled container under its own prefix).
An instance can be halted (SIGTERM, containers kept) and started again on
the same saves dir, shm name and prefix. Teardown stops every instance and
removes its containers, its /dev/shm object and (unless YUXI_E2E_KEEP=1)
its directory.
"""
import os
import secrets
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from yxsvc import (BODY_LIMIT, IMAGE, UPLOAD_LIMIT, WORKERS,  # noqa: E402,F401
                   Client, Service, build_path, containers, engine_has_runsc, engine_up,
                   wait_for)

SANDBOXD = build_path("yuxi-sandboxd")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long-running e2e test (run-e2e.sh skips it unless YUXI_E2E_SLOW=1)")


@pytest.fixture(scope="session")
def svc():
    base = tempfile.mkdtemp(prefix="yxe2e-")
    s = Service(base)
    s.cleanup = os.environ.get("YUXI_E2E_KEEP") != "1"
    try:
        s.start()
        yield s
        check_audit(s)
    finally:
        s.stop()


def need_runsc():
    """Skip the calling test when the engine has no runsc runtime; fail it
    instead with YUXI_TEST_REQUIRE_RUNSC=1 (CI: runsc runs there)."""
    if engine_has_runsc():
        return
    why = "the engine has no runsc runtime (scripts/setup.sh adds it)"
    if os.environ.get("YUXI_TEST_REQUIRE_RUNSC") == "1":
        pytest.fail(why + "; YUXI_TEST_REQUIRE_RUNSC=1 forbids skipping")
    pytest.skip(why)


def check_audit(s):
    """Every worker answer to an /api/ request left one audit line with its id."""
    bad, n = s.audit_problems()
    print("audit log of %s: %d API answers, %d without their one line"
          % (s.prefix, n, len(bad)))
    assert not bad, bad[:10]


def make_instance(**overrides):
    """A new (not yet started) Service with the given YUXI_* overrides."""
    return Service(stem="qyxlc", overrides=overrides)


def drop_instance(s):
    s.stop()


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
    try:
        for s in made:
            check_audit(s)
    finally:
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
