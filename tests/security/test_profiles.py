# SPDX-License-Identifier: MIT
"""Group 17 (part 2): the read-only workspace of a profile (docs/security.md).

- The reviewer profile (examples/agents.json): inside, a write to the
  workspace fails with EROFS; through the API, a write answers 403
  read_only. Control: YX_CONTROL_OFF=readonly (mounted and served
  writable): both succeed.
- A thread moves from a writable profile to a read-only one while a
  process of its old sandbox keeps replacing outputs/ - the source of a
  read-write mount of the new sandbox - with a symlink to a host
  directory. The new sandbox must see a directory of the thread, never
  the host directory. Control: YX_CONTROL_OFF=rolayout (the folders are
  not laid out again right before the container is made): the host
  directory's canary shows up inside.
"""
import json
import os
import secrets
import shutil
import tempfile

import pytest

from secfix import BINARIES, SecService, _sec_session, stack, stats  # noqa: F401
import yxsvc

G = 17
UD = "/home/yuxi/user-data"

pytestmark = pytest.mark.skipif(not yxsvc.engine_up(), reason="no engine or test image")


def new_thread(svc, agent, config=None):
    tid = "t%s" % secrets.token_hex(6)
    body = {"thread_id": tid, "agent_id": agent}
    if config:
        body["agent_config_id"] = config
    r = svc.request("alice", "POST", "/api/threads", json=body)
    assert r.status_code == 201, r.text
    return tid


def ro_attempts(svc):
    tid = new_thread(svc, "reviewer")
    r = svc.request("alice", "POST", "/api/filesystem/write",
                    json={"thread_id": tid, "path": UD + "/workspace/api.txt", "content": "x"})
    e = svc.execute(tid, "touch %s/workspace/inside 2>&1; echo rc=$?" % UD)
    assert e.status_code == 200, e.text
    return r.status_code, e.json()["output"]


def test_readonly_workspace():
    status, out = ro_attempts(stack("prod", YUXI_COMMAND_PATH_POLICY="off"))
    held = status == 403 and "Read-only file system" in out and "rc=1" in out
    stats.case(G, escape=not held, what="read-only workspace: API %d, inside %r" % (status, out))
    assert held, (status, out)


def test_control_readonly_off():
    status, out = ro_attempts(stack("control", "readonly", YUXI_COMMAND_PATH_POLICY="off"))
    caught = status == 201 and "rc=0" in out
    stats.control(G, caught, "readonly off: API %d, inside %r" % (status, out))
    assert caught, (status, out)


# The old sandbox's loop (python: microseconds per turn, so it wins the
# few milliseconds between the layout repair that starts a command and the
# removal of its container): outputs/ becomes a symlink to the host
# directory whenever it is not one (moved aside first).
LOOP = ("cd %s; setsid python3 -c 'import os\ni = 0\nwhile True:\n"
        " if not os.path.islink(\"outputs\"):\n"
        "  try: os.rename(\"outputs\", \".o%%d\" %% i)\n  except OSError: pass\n"
        "  i += 1\n  try: os.symlink(\"%s\", \"outputs\")\n  except OSError: pass\n'"
        " </dev/null >/dev/null 2>&1 & "
        # the command's group dies with it: return once the loop runs
        "i=0; while [ ! -L outputs ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; "
        "[ -L outputs ] && echo started")
IMAGE = "yuxi-sandbox:latest"


def swap_race(kind, off):
    """Returns what the new, read-only sandbox lists in outputs/."""
    canary = tempfile.mkdtemp(prefix="yxsec-canary-")
    os.chmod(canary, 0o755)
    token = "canary-" + secrets.token_hex(4)
    with open(os.path.join(canary, token), "w") as f:
        f.write("host file\n")
    agents = os.path.join(canary, "agents.json")
    conf = {"profiles": [{"id": "ro", "workspace": "ro"}],
            "agents": [{"id": "a", "configs": [{"id": "c"}]}]}
    with open(agents, "w") as f:
        json.dump(conf, f)
    svc = SecService(kind, off, "dev", {"YUXI_AGENTS_FILE": agents,
                                        "YUXI_COMMAND_PATH_POLICY": "off",
                                        "YUXI_SANDBOX_IMAGE": IMAGE})
    try:
        svc.start()
        tid = new_thread(svc, "a", "c")
        r = svc.execute(tid, LOOP % (UD, canary))
        assert r.status_code == 200 and "started" in r.json()["output"], r.text
        conf["agents"][0]["configs"][0]["profile"] = "ro"
        with open(agents, "w") as f:
            json.dump(conf, f)
        svc.halt()		# the old sandbox and its loop keep running
        svc.start()
        cmd = "ls -a %s/outputs/; touch %s/workspace/w 2>&1" % (UD, UD)
        r = svc.execute(tid, cmd)
        # the sandbox can be made in the loop's window between moving
        # outputs/ aside and the symlink (with the layout repair too: it
        # may come just before the move): the engine finds no bind source,
        # 404 file_not_found and no sandbox, a safe refusal; measured under
        # a loaded `make -j2 check` and in `make check-soak`. Try again.
        for _ in range(8):
            if r.status_code != 404 or "file_not_found" not in r.text:
                break
            r = svc.execute(tid, cmd)
        assert r.status_code == 200, r.text
        return token, r.json()["output"]
    finally:
        svc.stop()
        shutil.rmtree(canary, ignore_errors=True)


@pytest.mark.skipif(not yxsvc.image_present(IMAGE), reason="default image not built")
def test_rw_mount_source_swapped_by_old_sandbox():
    token, out = swap_race("prod", "")
    held = token not in out and "Read-only file system" in out
    stats.case(G, escape=not held, what="outputs/ swapped for a host symlink: %r" % out)
    assert held, out


@pytest.mark.skipif(not yxsvc.image_present(IMAGE), reason="default image not built")
def test_control_rolayout_mounts_the_host_directory():
    if os.environ.get("YUXI_TEST_RUNTIME") == "runsc":
        # measured: the new sandbox's `ls outputs/` fails with "Invalid
        # argument", the canary never shows; the runc run shows the leak
        pytest.skip("under runsc gVisor refuses a bind source swapped for a "
                    "symlink: the leak this control must show cannot happen")
    token, out = swap_race("control", "rolayout")
    stats.control(G, token in out, "rolayout off: %r" % out)
    assert token in out, out
