#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A session's command against a plain execute, and against an
OpenManus-style persistent shell (issue 29, "Bench").

One service instance (nginx TLS -> FastCGI workers -> in-sandbox agent,
started by bench/benchsvc.py on a free 127.0.0.1 port), one thread whose
sandbox already runs, image yuxi-sandbox:latest. Interleaved rounds (each
contender once per round, shuffled), each on its own persistent connection:

  plain     POST /api/execute {"command":"echo hi"}: a fresh /bin/sh -c
            through the agent; time until the whole JSON reply arrived
  session   POST /api/sessions/{id}/execute {"command":"echo hi"} in one
            session of the same thread (its bash keeps state); the same
            measure
  docker -i the outside reference: what OpenManus does, one
            `docker exec -i <container> bash` kept open for the whole run,
            each command written to its stdin followed by a marker echo,
            timed until the marker line came back (no HTTP, no TLS, no
            authentication, no output cap or masking: the raw floor of a
            persistent shell behind the Docker CLI)

SETTLE seconds (0.01) between contenders.

Usage: bench/session_bench.py BUILD_DIR [ROUNDS]   (default 300)
Prints Markdown (medians, p95, ratio to the plain execute).
"""
import http.client
import json
import os
import random
import shutil
import ssl
import statistics
import subprocess
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


class DockerShell:
    """One `docker exec -i <c> bash`, kept open (OpenManus's shell)."""

    def __init__(self, container):
        self.p = subprocess.Popen(["docker", "exec", "-i", container, "bash"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, bufsize=0)
        self.n = 0

    def run(self, cmd):
        self.n += 1
        mark = "__yx_done_%d__" % self.n
        t0 = time.perf_counter()
        self.p.stdin.write(("%s\necho %s\n" % (cmd, mark)).encode())
        out = b""
        while not out.endswith((mark + "\n").encode()):
            c = os.read(self.p.stdout.fileno(), 65536)
            assert c, out
            out += c
        dt = (time.perf_counter() - t0) * 1000
        assert out == b"hi\n" + mark.encode() + b"\n", out
        return dt

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    base = tempfile.mkdtemp(prefix="yxbsess-")
    s = benchsvc.BenchService(build, base, YUXI_SANDBOX_IMAGE=IMAGE, YUXI_WORKERS=3)
    shell = None
    try:
        s.start()
        ctx = ssl.create_default_context(cafile=s.cert)
        port = int(s.url.rsplit(":", 1)[1])
        conns = {k: http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=60)
                 for k in ("plain", "session")}
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
        c = conns["session"]
        c.request("POST", "/api/sessions", body=json.dumps({"thread_id": s.thread}),
                  headers=hdrs)
        r = c.getresponse()
        sess = json.loads(r.read())
        assert r.status == 201 and sess["shell"] == "bash", sess
        container = s.sandboxes()[s.thread]["container"]
        shell = DockerShell(container)

        def call(conn, path):
            body = json.dumps({"thread_id": s.thread, "command": "echo hi"})
            t0 = time.perf_counter()
            conn.request("POST", path, body=body, headers=hdrs)
            r = conn.getresponse()
            j = json.loads(r.read())
            dt = (time.perf_counter() - t0) * 1000
            assert r.status == 200 and j["output"] == "hi\n", j
            return dt

        fns = {"plain": lambda: call(conns["plain"], "/api/execute"),
               "session": lambda: call(conns["session"],
                                       "/api/sessions/%s/execute" % sess["session_id"]),
               "docker": lambda: shell.run("echo hi")}
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
        if shell is not None:
            shell.close()
        s.stop()
        shutil.rmtree(base, ignore_errors=True)

    base_med = statistics.median(res["plain"])
    print("Image `%s`, %s, %d rounds interleaved (settle %.0f ms), 3 workers, agent "
          "path, one persistent connection per contender.\n" % (
              IMAGE, time.strftime("%Y-%m-%d"), rounds, SETTLE * 1000))
    print("| `echo hi` | n | median ms | p95 ms | ratio to the plain execute |")
    print("| --- | --- | --- | --- | --- |")
    rows = [("plain execute (fresh `/bin/sh -c`), through nginx", res["plain"]),
            ("session execute (one bash kept), through nginx", res["session"]),
            ("`docker exec -i` bash kept open (OpenManus), raw", res["docker"])]
    for name, xs in rows:
        med = statistics.median(xs)
        print("| %s | %d | %.2f | %.2f | %.3f× |" % (name, len(xs), med, pct(xs, 95),
                                                    med / base_med))


if __name__ == "__main__":
    main()
