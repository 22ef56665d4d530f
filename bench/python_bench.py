#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What the Python client costs (issue 31, "Bench"): two comparisons from
one process, through the whole service (nginx TLS -> FastCGI workers ->
in-sandbox agent, started by bench/benchsvc.py on a free 127.0.0.1 port),
one thread whose sandbox already runs, image yuxi-sandbox:latest.

1. `echo hi`, a round trip:
     yuxi     YuxiSandbox.execute("echo hi") (yuxi_sandbox.deepagents: argument
              checks, the Client, its kept-alive connection, the answer made
              into deepagents' ExecuteResponse)
     http     the plain call: POST /api/execute with http.client on a
              persistent TLS connection of its own, json.loads of the reply
   target: yuxi <= 1.2x http.

2. read() of a 1 MiB text file (1024 lines of 1 KiB), deepagents' default
   window (offset 0, limit 2000: the 500 KiB page cap applies):
     yuxi     YuxiSandbox.read: one GET /api/filesystem/cat?format=raw
     shell    deepagents' own BaseSandbox.read in a subclass that only
              implements execute (through the same Client): its python3
              script runs in the sandbox and prints the page as JSON
   The same for a 4 KiB file of 120 lines (a source file an agent reads).
   Both answers are checked equal first. The instance's output limit is
   raised to 4 MiB (YUXI_SANDBOX_OUTPUT_LIMIT) so the script's JSON is not
   cut.

Interleaved rounds (each contender once per round, shuffled), SETTLE
seconds between contenders; medians and p95.

Usage: bench/python_bench.py BUILD_DIR [ROUNDS [READ_ROUNDS]]   (200, 30)
Needs the vendored deepagents kit (../shared/third_party/deepagents-py
beside the checkout, or YUXI_DEEPAGENTS_PY). Prints Markdown.
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
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "clients", "python"))
sys.path.insert(0, os.environ.get("YUXI_DEEPAGENTS_PY") or os.path.join(
    os.path.dirname(TOP), "shared", "third_party", "deepagents-py"))
import benchsvc  # noqa: E402
from deepagents.backends.protocol import ExecuteResponse  # noqa: E402
from deepagents.backends.sandbox import BaseSandbox  # noqa: E402

from yuxi_sandbox.deepagents import YuxiSandbox  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
SETTLE = 0.01
FILE = "/home/yuxi/user-data/workspace/bench-1mib.txt"
SMALL = "/home/yuxi/user-data/workspace/bench-small.py"


class ShellSandbox(BaseSandbox):
    """deepagents' BaseSandbox with only execute: every file operation is
    its shell script, run through POST /api/execute."""

    def __init__(self, client, thread_id):
        self._c, self._tid = client, thread_id

    @property
    def id(self):
        return self._tid

    def execute(self, command, *, timeout=None):
        r = self._c.execute(self._tid, command, timeout=timeout)
        return ExecuteResponse(output=r["output"], exit_code=r["exit_code"],
                               truncated=r["truncated"])

    def upload_files(self, files):
        raise NotImplementedError

    def download_files(self, paths):
        raise NotImplementedError


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


def interleave(fns, rounds):
    res = {k: [] for k in fns}
    for _ in range(rounds):
        order = list(fns)
        random.shuffle(order)
        for k in order:
            time.sleep(SETTLE)
            t0 = time.perf_counter()
            fns[k]()
            res[k].append((time.perf_counter() - t0) * 1000)
    return res


def table(title, res, base, rows):
    print("| %s | n | median ms | p95 ms | ratio to %s |" % (title, base))
    print("| --- | --- | --- | --- | --- |")
    bmed = statistics.median(res[base])
    for k, name in rows:
        med = statistics.median(res[k])
        print("| %s | %d | %.2f | %.2f | %.2f× |" % (name, len(res[k]), med,
                                                    pct(res[k], 95), med / bmed))
    print()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    read_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    base = tempfile.mkdtemp(prefix="yxbpy-")
    s = benchsvc.BenchService(build, base, YUXI_SANDBOX_IMAGE=IMAGE, YUXI_WORKERS=3,
                              YUXI_SANDBOX_OUTPUT_LIMIT="4m")
    try:
        s.start()
        sb = YuxiSandbox(url=s.url, token=s.token, ca_file=s.cert, thread_id=s.thread)
        shell = ShellSandbox(sb.client, s.thread)
        ctx = ssl.create_default_context(cafile=s.cert)
        conn = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx, timeout=60)
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
        body = json.dumps({"thread_id": s.thread, "command": "echo hi"})

        def plain():
            conn.request("POST", "/api/execute", body=body, headers=hdrs)
            r = conn.getresponse()
            j = json.loads(r.read())
            assert r.status == 200 and j["output"] == "hi\n", j

        def yuxi():
            r = sb.execute("echo hi")
            assert r.output == "hi\n" and r.exit_code == 0, r

        line = ("0123456789abcdef" * 64)[:1023] + "\n"
        small = "".join("line %d of a small source file\n" % i for i in range(120))
        assert sb.upload_files([(FILE, (line * 1024).encode()),
                                (SMALL, small.encode())])[0].error is None
        for f in (FILE, SMALL):
            a, b = sb.read(f), shell.read(f)
            assert a == b and a.error is None, (a.error, b.error)
        for _ in range(5):
            plain()
            yuxi()
        echo = interleave({"http": plain, "yuxi": yuxi}, rounds)
        read = interleave({"yuxi": lambda: sb.read(FILE), "shell": lambda: shell.read(FILE),
                           "yuxi_small": lambda: sb.read(SMALL),
                           "shell_small": lambda: shell.read(SMALL)}, read_rounds)
    finally:
        s.stop()
        shutil.rmtree(base, ignore_errors=True)

    print("Image `%s`, %s, interleaved rounds (settle %.0f ms), 3 workers, agent path, "
          "one process, each contender on its own persistent TLS connection.\n"
          % (IMAGE, time.strftime("%Y-%m-%d"), SETTLE * 1000))
    table("`echo hi`, round trip", echo, "http",
          [("http", "plain `POST /api/execute` (http.client, json.loads)"),
           ("yuxi", "`YuxiSandbox.execute(\"echo hi\")`")])
    table("`read()` of a 1 MiB file (default window)", read, "yuxi",
          [("yuxi", "`YuxiSandbox.read` (`cat?format=raw`, one request)"),
           ("shell", "deepagents' `BaseSandbox.read` (its script via execute)")])
    table("`read()` of a 4 KiB file (120 lines)", read, "yuxi_small",
          [("yuxi_small", "`YuxiSandbox.read`"),
           ("shell_small", "deepagents' `BaseSandbox.read`")])


if __name__ == "__main__":
    main()
