#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The browser profile's cost per sandbox (issue 33, docs/benchmarks.md).

For N browser threads (examples/agents.json's agent `browser`, image
yuxi-sandbox-browser) of one service instance, one after the other:

  start    first command -> Chromium's /json/version answering inside, and
           -> every service ready (GET /api/threads/{id})
  idle     the box 20 s after its services were ready (about:blank)
  page     one page open: yuxi-cdp navigates the tab to noVNC's vnc.html
           (served in the box on 6080), 10 s later
  viewer   the same with a VNC client attached through websockify (a
           WebSocket from inside the box reading the framebuffer for 5 s),
           right after it detached

Memory of a box, three ways: the container's memory cgroup (cgroup v1
memory.usage_in_bytes, and memory.stat's total_rss + total_shmem, what a
limit counts besides page cache), the sum of the proportional set sizes
(PSS, /proc/PID/smaps_rollup) of its processes, and the engine's shim for
it. Then MemAvailable of the host before the first box and with all N
open (caches dropped before each reading; other work on the machine
makes that one noisy). Also the restart of a killed Chromium.

Usage: bench/browser_bench.py BUILD [N]   (N: 3)
Prints Markdown.
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsvc  # noqa: E402

MIB = 1 << 20


def sh(s, tid, cmd, timeout=120):
    r = s.request("alice", "POST", "/api/execute",
                  json={"thread_id": tid, "command": cmd, "timeout": timeout})
    assert r.status_code == 200, r.text
    return r.json()["output"], r.json()["exit_code"]


def services(s, tid):
    return {x["name"]: x for x in s.request("alice", "GET", "/api/threads/" + tid)
            .json().get("services", [])}


def container_of(s, tid):
    name = s.request("alice", "GET", "/api/threads/" + tid).json()["sandbox"]["container"]
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True,
                         text=True).stdout.strip()
    return name, cid


def box_pids(cid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cgroup" % p) as f:
                    if cid in f.read():
                        out.append(int(p))
            except OSError:
                pass
    return out


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def shim_pid(cid):
    out = subprocess.run(["pgrep", "-f", "containerd-shim.*%s" % cid[:12]],
                         capture_output=True, text=True).stdout.split()
    if not out:		# shims name the id in full or not at all
        out = subprocess.run(["pgrep", "-f", "containerd-shim.*-id %s" % cid],
                             capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def cgroup_mem(cid):
    d = "/sys/fs/cgroup/memory/docker/" + cid
    with open(d + "/memory.usage_in_bytes") as f:
        usage = int(f.read())
    st = {}
    with open(d + "/memory.stat") as f:
        for line in f:
            k, v = line.split()
            st[k] = int(v)
    return usage, st.get("total_rss", 0) + st.get("total_shmem", 0)


def measure(cid):
    pids = box_pids(cid)
    usage, anon = cgroup_mem(cid)
    pss = sum(pss_kib(p) for p in pids) * 1024
    shim = shim_pid(cid)
    return {"usage": usage, "anon": anon, "pss": pss, "procs": len(pids),
            "shim": pss_kib(shim) * 1024 if shim else 0}


def mem_available():
    subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=False)
    time.sleep(1)
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024


WS_VIEW = r'''
import base64, os, socket, struct, time
s = socket.create_connection(("127.0.0.1", 6080), timeout=10)
s.sendall(("GET /websockify HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary"
           "\r\n\r\n" % base64.b64encode(os.urandom(16)).decode()).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(4096)
def send(b):
    m = os.urandom(4)
    s.sendall(bytes([0x82, 0x80 | len(b)]) + m + bytes(c ^ m[i % 4] for i, c in enumerate(b)))
send(b"RFB 003.008\n"); time.sleep(0.2); send(b"\x01"); time.sleep(0.2); send(b"\x01")
time.sleep(0.3)
w, h = 1280, 800
end, got = time.time() + 5, 0
while time.time() < end:
    send(b"\x03\x01" + struct.pack(">HHHH", 0, 0, w, h))
    s.settimeout(0.5)
    try:
        got += len(s.recv(1 << 20))
    except socket.timeout:
        pass
print(got)
'''


def main():
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    base = os.path.join("/tmp", "yxbrowserbench")
    s = benchsvc.BenchService(build, base,
                              YUXI_AGENTS_FILE=os.path.join(HERE, "..", "examples", "agents.json"),
                              YUXI_COMMAND_PATH_POLICY="off")
    s.start()
    rows, starts, ready, restarts = [], [], [], []
    try:
        avail0 = mem_available()
        tids = []
        for i in range(n):
            tid = "tbr%d%s" % (i, os.urandom(3).hex())
            s.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "browser"})
            t0 = time.monotonic()
            sh(s, tid, "true")
            while sh(s, tid, "curl -sf --noproxy '*' -o /dev/null http://127.0.0.1:9222/json/version")[1]:
                time.sleep(0.1)
            starts.append(time.monotonic() - t0)
            while not all(x["state"] in ("ready", "running") for x in services(s, tid).values()):
                time.sleep(0.1)
            ready.append(time.monotonic() - t0)
            tids.append(tid)
            time.sleep(20)
            name, cid = container_of(s, tid)
            idle = measure(cid)
            out, code = sh(s, tid, "yuxi-cdp goto http://127.0.0.1:6080/vnc.html")
            assert code == 0, out
            time.sleep(10)
            page = measure(cid)
            with open(os.path.join(s.saves, "threads", tid, "user-data", "workspace",
                                   "view.py"), "w") as f:
                f.write(WS_VIEW)
            out, code = sh(s, tid, "python3 view.py")
            viewer = measure(cid)
            viewer["bytes"] = int(out.strip() or 0) if code == 0 else -1
            rows.append((idle, page, viewer))
        avail1 = mem_available()
        # a killed Chromium: ready again
        tid = tids[0]
        for _ in range(5):
            before = services(s, tid)["chromium"]["restarts"]
            t0 = time.monotonic()
            sh(s, tid, "pkill -9 -x chromium")
            while not (services(s, tid)["chromium"]["state"] == "ready" and
                       services(s, tid)["chromium"]["restarts"] > before):
                time.sleep(0.05)
            restarts.append(time.monotonic() - t0)
            time.sleep(12)	# healthy again: the backoff starts over
    finally:
        s.stop()

    def med(key, i):
        return statistics.median(r[i][key] for r in rows) / MIB
    print("browser boxes: %d; first command -> /json/version: median %.1f s (%s); "
          "-> every service ready: median %.1f s" %
          (n, statistics.median(starts), ", ".join("%.1f" % x for x in starts),
           statistics.median(ready)))
    print()
    print("| state | cgroup usage | cgroup rss+shmem | PSS of the box's processes | "
          "processes | engine shim PSS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, what in enumerate(("idle (about:blank)", "one page open (noVNC's vnc.html)",
                              "after a VNC client read 5 s of frames")):
        print("| %s | %.0f MiB | %.0f MiB | %.0f MiB | %d | %.1f MiB |" %
              (what, med("usage", i), med("anon", i), med("pss", i),
               statistics.median(r[i]["procs"] for r in rows), med("shim", i)))
    print()
    print("host MemAvailable: %.0f MiB less with %d boxes open (%.0f MiB per box)" %
          ((avail0 - avail1) / MIB, n, (avail0 - avail1) / MIB / n))
    print("VNC client read %s bytes of frames" % ", ".join(str(r[2]["bytes"]) for r in rows))
    print("Chromium killed -> ready again: %s s" % ", ".join("%.1f" % x for x in restarts))


if __name__ == "__main__":
    main()
