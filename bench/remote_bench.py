#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What the remote mode costs (issue 15, docs/scaling.md): `echo hi` through
a front and a sandbox host vs the same on one host.

Started with the tests' harness (tests/lib/yxsvc.py) on free 127.0.0.1
ports, one engine, image yuxi-sandbox:latest (YUXI_SANDBOX_IMAGE):

  standalone   one service (nginx TLS -> FastCGI worker -> executor)
  front        client -> front nginx -> front worker -> HTTPS (kept
               connection) -> host nginx -> host worker -> executor
               (a Cluster of one front and one provisioner)
  host direct  the same host called directly with the front's credential:
               what the host side costs without the front

Every contender has its own thread (its sandbox started before the
timing), its own kept-alive TLS connection (http.client, certificate
verified), and runs `echo hi` through the in-sandbox agent. Interleaved
rounds: one round = each contender once, in shuffled order, 20 ms apart.
Quoted: median, p95, and the overhead of the front over standalone as the
difference of the medians and as the median of the per-round differences.

Usage: bench/remote_bench.py BUILD_DIR [ROUNDS]   (default 300)
Prints Markdown.
"""
import http.client
import json
import os
import random
import ssl
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))
import yxsvc  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
SETTLE = 0.02
WARM = 20


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


class Contender:
    def __init__(self, name, svc, who, thread):
        self.name, self.svc, self.thread = name, svc, thread
        ctx = ssl.create_default_context(cafile=svc.cert)
        ctx.check_hostname = False
        self.conn = http.client.HTTPSConnection("127.0.0.1", svc.port, context=ctx, timeout=60)
        self.headers = dict(svc.auth_headers(who))
        self.headers["Content-Type"] = "application/json"
        self.body = json.dumps({"thread_id": thread, "command": "echo hi"})
        self.ms = []

    def once(self):
        t0 = time.perf_counter()
        self.conn.request("POST", svc_path(self.svc, "/api/execute"), self.body, self.headers)
        r = self.conn.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t0) * 1000
        if r.status != 200 or json.loads(data)["output"] != "hi\n":
            raise RuntimeError("%s: %d %r" % (self.name, r.status, data[:200]))
        return dt


def svc_path(svc, p):
    return svc.url_prefix + p


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    os.environ["top_builddir"] = os.path.abspath(argv[0])
    rounds = int(argv[1]) if len(argv) > 1 else 300
    common = {"YUXI_SANDBOX_IMAGE": IMAGE, "YUXI_EXEC_AGENT": "only",
              "YUXI_SANDBOX_IDLE_TIMEOUT": "3600", "YUXI_WORKERS": "2"}
    solo = yxsvc.Service(stem="yxbrm", overrides=common)
    cl = yxsvc.Cluster(1, front_overrides=dict(common, YUXI_SANDBOX_UID_RANGE="off"),
                       prov_overrides=common)
    try:
        solo.start()
        cl.start()
        ts = solo.new_thread("alice")
        tf = cl.front.new_thread("alice")
        cs = [Contender("standalone", solo, "alice", ts),
              Contender("front → host", cl.front, "alice", tf),
              Contender("host direct", cl.provs[0], "alice", tf)]
        for c in cs:
            for _ in range(WARM):
                c.once()
        diffs = []
        for _ in range(rounds):
            order = cs[:]
            random.shuffle(order)
            got = {}
            for c in order:
                got[c.name] = c.once()
                c.ms.append(got[c.name])
                time.sleep(SETTLE)
            diffs.append(got["front → host"] - got["standalone"])
        base = statistics.median(cs[0].ms)
        print("`echo hi` through the front and a sandbox host vs one host "
              "(%d interleaved rounds, image %s, agent path)\n" % (rounds, IMAGE))
        print("| contender | n | median ms | p95 ms | median − standalone |")
        print("| --- | --- | --- | --- | --- |")
        for c in cs:
            med = statistics.median(c.ms)
            print("| %s | %d | %.2f | %.2f | %+.2f ms |" % (c.name, len(c.ms), med,
                                                          pct(c.ms, 95), med - base))
        print("\nfront overhead: difference of medians %.2f ms; median of the per-round "
              "differences %.2f ms (target: at most 1.5 ms)" % (
                  statistics.median(cs[1].ms) - base, statistics.median(diffs)))
    finally:
        cl.stop()
        solo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
