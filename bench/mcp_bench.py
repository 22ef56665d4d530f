#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`echo hi` through the MCP endpoint against the plain HTTP execute
(issue 36, "Bench": target at most 1.5x).

One service instance (nginx TLS -> FastCGI workers -> in-sandbox agent,
started by bench/benchsvc.py on a free 127.0.0.1 port), one thread whose
sandbox already runs, image yuxi-sandbox:latest. Interleaved rounds (each
contender once per round, shuffled), each on its own persistent TLS
connection (Python's http.client, keep-alive, certificate verified), each
timed until its whole answer has arrived and been parsed:

  http         POST /api/execute {"thread_id","command":"echo hi"}
  mcp          POST /mcp, tools/call execute with the headers the SDKs
               send after initialize (Accept both types, Mcp-Session-Id,
               MCP-Protocol-Version): one JSON-RPC answer
               (application/json), the output in its result
  mcp+progress the same with a progress token: an SSE stream, one
               notifications/progress with "hi\\n", then the result

SETTLE seconds (0.01) between contenders.

Usage: bench/mcp_bench.py BUILD_DIR [ROUNDS]   (default 300)
Prints Markdown (medians, p95, ratio to the plain HTTP execute).
"""
import http.client
import json
import os
import random
import shutil
import ssl
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsvc  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
SETTLE = 0.01


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


def sse_result(raw):
    """The notifications and the response of an SSE body."""
    msgs = [json.loads(l[5:]) for l in raw.decode().split("\n") if l.startswith("data:")]
    return [m for m in msgs if "method" in m], [m for m in msgs if "result" in m][0]


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    base = tempfile.mkdtemp(prefix="yxbmcp-")
    s = benchsvc.BenchService(build, base, YUXI_SANDBOX_IMAGE=IMAGE, YUXI_WORKERS=3)
    try:
        s.start()
        ctx = ssl.create_default_context(cafile=s.cert)
        port = int(s.url.rsplit(":", 1)[1])
        conns = {k: http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=60)
                 for k in ("http", "mcp", "progress")}
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
        # initialize as a client does, once; its session id on every call
        c = conns["mcp"]
        c.request("POST", "/mcp", headers=dict(hdrs, Accept="application/json, text/event-stream"),
                  body=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                      "protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "mcp_bench", "version": "1"}}}))
        r = c.getresponse()
        r.read()
        mhdrs = dict(hdrs, Accept="application/json, text/event-stream",
                     **{"Mcp-Session-Id": r.getheader("Mcp-Session-Id"),
                        "MCP-Protocol-Version": "2025-11-25"})
        ids = iter(range(1, 1 << 30))

        def plain(c):
            body = json.dumps({"thread_id": s.thread, "command": "echo hi"})
            t0 = time.perf_counter()
            c.request("POST", "/api/execute", body=body, headers=hdrs)
            r = c.getresponse()
            j = json.loads(r.read())
            dt = (time.perf_counter() - t0) * 1000
            assert r.status == 200 and j["output"] == "hi\n", j
            return dt

        def mcp(c, progress):
            params = {"name": "execute", "arguments": {"thread_id": s.thread,
                                                        "command": "echo hi"}}
            if progress:
                params["_meta"] = {"progressToken": "b"}
            body = json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                               "params": params})
            t0 = time.perf_counter()
            c.request("POST", "/mcp", body=body, headers=mhdrs)
            r = c.getresponse()
            raw = r.read()
            if progress:
                notes, m = sse_result(raw)
                assert [n["params"]["message"] for n in notes] == ["hi\n"], notes
            else:
                m = json.loads(raw)
            dt = (time.perf_counter() - t0) * 1000
            assert r.status == 200 and m["result"]["structuredContent"]["output"] == "hi\n", m
            return dt

        fns = {"http": lambda: plain(conns["http"]),
               "mcp": lambda: mcp(conns["mcp"], False),
               "progress": lambda: mcp(conns["progress"], True)}
        for _ in range(10):
            for f in fns.values():
                f()
        res = {k: [] for k in fns}
        for _ in range(rounds):
            order = list(fns)
            random.shuffle(order)
            for k in order:
                time.sleep(SETTLE)
                res[k].append(fns[k]())
    finally:
        s.stop()
        shutil.rmtree(base, ignore_errors=True)

    base_med = statistics.median(res["http"])
    print("Image `%s`, %s, %d rounds interleaved (settle %.0f ms), 3 workers, agent "
          "path, one persistent TLS connection per contender (http.client).\n" % (
              IMAGE, time.strftime("%Y-%m-%d"), rounds, SETTLE * 1000))
    print("| `echo hi`, whole answer | n | median ms | p95 ms | ratio to HTTP execute |")
    print("| --- | --- | --- | --- | --- |")
    for name, k in (("HTTP: `POST /api/execute`", "http"),
                    ("MCP: `tools/call execute` (JSON answer)", "mcp"),
                    ("MCP with a progress token (SSE: one notification, the result)",
                     "progress")):
        med = statistics.median(res[k])
        print("| %s | %d | %.2f | %.2f | %.3f× |" % (name, len(res[k]), med, pct(res[k], 95),
                                                    med / base_med))


if __name__ == "__main__":
    main()
