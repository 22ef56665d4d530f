# SPDX-License-Identifier: MIT
"""The MCP endpoint (docs/mcp.md) on a front of the remote mode: one front
and two sandbox hosts (real yuxi-sandboxd and nginx each) on the one
engine. The front serves /mcp itself: each tool call is a sub-request of
the front's route table, checked there and forwarded to the thread's host
like the HTTP API's.

- every tool through the front (a shell session too), the thread's files
  on exactly one host;
  execute's output relayed from the host as progress notifications;
  download's bytes fetched from the host's nginx;
- another user's thread: the same tool error as a missing one;
- a client that leaves mid-command stops it on the host;
- the audit line on the front says "via":"mcp", the host's line carries
  the same request id;
- a sandbox host has no /mcp.
"""
import base64
import json
import socket
import ssl

from mcpclient import Mcp
from yxsvc import wait_for


def tool_ok(m, name, args, **kw):
    r = m.tool(name, args, **kw)
    assert not r["isError"], (name, r)
    return r


def test_mcp_through_the_front(cluster):
    f = cluster.front
    m = Mcp(f)
    assert m.initialize()["protocolVersion"] == "2025-11-25"
    rec = tool_ok(m, "create_thread", {})["structuredContent"]
    tid = rec["thread_id"]
    assert rec["host"] in ("p1", "p2") and cluster.hosts_of(tid) == [rec["host"]]
    r = tool_ok(m, "execute", {"thread_id": tid, "command": "echo $((6*7))"})
    assert r["structuredContent"]["output"] == "42\n"
    tool_ok(m, "write_file", {"thread_id": tid, "path": "n/a.txt", "content": "x TODO\n"})
    tool_ok(m, "edit_file", {"thread_id": tid, "path": "n/a.txt", "old_string": "TODO",
                             "new_string": "DONE"})
    r = tool_ok(m, "read_file", {"thread_id": tid, "path": "n/a.txt"})
    assert r["content"][0]["text"] == "     1\tx DONE"
    r = tool_ok(m, "glob", {"thread_id": tid, "pattern": "**/*.txt"})
    assert [e["path"] for e in r["structuredContent"]["matches"]] == [
        "/home/yuxi/user-data/workspace/n/a.txt"]
    r = tool_ok(m, "grep", {"thread_id": tid, "pattern": "DONE"})
    assert len(r["structuredContent"]["matches"]) == 1
    # bytes both ways; the download comes from the host's nginx
    blob = bytes(range(256)) * 100	# within the e2e YUXI_BODY_LIMIT (64 KiB) as base64
    tool_ok(m, "upload", {"thread_id": tid, "path": "/outputs/b.bin",
                          "content_base64": base64.b64encode(blob).decode()})
    r = tool_ok(m, "download", {"thread_id": tid, "path": "/outputs/b.bin"})
    assert base64.b64decode(r["structuredContent"]["content_base64"]) == blob
    r = m.tool("download", {"thread_id": tid, "path": "/outputs"})
    assert r["isError"] and r["structuredContent"]["error"]["code"] == "is_directory"
    # past the front's limit: the transfer from the host is cut there
    tool_ok(m, "execute", {"thread_id": tid,
                           "command": "head -c 200000 /dev/zero > /home/yuxi/user-data/big"})
    r = m.tool("download", {"thread_id": tid, "path": "/home/yuxi/user-data/big"})
    assert r["structuredContent"]["error"]["code"] == "payload_too_large", r
    # the host's events, relayed, become progress notifications
    r = tool_ok(m, "execute", {"thread_id": tid,
                               "command": "for i in 1 2 3; do echo $i; sleep 0.3; done"},
                progress=7)
    assert [n["params"]["message"] for n in r.notes] == ["1\n", "2\n", "3\n"]
    # background processes
    p = tool_ok(m, "start_process", {"thread_id": tid, "command": "cat"})["structuredContent"]
    tool_ok(m, "process_stdin", {"thread_id": tid, "process_id": p["process_id"],
                                 "data": "ping\n", "eof": True})
    assert wait_for(lambda: m.tool("process_output", {
        "thread_id": tid, "process_id": p["process_id"], "wait_ms": 1000})[
        "structuredContent"]["data"] == "ping\n", 10)
    r = tool_ok(m, "stop_process", {"thread_id": tid, "process_id": p["process_id"]})
    assert r["structuredContent"]["forgotten"] is True
    # a shell session on the host
    sid = tool_ok(m, "create_session", {"thread_id": tid})["structuredContent"]["session_id"]
    tool_ok(m, "execute", {"thread_id": tid, "session_id": sid, "command": "cd n; V=1"})
    r = tool_ok(m, "execute", {"thread_id": tid, "session_id": sid, "command": "pwd; echo $V"})
    assert r["structuredContent"]["output"] == "/home/yuxi/user-data/workspace/n\n1\n"
    tool_ok(m, "end_session", {"thread_id": tid, "session_id": sid})
    # the front's audit line says MCP; the host's has the same request id
    r = tool_ok(m, "ls", {"thread_id": tid})
    rid = r.response.headers["X-Request-Id"]
    front = [l for l in f.audit_lines() if l["request_id"] == rid]
    assert [(l["op"], l["via"], l["mcp_session"]) for l in front] == [("fs_ls", "mcp",
                                                                        m.session)]
    host = cluster.prov(rec["host"])
    assert [l["op"] for l in host.audit_lines() if l["request_id"] == rid] == ["fs_ls"]


def test_mcp_foreign_thread_through_the_front(cluster):
    f = cluster.front
    tid = tool_ok(Mcp(f), "create_thread", {})["structuredContent"]["thread_id"]
    tool_ok(Mcp(f), "write_file", {"thread_id": tid, "path": "s.txt", "content": "secret"})
    bob = Mcp(f, "bob")

    def plain(r):
        r = json.loads(json.dumps(r))
        r["content"][0]["text"] = r["content"][0]["text"].split(" [request id")[0]
        r["structuredContent"]["error"].pop("request_id")
        return r
    for name, args in (("read_file", {"path": "s.txt"}), ("execute", {"command": "cat s.txt"}),
                       ("download", {"path": "s.txt"}), ("ls", {})):
        theirs = bob.tool(name, dict(args, thread_id=tid))
        none = bob.tool(name, dict(args, thread_id="no-such-thread"))
        assert theirs["structuredContent"]["error"]["code"] == "not_found", name
        assert plain(theirs) == plain(none), name


def test_mcp_client_leaving_stops_the_command_on_the_host(cluster):
    f = cluster.front
    m = Mcp(f)
    tid = tool_ok(m, "create_thread", {})["structuredContent"]["thread_id"]

    def names():
        r = tool_ok(m, "ls", {"thread_id": tid})
        return {e["path"].rsplit("/", 1)[1] for e in r["structuredContent"]["entries"]}
    # a command that writes (on a front a client gone is seen at the next
    # piece of output) and would leave a file after 4 s
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"thread_id": tid, "command":
                                         "touch begun; for i in 1 2 3 4 5 6 7 8; do echo $i; "
                                         "sleep 0.5; done; touch finished"}}}).encode()
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n"
            % (f.port, len(body), "".join("%s: %s\r\n" % kv
                                          for kv in f.auth_headers("alice").items())))
    tls = ssl.create_default_context(cafile=f.cert).wrap_socket(
        socket.create_connection(("127.0.0.1", f.port)), server_hostname="127.0.0.1")
    tls.sendall(head.encode() + body)
    assert wait_for(lambda: "begun" in names(), 20, 0.1)
    tls.close()
    wait_for(lambda: False, 6, 0.5)
    assert "finished" not in names()


def test_a_sandbox_host_has_no_mcp(cluster):
    p = cluster.provs[0]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert p.request("alice", "POST", "/mcp", json=ping).status_code == 404
    assert p.bare("POST", "/mcp", json=ping).status_code == 404
