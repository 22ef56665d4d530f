#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""runc against runsc (gVisor) through the whole service (issue 17).

Two instances of the real service (benchsvc.py), one per runtime
(YUXI_SANDBOX_RUNTIME), same image and settings, each over its own HTTPS
keep-alive session. Interleaved rounds, one round = each contender once in
shuffled order:

  warm:  `echo hi` in the thread's running sandbox (the in-sandbox agent's
         path, the default)
  cold:  a new thread's first command (`echo hi`): container create and
         start, agent start, command

Prints medians, p95 and the ratio runsc/runc as Markdown.
Usage: bench/runtime_bench.py BUILD_DIR [WARM_ROUNDS [COLD_ROUNDS]]
"""
import os
import random
import secrets
import statistics
import sys
import tempfile
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchsvc import BenchService  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
RUNTIMES = ("runc", "runsc")


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


def run(svc, sess, tid):
    t0 = time.perf_counter()
    r = svc.request("alice", "POST", "/api/execute", session=sess,
                    json={"thread_id": tid, "command": "echo hi"})
    dt = (time.perf_counter() - t0) * 1000
    assert r.status_code == 200 and r.json()["output"] == "hi\n", r.text
    return dt


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    warm_n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    cold_n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    base = tempfile.mkdtemp(prefix="yxbrt-")
    svcs, sess = {}, {}
    try:
        for rt in RUNTIMES:
            svcs[rt] = BenchService(build, os.path.join(base, rt), YUXI_SANDBOX_IMAGE=IMAGE,
                                    YUXI_SANDBOX_RUNTIME=rt,
                                    YUXI_SANDBOX_MAX_REPLICAS=str(cold_n + 4)).start()
            sess[rt] = requests.Session()
            run(svcs[rt], sess[rt], svcs[rt].thread)	# the thread's sandbox
        warm = {rt: [] for rt in RUNTIMES}
        cold = {rt: [] for rt in RUNTIMES}
        for _ in range(warm_n):
            for rt in random.sample(RUNTIMES, len(RUNTIMES)):
                warm[rt].append(run(svcs[rt], sess[rt], svcs[rt].thread))
        for _ in range(cold_n):
            for rt in random.sample(RUNTIMES, len(RUNTIMES)):
                tid = svcs[rt].new_thread("alice")
                cold[rt].append(run(svcs[rt], sess[rt], tid))
                svcs[rt].request("alice", "DELETE", "/api/threads/" + tid)
        print("| measure | runtime | n | median ms | p95 ms | runsc/runc |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, d in (("warm `echo hi`", warm), ("cold: new thread's first command", cold)):
            ref = statistics.median(d["runc"])
            for rt in RUNTIMES:
                med = statistics.median(d[rt])
                print("| %s | %s | %d | %.1f | %.1f | %.2f× |" % (
                    name, rt, len(d[rt]), med, pct(d[rt], 95), med / ref))
    finally:
        for s in svcs.values():
            s.stop()


if __name__ == "__main__":
    main()
