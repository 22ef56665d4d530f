#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Exec round trip through the whole service (issue 3, §5).

Two service instances (nginx TLS -> FastCGI workers -> Docker, started by
bench/benchsvc.py on free 127.0.0.1 ports), one thread each, image
yuxi-sandbox:latest:

  agent   YUXI_EXEC_AGENT=auto: the executor uses the in-sandbox agent
          (src/exec/agent_client.c) once it answers
  engine  YUXI_EXEC_AGENT=off: Engine API exec only (no agent mounts)

Which path ran is checked, not assumed: the agent instance's container must
show a yuxi-agent process (`docker top`) and the engine one must not.

Interleaved rounds, one round = each contender once in shuffled order, two
workloads: `echo hi`, and 1 MiB of output (`yes <32 chars> | head -c
1048576`; the output limit is raised to 2 MiB so that the whole MiB comes
back in the JSON reply, as it does to docker-py):

  HTTPS agent   POST /api/execute on one persistent TLS connection
                (Python's http.client: keep-alive, certificate verified)
  same, requests  the same through a requests.Session, for comparison:
                requests adds ~1 ms per call and ~10 ms per MiB of reply
                on these machines, on the client's side
  HTTPS engine  the agent contender's client against the engine instance
  docker CLI    `docker exec <agent instance's container> sh -c CMD`
  docker-py     container.exec_run(["sh", "-c", CMD]) (same container)

Every contender runs the same `sh -c CMD`: the service always runs commands
through /bin/sh. Between two contenders the bench sleeps SETTLE seconds
(0.03), so that the work the engine does after a `docker exec` returns
(the exec's cleanup in dockerd and containerd) is not charged to whichever
contender comes next.

Also quoted: the server's own "duration_ms" (the executor's time inside the
worker) for the two HTTPS contenders, so that client time minus it is what
nginx + TLS + FastCGI + JSON add.

Usage: bench/http_exec_bench.py BUILD_DIR [ROUNDS [BIG_ROUNDS]]
       (defaults 200 and 30)
Prints Markdown (medians, p95, ratios to `docker exec` CLI and docker-py).
"""
import http.client
import json
import os
import random
import shutil
import statistics
import ssl
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
BIG = "yes 0123456789abcdef0123456789abcde | head -c 1048576"
SETTLE = 0.03


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def row(name, xs, base, py):
    med = statistics.median(xs)
    return "| %s | %d | %.2f | %.2f | %.3f× | %.3f× |" % (
        name, len(xs), med, pct(xs, 95), med / statistics.median(base),
        med / statistics.median(py))


def agent_running(name):
    out = subprocess.run(["docker", "top", name, "-eo", "pid,args"],
                         capture_output=True, text=True, timeout=30).stdout
    return "yuxi-agent" in out


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    big_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    base = tempfile.mkdtemp(prefix="yxbexec-")
    insts = {}
    try:
        for mode, val in (("agent", "auto"), ("engine", "off")):
            s = benchsvc.BenchService(build, os.path.join(base, mode),
                                      YUXI_SANDBOX_IMAGE=IMAGE, YUXI_EXEC_AGENT=val,
                                      YUXI_SANDBOX_OUTPUT_LIMIT="2m", YUXI_WORKERS=3)
            insts[mode] = s
            s.start()
        sessions = {m: requests.Session() for m in insts}
        conns = {}
        for m, s in insts.items():
            ctx = ssl.create_default_context(cafile=s.cert)
            port = int(s.url.rsplit(":", 1)[1])
            conns[m] = http.client.HTTPSConnection("127.0.0.1", port, context=ctx,
                                                   timeout=60)
        server_ms = {m: [] for m in list(insts) + ["agent_rq"]}

        def check(mode, status, j, want, text):
            assert status == 200 and len(j["output"]) == want and \
                j["exit_code"] == 0 and not j["truncated"], text[:300]
            server_ms[mode].append(j.get("duration_ms", float("nan")))

        def hc(mode, cmd, want):
            s, c = insts[mode], conns[mode]
            body = json.dumps({"thread_id": s.thread, "command": cmd})
            t0 = time.perf_counter()
            c.request("POST", "/api/execute", body=body,
                      headers={"Authorization": "Bearer " + s.token,
                               "Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            dt = (time.perf_counter() - t0) * 1000
            check(mode, r.status, json.loads(data), want, data.decode(errors="replace"))
            return dt

        def rq(cmd, want):
            s, sess = insts["agent"], sessions["agent"]
            t0 = time.perf_counter()
            r = sess.post(s.url + "/api/execute",
                          json={"thread_id": s.thread, "command": cmd},
                          headers={"Authorization": "Bearer " + s.token},
                          verify=s.cert, timeout=60)
            dt = (time.perf_counter() - t0) * 1000
            check("agent_rq", r.status_code, r.json(), want, r.text)
            return dt


        hc("agent", "echo hi", 3)
        hc("engine", "echo hi", 3)  # both sandboxes exist now
        names = {}
        for m, s in insts.items():
            got = s.containers(thread=s.thread, running_only=True)
            assert len(got) == 1, got
            names[m] = got[0][1]
        client = docker.from_env()
        box = client.containers.get(names["agent"])

        def cli(cmd, want):
            t0 = time.perf_counter()
            r = subprocess.run(["docker", "exec", box.name, "sh", "-c", cmd], check=True,
                               stdout=subprocess.PIPE, timeout=60)
            dt = (time.perf_counter() - t0) * 1000
            assert len(r.stdout) == want
            return dt

        def py(cmd, want):
            t0 = time.perf_counter()
            r = box.exec_run(["sh", "-c", cmd])
            dt = (time.perf_counter() - t0) * 1000
            assert r.exit_code == 0 and len(r.output) == want
            return dt

        fns = {"agent": lambda c, w: hc("agent", c, w), "agent_rq": rq,
               "engine": lambda c, w: hc("engine", c, w), "cli": cli, "py": py}
        work = {"echo": ("echo hi", 3, rounds), "big": (BIG, 1 << 20, big_rounds)}
        res = {}
        srv = {}
        for wk, (cmd, want, n) in work.items():
            for _ in range(3):
                for f in fns.values():
                    f(cmd, want)
            for m in server_ms:
                server_ms[m].clear()
            res[wk] = {k: [] for k in fns}
            for _ in range(n):
                order = list(fns)
                random.shuffle(order)
                for k in order:
                    time.sleep(SETTLE)
                    res[wk][k].append(fns[k](cmd, want))
            srv[wk] = {m: list(v) for m, v in server_ms.items()}
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
    print("Image `%s`, %s, %d + %d rounds interleaved (settle %.0f ms between "
          "contenders), 3 workers per instance. Path check (`docker top`): agent "
          "instance runs yuxi-agent: %s; engine instance: %s.\n" % (
              IMAGE, time.strftime("%Y-%m-%d"), rounds, big_rounds, SETTLE * 1000,
              "yes" if path_agent else "no", "yes" if path_engine else "no"))
    titles = {"echo": "`echo hi` round trip", "big": "1 MiB of output"}
    for wk in ("echo", "big"):
        r = res[wk]
        print("| %s | n | median ms | p95 ms | ratio to `docker exec` | ratio to docker-py |"
              % titles[wk])
        print("| --- | --- | --- | --- | --- | --- |")
        print(row("HTTPS keep-alive → nginx → worker → agent (`YUXI_EXEC_AGENT=auto`)",
                  r["agent"], r["cli"], r["py"]))
        print(row("the same, client `requests.Session`", r["agent_rq"], r["cli"], r["py"]))
        print(row("HTTPS keep-alive → nginx → worker → Engine API exec "
                  "(`YUXI_EXEC_AGENT=off`)", r["engine"], r["cli"], r["py"]))
        print(row("`docker exec` CLI", r["cli"], r["cli"], r["py"]))
        print(row("docker-py `exec_run`", r["py"], r["cli"], r["py"]))
        print()
    print("| inside the worker (`duration_ms` in the reply) | median ms | p95 ms "
          "| client median − server median (HTTP stack) |")
    print("| --- | --- | --- | --- |")
    for wk in ("echo", "big"):
        for m in ("agent", "agent_rq", "engine"):
            xs = srv[wk][m]
            sm = statistics.median(xs)
            print("| %s, %s | %.2f | %.2f | %.2f ms |" % (
                titles[wk], m, sm, pct(xs, 95), statistics.median(res[wk][m]) - sm))


if __name__ == "__main__":
    main()
