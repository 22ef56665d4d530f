#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Fast exec benchmark: the in-sandbox agent (issue 6, docs/agent.md).

Interleaved rounds in one running sandbox (one round = each contender once,
shuffled), two workloads:

  echo:  `echo hi`
  1MiB:  1 MiB of output (`yes <32 chars> | head -c 1048576`)

contenders:
  agent      -> bench/bench_exec with YUXI_EXEC_AGENT=only: our executor
                (policy, table hit, agent socket, cap, mask), timed around
                the request/reply on its pipe
  engine     -> a second bench_exec with YUXI_EXEC_AGENT=off: the same
                executor on the Engine API exec path (the fallback)
  docker CLI -> `docker exec <c> sh -c CMD`
  docker-py  -> container.exec_run(["sh", "-c", CMD])

The HTTP layer is not in the loop (the C peer stands in for a worker that
stays up). The output limit is raised to 2 MiB so that 1 MiB stays in
memory on our side too, as it does for docker-py.

Usage: bench/agent_bench.py BUILD_DIR [ROUNDS [BIG_ROUNDS]]
Prints Markdown tables (medians, p95, ratios).
"""
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import docker

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
BIG = "yes 0123456789abcdef0123456789abcde | head -c 1048576"


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def row(name, xs, base):
    med = statistics.median(xs)
    return "| %s | %d | %.2f | %.2f | %.3f× |" % (
        name, len(xs), med, pct(xs, 95), med / statistics.median(base))


class Peer:
    """One bench_exec process (one executor that stays up)."""

    def __init__(self, build, env, mode):
        env = dict(env, YUXI_EXEC_AGENT=mode)
        self.p = subprocess.Popen([build + "/bench/bench_exec"], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, cmd):
        t0 = time.perf_counter()
        self.p.stdin.write("bench %s\n" % cmd)
        self.p.stdin.flush()
        reply = self.p.stdout.readline()
        dt = (time.perf_counter() - t0) * 1000
        if not reply or reply.startswith("ERR") or reply.split()[1] != "0":
            raise RuntimeError("peer: %r" % reply)
        return dt

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    big_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    tag = "yxabench%d" % os.getpid()
    saves = tempfile.mkdtemp(prefix="yxabench-")
    env = dict(os.environ, YUXI_SAVES_DIR=saves, YUXI_SHM_NAME="/" + tag,
               YUXI_SANDBOX_CONTAINER_PREFIX=tag + "-", YUXI_SANDBOX_IMAGE=IMAGE,
               YUXI_DOCKER_DRIVER="api", YUXI_RUNNER_PATH=build + "/yuxi-run",
               YUXI_SANDBOX_OUTPUT_LIMIT="2m")
    client = docker.from_env()
    agent = Peer(build, env, "only")
    engine = Peer(build, env, "off")
    state = {}

    def box():
        if "box" not in state:
            agent.run("true")  # (re)creates the sandbox if it vanished
            cs = client.containers.list(
                filters={"label": "io.yuxi.sandbox.thread=bench"})
            state["box"] = [c for c in cs if c.name.startswith(tag)][0]
        return state["box"]

    def cli(cmd):
        t0 = time.perf_counter()
        r = subprocess.run(["docker", "exec", box().name, "sh", "-c", cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dt = (time.perf_counter() - t0) * 1000
        if r.returncode != 0:
            raise RuntimeError("docker exec %d" % r.returncode)
        return dt

    def py(cmd):
        t0 = time.perf_counter()
        r = box().exec_run(["sh", "-c", cmd])
        dt = (time.perf_counter() - t0) * 1000
        if r.exit_code != 0:
            raise RuntimeError("exec_run %d" % r.exit_code)
        return dt

    fns = {"agent": agent.run, "engine": engine.run, "cli": cli, "py": py}
    lost = [0]

    def measure(cmd, n):
        res = {k: [] for k in fns}
        for _ in range(3):
            for f in fns.values():
                try:
                    f(cmd)
                except (RuntimeError, docker.errors.APIError):
                    state.pop("box", None)
        for _ in range(n):
            order = list(fns)
            random.shuffle(order)
            for k in order:
                try:
                    res[k].append(fns[k](cmd))
                except (RuntimeError, docker.errors.APIError):
                    # the sandbox vanished (e.g. removed by someone else's
                    # reaper on a shared engine): drop the sample, re-find it
                    lost[0] += 1
                    state.pop("box", None)
        return res

    try:
        box()
        small = measure("echo hi", rounds)
        big = measure(BIG, big_rounds)
    finally:
        agent.close()
        engine.close()
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", "name=" + tag],
                             capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f"] + ids, stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", saves])
        try:
            os.unlink("/dev/shm/" + tag)
        except OSError:
            pass

    print("Image `%s`, %s, %d + %d interleaved rounds, %d samples dropped.\n"
          % (IMAGE, time.strftime("%Y-%m-%d"), rounds, big_rounds, lost[0]))
    for title, res in (("`echo hi`", small), ("1 MiB of output", big)):
        print("| %s | n | median ms | p95 ms | ratio to `docker exec` | ratio to docker-py |"
              % title)
        print("| --- | --- | --- | --- | --- | --- |")
        for k, name in (("agent", "yuxi executor, agent"),
                        ("engine", "yuxi executor, Engine API exec"),
                        ("cli", "`docker exec` CLI"),
                        ("py", "docker-py `exec_run`")):
            r = row(name, res[k], res["cli"])
            r += " %.3f× |" % (statistics.median(res[k]) / statistics.median(res["py"]))
            print(r)
        print()


if __name__ == "__main__":
    main()
