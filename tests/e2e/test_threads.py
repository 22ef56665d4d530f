# SPDX-License-Identifier: MIT
"""Threads CRUD, ownership and the identical 404 on every thread endpoint."""
import json
import os
import re
import secrets
import subprocess
import time

from yxsvc import IMAGE, containers


def new_id():
    return "th-" + secrets.token_hex(5)


def test_create_get_list_delete(svc, alice):
    tid = new_id()
    r = alice.post("/api/threads", json={"thread_id": tid, "agent_id": "coder",
                                         "agent_config_id": "minimal"})
    assert r.status_code == 201, r.text
    rec = r.json()
    assert rec["thread_id"] == tid and rec["owner"] == "alice"
    assert rec["agent_id"] == "coder" and rec["agent_config_id"] == "minimal"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", rec["created_at"])
    # on disk: record beside user-data with its layout, owned by the sandbox uid
    # (the thread's own uid from YUXI_SANDBOX_UID_RANGE, also its gid)
    tdir = os.path.join(svc.saves, "threads", tid)
    with open(os.path.join(tdir, "thread.json")) as f:
        uid = json.load(f)["uid"]
    assert 2000000000 <= uid < 2000000000 + 65536
    for d in ("workspace", "outputs", "uploads", "uploads/attachments", "large_tool_results"):
        st = os.stat(os.path.join(tdir, "user-data", d))
        assert st.st_uid == uid and st.st_gid == uid, d
    # same id, same owner: 200 and unchanged (even with other fields)
    r2 = alice.post("/api/threads", json={"thread_id": tid, "agent_id": "shell"})
    assert r2.status_code == 200 and r2.json() == rec
    g = alice.get("/api/threads/" + tid)
    assert g.status_code == 200
    j = g.json()
    assert {k: j[k] for k in rec} == rec
    assert j["sandbox"]["state"] == "none" and j["sandbox"]["sandbox_id"] is None
    assert tid in [t["thread_id"] for t in alice.get("/api/threads").json()["threads"]]
    d = alice.delete("/api/threads/" + tid)
    assert d.status_code == 204 and d.content == b""
    assert not os.path.exists(tdir)
    assert alice.get("/api/threads/" + tid).status_code == 404
    assert alice.delete("/api/threads/" + tid).status_code == 404
    # the id is free again
    assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
    alice.delete("/api/threads/" + tid)


def test_other_owner_conflict(alice, bob):
    tid = new_id()
    assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
    r = bob.post("/api/threads", json={"thread_id": tid})
    assert r.status_code == 409 and r.json()["error"]["code"] == "thread_exists"
    assert tid not in [t["thread_id"] for t in bob.get("/api/threads").json()["threads"]]
    alice.delete("/api/threads/" + tid)


def test_server_made_id(alice):
    r = alice.post("/api/threads", json={})
    assert r.status_code == 201
    tid = r.json()["thread_id"]
    assert re.match(r"^t-[0-9a-f]{16}$", tid)
    r = alice.post("/api/threads")          # no body at all
    assert r.status_code == 201 and r.json()["thread_id"] != tid
    alice.delete("/api/threads/" + tid)
    alice.delete("/api/threads/" + r.json()["thread_id"])


def test_invalid_thread_ids(alice):
    for bad in ("has space", "a/b", "x" * 129, "dot.dot", "", "é"):
        r = alice.post("/api/threads", json={"thread_id": bad})
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_thread_id", bad
    for bad in ("has%20space", "x" * 129, "a.b", "a~b"):
        for method in ("GET", "DELETE"):
            r = alice.svc.request("alice", method, "/api/threads/" + bad)
            assert r.status_code == 400, (method, bad, r.text)
            assert r.json()["error"]["code"] == "invalid_thread_id"
    r = alice.get("/api/filesystem/ls?thread_id=a.b")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_thread_id"
    r = alice.get("/api/filesystem/ls")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_thread_id"


def test_unknown_agent_or_config(alice):
    r = alice.post("/api/threads", json={"thread_id": new_id(), "agent_id": "nobody"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"
    r = alice.post("/api/threads", json={"thread_id": new_id(), "agent_id": "coder",
                                         "agent_config_id": "nope"})
    assert r.status_code == 400
    r = alice.post("/api/threads", json={"thread_id": new_id(), "agent_config_id": "minimal"})
    assert r.status_code == 400


def test_list_newest_first_and_private(alice, bob):
    ids = [new_id() for _ in range(3)]
    for tid in ids:
        assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
        time.sleep(0.01)
    got = [t["thread_id"] for t in alice.get("/api/threads").json()["threads"]]
    pos = [got.index(t) for t in ids]
    assert pos == sorted(pos, reverse=True)
    assert not set(ids) & {t["thread_id"] for t in bob.get("/api/threads").json()["threads"]}
    for t in alice.get("/api/threads").json()["threads"]:
        assert t["owner"] == "alice"
    for tid in ids:
        alice.delete("/api/threads/" + tid)


def thread_endpoint_calls(tid):
    q = "thread_id=" + tid
    return [
        ("GET", "/api/threads/" + tid, None, None),
        ("DELETE", "/api/threads/" + tid, None, None),
        ("POST", "/api/execute", {"thread_id": tid, "command": "echo hi"}, None),
        ("GET", "/api/filesystem/ls?" + q + "&path=/workspace", None, None),
        ("GET", "/api/filesystem/cat?" + q + "&path=a.txt", None, None),
        ("POST", "/api/filesystem/write", {"thread_id": tid, "path": "a.txt", "content": "x"}, None),
        ("POST", "/api/filesystem/edit", {"thread_id": tid, "path": "a.txt",
                                          "old_string": "a", "new_string": "b"}, None),
        ("GET", "/api/filesystem/glob?" + q + "&pattern=*", None, None),
        ("GET", "/api/filesystem/grep?" + q + "&pattern=x", None, None),
        ("POST", "/api/filesystem/upload?" + q + "&path=u.bin", None, b"data"),
        ("GET", "/api/filesystem/download?" + q + "&path=a.txt", None, None),
        ("GET", "/api/viewer/filesystem/tree?" + q + "&path=/", None, None),
        ("GET", "/api/viewer/filesystem/file?" + q + "&path=a.txt", None, None),
        ("GET", "/api/viewer/filesystem/download?" + q + "&path=a.txt", None, None),
    ]


def test_foreign_thread_identical_404_everywhere(svc, alice, bob):
    tid = new_id()
    missing = new_id()
    assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
    assert alice.post("/api/filesystem/write", json={"thread_id": tid, "path": "a.txt",
                                                     "content": "abc"}).status_code == 201
    try:
        for (m, path, js, data), (_, mpath, mjs, mdata) in zip(
                thread_endpoint_calls(tid), thread_endpoint_calls(missing)):
            foreign = svc.request("bob", m, path, json=js, data=data)
            absent = svc.request("bob", m, mpath, json=mjs, data=mdata)
            assert foreign.status_code == 404, (m, path, foreign.text)
            assert foreign.json()["error"]["code"] == "not_found"
            # byte-identical body (only the id in the request differs),
            # but for the request's own id
            assert (foreign.content.replace(foreign.headers["X-Request-Id"].encode(), b"") ==
                    absent.content.replace(absent.headers["X-Request-Id"].encode(), b"")), \
                (m, path)
        # alice's data untouched by bob's attempts
        r = alice.get("/api/filesystem/cat?thread_id=%s&path=a.txt" % tid)
        assert r.status_code == 200 and "abc" in r.json()["content"]
    finally:
        alice.delete("/api/threads/" + tid)


def test_delete_removes_the_threads_unslotted_container_only(factory):
    """A container of the thread the table does not know (a crash left it)
    goes with the thread's deletion, which asks the engine for that
    thread's containers only (the driver's list_thread); another thread's
    stays. The reaper's reconcile, which would remove both, is kept away."""
    inst = factory(YUXI_SANDBOX_IDLE_CHECK_INTERVAL="3600")
    a, b = inst.new_thread(), inst.new_thread()
    names = {}
    for t in (a, b):
        names[t] = inst.prefix + secrets.token_hex(6)
        subprocess.run(["docker", "run", "-d", "--name", names[t], "--network", "none",
                        "--label", "io.yuxi.sandbox=1",
                        "--label", "io.yuxi.sandbox.thread=" + t,
                        IMAGE, "sleep", "600"], check=True, capture_output=True, timeout=120)
    try:
        assert [n for _, n in containers(inst.prefix, thread=a)] == [names[a]]
        r = inst.request("alice", "DELETE", "/api/threads/" + a)
        assert r.status_code == 204, r.text
        assert containers(inst.prefix, thread=a) == []
        assert [n for _, n in containers(inst.prefix, thread=b)] == [names[b]]
    finally:
        subprocess.run(["docker", "rm", "-f"] + list(names.values()), capture_output=True,
                       timeout=120)
