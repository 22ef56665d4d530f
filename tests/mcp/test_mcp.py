# SPDX-License-Identifier: MIT
"""The MCP endpoint (POST /mcp, docs/mcp.md) against the real service:
the transport's answers, the tools as the routes they map onto, and the
attack and limit cases of issue 36, each protection also against a
control daemon (tests/security/yuxi-sandboxd-control, YX_CONTROL_OFF)
that must show the leak:

- identity: only nginx's (the FastCGI params); another user's thread is
  the same tool error as one that does not exist, for every tool
  (control "mcpidentity": a message that names the user is believed);
- no token: 401 before any JSON-RPC;
- malformed JSON-RPC, unknown methods, oversized requests and a batch of
  1,000 calls: clear errors at once, no worker held, nothing run
  (control "mcpbatch": the batch is run, call by call, in one worker);
- a client that disconnects mid-call stops the command (control
  "clientgone");
- a tool call holds one of the user's slots like the route it maps onto;
- each tool call writes the route's audit line, marked "via":"mcp".
"""
import base64
import json
import os
import socket
import ssl
import threading
import time

import pytest

import yxsvc
from mcpclient import Mcp, answer

BATCH = 1000


def api(svc, who, method, path, **kw):
    return svc.request(who, method, path, **kw)


def thread(svc, who="alice", tid=None):
    m = Mcp(svc, who)
    r = m.tool("create_thread", {"thread_id": tid} if tid else {})
    assert not r["isError"], r
    return r["structuredContent"]["thread_id"]


def names(svc, tid, who="alice"):
    r = api(svc, who, "GET", "/api/filesystem/ls", params={"thread_id": tid})
    assert r.status_code == 200, r.text
    return {os.path.basename(e["path"]) for e in r.json()["entries"]}


def no_rid(res):
    """A tool result without its request id (in the text and the error)."""
    res = json.loads(json.dumps(res))
    for c in res.get("content", []):
        c["text"] = c["text"].split(" [request id ")[0]
    (res.get("structuredContent") or {}).get("error", {}).pop("request_id", None)
    return res


# ---------------------------------------------------------------- transport
def test_initialize_and_list(svc):
    m = Mcp(svc)
    res = m.initialize()
    assert res["protocolVersion"] == "2025-11-25"
    assert res["capabilities"] == {"tools": {"listChanged": False}}
    assert res["serverInfo"]["name"] == "yuxi-sandbox"
    assert "/home/yuxi/user-data" in res["instructions"]
    assert len(m.session) == 32 and int(m.session, 16) >= 0
    # an older revision we speak is echoed; one we do not gets ours
    for asked, got in (("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
                       ("2024-11-05", "2025-11-25"), ("1999-01-01", "2025-11-25")):
        assert Mcp(svc).initialize(asked)["protocolVersion"] == got
    resp, _, r = m.rpc("tools/list")
    tools = {t["name"]: t for t in resp["result"]["tools"]}
    assert set(tools) == {"create_thread", "list_threads", "execute", "read_file",
                          "write_file", "edit_file", "ls", "glob", "grep", "upload",
                          "download", "start_process", "process_output", "process_stdin",
                          "stop_process", "create_session", "end_session",
                          "create_preview"}
    for t in tools.values():
        s = t["inputSchema"]
        assert s["type"] == "object" and s["additionalProperties"] is False
        assert t["description"] and t["title"]
        for p in s.get("required", []):
            assert p in s["properties"]
        for p in s["properties"].values():
            assert p["description"] and p["type"] in ("string", "integer", "boolean", "object")
    assert tools["execute"]["inputSchema"]["required"] == ["thread_id", "command"]
    assert set(tools["execute"]["inputSchema"]["properties"]) == {
        "thread_id", "command", "timeout", "cwd", "env", "session_id"}
    assert tools["read_file"]["annotations"]["readOnlyHint"] is True
    resp, _, r = m.rpc("ping")
    assert r.status_code == 200 and resp["result"] == {}


def test_no_token_is_401_before_jsonrpc(svc):
    for who, headers in ((None, {}), (None, {"Authorization": "Bearer nope"}),
                         (None, {"X-Yuxi-User": "alice"})):
        m = Mcp(svc, who)
        r = m.post(b"not even json", headers)
        assert r.status_code == 401, r.text
        assert r.json()["error"]["code"] == "unauthenticated"
        assert "jsonrpc" not in r.json()


def test_malformed_jsonrpc(svc):
    m = Mcp(svc)
    cases = [
        (b"{not json", 400, -32700, None),
        (b"", 400, -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing', 400, -32700, None),
        (b"42", 400, -32600, None),
        (b'"ping"', 400, -32600, None),
        (b"null", 400, -32600, None),
        (b'{"id":1,"method":"ping"}', 400, -32600, 1),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600, 1),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600, None),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', 400, -32600, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 400, -32600, None),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', 400, -32600, 1),
        (b'{"jsonrpc":"2.0","id":"x"}', 400, -32600, "x"),
        (b'{"jsonrpc":"2.0","id":2,"method":"no/such/method"}', 200, -32601, 2),
        (b'{"jsonrpc":"2.0","id":3,"method":"resources/list"}', 200, -32601, 3),
        (b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}', 200, -32602, 4),
        (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}', 200, -32602, 5),
        (b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm_rf"}}',
         200, -32602, 6),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
         b'"params":{"name":"ls","arguments":[1]}}', 200, -32602, 7),
        (b'[' + b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + b']', 400, -32600, None),
        (b'[]', 400, -32600, None),
        (b'[1,', 400, -32600, None),
    ]
    for body, status, code, rid in cases:
        t0 = time.monotonic()
        r = m.post(body)
        took = time.monotonic() - t0
        assert r.status_code == status, (body, r.status_code, r.text)
        msg = r.json()
        assert msg["jsonrpc"] == "2.0" and msg["error"]["code"] == code, (body, msg)
        assert msg["id"] == rid and msg["error"]["message"], (body, msg)
        assert took < 1.0, (body, took)
    # notifications and responses are taken, never answered
    for body in (b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                 b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
                 b'{"jsonrpc":"2.0","method":"no/such/notification"}',
                 b'{"jsonrpc":"2.0","id":9,"result":{}}'):
        r = m.post(body)
        assert r.status_code == 202 and r.content == b"", (body, r.text)


def test_transport_headers_and_methods(svc):
    m = Mcp(svc)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    r = m.post(ping, {"MCP-Protocol-Version": "2023-01-01"})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600
    assert "2025-11-25" in r.json()["error"]["message"]
    for v in ("2025-11-25", "2025-06-18", "2025-03-26"):
        assert m.post(ping, {"MCP-Protocol-Version": v}).status_code == 200
    r = m.post(ping, {"Mcp-Session-Id": "a b"})
    assert r.status_code == 400 and "Mcp-Session-Id" in r.json()["error"]["message"]
    assert m.post(ping, {"Mcp-Session-Id": "x" * 129}).status_code == 400
    # stateless: any well-formed session id is taken, none is needed
    assert m.post(ping, {"Mcp-Session-Id": "f" * 32}).status_code == 200
    # no server-initiated stream and no session to end: 405 (the
    # transport allows it for both), with the methods the path takes
    for method in ("GET", "DELETE", "PUT"):
        r = api(svc, "alice", method, "/mcp", headers={"Accept": "text/event-stream"})
        assert r.status_code == 405, (method, r.text)
        assert r.headers["Allow"] == "POST"
    # a browser page of another site (the transport's Origin check)
    r = m.post(ping, {"Origin": "https://evil.example"})
    assert r.status_code == 403
    assert m.post(ping, {"Origin": "https://127.0.0.1:%d" % svc.port}).status_code == 200


def test_oversized_request(svc):
    m = Mcp(svc)
    limit = int(svc.env["YUXI_BODY_LIMIT"])
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "write_file", "arguments": {"thread_id": "t", "path": "x",
                                            "content": "a" * limit}}})
    t0 = time.monotonic()
    r = m.post(big)
    assert time.monotonic() - t0 < 2
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == -32600
    assert "larger than %d bytes" % limit in r.json()["error"]["message"]


# ------------------------------------------------------------------- tools
def test_tools_map_onto_the_routes(svc):
    m = Mcp(svc)
    m.initialize()
    tid = thread(svc, tid="mcp-fs")
    assert thread(svc, tid="mcp-fs") == tid	# creating it again: the same thread
    r = m.tool("write_file", {"thread_id": tid, "path": "notes/todo.txt",
                              "content": "alpha\nbeta TODO\ngamma TODO\n"})
    assert not r["isError"], r
    assert r["structuredContent"] == {"path": "/home/yuxi/user-data/workspace/notes/todo.txt"}
    r = m.tool("write_file", {"thread_id": tid, "path": "notes/todo.txt", "content": "x"})
    assert r["isError"] and r["structuredContent"]["error"]["code"] == "file_exists"
    assert r["structuredContent"]["status"] == 409
    r = m.tool("edit_file", {"thread_id": tid, "path": "/workspace/notes/todo.txt",
                             "old_string": "TODO", "new_string": "DONE"})
    assert r["isError"] and r["structuredContent"]["error"]["code"] == "ambiguous_match"
    r = m.tool("edit_file", {"thread_id": tid, "path": "/workspace/notes/todo.txt",
                             "old_string": "TODO", "new_string": "DONE", "replace_all": True})
    assert r["structuredContent"]["occurrences"] == 2
    r = m.tool("read_file", {"thread_id": tid, "path": "notes/todo.txt", "offset": 1,
                             "limit": 1})
    assert r["content"][0]["text"].startswith("     2\tbeta DONE")
    assert "read on with offset=2" in r["content"][0]["text"]
    assert r["structuredContent"]["next_offset"] == 2
    r = m.tool("glob", {"thread_id": tid, "pattern": "**/*.txt"})
    assert [e["path"] for e in r["structuredContent"]["matches"]] == [
        "/home/yuxi/user-data/workspace/notes/todo.txt"]
    r = m.tool("grep", {"thread_id": tid, "pattern": "DONE", "max_count": 1})
    assert r["structuredContent"]["matches"] == [{
        "path": "/home/yuxi/user-data/workspace/notes/todo.txt", "line": 2,
        "text": "beta DONE"}]
    r = m.tool("ls", {"thread_id": tid, "path": "/"})
    assert [e["path"] for e in r["structuredContent"]["entries"]] == [
        "/home/yuxi/user-data", "/home/yuxi/skills"]
    # bytes in and out, base64
    blob = bytes(range(256)) * 3
    r = m.tool("upload", {"thread_id": tid, "path": "/uploads/b.bin",
                          "content_base64": base64.b64encode(blob).decode()})
    assert r["structuredContent"] == {"path": "/home/yuxi/user-data/uploads/b.bin",
                                      "size": len(blob)}
    r = m.tool("download", {"thread_id": tid, "path": "/uploads/b.bin"})
    assert base64.b64decode(r["structuredContent"]["content_base64"]) == blob
    assert r["structuredContent"]["size"] == len(blob)
    limit = int(svc.env["YUXI_BODY_LIMIT"])
    m.tool("execute", {"thread_id": tid,
                       "command": "head -c %d /dev/zero > /home/yuxi/user-data/big" % (limit + 1)})
    r = m.tool("download", {"thread_id": tid, "path": "/home/yuxi/user-data/big"})
    assert r["structuredContent"]["error"] == {
        "code": "payload_too_large", "message": "file larger than %d bytes" % limit,
        "request_id": r.response.headers["X-Request-Id"]}
    r = m.tool("upload", {"thread_id": tid, "path": "x", "content_base64": "not base64!"})
    assert r["isError"] and "content_base64 is not base64" in r["content"][0]["text"]
    # the route's own answers, as tool errors
    for args, code in (({"path": "/etc/passwd"}, "path_not_allowed"),
                       ({"path": "../x"}, "invalid_path"),
                       ({"path": "nope.txt"}, "file_not_found"),
                       ({"path": "/uploads/b.bin"}, "binary_file")):
        r = m.tool("read_file", dict(args, thread_id=tid))
        assert r["isError"] and r["structuredContent"]["error"]["code"] == code, r
    r = m.tool("write_file", {"thread_id": tid, "path": "/skills/x", "content": "x"})
    assert r["structuredContent"]["error"]["code"] == "read_only"
    # arguments: unknown ones named with the ones there are, required ones
    r = m.tool("read_file", {"thread_id": tid, "file_path": "x"})
    assert r["isError"] and "unknown argument \"file_path\"" in r["content"][0]["text"]
    assert "thread_id, path, offset, limit" in r["content"][0]["text"]
    r = m.tool("read_file", {"thread_id": tid})
    assert r["isError"] and "path is required" in r["content"][0]["text"]
    r = m.tool("read_file", {"thread_id": tid, "path": "x", "offset": "1"})
    assert "offset must be a non-negative integer" in r["content"][0]["text"]
    r = m.tool("execute", {"thread_id": tid, "command": 7})
    assert r["structuredContent"]["error"]["message"] == "command must be a non-empty string"
    # threads: metadata and the listing's filter
    t2 = m.tool("create_thread", {"metadata": {"project": "mcp"}})["structuredContent"]
    r = m.tool("list_threads", {"metadata": {"project": "mcp"}})
    assert [t["thread_id"] for t in r["structuredContent"]["threads"]] == [t2["thread_id"]]
    assert len(m.tool("list_threads")["structuredContent"]["threads"]) >= 2


def test_execute_and_processes(svc):
    m = Mcp(svc)
    m.initialize()
    tid = thread(svc)
    r = m.tool("execute", {"thread_id": tid, "command": "echo hi; echo err >&2; exit 3"})
    assert not r["isError"], r
    sc = r["structuredContent"]
    assert sc["output"] == "hi\nerr\n" and sc["exit_code"] == 3 and sc["timed_out"] is False
    assert r["content"][0]["text"] == "hi\nerr\n[exit code 3]"
    r = m.tool("execute", {"thread_id": tid, "command": "pwd; echo $A", "cwd": "/outputs",
                           "env": {"A": "b c"}})
    assert r["structuredContent"]["output"] == "/home/yuxi/user-data/outputs\nb c\n"
    r = m.tool("execute", {"thread_id": tid, "command": "sleep 5", "timeout": 1})
    assert r["structuredContent"]["timed_out"] is True
    assert "[exit code 124: timed out" in r["content"][0]["text"]
    r = m.tool("execute", {"thread_id": tid, "command": "cat /etc/passwd"})
    assert r["structuredContent"]["refused"] == "path_not_allowed"
    assert r["structuredContent"]["exit_code"] == 126
    # progress notifications while it runs: the output, as it comes, then
    # the result on the same SSE stream
    r = m.tool("execute", {"thread_id": tid,
                           "command": "for i in 1 2 3; do echo $i; sleep 0.3; done"},
               progress="tok-1")
    assert r.response.headers["Content-Type"].startswith("text/event-stream")
    assert [n["params"]["message"] for n in r.notes] == ["1\n", "2\n", "3\n"]
    assert [n["params"]["progress"] for n in r.notes] == [2, 4, 6]
    assert {n["params"]["progressToken"] for n in r.notes} == {"tok-1"}
    assert r["structuredContent"]["output"] == "1\n2\n3\n"
    # background processes
    p = m.tool("start_process", {"thread_id": tid, "command": "cat"})["structuredContent"]
    pid = p["process_id"]
    assert p["state"] == "running"
    r = m.tool("process_stdin", {"thread_id": tid, "process_id": pid, "data": "hello\n"})
    assert r["structuredContent"]["written"] == 6
    r = m.tool("process_output", {"thread_id": tid, "process_id": pid, "wait_ms": 3000})
    assert r["structuredContent"]["data"] == "hello\n"
    r = m.tool("process_stdin", {"thread_id": tid, "process_id": pid, "eof": True})
    assert r["structuredContent"]["stdin_open"] is False
    assert yxsvc.wait_for(lambda: m.tool("process_output", {
        "thread_id": tid, "process_id": pid, "offset": 6, "wait_ms": 1000})[
        "structuredContent"]["state"] == "exited", 10)
    p = m.tool("start_process", {"thread_id": tid, "command": "sleep 300"})["structuredContent"]
    r = m.tool("stop_process", {"thread_id": tid, "process_id": p["process_id"]})
    assert r["structuredContent"]["forgotten"] is True
    for bad in ("p/../x", "", "p0000000000000000"):
        r = m.tool("stop_process", {"thread_id": tid, "process_id": bad})
        assert r["structuredContent"]["error"]["code"] == "not_found", (bad, r)
        assert r["structuredContent"]["error"]["message"] == "no such process"


def test_sessions(svc):
    m = Mcp(svc)
    tid = thread(svc)
    r = m.tool("create_session", {"thread_id": tid})
    assert not r["isError"], r
    sid = r["structuredContent"]["session_id"]
    assert r["structuredContent"]["state"] == "running"
    # what a command does to the shell stays for the next
    r = m.tool("execute", {"thread_id": tid, "session_id": sid,
                           "command": "mkdir -p sub && cd sub; X=kept"})
    assert r["structuredContent"]["exit_code"] == 0, r
    r = m.tool("execute", {"thread_id": tid, "session_id": sid, "command": "pwd; echo $X"},
               progress="s1")
    assert r["structuredContent"]["output"] == "/home/yuxi/user-data/workspace/sub\nkept\n", r
    assert r["structuredContent"]["cwd"] == "/home/yuxi/user-data/workspace/sub"
    assert [n["params"]["message"] for n in r.notes] != []
    # a fresh shell without it; the route's refusal of cwd in a session
    r = m.tool("execute", {"thread_id": tid, "command": "echo ${X:-none}"})
    assert r["structuredContent"]["output"] == "none\n"
    r = m.tool("execute", {"thread_id": tid, "session_id": sid, "command": "true",
                           "cwd": "/outputs"})
    assert r["isError"] and r["structuredContent"]["status"] == 400, r
    r = m.tool("execute", {"thread_id": tid, "session_id": sid, "command": "exit 3"})
    assert r["structuredContent"]["session_ended"] is True
    assert "the session's shell ended" in r["content"][0]["text"]
    r = m.tool("execute", {"thread_id": tid, "session_id": sid, "command": "true"})
    assert r["structuredContent"]["error"]["code"] == "session_not_found", r
    sid = m.tool("create_session", {"thread_id": tid})["structuredContent"]["session_id"]
    r = m.tool("end_session", {"thread_id": tid, "session_id": sid})
    assert r["structuredContent"]["forgotten"] is True
    for bad in ("s/../x", sid):
        for name, args in (("end_session", {}), ("execute", {"command": "true"})):
            r = m.tool(name, dict(args, thread_id=tid, session_id=bad))
            assert r["structuredContent"]["error"]["code"] == "session_not_found", (bad, r)


def test_foreign_thread_is_a_missing_thread(svc):
    """Every tool that takes a thread: bob on alice's thread gets what he
    gets on a thread that does not exist (the request id aside), alice's
    process and session ids included."""
    m = Mcp(svc)
    tid = thread(svc, tid="alice-private")
    m.tool("write_file", {"thread_id": tid, "path": "a.txt", "content": "secret x"})
    pid = m.tool("start_process", {"thread_id": tid, "command": "sleep 60"})[
        "structuredContent"]["process_id"]
    sid = m.tool("create_session", {"thread_id": tid})["structuredContent"]["session_id"]
    bob = Mcp(svc, "bob")
    calls = {
        "execute": {"command": "cat a.txt"},
        "execute in a session": {"command": "cat a.txt", "session_id": sid},
        "read_file": {"path": "a.txt"},
        "write_file": {"path": "b.txt", "content": "x"},
        "edit_file": {"path": "a.txt", "old_string": "x", "new_string": "y"},
        "ls": {}, "glob": {"pattern": "*"}, "grep": {"pattern": "secret"},
        "upload": {"path": "c.bin", "content_base64": "AAE="},
        "download": {"path": "a.txt"},
        "start_process": {"command": "true"},
        "process_output": {"process_id": pid},
        "process_stdin": {"process_id": pid, "data": "x"},
        "stop_process": {"process_id": pid},
        "create_session": {},
        "end_session": {"session_id": sid},
    }
    for key, args in calls.items():
        name = key.split(" ")[0]
        theirs = bob.tool(name, dict(args, thread_id=tid))
        none = bob.tool(name, dict(args, thread_id="no-such-thread"))
        assert theirs["isError"] and theirs["structuredContent"]["error"]["code"] == "not_found"
        assert no_rid(theirs) == no_rid(none), key
        assert "secret" not in json.dumps(theirs)
    # the one documented difference of the API: an id that is taken
    r = bob.tool("create_thread", {"thread_id": tid})
    assert r["structuredContent"]["error"]["code"] == "thread_exists"
    assert tid not in [t["thread_id"] for t in
                       bob.tool("list_threads")["structuredContent"]["threads"]]
    # alice's files and process are untouched
    r = m.tool("read_file", {"thread_id": tid, "path": "a.txt"})
    assert "secret x" in r["content"][0]["text"]
    r = m.tool("stop_process", {"thread_id": tid, "process_id": pid})
    assert r["structuredContent"]["state"] == "exited"


def test_identity_comes_from_nginx_only(svc, make_svc):
    """Nothing in the message chooses the user: a _meta naming alice, a
    spoofed header. Control "mcpidentity" believes the message: bob reads
    alice's file."""
    def attempt(s):
        tid = thread(s, tid="ident")
        Mcp(s).tool("write_file", {"thread_id": tid, "path": "k.txt", "content": "key-123"})
        bob = Mcp(s, "bob")
        params = {"name": "read_file", "arguments": {"thread_id": tid, "path": "k.txt"},
                  "_meta": {"yuxi/user": "alice"}}
        resp, _, r = bob.rpc("tools/call", params, headers={"X-Yuxi-User": "alice",
                                                            "X-Yuxi-Role": "admin"})
        return resp["result"]
    res = attempt(svc)
    assert res["isError"] and res["structuredContent"]["error"]["code"] == "not_found"
    ctl = attempt(make_svc(binary="control", env={"YX_CONTROL_OFF": "mcpidentity"}))
    assert not ctl["isError"] and "key-123" in ctl["content"][0]["text"], ctl


# ------------------------------------------------------------------ limits
def batch_of(n, tid, command):
    return [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": "execute", "arguments": {"thread_id": tid, "command": command}}}
            for i in range(n)]


def audit_ops(s, op):
    return [l for l in s.audit_lines() if l.get("op") == op]


def test_batch_of_1000_calls(svc, make_svc):
    m = Mcp(svc)
    tid = thread(svc, tid="batch")
    body = json.dumps(batch_of(BATCH, tid, "touch ran"))
    before = len(audit_ops(svc, "execute"))
    t0 = time.monotonic()
    r = m.post(body)
    took = time.monotonic() - t0
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32600 and "batch" in r.json()["error"]["message"]
    assert took < 0.5, took
    assert len(audit_ops(svc, "execute")) == before and "ran" not in names(svc, tid)
    assert svc.containers(thread=tid) == []
    # many of them at once (3 workers) leave a normal call its answer at once
    lat, errs = [], []

    def flood():
        try:
            for _ in range(5):
                assert Mcp(svc).post(body).status_code == 400
        except Exception as e:  # noqa: BLE001
            errs.append(e)
    threads = [threading.Thread(target=flood) for _ in range(12)]
    for t in threads:
        t.start()
    for _ in range(10):
        t0 = time.monotonic()
        assert not m.tool("ls", {"thread_id": tid})["isError"]
        lat.append(time.monotonic() - t0)
    for t in threads:
        t.join()
    assert not errs, errs
    # the second worst of 10: one call may meet the machine's own stall
    # (CI runs suites side by side), a held worker delays them all
    worst = sorted(lat)[-2]
    print("batch of %d: refused in %.1f ms; ls during 60 of them: worst %.1f ms, "
          "second worst %.1f ms" % (BATCH, took * 1000, max(lat) * 1000, worst * 1000))
    assert worst < 1.0, lat
    # control: each batch is run, call after call, in the worker that took
    # it: as many batches as workers leave a normal call waiting
    ctl = make_svc(binary="control", env={"YX_CONTROL_OFF": "mcpbatch"},
                   YUXI_BODY_LIMIT=str(1 << 20))
    ctid = thread(ctl, tid="batch")
    Mcp(ctl).tool("execute", {"thread_id": ctid, "command": "true"})	# the box is up
    cbody = json.dumps(batch_of(BATCH, ctid, "true"))
    done = []

    def one():
        t0 = time.monotonic()
        r = Mcp(ctl).post(cbody, timeout=300)
        done.append((time.monotonic() - t0, r.status_code, len(r.json())))
    threads = [threading.Thread(target=one) for _ in range(ctl.workers)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    assert not Mcp(ctl).tool("ls", {"thread_id": ctid})["isError"]
    waited = time.monotonic() - t0
    for t in threads:
        t.join()
    assert sorted(d[1:] for d in done) == [(200, BATCH)] * ctl.workers, done
    assert len(audit_ops(ctl, "execute")) == ctl.workers * BATCH + 1
    print("control mcpbatch: %d batches of %d held their workers %.2f-%.2f s; "
          "ls waited %.2f s" % (ctl.workers, BATCH, min(d[0] for d in done),
                                max(d[0] for d in done), waited))
    assert waited > 0.5 and waited > 3 * worst


def post_and_leave(s, who, msg, until, wait=20):
    """POST msg over a socket of our own and close it once until() holds."""
    body = json.dumps(msg).encode()
    head = ("POST %s/mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n"
            % (s.url_prefix, s.port, len(body)))
    head += "".join("%s: %s\r\n" % kv for kv in s.auth_headers(who).items()) + "\r\n"
    ctx = ssl.create_default_context(cafile=s.cert)
    raw = socket.create_connection(("127.0.0.1", s.port))
    tls = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    tls.sendall(head.encode() + body)
    assert yxsvc.wait_for(until, wait, 0.1), "the command did not start"
    tls.close()


def leave_mid_command(s, progress):
    """Start a quiet command over MCP, leave once it began; did it finish?"""
    tid = thread(s)
    args = {"thread_id": tid, "command": "touch begun; sleep 3; touch finished"}
    params = {"name": "execute", "arguments": args}
    if progress:
        params["_meta"] = {"progressToken": 1}
    post_and_leave(s, "alice", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": params}, lambda: "begun" in names(s, tid))
    t0 = time.monotonic()
    yxsvc.wait_for(lambda: [l for l in audit_ops(s, "execute") if l["thread"] == tid], 10, 0.1)
    stopped = time.monotonic() - t0
    time.sleep(4)
    line = [l for l in audit_ops(s, "execute") if l["thread"] == tid][-1]
    return "finished" in names(s, tid), line, stopped


@pytest.mark.parametrize("progress", [False, True])
def test_client_leaving_stops_the_command(svc, make_svc, progress):
    finished, line, stopped = leave_mid_command(svc, progress)
    assert not finished and line["error"] == "client_gone" and line["via"] == "mcp", line
    assert line["exit_code"] is None
    assert stopped < 1.5
    print("left mid-command (progress %s): stopped after %.2f s" % (progress, stopped))
    if progress:
        return
    ctl = make_svc(binary="control", env={"YX_CONTROL_OFF": "clientgone"})
    finished, line, _ = leave_mid_command(ctl, progress)
    assert finished and line["error"] is None and line["exit_code"] == 0, line


def test_tool_call_takes_a_slot(make_svc):
    s = make_svc(YUXI_USER_COMMANDS="1")
    tid = thread(s)
    out = {}
    t = threading.Thread(target=lambda: out.update(r=Mcp(s).tool(
        "execute", {"thread_id": tid, "command": "touch busy; sleep 2"})))
    t.start()
    assert yxsvc.wait_for(lambda: "busy" in names(s, tid), 20, 0.05)
    r = Mcp(s).tool("execute", {"thread_id": tid, "command": "true"})
    assert r["isError"] and r["structuredContent"]["error"]["code"] == "capacity", r
    assert r["structuredContent"]["status"] == 503 and r["structuredContent"]["retry_after"] == 1
    assert "retry after 1 s" in r["content"][0]["text"]
    # the same slot as the HTTP API's
    assert api(s, "alice", "POST", "/api/execute",
               json={"thread_id": tid, "command": "true"}).status_code == 503
    # what takes no slot goes on
    assert not Mcp(s).tool("ls", {"thread_id": tid})["isError"]
    t.join()
    assert out["r"]["structuredContent"]["exit_code"] == 0
    assert not Mcp(s).tool("execute", {"thread_id": tid, "command": "true"})["isError"]


def test_audit_lines_say_mcp(svc):
    m = Mcp(svc)
    m.initialize()
    tid = thread(svc)
    r = m.tool("execute", {"thread_id": tid, "command": "echo audited"})
    rid = r.response.headers["X-Request-Id"]
    lines = [l for l in svc.audit_lines() if l["request_id"] == rid]
    assert len(lines) == 1, lines
    l = lines[0]
    assert l["op"] == "execute" and l["via"] == "mcp" and l["mcp_session"] == m.session
    assert l["user"] == "alice" and l["thread"] == tid and l["status"] == 200
    assert l["command"] == "echo audited" and l["exit_code"] == 0
    r = m.tool("read_file", {"thread_id": tid, "path": "nope"})
    l = [l for l in svc.audit_lines() if l["request_id"] == r.response.headers["X-Request-Id"]]
    assert [(x["op"], x["status"], x["error"], x["path"]) for x in l] == [
        ("fs_cat", 404, "file_not_found", "/home/yuxi/user-data/workspace/nope")]
    # the API's own lines carry no "via"
    api(svc, "alice", "GET", "/api/threads")
    assert "via" not in svc.audit_lines()[-1]
    # tools/list and transport errors run no route: no line
    n = len(svc.audit_lines())
    m.rpc("tools/list")
    m.post(b"{")
    assert len(svc.audit_lines()) == n


def test_host_paths_never_leave(svc):
    m = Mcp(svc)
    tid = thread(svc)
    r = m.tool("execute", {"thread_id": tid, "command": "cat /proc/self/mountinfo"})
    assert svc.saves not in json.dumps(r) and svc.base not in json.dumps(r)
    r = m.tool("download", {"thread_id": tid, "path": "/workspace"})
    assert r["structuredContent"]["error"]["code"] == "is_directory"
    assert svc.saves not in json.dumps(r)


def test_create_preview(svc):
    """create_preview maps onto POST /api/threads/{id}/previews: the URL
    serves the box's server; bob's call on alice's thread is the same tool
    error as on a thread that does not exist; a thread id that could
    change the route's path is refused; previews off: not_found."""
    import requests
    yxsvc.resolve_localhost()
    s = yxsvc.Service(stem="qyxmv")
    s.env["YUXI_PREVIEW_DOMAIN"] = "preview.localhost:%d" % s.port
    try:
        s.start()
        m = Mcp(s)
        tid = thread(s)
        assert not m.tool("write_file", {"thread_id": tid, "path": "index.html",
                                         "content": "served through mcp\n"})["isError"]
        r = m.tool("start_process", {"thread_id": tid, "command":
                                     "exec httpd -f -p 127.0.0.1:8000 -h ."})
        assert not r["isError"], r
        r = m.tool("create_preview", {"thread_id": tid, "port": 8000, "ttl": 600})
        assert not r["isError"], r
        url = r["structuredContent"]["url"]
        assert url.startswith("https://") and ".preview.localhost:%d/" % s.port in url
        listed = api(s, "alice", "GET", "/api/threads/%s/previews" % tid).json()["previews"]
        assert [(p["port"], p["url"]) for p in listed] == [(8000, url)]
        got = yxsvc.wait_for(lambda: requests.get(url + "index.html", verify=s.cert,
                                                  timeout=30).text, 20, 0.3)
        assert got == "served through mcp\n"
        bob = Mcp(s, "bob")
        theirs = bob.tool("create_preview", {"thread_id": tid, "port": 8000})
        none = bob.tool("create_preview", {"thread_id": "no-such-thread", "port": 8000})
        assert theirs["structuredContent"]["error"]["code"] == "not_found", theirs
        assert no_rid(theirs) == no_rid(none)
        assert url not in json.dumps(theirs)
        for bad in ("../x", "a/b", "x" * 129, ""):
            r = m.tool("create_preview", {"thread_id": bad, "port": 8000})
            assert r["structuredContent"]["error"]["code"] == "bad_request", (bad, r)
        r = m.tool("create_preview", {"thread_id": tid, "port": 0})
        assert r["structuredContent"]["error"]["code"] == "bad_request", r
        # alice's preview still answers
        assert requests.get(url + "index.html", verify=s.cert, timeout=30).status_code == 200
    finally:
        s.stop()
    # the module's instance has previews off
    r = Mcp(svc).tool("create_preview", {"thread_id": thread(svc), "port": 8000})
    assert r["structuredContent"]["error"]["code"] == "not_found", r
