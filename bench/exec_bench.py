#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Exec round-trip and cold-start benchmark (issue: sandbox core, §8).

Interleaved runs, one round = each contender once in shuffled order:

  warm:  one `echo hi` in an already running sandbox
         ours       -> bench/bench_exec (our executor: policy, table hit,
                       runner, cap, mask), timed around the request/reply
                       on its pipe, twice: through the Engine API exec
                       (YUXI_EXEC_AGENT=off) and through the in-sandbox
                       agent (YUXI_EXEC_AGENT=only, the default path)
         docker CLI -> `docker exec <c> echo hi`
         docker-py  -> container.exec_run("echo hi") (Debian python3-docker)
  cold:  a new thread's first command
         ours       -> `yuxi-sandbox exec <new thread> -- echo hi` (a fresh
                       CLI process: attach table, create container, exec)
         docker CLI -> `docker run -d <same hardening>` + `docker exec`
         docker-py  -> containers.run(detach=True, same hardening) + exec_run

Prints medians, p95 and the ratios against `docker exec` CLI as Markdown.
Usage: bench/exec_bench.py BUILD_DIR [WARM_ROUNDS [COLD_ROUNDS]]
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
HARDEN = ["--network", "none", "--memory", "512m", "--memory-swap", "512m",
          "--cpus", "1", "--pids-limit", "256", "--cap-drop", "ALL",
          "--security-opt", "no-new-privileges", "--read-only",
          "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m", "--init",
          "--user", "1000:1000"]


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def summary(name, xs, base):
    med = statistics.median(xs)
    return "| %s | %d | %.1f | %.1f | %.2f× |" % (
        name, len(xs), med, pct(xs, 95), med / statistics.median(base))


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    warm_n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    cold_n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    tag = "yxbench%d" % os.getpid()
    saves = tempfile.mkdtemp(prefix="yxbench-")
    env = dict(os.environ, YUXI_SAVES_DIR=saves, YUXI_SHM_NAME="/" + tag,
               YUXI_SANDBOX_CONTAINER_PREFIX=tag + "-", YUXI_SANDBOX_IMAGE=IMAGE,
               YUXI_DOCKER_DRIVER="api", YUXI_RUNNER_PATH=build + "/yuxi-run")
    client = docker.from_env()
    def start_peer(mode):
        return subprocess.Popen([build + "/bench/bench_exec"],
                                env=dict(env, YUXI_EXEC_AGENT=mode), text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    peers = {"ours": start_peer("off"), "agent": start_peer("only")}

    def ask(peer):
        t0 = time.perf_counter()
        peer.stdin.write("warm echo hi\n")
        peer.stdin.flush()
        reply = peer.stdout.readline()
        dt = (time.perf_counter() - t0) * 1000
        assert reply and not reply.startswith("ERR"), reply
        return dt

    def ours_warm():
        return ask(peers["ours"])

    def agent_warm():
        return ask(peers["agent"])

    agent_warm()  # creates the sandbox with the agent's mounts, starts the agent
    ours_warm()
    box = client.containers.list(filters={"label": "io.yuxi.sandbox.thread=warm"})
    box = [c for c in box if c.name.startswith(tag)][0]

    def cli_warm():
        t0 = time.perf_counter()
        subprocess.run(["docker", "exec", box.name, "echo", "hi"], check=True,
                       stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t0) * 1000

    def py_warm():
        t0 = time.perf_counter()
        r = box.exec_run(["echo", "hi"])
        assert r.exit_code == 0
        return (time.perf_counter() - t0) * 1000

    res = {"ours": [], "agent": [], "cli": [], "py": []}
    fns = {"ours": ours_warm, "agent": agent_warm, "cli": cli_warm, "py": py_warm}
    for _ in range(5):
        for f in fns.values():
            f()
    for _ in range(warm_n):
        order = list(fns)
        random.shuffle(order)
        for k in order:
            res[k].append(fns[k]())

    cold = {"ours": [], "cli": [], "py": []}
    made = []

    def ours_cold(i):
        t0 = time.perf_counter()
        subprocess.run([build + "/yuxi-sandbox", "exec", "cold%d" % i, "--", "echo", "hi"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t0) * 1000

    def cli_cold(i):
        name = "%s-cli-%d" % (tag, i)
        made.append(name)
        t0 = time.perf_counter()
        subprocess.run(["docker", "run", "-d", "--name", name] + HARDEN + [IMAGE],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["docker", "exec", name, "echo", "hi"], check=True,
                       stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t0) * 1000

    def py_cold(i):
        name = "%s-py-%d" % (tag, i)
        made.append(name)
        t0 = time.perf_counter()
        c = client.containers.run(IMAGE, detach=True, name=name, network_mode="none",
                                  mem_limit="512m", memswap_limit="512m",
                                  nano_cpus=10**9, pids_limit=256, cap_drop=["ALL"],
                                  security_opt=["no-new-privileges"], read_only=True,
                                  tmpfs={"/tmp": "rw,nosuid,nodev,size=64m"},
                                  init=True, user="1000:1000")
        assert c.exec_run(["echo", "hi"]).exit_code == 0
        return (time.perf_counter() - t0) * 1000

    cfns = {"ours": ours_cold, "cli": cli_cold, "py": py_cold}
    try:
        for i in range(cold_n):
            order = list(cfns)
            random.shuffle(order)
            for k in order:
                cold[k].append(cfns[k](i))
            # keep the engine's container count flat: clean up outside timing
            subprocess.run(["docker", "rm", "-f"] + made, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            made.clear()
            subprocess.run([build + "/yuxi-sandbox", "destroy", "cold%d" % i], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        for peer in peers.values():
            peer.stdin.close()
            peer.wait()
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", "name=" + tag],
                             capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f"] + ids, stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", saves])
        try:
            os.unlink("/dev/shm/" + tag)
        except OSError:
            pass

    print("Image `%s`, %s, %d warm rounds, %d cold rounds, interleaved.\n"
          % (IMAGE, time.strftime("%Y-%m-%d"), warm_n, cold_n))
    print("| warm exec (`echo hi`) | n | median ms | p95 ms | ratio to `docker exec` |")
    print("| --- | --- | --- | --- | --- |")
    print(summary("yuxi executor, Engine API exec", res["ours"], res["cli"]))
    print(summary("yuxi executor, in-sandbox agent (default)", res["agent"], res["cli"]))
    print(summary("`docker exec` CLI", res["cli"], res["cli"]))
    print(summary("docker-py `exec_run`", res["py"], res["cli"]))
    print()
    print("| cold thread → first command | n | median ms | p95 ms | ratio to `docker run -d` + `docker exec` |")
    print("| --- | --- | --- | --- | --- |")
    print(summary("`yuxi-sandbox exec` (new thread)", cold["ours"], cold["cli"]))
    print(summary("`docker run -d` + `docker exec`", cold["cli"], cold["cli"]))
    print(summary("docker-py run + exec_run", cold["py"], cold["cli"]))


if __name__ == "__main__":
    main()
