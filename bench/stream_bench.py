#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Time to the first output of `echo hi` through the whole service: the
stream form of execute against the plain one (issue 16, "Bench").

One service instance (nginx TLS -> FastCGI workers -> in-sandbox agent,
started by bench/benchsvc.py on a free 127.0.0.1 port), one thread whose
sandbox already runs, image yuxi-sandbox:latest. Interleaved rounds (each
contender once per round, shuffled), each on its own persistent TLS
connection (Python's http.client, keep-alive, certificate verified):

  plain    POST /api/execute {"command":"echo hi"}: time until the whole
           JSON reply has arrived (the only way the plain form shows
           output)
  stream   the same with "stream": true: time until the first
           {"type":"output"} line has arrived through nginx (the headers
           come first, then each event is flushed by the worker; nginx
           passes it on at once because the worker sends
           X-Accel-Buffering: no); also quoted, the time until the last
           line (the exit event)
  stream, slow  `echo hi; sleep 0.2` streamed: the first event still
           comes when `echo` wrote, not when the command ended

SETTLE seconds (0.01) between contenders.

Usage: bench/stream_bench.py BUILD_DIR [ROUNDS]   (default 200)
Prints Markdown (medians, p95, ratio to the plain round trip).
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


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    base = tempfile.mkdtemp(prefix="yxbstream-")
    s = benchsvc.BenchService(build, base, YUXI_SANDBOX_IMAGE=IMAGE, YUXI_WORKERS=3)
    try:
        s.start()
        ctx = ssl.create_default_context(cafile=s.cert)
        port = int(s.url.rsplit(":", 1)[1])
        conns = {k: http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=60)
                 for k in ("plain", "stream", "slow")}
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
        last = {"stream": [], "slow": []}

        def plain(c):
            body = json.dumps({"thread_id": s.thread, "command": "echo hi"})
            t0 = time.perf_counter()
            c.request("POST", "/api/execute", body=body, headers=hdrs)
            r = c.getresponse()
            j = json.loads(r.read())
            dt = (time.perf_counter() - t0) * 1000
            assert r.status == 200 and j["output"] == "hi\n", j
            return dt

        def streamed(c, cmd, key):
            body = json.dumps({"thread_id": s.thread, "command": cmd, "stream": True})
            t0 = time.perf_counter()
            c.request("POST", "/api/execute", body=body, headers=hdrs)
            r = c.getresponse()
            first = json.loads(r.readline())
            dt = (time.perf_counter() - t0) * 1000
            rest = [json.loads(x) for x in r.read().splitlines() if x.strip()]
            last[key].append((time.perf_counter() - t0) * 1000)
            assert r.status == 200 and first == {"type": "output", "data": "hi\n"}, first
            assert rest[-1]["type"] == "exit" and rest[-1]["exit_code"] == 0, rest
            return dt

        fns = {"plain": lambda: plain(conns["plain"]),
               "stream": lambda: streamed(conns["stream"], "echo hi", "stream"),
               "slow": lambda: streamed(conns["slow"], "echo hi; sleep 0.2", "slow")}
        for _ in range(5):
            for f in fns.values():
                f()
        for v in last.values():
            v.clear()
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

    base_med = statistics.median(res["plain"])
    print("Image `%s`, %s, %d rounds interleaved (settle %.0f ms), 3 workers, agent "
          "path, one persistent TLS connection per contender (http.client).\n" % (
              IMAGE, time.strftime("%Y-%m-%d"), rounds, SETTLE * 1000))
    print("| `echo hi` through nginx | n | median ms | p95 ms | ratio to the plain round trip |")
    print("| --- | --- | --- | --- | --- |")
    rows = [("plain execute: whole reply", res["plain"]),
            ("streamed: first output event", res["stream"]),
            ("streamed: exit event (end of the answer)", last["stream"]),
            ("`echo hi; sleep 0.2` streamed: first output event", res["slow"]),
            ("`echo hi; sleep 0.2` streamed: exit event", last["slow"])]
    for name, xs in rows:
        med = statistics.median(xs)
        print("| %s | %d | %.2f | %.2f | %.3f× |" % (name, len(xs), med, pct(xs, 95),
                                                    med / base_med))


if __name__ == "__main__":
    main()
