# SPDX-License-Identifier: MIT
"""Fixtures of the Python client suite (clients/python) over the shared
harness (tests/lib/yxsvc.py).

The session fixture `svc` starts the real service as production runs it
for a deepagents agent: the default sandbox image (yuxi-sandbox:latest,
which has python3; YUXI_PY_IMAGE overrides it), the shipped body and
upload limits and execute timeout, the command path policy as shipped,
and nginx's workers as `www-data` (the packaged nginx's user, with
YUXI_FCGI_SOCKET_GROUP=www-data as the package configures it) rather than
root as nginx/dev.conf.in has them, so that a file its sandbox made
unreadable is refused by nginx as it is in production
(docs/deployment.md "What nginx can download"). `make_client(who)` gives
a yuxi_sandbox.Client of one of its users; `thread_id(tag)` a fresh id;
`c` alice's client for a test module; `YuxiSandbox` the deepagents
backend class and `opts` the arguments of its create() as alice.

`factory(**overrides)` starts a further instance with other settings
(the test image unless given) and stops it at the test's end.

The vendored deepagents kit (deepagents 0.7.8 backends and LangChain's
SandboxIntegrationTests) is put on sys.path from
../shared/third_party/deepagents-py beside the checkout (YUXI_DEEPAGENTS_PY
overrides); `need_deepagents()` skips a test, saying so, without it.
"""
import os
import re
import secrets
import socket
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "clients", "python"))
KIT = os.environ.get("YUXI_DEEPAGENTS_PY") or os.path.join(
    os.path.dirname(TOP), "shared", "third_party", "deepagents-py")
if os.path.isdir(os.path.join(KIT, "deepagents")) and KIT not in sys.path:
    sys.path.insert(0, KIT)

import yxsvc  # noqa: E402
from yuxi_sandbox import Client  # noqa: E402

IMAGE = os.environ.get("YUXI_PY_IMAGE", "yuxi-sandbox:latest")

# What a deepagents agent meets in production (docs/configuration.md).
OVERRIDES = {
    "YUXI_SANDBOX_IMAGE": IMAGE,
    "YUXI_BODY_LIMIT": str(8 * 1024 * 1024),
    "YUXI_UPLOAD_LIMIT": str(64 * 1024 * 1024),
    "YUXI_SANDBOX_EXEC_TIMEOUT": "120",
    "YUXI_SANDBOX_IDLE_TIMEOUT": "120",
    "YUXI_FCGI_SOCKET_GROUP": "www-data",
}


class PackagedNginxService(yxsvc.Service):
    """A Service whose nginx workers run as www-data, as the package's."""

    def __init__(self, **kw):
        super().__init__(**kw)
        os.chmod(self.base, 0o755)	# www-data must reach run/ and saves/

    def edit_conf(self, text):
        text, n = re.subn(r"(?m)^user root;", "user www-data;", text)
        assert n == 1, "nginx/dev.conf.in changed: no `user root;` line"
        return text


class ConnCounter:
    """Counts connections made to the service (socket.create_connection)."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = socket.create_connection

        def counting(*a, **kw):
            self.n += 1
            return real(*a, **kw)
        monkeypatch.setattr(socket, "create_connection", counting)


def need_deepagents():
    """Skip the calling test when the vendored deepagents kit is absent."""
    try:
        import deepagents.backends.sandbox  # noqa: F401
    except ImportError as e:
        pytest.skip("deepagents kit not importable from %s (../shared beside the "
                    "checkout, or YUXI_DEEPAGENTS_PY): %s" % (KIT, e))


def thread_id(tag):
    return "py-%s-%s" % (tag, secrets.token_hex(5))


@pytest.fixture(scope="session")
def svc():
    if not yxsvc.image_present(IMAGE):
        pytest.skip("sandbox image %s is not built (scripts/setup.sh builds it)" % IMAGE)
    s = PackagedNginxService(stem="qyxpy", overrides=OVERRIDES)
    try:
        s.start()
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="session")
def make_client(svc):
    made = []

    def make(who="alice", **kw):
        c = Client(svc.url, svc.tokens[who], ca_file=svc.cert, **kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


@pytest.fixture(scope="module")
def c(make_client):
    """alice's Client, one for each test module."""
    return make_client("alice")


@pytest.fixture(scope="module")
def YuxiSandbox():
    """The deepagents backend class (skips the test without the kit)."""
    need_deepagents()
    from yuxi_sandbox.deepagents import YuxiSandbox
    return YuxiSandbox


@pytest.fixture(scope="module")
def opts(svc):
    """YuxiSandbox.create's connection arguments, as alice."""
    return {"url": svc.url, "token": svc.tokens["alice"], "ca_file": svc.cert}


@pytest.fixture
def factory():
    made = []

    def make(**overrides):
        s = yxsvc.Service(stem="qyxpf", overrides=overrides)
        made.append(s)
        return s.start()
    yield make
    yxsvc.stop_all(made)
