# SPDX-License-Identifier: MIT
"""What platforms adopting the service expect (issue 26), through nginx:

- seed 000's /mnt/user-data and /mnt/skills inside every sandbox (pool
  boxes and gVisor included), accepted by the command path policy, and
  nothing else under /mnt;
- `cwd` and `env` per command (execute, its stream form, background
  processes), every bad form a 400 with its code, the proxy variables of a
  networked profile not the caller's;
- thread metadata: set at create, shown, filtered on, changed by PATCH (a
  merge patch), never visible to another user, in the audit lines;
- a thread's own idle timeout: its sandbox reaped after it while a thread
  of the default timeout keeps its own.
"""
import json
import os
import secrets
import time

import pytest

from conftest import need_runsc, wait_for

UD = "/home/yuxi/user-data"


def new_thread(c, **body):
    tid = "f%s" % secrets.token_hex(5)
    body["thread_id"] = tid
    r = c.post("/api/threads", json=body)
    assert r.status_code == 201, r.text
    return tid


def run(c, tid, cmd, **kw):
    body = {"thread_id": tid, "command": cmd}
    body.update(kw)
    r = c.post("/api/execute", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def write(c, tid, path, content):
    r = c.post("/api/filesystem/write", json={"thread_id": tid, "path": path,
                                               "content": content})
    assert r.status_code == 201, r.text


# ------------------------------------------------------------------ /mnt
def mnt_checks(c, tid):
    write(c, tid, "/mnt/user-data/workspace/x.py", "print(6 * 7)\n")
    out = run(c, tid, "python3 /mnt/user-data/workspace/x.py 2>&1 || "
                      "sh /mnt/user-data/workspace/x.py 2>&1; ls /mnt/skills; "
                      "cd /mnt/user-data/workspace && pwd -P")
    assert out["exit_code"] == 0, out
    return out["output"]


def test_mnt_paths(alice, thread):
    write(alice, thread, "/mnt/user-data/workspace/x.sh", "echo from-mnt\n")
    out = run(alice, thread, "sh /mnt/user-data/workspace/x.sh; ls /mnt/skills; "
                             "cd /mnt/user-data/workspace && pwd -P; ls /mnt/user-data")
    lines = out["output"].split()
    assert lines[0] == "from-mnt", out
    # the thread's visible skills only (agent coder: python-basics, shell-tips)
    assert "python-basics" in lines and "shell-tips" in lines, out
    assert UD + "/workspace" in lines and "workspace" in lines, out
    for cmd in ("ls /mnt/other", "ls /mnt", "cat /mnt/user-data/../../etc/passwd",
                "ls /mnt/user-data/.."):
        j = run(alice, thread, cmd)
        assert j["exit_code"] == 126 and j.get("refused") == "path_not_allowed", (cmd, j)
    # only the two links are there (read past the lexical policy)
    j = run(alice, thread, "ls -a \"$(printf '\\057mnt')\"")
    assert sorted(j["output"].split()) == [".", "..", "skills", "user-data"], j
    j = run(alice, thread, "d=$(printf '\\057mnt'); touch \"$d/new\" 2>&1; echo rc=$?")
    assert "rc=1" in j["output"], j


def test_mnt_paths_in_a_pool_box(factory):
    inst = factory(YUXI_POOL_SIZE="1")
    assert wait_for(lambda: any(s["state"] == "pooled" for s in inst.sandboxes().values()),
                    300, 0.1), inst.read_log()
    c = inst.client("alice")
    tid = new_thread(c, agent_id="coder")
    write(c, tid, "/mnt/user-data/workspace/x.sh", "echo pooled-mnt\n")
    out = run(c, tid, "sh /mnt/user-data/workspace/x.sh; ls /mnt/skills")
    assert out["output"].split()[0] == "pooled-mnt" and "shell-tips" in out["output"], out
    assert "-pool-" in inst.sandboxes()[tid]["container"], inst.sandboxes()[tid]


def test_mnt_paths_under_runsc(factory):
    need_runsc()
    inst = factory(YUXI_SANDBOX_RUNTIME="runsc")
    c = inst.client("alice")
    tid = new_thread(c, agent_id="coder")
    write(c, tid, "/mnt/user-data/workspace/x.sh", "echo gvisor-mnt\n")
    out = run(c, tid, "sh /mnt/user-data/workspace/x.sh; ls /mnt/skills; dmesg | head -1")
    assert out["output"].split()[0] == "gvisor-mnt" and "shell-tips" in out["output"], out
    assert "gVisor" in out["output"], out


# ------------------------------------------------------------ cwd and env
def test_cwd_and_env(alice, thread):
    run(alice, thread, "mkdir -p sub/deeper")
    j = run(alice, thread, "pwd; echo \"$FOO\"; echo \"$HOME\"",
            cwd=UD + "/workspace/sub", env={"FOO": "bar baz"})
    assert j["output"] == UD + "/workspace/sub\nbar baz\n/home/yuxi\n", j
    # alias forms, the other root, a variable of the base environment replaced
    j = run(alice, thread, "pwd; echo $LANG", cwd="/mnt/user-data/workspace/sub/deeper",
            env={"LANG": "C"})
    assert j["output"] == UD + "/workspace/sub/deeper\nC\n", j
    j = run(alice, thread, "pwd", cwd="/skills/shell-tips")
    assert j["output"] == "/home/yuxi/skills/shell-tips\n", j
    # the stream form and a background process take them too
    r = alice.post("/api/execute", json={"thread_id": thread, "command": "pwd; echo $X",
                                         "cwd": "sub", "env": {"X": "streamed"},
                                         "stream": True})
    assert r.status_code == 200, r.text
    events = [json.loads(l) for l in r.text.splitlines() if l]
    text = "".join(e.get("data", "") for e in events if e["type"] == "output")
    assert text == UD + "/workspace/sub\nstreamed\n", events
    r = alice.post("/api/processes", json={"thread_id": thread, "command": "pwd; echo $Y",
                                           "cwd": UD + "/outputs", "env": {"Y": "bg"}})
    assert r.status_code == 201, r.text
    pid = r.json()["process_id"]
    r = alice.get("/api/processes/%s/output?thread_id=%s&wait_ms=5000" % (pid, thread))
    deadline = time.monotonic() + 10
    text = r.json()["data"]
    while "bg" not in text and time.monotonic() < deadline:
        time.sleep(0.2)
        text = alice.get("/api/processes/%s/output?thread_id=%s" % (pid, thread)).json()["data"]
    assert text == UD + "/outputs\nbg\n", text


@pytest.mark.parametrize("body,code", [
    ({"cwd": "/etc"}, "invalid_path"),
    ({"cwd": "/"}, "invalid_path"),
    ({"cwd": UD + "/../x"}, "invalid_path"),
    ({"cwd": 5}, "invalid_path"),
    ({"cwd": UD + "/workspace/nope"}, "cwd_not_found"),
    ({"cwd": UD + "/workspace/afile"}, "cwd_not_found"),
    ({"cwd": "/skills/not-a-visible-skill"}, "cwd_not_found"),
    ({"env": []}, "invalid_env"),
    ({"env": {"1X": "a"}}, "invalid_env"),
    ({"env": {"A-B": "a"}}, "invalid_env"),
    ({"env": {"": "a"}}, "invalid_env"),
    ({"env": {"X": 1}}, "invalid_env"),
    ({"env": {"X": "nul\u0000"}}, "invalid_env"),
    ({"env": {"V%d" % i: "x" for i in range(65)}}, "invalid_env"),
    ({"env": {"A": "x" * 20000, "B": "y" * 13000}}, "invalid_env"),
])
def test_bad_cwd_and_env(alice, thread, body, code):
    write(alice, thread, UD + "/workspace/afile", "x")
    body = dict(body, thread_id=thread, command="echo ran")
    r = alice.post("/api/execute", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, (body, r.text)
    r = alice.post("/api/processes", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, (body, r.text)


def test_env_limits_accepted(alice, thread):
    env = {"V%d" % i: "x" for i in range(64)}
    j = run(alice, thread, "echo $V0$V63", env=env)
    assert j["output"] == "xx\n", j


def test_proxy_variables_of_a_networked_profile(factory, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 allowed.test\n")
    inst = factory(YUXI_EGRESS_HOSTS=str(hosts))
    c = inst.client("alice")
    tid = new_thread(c, agent_id="fetcher")
    for name in ("HTTP_PROXY", "https_proxy"):
        r = c.post("/api/execute", json={"thread_id": tid, "command": "env",
                                          "env": {name: "http://evil:1"}})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_env", r.text
    j = run(c, tid, "echo $HTTP_PROXY $NO_PROXY", env={"NO_PROXY": "x"})
    assert j["output"] == "http://127.0.0.1:3128 x\n", j
    # a profile without network may set them (it has no network to reach)
    tid2 = new_thread(c, agent_id="coder")
    assert run(c, tid2, "echo $HTTP_PROXY", env={"HTTP_PROXY": "h"})["output"] == "h\n"


# ------------------------------------------------------------- metadata
def test_metadata(svc, alice, bob):
    tag = secrets.token_hex(4)
    a = new_thread(alice, metadata={"project": tag, "run": "7"})
    b = new_thread(alice, metadata={"project": tag, "run": "8"})
    c = new_thread(alice, metadata={"project": "other"})
    x = new_thread(bob, metadata={"project": tag, "run": "7"})
    got = alice.get("/api/threads/" + a).json()
    assert got["metadata"] == {"project": tag, "run": "7"} and got["idle_timeout"] is None, got
    ids = lambda r: sorted(t["thread_id"] for t in r.json()["threads"])  # noqa: E731
    assert ids(alice.get("/api/threads?metadata.project=" + tag)) == sorted([a, b])
    assert ids(alice.get("/api/threads?metadata.project=%s&metadata.run=7" % tag)) == [a]
    assert ids(bob.get("/api/threads?metadata.project=" + tag)) == [x]
    assert alice.get("/api/threads?project=" + tag).status_code == 400
    # a merge patch: null removes, strings set, the rest stays
    r = alice.request("PATCH", "/api/threads/" + a, json={"metadata": {"run": None, "k": "v"}})
    assert r.status_code == 200 and r.json()["metadata"] == {"project": tag, "k": "v"}, r.text
    assert ids(alice.get("/api/threads?metadata.run=7")) == []
    # another user: the one 404, nothing changed
    r = bob.request("PATCH", "/api/threads/" + a, json={"metadata": {"k": "bob"}})
    assert r.status_code == 404, r.text
    assert alice.get("/api/threads/" + a).json()["metadata"]["k"] == "v"
    # bad metadata, at create and at PATCH
    for bad in ({"a b": "x"}, {"k": 1}, ["x"], {"k": "\u0001"}, {"k": "v" * 257},
                {"k" * 65: "v"}, {"k%d" % i: "v" for i in range(17)}):
        r = alice.post("/api/threads", json={"metadata": bad})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_metadata", (bad, r.text)
    r = alice.request("PATCH", "/api/threads/" + c, json={"metadata": {"k%d" % i: "v" for i in range(16)}})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_metadata", r.text
    assert alice.request("PATCH", "/api/threads/" + c, json={"owner": "bob"}).status_code == 400
    # the audit lines carry it
    run(alice, a, "true")
    lines = svc.audit_lines()
    ex = [l for l in lines if l["thread"] == a and l["op"] == "execute"]
    assert ex and ex[-1]["metadata"] == {"project": tag, "k": "v"}, ex[-1:]
    for t in (a, b, c):
        alice.delete("/api/threads/" + t)
    bob.delete("/api/threads/" + x)


# ---------------------------------------------------------- idle timeout
def test_idle_timeout(factory):
    inst = factory(YUXI_SANDBOX_IDLE_CHECK_INTERVAL="1", YUXI_SANDBOX_IDLE_TIMEOUT_MAX="3600")
    c = inst.client("alice")
    short = new_thread(c, idle_timeout=5)
    dflt = new_thread(c)
    assert c.get("/api/threads/" + short).json()["idle_timeout"] == 5
    r = c.post("/api/threads", json={"idle_timeout": 3601})
    assert r.status_code == 400 and "YUXI_SANDBOX_IDLE_TIMEOUT_MAX" in r.text, r.text
    assert c.post("/api/threads", json={"idle_timeout": 0}).status_code == 400
    run(c, short, "true")
    run(c, dflt, "true")
    t0 = time.monotonic()
    state = lambda t: c.get("/api/threads/" + t).json()["sandbox"]["state"]  # noqa: E731
    assert wait_for(lambda: state(short) == "none", 5 + 1 + 3), state(short)
    took = time.monotonic() - t0
    print("idle_timeout 5 s: reaped after %.1f s; the other thread: %s" % (took, state(dflt)))
    assert took <= 5 + 1 + 2, took
    assert state(dflt) == "active"
    # PATCH shortens a running sandbox's at once, and null gives it back
    r = c.request("PATCH", "/api/threads/" + dflt, json={"idle_timeout": 2})
    assert r.status_code == 200 and r.json()["idle_timeout"] == 2, r.text
    assert wait_for(lambda: state(dflt) == "none", 2 + 1 + 3), state(dflt)
    r = c.request("PATCH", "/api/threads/" + dflt, json={"idle_timeout": None})
    assert r.status_code == 200 and r.json()["idle_timeout"] is None, r.text
