#!/usr/bin/python3
"""Exec round trip through the whole service (issue 3, §5).

Two service instances (nginx TLS -> FastCGI workers -> Docker, started by
bench/benchsvc.py on free 127.0.0.1 ports), one thread each, image
yuxi-sandbox:latest:

  agent   YUXI_EXEC_AGENT=auto: the executor uses the in-sandbox agent
          (src/exec/agent_client.c) once it answers
  engine  YUXI_EXEC_AGENT=off: Engine API exec only (no agent mounts)

Which path ran is checked, not assumed: the agent instance's container must
show a yuxi-agent process (`docker top`) and the engine one must not.

Interleaved rounds, one round = each contender once in shuffled order, all
running `echo hi`:

  HTTPS agent   POST /api/execute on a requests.Session (keep-alive, TLS)
  HTTPS engine  the same against the engine instance
  docker CLI    `docker exec <agent instance's container> echo hi`
  docker-py     container.exec_run(["echo", "hi"]) (same container)

Also quoted: the server's own "duration_ms" (the executor's time inside the
worker) for the two HTTPS contenders, so that client time minus it is what
nginx + TLS + FastCGI + JSON add.

Usage: bench/http_exec_bench.py BUILD_DIR [ROUNDS]   (default 200)
Prints Markdown (medians, p95, ratios to `docker exec` CLI).
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import docker
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsvc  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def row(name, xs, base):
    med = statistics.median(xs)
    return "| %s | %d | %.2f | %.2f | %.2f× |" % (
        name, len(xs), med, pct(xs, 95), med / statistics.median(base))


def agent_running(name):
    out = subprocess.run(["docker", "top", name, "-eo", "pid,args"],
                         capture_output=True, text=True, timeout=30).stdout
    return "yuxi-agent" in out


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    base = tempfile.mkdtemp(prefix="yxbexec-")
    insts = {}
    try:
        for mode, val in (("agent", "auto"), ("engine", "off")):
            s = benchsvc.BenchService(build, os.path.join(base, mode),
                                      YUXI_SANDBOX_IMAGE=IMAGE, YUXI_EXEC_AGENT=val,
                                      YUXI_WORKERS=3)
            insts[mode] = s
            s.start()
        sessions = {m: requests.Session() for m in insts}
        server_ms = {m: [] for m in insts}

        def http(mode):
            s, sess = insts[mode], sessions[mode]
            t0 = time.perf_counter()
            r = sess.post(s.url + "/api/execute",
                          json={"thread_id": s.thread, "command": "echo hi"},
                          headers={"Authorization": "Bearer " + s.token},
                          verify=s.cert, timeout=60)
            dt = (time.perf_counter() - t0) * 1000
            j = r.json()
            assert r.status_code == 200 and j["output"] == "hi\n" and j["exit_code"] == 0, r.text
            server_ms[mode].append(j.get("duration_ms", float("nan")))
            return dt

        http("agent")
        http("engine")  # both sandboxes exist now
        names = {}
        for m, s in insts.items():
            got = s.ct.containers(s.svc.prefix, thread=s.thread, running_only=True)
            assert len(got) == 1, got
            names[m] = got[0][1]
        client = docker.from_env()
        box = client.containers.get(names["agent"])

        def cli():
            t0 = time.perf_counter()
            subprocess.run(["docker", "exec", box.name, "echo", "hi"], check=True,
                           stdout=subprocess.DEVNULL, timeout=60)
            return (time.perf_counter() - t0) * 1000

        def py():
            t0 = time.perf_counter()
            r = box.exec_run(["echo", "hi"])
            assert r.exit_code == 0 and r.output == b"hi\n"
            return (time.perf_counter() - t0) * 1000

        fns = {"agent": lambda: http("agent"), "engine": lambda: http("engine"),
               "cli": cli, "py": py}
        for _ in range(5):
            for f in fns.values():
                f()
        for m in server_ms:
            server_ms[m].clear()
        res = {k: [] for k in fns}
        for _ in range(rounds):
            order = list(fns)
            random.shuffle(order)
            for k in order:
                res[k].append(fns[k]())
        path_agent = agent_running(names["agent"])
        path_engine = agent_running(names["engine"])
    finally:
        for s in insts.values():
            try:
                s.stop()
            except Exception as e:  # keep cleaning the others
                sys.stderr.write("stop: %s\n" % e)
        shutil.rmtree(base, ignore_errors=True)

    assert path_agent, "agent instance: no yuxi-agent process in the container"
    assert not path_engine, "engine instance: a yuxi-agent process is running"
    print("Image `%s`, %s, %d rounds interleaved, 3 workers per instance. "
          "Path check (`docker top`): agent instance runs yuxi-agent: %s; "
          "engine instance: %s.\n" % (IMAGE, time.strftime("%Y-%m-%d"), rounds,
                                      "yes" if path_agent else "no",
                                      "yes" if path_engine else "no"))
    print("| `echo hi` round trip | n | median ms | p95 ms | ratio to `docker exec` |")
    print("| --- | --- | --- | --- | --- |")
    print(row("HTTPS keep-alive → nginx → worker → agent (`YUXI_EXEC_AGENT=auto`)",
              res["agent"], res["cli"]))
    print(row("HTTPS keep-alive → nginx → worker → Engine API exec (`YUXI_EXEC_AGENT=off`)",
              res["engine"], res["cli"]))
    print(row("`docker exec` CLI", res["cli"], res["cli"]))
    print(row("docker-py `exec_run`", res["py"], res["cli"]))
    print()
    print("| inside the worker (`duration_ms` in the reply) | median ms | p95 ms "
          "| client median − server median (HTTP stack) |")
    print("| --- | --- | --- | --- |")
    for m in ("agent", "engine"):
        sm = statistics.median(server_ms[m])
        print("| %s | %.2f | %.2f | %.2f ms |" % (m, sm, pct(server_ms[m], 95),
                                                 statistics.median(res[m]) - sm))


if __name__ == "__main__":
    main()
