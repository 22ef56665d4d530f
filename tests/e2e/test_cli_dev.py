# SPDX-License-Identifier: MIT
"""The README's operator CLI against the instance the development run
starts (issue 26.1; README "Operator CLI", docs/configuration.md "The
configuration file", docs/deployment.md §2).

A checkout of its own in a temporary directory - the files
scripts/run-service.sh uses (the script itself, nginx/, web/, examples/,
conf/yuxi-sandbox.conf.in) and a build tree beside them whose programs are
this build's (yuxi-sandboxd, yuxi-sandbox, yuxi-run, yuxi-agent, with the
config.status and the Makefile's abs_top_srcdir a configured tree has) -
so that its var/ is nobody else's. `scripts/run-service.sh --detach`
starts the instance there exactly as `./scripts/run.sh --detach` would
(with YUXI_DEV_PORT and YUXI_INSTANCE of this test, the rest its
defaults), and every README example runs from the checkout's root with no
YUXI_* in the environment, as a user types it:

- `build/yuxi-sandbox doctor` exits 0 and its checks pass and fail as
  /readyz's do; with YUXI_DOCKER_API_SOCKET at a dead socket it exits 1
  and names the engine's check;
- `exec t1 --owner alice -- python3 -c 'print(1+1)'` prints 2, and the
  API shows t1 as alice's (same store);
- `list --json` shows t1's sandbox with the instance's container name
  (same table), also run from another directory;
- `release t1`, `destroy t1` (the container goes), `gc`;
- `nginx-conf --auth basic --htpasswd ... --out DIR` renders with the
  checkout's templates and the instance's socket and saves directory;
- a second daemon with the instance's configuration refuses to start,
  naming it;
- SIGUSR2 restarts the master in place (same pid, serves again) and is
  refused, the old one serving on, when the configuration file is broken.

Needs root (the dev run's nginx runs its workers as root), the engine and
the default image (the README's example runs python3; YUXI_README_IMAGE
names another).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import requests

from yxsvc import (DevCheckout, build_path, containers, dev_user_env, docker_rm_prefix,
                   engine_has_runsc, image_present)

IMAGE = os.environ.get("YUXI_README_IMAGE", "yuxi-sandbox:latest")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not image_present(IMAGE),
                                reason="needs root and the image %s" % IMAGE)


def user_env(**extra):
    """A user's shell: nothing of the test harness's YUXI_* settings."""
    return dev_user_env(**extra)


@pytest.fixture(scope="module")
def dev():
    """The checkout, its build tree and the detached dev instance."""
    d = DevCheckout(IMAGE)
    try:
        d.start()
        yield d.info
    finally:
        d.stop()


def cli(dev, *args, cwd=None, **env):
    return subprocess.run([os.path.join("build", "yuxi-sandbox")] + list(args)
                          if cwd is None else [os.path.join(dev["top"], "build", "yuxi-sandbox")]
                          + list(args), cwd=cwd or dev["top"], env=user_env(**env),
                          capture_output=True, text=True, timeout=300)


def api(dev, method, path, user="alice", **kw):
    return requests.request(method, dev["base"] + path, verify=dev["cert"], timeout=60,
                            headers={"Authorization": "Bearer " + dev["tokens"][user]}, **kw)


def test_the_dev_run_writes_its_configuration(dev):
    with open(os.path.join(dev["top"], "var", "yuxi-sandbox.conf")) as f:
        text = f.read()
    for line in ("YUXI_INSTANCE=%s" % dev["instance"],
                 "YUXI_SAVES_DIR=%s/var/saves" % dev["top"],
                 "YUXI_FCGI_SOCKET=%s/var/run/fcgi.sock" % dev["top"]):
        assert line + "\n" in text, text
    # the master's own pid file, which the script reads too
    with open(os.path.join(dev["top"], "var", "run", "yuxi-sandboxd.pid")) as f:
        pid = int(f.read())
    assert os.readlink("/proc/%d/exe" % pid) == os.path.join(dev["top"], "build",
                                                             "yuxi-sandboxd")


def test_doctor_reports_what_readyz_reports(dev):
    r = cli(dev, "doctor", "--json")
    ready = requests.get(dev["base"] + "/readyz", verify=dev["cert"], timeout=30).json()
    doc = {c["check"]: c["ok"] for c in json.loads(r.stdout)}
    want = {c["name"]: c["ok"] for c in ready["checks"]}
    if not engine_has_runsc():
        # the dev run's examples/agents.json has a runsc profile: doctor
        # checks every profile's runtime, /readyz only YUXI_SANDBOX_RUNTIME
        # (yuxi/ready.h); the difference is documented
        want["runtime"] = False
    assert want.items() <= doc.items(), (doc, ready)
    assert ready["ready"] and r.returncode == (0 if all(want.values()) else 1)
    assert r.stderr == "" if all(want.values()) else "failed: runtime" in r.stderr, r.stderr
    if not all(want.values()):
        return
    assert "%s/var/saves" % dev["top"] in r.stdout    # the instance's store, by host path
    r = cli(dev, "doctor")
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


def test_doctor_fails_naming_the_check_when_the_engine_is_gone(dev):
    dead = os.path.join(dev["top"], "dead.sock")
    r = cli(dev, "doctor", YUXI_DOCKER_API_SOCKET=dead)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = {l.split()[1]: l.split()[0] for l in r.stdout.splitlines() if l.strip()}
    assert lines["engine"] == "FAIL" and lines["table"] == "ok" and lines["runner"] == "ok", lines
    assert "doctor:" in r.stderr and "failed: engine" in r.stderr, r.stderr


def test_readme_examples_act_on_the_running_instance(dev):
    r = cli(dev, "exec", "t1", "--owner", "alice", "--", "python3", "-c", "print(1+1)")
    assert r.returncode == 0 and r.stdout == "2\n", r.stdout + r.stderr
    g = api(dev, "GET", "/api/threads/t1")
    assert g.status_code == 200 and g.json().get("owner") == "alice", g.text
    assert api(dev, "GET", "/api/threads/t1", user="bob").status_code in (403, 404)
    r = cli(dev, "list", "--json")
    assert r.returncode == 0, r.stderr
    rows = {x["thread_id"]: x for x in json.loads(r.stdout)}
    assert rows["t1"]["container"].startswith(dev["prefix"]), rows
    # from another directory: the build tree's programs find their checkout
    r = cli(dev, "list", "--json", cwd="/")
    assert r.returncode == 0 and "t1" in {x["thread_id"] for x in json.loads(r.stdout)}
    # the API's command and the CLI's run in the same sandbox
    e = api(dev, "POST", "/api/execute", json={"thread_id": "t1", "command": "hostname"})
    r = cli(dev, "exec", "t1", "--", "hostname")
    assert e.status_code == 200 and e.json()["output"] == r.stdout, (e.text, r.stdout)
    r = cli(dev, "release", "t1")
    assert r.returncode == 0 and r.stdout.startswith("released "), r.stdout + r.stderr
    rows = {x["thread_id"]: x for x in json.loads(cli(dev, "list", "--json").stdout)}
    assert rows["t1"]["state"] == "warm", rows
    r = cli(dev, "destroy", "t1")
    assert r.returncode == 0 and r.stdout == "destroyed t1\n", r.stdout + r.stderr
    assert not containers(dev["prefix"], thread="t1")
    r = cli(dev, "gc")
    assert r.returncode == 0 and r.stdout.startswith("dead holds dropped: "), r.stdout + r.stderr
    h = requests.get(dev["base"] + "/healthz", verify=dev["cert"], timeout=30).json()
    assert h["sandboxes"].get("active", 0) + h["sandboxes"].get("warm", 0) == 0, h


def test_readme_nginx_conf_uses_the_checkout_and_the_instance(dev, tmp_path):
    r = cli(dev, "nginx-conf", "--auth", "basic", "--htpasswd", "/etc/nginx/htpasswd",
            "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    http = (tmp_path / "yuxi-sandbox-http.conf").read_text()
    server = (tmp_path / "yuxi-sandbox-server.conf").read_text()
    assert "server unix:%s/var/run/fcgi.sock;" % dev["top"] in http
    assert "alias %s/var/saves/threads/;" % dev["top"] in server
    assert "alias %s/web/;" % dev["top"] in server


def test_a_second_daemon_of_the_instance_refuses_to_start(dev):
    r = subprocess.run([os.path.join("build", "yuxi-sandboxd")], cwd=dev["top"],
                       env=user_env(YUXI_FCGI_SOCKET=os.path.join(dev["top"], "other.sock")),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "is in use by instance '%s'" % dev["instance"] in r.stderr, r.stderr
    assert "%s/var/yuxi-sandbox.conf" % dev["top"] in r.stderr
    assert not os.path.exists(os.path.join(dev["top"], "other.sock"))


def test_restart_in_place_and_its_refusal(dev):
    """SIGUSR2 (the package's upgrade without a service manager): the same
    pid executes its program file again and serves; with a configuration
    the program's -t rejects, it refuses and keeps serving."""
    pidfile = os.path.join(dev["top"], "var", "run", "yuxi-sandboxd.pid")
    conf = os.path.join(dev["top"], "var", "yuxi-sandbox.conf")
    log = os.path.join(dev["top"], "var", "log", "sandboxd.log")
    with open(pidfile) as f:
        pid = int(f.read())

    def log_has(text):
        with open(log, errors="replace") as f:
            return text in f.read()

    def healthy():
        try:
            return requests.get(dev["base"] + "/healthz", verify=dev["cert"],
                                timeout=5).status_code == 200
        except requests.RequestException:
            return False
    with open(conf) as f:
        good = f.read()
    with open(conf, "a") as f:
        f.write("YUXI_WORKRES=2\n")
    try:
        os.kill(pid, signal.SIGUSR2)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not log_has("SIGUSR2: restart refused"):
            time.sleep(0.1)
        assert log_has("SIGUSR2: restart refused") and log_has("YUXI_WORKRES: unknown setting")
        assert healthy()
    finally:
        with open(conf, "w") as f:
            f.write(good)
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not log_has("SIGUSR2: stopping, then executing"):
        time.sleep(0.1)
    assert log_has("SIGUSR2: stopping, then executing")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not healthy():
        time.sleep(0.1)
    assert healthy()
    with open(pidfile) as f:
        assert int(f.read()) == pid
    r = cli(dev, "exec", "t2", "--owner", "bob", "--", "echo", "after")
    assert r.returncode == 0 and r.stdout == "after\n", r.stdout + r.stderr
