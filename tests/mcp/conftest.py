# SPDX-License-Identifier: MIT
"""Fixtures of the MCP endpoint's Python suite (test_mcp.py) over the
shared harness (tests/lib/yxsvc.py, tests/lib/mcpclient.py).

`svc`: one instance for the module, exactly as production runs it
(yuxi-sandboxd behind nginx/dev.conf.in, TLS, bearer tokens), the test
image; teardown checks that every answer to an /api/ request left its
audit line. `make_svc(**settings)`: further instances (their own port,
saves directory, shm name, container prefix), `binary="control"` for the
control daemon (tests/security/yuxi-sandboxd-control, protections
switched off by YX_CONTROL_OFF), stopped at the end of the test.
"""
import os

import pytest

import yxsvc


@pytest.fixture(scope="module")
def svc():
    s = yxsvc.Service(stem="qyxmc", overrides={"YUXI_BODY_LIMIT": str(1 << 20)})
    try:
        s.start()
        yield s
        bad, n = s.audit_problems()
        assert not bad, bad[:10]
    finally:
        s.stop()


@pytest.fixture
def make_svc():
    made = []

    def make(binary=None, env=None, **settings):
        b = None
        if binary == "control":
            b = yxsvc.build_path("tests", "security", "yuxi-sandboxd-control")
        s = yxsvc.Service(stem="qyxmf", overrides=settings, binary=b)
        s.env.update(env or {})
        made.append(s)
        return s.start()
    yield make
    for s in made:
        s.stop()


def pytest_configure(config):
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
