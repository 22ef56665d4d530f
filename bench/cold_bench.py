#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cold start through the whole service: a new thread's first `echo hi` (issue 18).

Contenders, interleaved (one round = each once, shuffled; SETTLE s between two):

  pool     this build, YUXI_POOL_SIZE=POOL (pre-started boxes; skipped when 0)
  create   this build, pool off: the create path (agent started as the
           container's command, no engine exec before the command)
  before   BASE build (optional third argument, e.g. main's build): its create
           path, pool off (an A/B of the create path)
  docker   `docker run -d <the same hardening>` + `docker exec NAME sh -c 'echo hi'`

Each service contender: a thread is created first (not timed), then
POST /api/execute {"command": "echo hi"} on a persistent TLS connection is
timed, then the thread is deleted (not timed; its sandbox goes with it).
Between rounds the pool contender waits until its pool is full again, so
every round measures a warm pool.

Usage: bench/cold_bench.py BUILD [ROUNDS [BASE_BUILD [POOL]]]  (30, none, 4)
BASE_BUILD "-": no base contender; POOL 0: no pool contender (create and
docker only). YX_BENCH_UID_RANGE=on: the instances keep the default uid
range (each thread, and each pool box, a uid of its own); otherwise
`YUXI_SANDBOX_UID_RANGE=off`. Prints Markdown: medians, p95, ratios to `docker run -d` +
`docker exec`, and the load average (1 min) before and after the rounds.
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

IMAGE = "yuxi-sandbox:latest"
RANGE = os.environ.get("YX_BENCH_UID_RANGE", "off") == "on"
UIDS = {} if RANGE else {"YUXI_SANDBOX_UID_RANGE": "off"}
SETTLE = 0.05
HARDEN = ["--network", "none", "--memory", "512m", "--memory-swap", "512m",
          "--cpus", "1", "--pids-limit", "256", "--cap-drop", "ALL",
          "--security-opt", "no-new-privileges", "--read-only",
          "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m",
          "--tmpfs", "/home/yuxi:rw,nosuid,nodev,size=64m,uid=1000,gid=1000",
          "--init", "--log-driver", "none", "--user", "1000:1000"]


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def row(name, xs, base):
    m, b = statistics.median(xs), statistics.median(base)
    return "| %s | %d | %.1f | %.1f | %.3f× | %.3f× |" % (
        name, len(xs), m, pct(xs, 95), m / b, pct(xs, 95) / b)


class Inst:
    def __init__(self, build, base, **ov):
        self.svc = benchsvc.BenchService(build, base, YUXI_SANDBOX_IMAGE=IMAGE,
                                         YUXI_WORKERS=3, **ov)
        self.conn = None

    def start(self):
        self.svc.start()
        self.connect()

    def connect(self):
        ctx = ssl.create_default_context(cafile=self.svc.cert)
        port = int(self.svc.url.rsplit(":", 1)[1])
        self.conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx,
                                                timeout=120)

    def fresh(self):
        """An untimed request first: the kept connection is open and warm."""
        for _ in range(2):
            try:
                self.conn.request("GET", "/healthz")
                self.conn.getresponse().read()
                return
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.connect()
        raise RuntimeError("no connection to the service")

    def cold(self):
        tid = self.svc.new_thread("alice")
        self.fresh()
        body = json.dumps({"thread_id": tid, "command": "echo hi"})
        t0 = time.perf_counter()
        self.conn.request("POST", "/api/execute", body=body,
                          headers={"Authorization": "Bearer " + self.svc.token,
                                   "Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t0) * 1000
        j = json.loads(data)
        assert r.status == 200 and j["output"] == "hi\n", data[:300]
        r = self.svc.request("alice", "DELETE", "/api/threads/" + tid)
        assert r.status_code in (200, 204), r.text
        return dt, j.get("sandbox_outcome") or j.get("outcome")

    def pool_full(self, n, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            r = self.svc.request("admin", "GET", "/api/admin/sandboxes")
            boxes = [s for s in r.json()["sandboxes"] if s.get("state") == "pooled"]
            if len(boxes) >= n:
                return True
            time.sleep(0.05)
        return False


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    base_build = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "-" else None
    pool = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    load0 = open("/proc/loadavg").read().split()[0]
    base = tempfile.mkdtemp(prefix="yxbcold-")
    insts = {}
    made = []
    tag = "yxbcold%d" % os.getpid()
    res = {}
    try:
        if pool > 0:
            insts["pool"] = Inst(build, os.path.join(base, "pool"),
                                 YUXI_POOL_SIZE=str(pool), **UIDS)
        insts["create"] = Inst(build, os.path.join(base, "create"), **UIDS)
        if base_build:
            insts["before"] = Inst(os.path.abspath(base_build),
                                   os.path.join(base, "before"), **UIDS)
        for i in insts.values():
            i.start()

        def docker(k):
            name = "%s-%d" % (tag, k)
            made.append(name)
            t0 = time.perf_counter()
            subprocess.run(["docker", "run", "-d", "--name", name] + HARDEN +
                           [IMAGE, "tail", "-f", "/dev/null"],
                           check=True, stdout=subprocess.DEVNULL)
            r = subprocess.run(["docker", "exec", name, "sh", "-c", "echo hi"],
                               check=True, stdout=subprocess.PIPE)
            dt = (time.perf_counter() - t0) * 1000
            assert r.stdout == b"hi\n"
            subprocess.run(["docker", "rm", "-f", name], stdout=subprocess.DEVNULL)
            return dt

        fns = {k: (lambda i=i: i.cold()[0]) for k, i in insts.items()}
        fns["docker"] = lambda: docker(len(made))
        res = {k: [] for k in fns}
        for k in fns:  # warm up every path once
            if k == "pool":
                assert insts["pool"].pool_full(pool), "pool never filled"
            fns[k]()
        for _ in range(rounds):
            if "pool" in insts:
                assert insts["pool"].pool_full(pool), "pool never refilled"
            order = list(fns)
            random.shuffle(order)
            for k in order:
                time.sleep(SETTLE)
                res[k].append(fns[k]())
    finally:
        for i in insts.values():
            try:
                i.svc.stop()
            except Exception as e:  # keep cleaning the others
                sys.stderr.write("stop: %s\n" % e)
        for n in made:
            subprocess.run(["docker", "rm", "-f", n], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        shutil.rmtree(base, ignore_errors=True)

    print("Image `%s`, %s, %d cold rounds interleaved (settle %.0f ms), 3 workers "
          "per instance, %s, load average before: %s, "
          "after: %s.\n" % (
              IMAGE, time.strftime("%Y-%m-%d %H:%M"), rounds, SETTLE * 1000,
              "a uid range (each thread and box its own uid)" if RANGE else
              "`YUXI_SANDBOX_UID_RANGE=off`",
              load0, open("/proc/loadavg").read().split()[0]))
    print("| new thread → first `echo hi` | n | median ms | p95 ms | median ratio "
          "| p95 ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    names = {"pool": "HTTPS → nginx → worker, warm pool (`YUXI_POOL_SIZE=%d`)" % pool,
             "create": "HTTPS → nginx → worker, create path, agent at container start",
             "before": "HTTPS → nginx → worker, create path, base build",
             "docker": "`docker run -d` + `docker exec`"}
    for k in ("pool", "create", "before", "docker"):
        if k in res and res[k]:
            print(row(names[k], res[k], res["docker"]))


if __name__ == "__main__":
    main()
