#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Distance to the floor (issue 19): the viewer against the FastCGI path's
own rate, a command against a bare host spawn, in ONE interleaved session.

One service instance (bench/benchsvc.py: nginx TLS on a free 127.0.0.1
port -> yuxi-sandboxd, YUXI_WORKERS workers, image yuxi-sandbox:latest,
in-sandbox agent), one thread whose workspace holds 12 small files and a
2 KiB text file. One round = every contender below once, in shuffled order:

  wrk targets (wrk 2 threads, CONNS connections, TLS keep-alive, the bearer
  token via bench/wrk_auth.lua, SECONDS each):
    healthz  GET /healthz (nginx -> FastCGI -> worker, no thread, no file)
    static   GET /  (nginx serving the workbench page web/index.html itself)
    tree     GET /api/viewer/filesystem/tree?thread_id=T&path=/workspace
    file     GET /api/viewer/filesystem/file?thread_id=T&path=/workspace/notes.txt
    thread   GET /api/threads/T
  exec block: EXECS pairs, each pair in shuffled order:
    echo     POST /api/execute {"command": "echo hi"} on one persistent TLS
             connection (http.client, keep-alive, certificate verified)
    spawn    /bin/sh -c 'echo hi' spawned on the host by the same Python
             process (subprocess.run, stdout piped), i.e. the floor

Ratios are taken per round (same round, same machine state) and their
median is quoted; req/s and ms are medians over rounds / samples. Any
non-2xx answer or socket error makes the script fail. Also printed: the
worker's own time per route (request log dur_ms) and the load average.

With DOCKER_EXEC=1 the exec block is a run "beside docker exec
contenders": each pair becomes a triple with `docker exec <the thread's
container> /bin/sh -c 'echo hi'` (timed and shown, shuffled in with the
other two), so that dockerd's and containerd's work after each exec
competes with the two measured paths. As in bench/http_exec_bench.py,
SETTLE seconds (default 0.03) pass between the contenders of a triple, so
that the work the engine does after a `docker exec` has returned (its
clean-up in dockerd and containerd) is not charged to whichever comes
next.

usage: bench/floor_bench.py BUILD_DIR [SECONDS [ROUNDS [EXECS]]]  (default 5 5 60)
environment: CONNS (default 32), WORKERS (default 4), DOCKER_EXEC (default 0),
SETTLE (default 0.03, with DOCKER_EXEC=1)
"""
import http.client
import json
import os
import random
import re
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
WRK = ("healthz", "static", "tree", "file", "thread")


def wrk_ms(v):
    for suf, mul in (("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60000.0)):
        if v.endswith(suf):
            return float(v[:-len(suf)]) * mul
    return float(v)


def run_wrk(url, secs, conns, token):
    env = dict(os.environ, YXB_TOKEN=token)
    out = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency",
                          "-s", os.path.join(HERE, "wrk_auth.lua"), url],
                         capture_output=True, text=True, env=env, timeout=secs + 60).stdout
    rps = p50 = p99 = None
    for line in out.splitlines():
        f = line.split()
        if f[:1] == ["50%"]:
            p50 = wrk_ms(f[1])
        elif f[:1] == ["99%"]:
            p99 = wrk_ms(f[1])
        elif line.startswith("Requests/sec:"):
            rps = float(f[1])
    if rps is None or "Non-2xx" in out or "Socket errors" in out:
        sys.stderr.write(out)
        raise SystemExit("floor_bench: wrk %s: errors or non-2xx answers" % url)
    return rps, p50, p99


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    secs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    execs = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    conns = int(os.environ.get("CONNS", "32"))
    workers = int(os.environ.get("WORKERS", "4"))
    os.environ.setdefault("top_builddir", build)
    base = tempfile.mkdtemp(prefix="yxbfloor-")
    load = [loadavg()]
    s = benchsvc.BenchService(build, os.path.join(base, "svc"), YUXI_SANDBOX_IMAGE=IMAGE,
                              YUXI_WORKERS=workers)
    try:
        s.start()
        ws = os.path.join(s.thread_dir, "workspace")
        st = os.stat(ws)
        for i in range(1, 13):
            p = os.path.join(ws, "f%02d.txt" % i)
            with open(p, "w") as f:
                f.write("file %02d\n" % i)
            os.chown(p, st.st_uid, st.st_gid)
        p = os.path.join(ws, "notes.txt")
        with open(p, "w") as f:
            f.write("\n".join("a" * 63 for _ in range(32)) + "\n")
        os.chown(p, st.st_uid, st.st_gid)
        paths = {
            "healthz": "/healthz", "static": "/",
            "tree": "/api/viewer/filesystem/tree?thread_id=%s&path=/workspace" % s.thread,
            "file": "/api/viewer/filesystem/file?thread_id=%s&path=/workspace/notes.txt"
                    % s.thread,
            "thread": "/api/threads/%s" % s.thread,
        }
        ctx = ssl.create_default_context(cafile=s.cert)
        port = int(s.origin.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=60)
        body = json.dumps({"thread_id": s.thread, "command": "echo hi"})
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
        server_ms = []

        def echo():
            t0 = time.perf_counter()
            conn.request("POST", s.url_prefix + "/api/execute", body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            dt = (time.perf_counter() - t0) * 1000
            j = json.loads(data)
            assert r.status == 200 and j["output"] == "hi\n" and j["exit_code"] == 0, data
            server_ms.append(j.get("duration_ms", float("nan")))
            return dt

        def spawn():
            t0 = time.perf_counter()
            r = subprocess.run(["/bin/sh", "-c", "echo hi"], stdout=subprocess.PIPE)
            dt = (time.perf_counter() - t0) * 1000
            assert r.returncode == 0 and r.stdout == b"hi\n"
            return dt

        for _ in range(5):	# the sandbox starts; the agent answers
            echo()
            spawn()
        contenders = [("echo", echo), ("spawn", spawn)]
        if os.environ.get("DOCKER_EXEC", "0") == "1":
            cid = subprocess.run(["docker", "ps", "-q", "--filter", "name=" + s.prefix],
                                 capture_output=True, text=True, timeout=60).stdout.split()
            assert len(cid) == 1, cid

            def dexec():
                t0 = time.perf_counter()
                r = subprocess.run(["docker", "exec", cid[0], "/bin/sh", "-c", "echo hi"],
                                   stdout=subprocess.PIPE)
                dt = (time.perf_counter() - t0) * 1000
                assert r.returncode == 0 and r.stdout == b"hi\n"
                return dt
            contenders.append(("docker", dexec))
        settle = float(os.environ.get("SETTLE", "0.03")) if len(contenders) == 3 else 0
        server_ms.clear()
        for t in WRK:		# every wrk target answers 2xx before the timing
            run_wrk(s.origin + s.url_prefix + paths[t] if t != "static" else
                    s.origin + "/", 1, conns, s.token)
        wrk_res = {t: [] for t in WRK}
        ex = {"echo": [], "spawn": [], "docker": []}
        ratio_echo = []
        for _ in range(rounds):
            order = list(WRK) + ["exec"]
            random.shuffle(order)
            rr = {}
            for t in order:
                if t == "exec":
                    # nginx closed the idle connection during the wrk runs
                    # (keepalive_timeout 15s): open it again, untimed
                    conn.close()
                    echo()
                    server_ms.pop()
                    got = {k: [] for k, _ in contenders}
                    for _ in range(execs):
                        pair = list(contenders)
                        random.shuffle(pair)
                        for k, fn in pair:
                            got[k].append(fn())
                            if settle:
                                time.sleep(settle)
                    e, h = got["echo"], got["spawn"]
                    for k in got:
                        ex[k] += got[k]
                    ratio_echo.append(statistics.median(e) / statistics.median(h))
                    continue
                url = s.origin + (s.url_prefix + paths[t] if t != "static" else "/")
                rr[t] = run_wrk(url, secs, conns, s.token)
                wrk_res[t].append(rr[t])
            load.append(loadavg())
        log = os.path.join(s.base, "sandboxd.log")
        with open(log, errors="replace") as f:
            logtext = f.read()
        size = {}
        for t in ("static", "tree", "file", "thread"):
            out = subprocess.run(["curl", "-fsS", "--cacert", s.cert, "-H",
                                  "Authorization: Bearer " + s.token,
                                  s.origin + (s.url_prefix + paths[t] if t != "static"
                                              else "/")],
                                 capture_output=True, timeout=30).stdout
            size[t] = len(out)
        worker_ms = {}
        for t, route in (("healthz", "/healthz"), ("tree", "/api/viewer/filesystem/tree"),
                         ("file", "/api/viewer/filesystem/file"),
                         ("thread", "/api/threads/"), ("echo", "/api/execute")):
            pat = re.compile(r" route=%s\S* status=200 dur_ms=([0-9.]+)" % re.escape(route))
            xs = [float(m.group(1)) for m in pat.finditer(logtext)]
            if xs:
                worker_ms[t] = (statistics.median(xs), pct(xs, 99), len(xs))
    finally:
        try:
            s.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)

    def med(t, i):
        return statistics.median(x[i] for x in wrk_res[t])

    def ratio(a, b):
        return statistics.median(x[0] / y[0] for x, y in zip(wrk_res[a], wrk_res[b]))

    print("%s, wrk 2 threads, %d connections, %d s per target, %d rounds (targets and "
          "the exec block shuffled per round), %d `echo hi` / spawn %s per round, "
          "YUXI_WORKERS=%d, image `%s`. Reply sizes: static page %d B, tree %d B, "
          "file %d B, thread %d B. Load average (1/5/15 min) before and after each "
          "round: %s.\n" % (time.strftime("%Y-%m-%d %H:%M"), conns, secs, rounds, execs,
                            "/ `docker exec` triples" if ex["docker"] else "pairs",
                            workers, IMAGE, size["static"], size["tree"], size["file"],
                            size["thread"], "; ".join(load)))
    print("| target | req/s (median) | p50 ms | p99 ms | ÷ `/healthz` (per round) "
          "| ÷ static page (per round) |")
    print("| --- | --- | --- | --- | --- | --- |")
    names = {"healthz": "`GET /healthz` (nginx → FastCGI → worker)",
             "static": "`GET /` (nginx serves the workbench page)",
             "tree": "`GET /api/viewer/filesystem/tree`",
             "file": "`GET /api/viewer/filesystem/file`",
             "thread": "`GET /api/threads/{id}`"}
    for t in WRK:
        print("| %s | %.0f | %.2f | %.2f | %.2f× | %.2f× |" % (
            names[t], med(t, 0), med(t, 1), med(t, 2), ratio(t, "healthz"),
            ratio(t, "static")))
    print()
    e, h = ex["echo"], ex["spawn"]
    print("| command | n | median ms | p95 ms | ÷ host spawn |")
    print("| --- | --- | --- | --- | --- |")
    print("| `echo hi`, HTTPS keep-alive → nginx → worker → agent | %d | %.2f | %.2f | "
          "%.2f× (median of per-round ratios %.2f×) |" % (
              len(e), statistics.median(e), pct(e, 95),
              statistics.median(e) / statistics.median(h), statistics.median(ratio_echo)))
    print("| `/bin/sh -c 'echo hi'` spawned on the host | %d | %.2f | %.2f | 1.00× |" % (
        len(h), statistics.median(h), pct(h, 95)))
    d = ex["docker"]
    if d:
        print("| `docker exec` CLI, same command, same container (the contender) | %d | %.2f "
              "| %.2f | %.2f× |" % (len(d), statistics.median(d), pct(d, 95),
                                    statistics.median(d) / statistics.median(h)))
    print()
    print("Inside the worker (request log `dur_ms`, all requests of the run): " + "; ".join(
        "%s median %.2f ms, p99 %.2f ms (n=%d)" % (t, m, p, n)
        for t, (m, p, n) in worker_ms.items()) + ". `echo hi` reply `duration_ms`: "
        "median %.2f ms." % statistics.median(server_ms))


if __name__ == "__main__":
    main()
