# SPDX-License-Identifier: MIT
"""mcpclient - a small client of the MCP endpoint (POST /mcp, docs/mcp.md)
for the Python suites (tests/mcp, tests/remote) and bench/: JSON-RPC 2.0
over the Streamable HTTP transport as the official SDKs send it (one
message per POST, Accept naming both application/json and
text/event-stream, the Mcp-Session-Id that initialize gave), with the
answer read whether it is one JSON object or an SSE stream.

- `Mcp(svc, who, session=None)`: for a yxsvc.Service (its url, CA and the
  bearer token of `who`, None: no token). `post(body, headers)` sends raw
  bytes or a JSON value and returns the requests.Response;
  `rpc(method, params)` a request and its parsed answer as
  (message, notifications, response); `initialize()`; `tool(name, args,
  progress=None)` a tools/call and its result (a dict) with the
  notifications that came before it in `.notes`.
- `sse_messages(text)`: the JSON-RPC messages of an SSE body.
"""
import itertools
import json

import requests

ACCEPT = "application/json, text/event-stream"


def sse_messages(text):
    """The data of each event of an SSE body, parsed."""
    out = []
    for ev in text.replace("\r\n", "\n").split("\n\n"):
        data = [l[5:].lstrip(" ") for l in ev.split("\n") if l.startswith("data:")]
        if data and "".join(data):
            out.append(json.loads("\n".join(data)))
    return out


def answer(r):
    """(the response message or None, [notifications]) of a POST's answer."""
    ct = r.headers.get("Content-Type", "")
    if ct.startswith("text/event-stream"):
        msgs = sse_messages(r.text)
    elif ct.startswith("application/json") and r.content:
        m = r.json()
        msgs = m if isinstance(m, list) else [m]
    else:
        msgs = []
    resp = [m for m in msgs if "id" in m and ("result" in m or "error" in m)]
    notes = [m for m in msgs if "method" in m and "id" not in m]
    return (resp[0] if resp else None), notes


class Result(dict):
    """A tools/call result; .notes: the notifications before it; .response."""
    notes = ()
    response = None


class Mcp:
    def __init__(self, svc, who="alice", session=None, path="/mcp", http=None):
        self.svc, self.who, self.path = svc, who, path
        self.session = session
        self.http = http or requests.Session()
        self.ids = itertools.count(1)
        self.version = None

    def headers(self, extra=None):
        h = {"Content-Type": "application/json", "Accept": ACCEPT}
        if self.who is not None:
            h.update(self.svc.auth_headers(self.who))
        if self.session:
            h["Mcp-Session-Id"] = self.session
        if self.version:
            h["MCP-Protocol-Version"] = self.version
        h.update(extra or {})
        return h

    def post(self, body, headers=None, **kw):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        kw.setdefault("timeout", 120)
        return self.http.post(self.svc.url + self.path, data=data, headers=self.headers(headers),
                              verify=self.svc.cert, **kw)

    def rpc(self, method, params=None, headers=None, **kw):
        msg = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            msg["params"] = params
        r = self.post(msg, headers, **kw)
        resp, notes = answer(r)
        return resp, notes, r

    def initialize(self, version="2025-11-25"):
        resp, _, r = self.rpc("initialize", {"protocolVersion": version, "capabilities": {},
                                             "clientInfo": {"name": "yuxi-tests", "version": "1"}})
        assert r.status_code == 200, r.text
        self.session = r.headers.get("Mcp-Session-Id")
        self.version = resp["result"]["protocolVersion"]
        n = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert n.status_code == 202, n.text
        return resp["result"]

    def tool(self, name, args=None, progress=None, **kw):
        params = {"name": name, "arguments": args or {}}
        if progress is not None:
            params["_meta"] = {"progressToken": progress}
        resp, notes, r = self.rpc("tools/call", params, **kw)
        assert r.status_code == 200 and resp is not None, (r.status_code, r.text[:500])
        assert "result" in resp, resp
        res = Result(resp["result"])
        res.notes, res.response = notes, r
        return res
