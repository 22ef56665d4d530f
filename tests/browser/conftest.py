# SPDX-License-Identifier: MIT
"""Fixtures of the browser suite (docs/browser.md), over the shared harness
tests/lib/yxsvc.py: the real service (master, workers, reaper, nginx with
TLS, dockerd) with examples/agents.json, whose agent `browser` runs the
profile of the same name (image yuxi-sandbox-browser, four services:
display, chromium, vnc, novnc).

`svc` is one instance for the session; `box` a browser thread of alice
whose services are up (shared by the tests that only look); `factory`
makes further instances (the control daemon with `control_off`);
`browser_thread(svc)` a fresh one for the tests that kill or delete.

Run through run-browser.sh, which skips the suite when the image is not
built (unless YUXI_TEST_REQUIRE_BROWSER=1).
"""
import json
import os
import secrets
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from yxsvc import Service, TOP_SRCDIR, build_path, image_present  # noqa: E402

IMAGE = os.environ.get("YUXI_BROWSER_IMAGE_NAME", "yuxi-sandbox-browser:latest")
UD = "/home/yuxi/user-data"
READY_S = 90		# first command -> Chromium ready, at most (measured 2.7 s)
CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")
HOSTS = os.path.join(TOP_SRCDIR, "examples", "egress-hosts")


def pytest_collection_modifyitems(config, items):
    if image_present(IMAGE):
        return
    if os.environ.get("YUXI_TEST_REQUIRE_BROWSER") == "1":
        raise pytest.UsageError("image %s missing and YUXI_TEST_REQUIRE_BROWSER=1" % IMAGE)
    skip = pytest.mark.skip(reason="image %s not built (yuxi-sandbox image build browser)"
                            % IMAGE)
    for it in items:
        it.add_marker(skip)


def agents_file(tmpdir, **profile):
    """examples/agents.json with the browser profile's keys changed."""
    with open(os.path.join(TOP_SRCDIR, "examples", "agents.json")) as f:
        ag = json.load(f)
    for p in ag["profiles"]:
        if p["id"] == "browser":
            p.update(profile)
            p["image"] = IMAGE
    path = os.path.join(str(tmpdir), "agents-%s.json" % secrets.token_hex(4))
    with open(path, "w") as f:
        json.dump(ag, f)
    return path


def make_service(control_off=None, previews=False, **overrides):
    """A started instance (the control daemon with control_off); with
    previews, YUXI_PREVIEW_DOMAIN=preview.localhost:<its port>."""
    overrides.setdefault("YUXI_EGRESS_HOSTS", HOSTS)
    # the tests read /proc and the agent directory inside the box: the
    # command path policy (lexical, tested elsewhere) would refuse them
    overrides.setdefault("YUXI_COMMAND_PATH_POLICY", "off")
    # the session's box serves many tests: the reaper leaves it (a test of
    # the harness's 30 s would see it gone and its services starting again)
    overrides.setdefault("YUXI_SANDBOX_IDLE_TIMEOUT", "900")
    s = Service(stem="qyxbr", overrides=overrides, binary=CONTROL if control_off else None)
    if previews:
        s.env["YUXI_PREVIEW_DOMAIN"] = "preview.localhost:%d" % s.port
    if control_off:
        s.env["YX_CONTROL_OFF"] = control_off
    s.start()
    return s


@pytest.fixture(scope="session")
def svc(tmp_path_factory):
    s = make_service(YUXI_AGENTS_FILE=agents_file(tmp_path_factory.mktemp("agents")))
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def factory():
    made = []

    def make(control_off=None, **overrides):
        s = make_service(control_off, **overrides)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def sh(svc, tid, command, who="alice", timeout=None):
    """Run command in tid's sandbox: (output, exit code)."""
    body = {"thread_id": tid, "command": command}
    if timeout:
        body["timeout"] = timeout
    r = svc.request(who, "POST", "/api/execute", json=body)
    assert r.status_code == 200, r.text
    return r.json()["output"], r.json()["exit_code"]


def services(svc, tid, who="alice"):
    """{name: service record} of GET /api/threads/{tid}."""
    r = svc.request(who, "GET", "/api/threads/" + tid)
    assert r.status_code == 200, r.text
    return {s["name"]: s for s in r.json().get("services", [])}


def wait_services(svc, tid, want=None, timeout=READY_S, restarts=None):
    """Wait until every service (or those of want) is ready or running,
    with at least restarts[name] restarts; the records, or the assertion
    that says which is not."""
    deadline = time.monotonic() + timeout
    while True:
        st = services(svc, tid)
        names = want or list(st)
        ok = all(st[n]["state"] in ("ready", "running") and
                 st[n]["restarts"] >= (restarts or {}).get(n, 0) for n in names)
        if ok or time.monotonic() >= deadline:
            assert ok, json.dumps(st, indent=1)
            return st
        time.sleep(0.25)


def new_browser_thread(svc, who="alice"):
    """A browser thread of `who` after its first command, services up:
    (thread id, seconds from the first command to Chromium's answer)."""
    tid = "t%s" % secrets.token_hex(6)
    r = svc.request(who, "POST", "/api/threads", json={"thread_id": tid, "agent_id": "browser"})
    assert r.status_code == 201, r.text
    t0 = time.monotonic()
    sh(svc, tid, "true", who)
    deadline = t0 + READY_S
    while True:
        out, code = sh(svc, tid, "curl -sf --noproxy '*' http://127.0.0.1:9222/json/version",
                       who)
        if code == 0 or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    assert code == 0, out
    assert '"Browser": "Chrome/' in out, out
    took = time.monotonic() - t0
    wait_services(svc, tid)
    return tid, took


@pytest.fixture(scope="session")
def box(svc):
    tid, took = new_browser_thread(svc)
    print("\nbrowser box %s: Chromium answered %.1f s after the first command" % (tid, took))
    return tid
