# SPDX-License-Identifier: MIT
"""Sandbox profiles through the real service (docs/configuration.md,
"Profiles"), with the agents of examples/agents.json:

- reviewer (read-only workspace): inside, a write to the workspace fails
  with EROFS while outputs/ takes files; through the API, writes, edits,
  uploads and deletes answer 403 read_only except under outputs/ and
  large_tool_results/; a long output still spills to large_tool_results/;
- untrusted (runsc): inside, the kernel is gVisor, the runner's timeout
  kills the whole tree, the output cap holds, the process limit is the
  profile's (skipped when the engine has no runsc runtime, a failure
  with YUXI_TEST_REQUIRE_RUNSC=1, as in CI);
- a profile without network has no proxy variables and nothing listening
  on the relay's port, the fetcher profile has both;
- a thread whose agent config moves to another profile (agents file
  changed, service restarted) gets a new sandbox with the new settings on
  its next command; its files are untouched;
- a background process (POST /api/processes) runs under its thread's
  profile too: read-only workspace, the proxy variables, and the host path
  of the egress socket's directory masked in its output.

The module's service runs the default image (python3) when it is built.
"""
import json
import os
import secrets
import subprocess
import time

import pytest

from conftest import Service, build_path, engine_up, need_runsc, wait_for  # noqa: F401
from yxsvc import TOP_SRCDIR, image_present

DEFAULT_IMAGE = "yuxi-sandbox:latest"
UD = "/home/yuxi/user-data"

pytestmark = pytest.mark.skipif(not engine_up(), reason="no engine or test image")


@pytest.fixture(scope="module")
def psvc(tmp_path_factory):
    hosts = tmp_path_factory.mktemp("egress") / "hosts"
    hosts.write_text("127.0.0.1 allowed.test\n")
    image = DEFAULT_IMAGE if image_present(DEFAULT_IMAGE) else None
    ov = {"YUXI_EGRESS_HOSTS": str(hosts), "YUXI_SANDBOX_OUTPUT_LIMIT": "4096"}
    if image:
        ov["YUXI_SANDBOX_IMAGE"] = image
    s = Service(stem="qyxpf", overrides=ov)
    s.image = image
    s.start()
    yield s
    s.stop()


def thread(s, agent, who="alice", config=None):
    tid = "t%s" % secrets.token_hex(6)
    body = {"thread_id": tid, "agent_id": agent}
    if config:
        body["agent_config_id"] = config
    r = s.request(who, "POST", "/api/threads", json=body)
    assert r.status_code == 201, r.text
    return tid


def run(s, tid, cmd, **kw):
    r = s.execute(tid, cmd, **kw)
    assert r.status_code == 200, r.text
    return r.json()


def write(s, tid, path, content="x"):
    return s.request("alice", "POST", "/api/filesystem/write",
                     json={"thread_id": tid, "path": path, "content": content})


def test_readonly_workspace_inside(psvc):
    tid = thread(psvc, "reviewer")
    out = run(psvc, tid, "touch %s/workspace/x; echo rc=$?; "
                         "echo made > %s/outputs/o.txt && cat %s/outputs/o.txt"
              % (UD, UD, UD))
    assert "Read-only file system" in out["output"], out
    assert "rc=1" in out["output"] and "made" in out["output"], out
    r = psvc.request("alice", "GET", "/api/filesystem/cat",
                     params={"thread_id": tid, "path": UD + "/outputs/o.txt"})
    assert r.status_code == 200 and "made" in r.text, r.text
    # a long output is capped and spilled into large_tool_results/
    out = run(psvc, tid, "seq 1 5000")
    assert out["truncated"] and out["full_output_path"].startswith(
        UD + "/large_tool_results/"), out
    r = psvc.request("alice", "GET", "/api/filesystem/cat",
                     params={"thread_id": tid, "path": out["full_output_path"],
                             "limit": 1, "offset": 4999})
    assert r.status_code == 200 and "5000" in r.text, r.text


def test_readonly_workspace_api(psvc):
    tid = thread(psvc, "reviewer")
    for path in (UD + "/workspace/a.txt", UD + "/notes.txt", UD + "/uploads/u.txt"):
        r = write(psvc, tid, path)
        assert r.status_code == 403 and r.json()["error"]["code"] == "read_only", (path, r.text)
    for path in (UD + "/outputs/ok.txt", UD + "/large_tool_results/ok.txt",
                 UD + "/outputs/deep/er/ok.txt"):
        assert write(psvc, tid, path).status_code == 201, path
    r = psvc.request("alice", "POST", "/api/filesystem/edit",
                     json={"thread_id": tid, "path": UD + "/outputs/ok.txt",
                           "old_string": "x", "new_string": "y"})
    assert r.status_code == 200, r.text
    r = psvc.request("alice", "POST", "/api/filesystem/upload",
                     params={"thread_id": tid, "path": UD + "/uploads/f.bin"}, data=b"z")
    assert r.status_code == 403 and r.json()["error"]["code"] == "read_only", r.text
    r = psvc.request("alice", "POST", "/api/filesystem/delete",
                     json={"thread_id": tid, "path": UD + "/workspace"})
    assert r.status_code == 403, r.text
    r = psvc.request("alice", "POST", "/api/filesystem/delete",
                     json={"thread_id": tid, "path": UD + "/outputs/ok.txt"})
    assert r.status_code == 200, r.text
    # reads are unchanged
    r = psvc.request("alice", "GET", "/api/viewer/filesystem/tree",
                     params={"thread_id": tid, "path": UD})
    assert r.status_code == 200, r.text
    # the same config in a writable profile writes
    tid2 = thread(psvc, "coder")
    assert write(psvc, tid2, UD + "/workspace/a.txt").status_code == 201


def test_no_network_no_proxy_no_relay(psvc):
    if psvc.image is None:
        pytest.skip("default image not built")
    probe = ("env | grep -ci _proxy; python3 -c 'import socket; "
             "print(socket.socket().connect_ex((\"127.0.0.1\", 3128)))'")
    out = run(psvc, thread(psvc, "plain"), probe)["output"].split()
    assert out == ["0", "111"], out	# no variables, connection refused
    # the control: a profile with network has both
    out = run(psvc, thread(psvc, "fetcher"), probe)["output"].split()
    assert out == ["4", "0"], out


def background(s, tid, command, timeout=30):
    """Start a background process in tid, read its output to the end."""
    r = s.request("alice", "POST", "/api/processes",
                  json={"thread_id": tid, "command": command})
    assert r.status_code == 201, r.text
    pid, text, off = r.json()["process_id"], "", 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = s.request("alice", "GET", "/api/processes/%s/output?thread_id=%s"
                      "&offset=%d&wait_ms=1000" % (pid, tid, off))
        assert r.status_code == 200, r.text
        j = r.json()
        text, off = text + j["data"], j["next_offset"]
        if not j["running"] and j["data"] == "":
            break
    return text


def test_background_process_under_profile(psvc):
    # the thread's first sandbox is made for the process: under its profile
    tid = thread(psvc, "reviewer")
    out = background(psvc, tid, "touch %s/workspace/x; echo rc=$?" % UD)
    assert "Read-only file system" in out and "rc=1" in out, out
    tid = thread(psvc, "fetcher")
    # the path spelt past the command policy's lexical check (YUXI_COMMAND_PATH_POLICY)
    out = background(psvc, tid, "env | grep -ci _proxy; "
                                "grep egress \"$(printf '\\057proc/self/mountinfo')\"")
    assert out.split("\n")[0] == "4", out
    assert "/opt/yuxi/egress" in out and "/egress/sb/" not in out, out


def test_runsc_profile(psvc):
    need_runsc()
    tid = thread(psvc, "untrusted")
    out = run(psvc, tid, "dmesg | head -1; uname -r")["output"]
    assert "Starting gVisor" in out and "4.4.0" in out, out
    if psvc.image is not None:	# RLIMIT_NPROC = YUXI_SANDBOX_PIDS
        out = run(psvc, tid, "python3 -c 'import resource; "
                             "print(resource.getrlimit(resource.RLIMIT_NPROC))'")
        assert out["output"] == "(256, 256)\n", out
    # the timeout kills the whole tree
    r = psvc.request("alice", "POST", "/api/execute",
                     json={"thread_id": tid, "command": "sleep 300 & sleep 300",
                           "timeout": 2})
    out = r.json()
    assert out["timed_out"] and out["exit_code"] == 124, out
    out = run(psvc, tid, "ps -eo args | grep -c '^sleep 300' || true")
    assert out["output"].strip() == "0", out
    # the output cap
    out = run(psvc, tid, "seq 1 5000")
    assert out["truncated"] and len(out["output"]) <= 4096 + 200, len(out["output"])
    # the container runs under runsc, with the profile's memory
    c = [n for i, n in psvc.containers(thread=tid)]
    first = [i for i, n in psvc.containers(thread=tid)]
    rt = subprocess.run(["docker", "inspect", "-f",
                         "{{.HostConfig.Runtime}} {{.HostConfig.Memory}}", c[0]],
                        capture_output=True, text=True).stdout.split()
    assert rt == ["runsc", str(256 << 20)], rt
    if psvc.image is None:
        return
    # a memory bomb: under gVisor the host's cgroup stops the whole
    # sandbox; the answer is the command's (137), the next command gets a
    # new sandbox and the same files
    run(psvc, tid, "echo kept > %s/workspace/k" % UD)
    out = run(psvc, tid, "python3 -c 'b = bytearray(600 << 20)'")
    assert out["exit_code"] == 137, out
    out = run(psvc, tid, "cat %s/workspace/k" % UD)
    assert out["output"] == "kept\n", out
    assert [i for i, n in psvc.containers(thread=tid)] != first


def test_moving_to_another_profile(tmp_path):
    """The agent config moves to a read-only profile: new sandbox, new
    settings, same files."""
    agents = tmp_path / "agents.json"
    conf = {"profiles": [{"id": "ro", "workspace": "ro", "memory": "300m"}],
            "agents": [{"id": "a", "configs": [{"id": "c"}]}]}
    agents.write_text(json.dumps(conf))
    s = Service(stem="qyxpm", overrides={"YUXI_AGENTS_FILE": str(agents)})
    try:
        s.start()
        tid = thread(s, "a", config="c")
        out = run(s, tid, "echo kept > %s/workspace/f.txt && echo ok" % UD)
        assert out["output"] == "ok\n", out
        first = s.containers(thread=tid)
        assert len(first) == 1
        conf["agents"][0]["configs"][0]["profile"] = "ro"
        agents.write_text(json.dumps(conf))
        assert s.halt() == 0
        s.start()
        out = run(s, tid, "cat %s/workspace/f.txt; touch %s/workspace/g 2>&1; echo done"
                  % (UD, UD))
        assert out["output"].startswith("kept\n"), out
        assert "Read-only file system" in out["output"], out
        second = s.containers(thread=tid)
        assert len(second) == 1 and second[0][0] != first[0][0], (first, second)
        mem = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.Memory}}",
                              second[0][0]], capture_output=True, text=True).stdout
        assert mem.strip() == str(300 << 20), mem
    finally:
        s.stop()
