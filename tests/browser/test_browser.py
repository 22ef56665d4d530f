# SPDX-License-Identifier: MIT
"""The browser profile (docs/browser.md) in real sandboxes, through nginx.

- Chromium's DevTools answers inside the box within a bounded time after
  the thread's first command (the services start with the box);
- a command drives Chromium over DevTools (yuxi-cdp, in the image) to a
  page served in the box and saves a PNG screenshot in outputs/ that shows
  the page (its pixels are checked); it reads the DOM and the title;
- noVNC's page and its WebSocket (101, then the RFB greeting) answer on
  127.0.0.1:6080 inside the box;
- the services, their state and output through the API
  (GET /api/threads/{id}, GET /api/services, GET /api/services/{name}/output);
- a service killed inside the box comes back: its process (the loop starts
  it again), its loop (the supervisor starts a new keeper), its keeper
  (the same), the agent daemon with the supervisor (the next command
  starts the agent, whose supervisor takes over);
- DELETE of the thread leaves no process of the box on the host;
- under gVisor (runsc) the same profile works (when the engine has it).
"""
import base64
import os
import subprocess
import time

import pytest

from conftest import (UD, agents_file, new_browser_thread, services, sh,
                      wait_services)
import pngcheck
import yxsvc

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>yuxi browser test</title>
<style>html,body{margin:0;background:#1e90ff}
#box{position:absolute;left:0;top:0;width:300px;height:200px;background:#ff6600}
#marker{position:absolute;margin:0;top:300px;left:400px;font:40px/60px sans-serif;color:#fff}
</style></head><body><div id="box"></div><p id="marker">served in the box 盒子</p></body></html>
"""


def write(svc, tid, path, content):
    r = svc.request("alice", "POST", "/api/filesystem/write",
                    json={"thread_id": tid, "path": path, "content": content,
                          "overwrite": True})
    assert r.status_code in (200, 201), r.text


def serve_workspace(svc, tid, port=8000):
    """python3 -m http.server on 127.0.0.1:port in the workspace, as a
    background process; waits until it answers."""
    r = svc.request("alice", "POST", "/api/processes",
                    json={"thread_id": tid,
                          "command": "python3 -m http.server %d --bind 127.0.0.1" % port})
    assert r.status_code == 201, r.text
    out, code = sh(svc, tid, "for i in $(seq 50); do curl -sf --noproxy '*' -o /dev/null "
                   "http://127.0.0.1:%d/ && exit 0; sleep 0.1; done; exit 1" % port)
    assert code == 0, out
    return r.json()["process_id"]


def test_devtools_answers_after_the_first_command(svc):
    tid, took = new_browser_thread(svc)
    print("Chromium's /json/version answered %.1f s after the first command" % took)
    svc.request("alice", "DELETE", "/api/threads/" + tid)


def test_services_in_the_thread_record(svc, box):
    st = wait_services(svc, box)
    assert list(st) == ["display", "chromium", "vnc", "novnc"]
    assert st["chromium"]["ready_port"] == 9222 and st["chromium"]["state"] == "ready"
    assert st["novnc"]["ready_port"] == 6080 and st["novnc"]["state"] == "ready"
    assert st["display"]["ready_port"] is None and st["display"]["state"] == "running"
    for s in st.values():
        assert s["process_id"] == "svc-" + s["name"]
        assert isinstance(s["pid"], int) and s["pid"] > 1
        assert s["since"].endswith("Z") and s["restarts"] >= 0
    r = svc.request("alice", "GET", "/api/services?thread_id=" + box)
    assert r.status_code == 200
    assert [s["name"] for s in r.json()["services"]] == list(st)
    # a thread of another profile has none
    tid = svc.new_thread("alice", agent_id="coder")
    assert "services" not in svc.request("alice", "GET", "/api/threads/" + tid).json()
    assert svc.request("alice", "GET", "/api/services?thread_id=" + tid).json() == \
        {"services": []}


def test_services_stopped_without_a_sandbox(svc):
    tid = "t%s" % os.urandom(6).hex()
    r = svc.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "browser"})
    assert r.status_code == 201
    st = services(svc, tid)
    assert [s["state"] for s in st.values()] == ["stopped"] * 4
    r = svc.request("alice", "GET", "/api/services/chromium/output?thread_id=" + tid)
    assert r.status_code == 200 and r.json()["state"] == "lost" and r.json()["data"] == ""


def test_screenshot_of_a_page_served_in_the_box(svc, box):
    write(svc, box, UD + "/workspace/page.html", PAGE)
    pid = serve_workspace(svc, box)
    url = "http://127.0.0.1:8000/page.html"
    out, code = sh(svc, box, "yuxi-cdp screenshot %s %s/outputs/page.png" % (url, UD))
    assert code == 0, out
    out, code = sh(svc, box, "yuxi-cdp eval %s document.title" % url)
    assert code == 0 and out.strip() == '"yuxi browser test"', out
    out, code = sh(svc, box, "yuxi-cdp dom %s" % url)
    assert code == 0 and "served in the box" in out, out
    r = svc.request("alice", "GET", "/api/filesystem/download?thread_id=%s&path=%s"
                    % (box, UD + "/outputs/page.png"))
    assert r.status_code == 200, r.text
    img = pngcheck.decode(r.content)
    w, h = img[0], img[1]
    # the viewport: the window's width less its border, below the tab bar
    assert 1270 <= w <= 1280 and 500 <= h <= 800, (w, h)
    assert pngcheck.near(pngcheck.pixel(img, 20, 20), (0xff, 0x66, 0x00)), \
        pngcheck.pixel(img, 20, 20)
    assert pngcheck.near(pngcheck.pixel(img, 290, 190), (0xff, 0x66, 0x00))
    assert pngcheck.near(pngcheck.pixel(img, 310, 20), (0x1e, 0x90, 0xff))
    assert pngcheck.near(pngcheck.pixel(img, 1000, 450), (0x1e, 0x90, 0xff))
    # the text was drawn (white pixels where the marker stands)
    white = sum(1 for y in range(300, 360) for x in range(400, 900, 2)
                if pngcheck.near(pngcheck.pixel(img, x, y), (255, 255, 255), 40))
    assert white > 300, white
    # ... and the two CJK glyphs after it (fonts-noto-cjk), right of the Latin
    cjk = sum(1 for y in range(300, 360) for x in range(700, 900)
              if pngcheck.near(pngcheck.pixel(img, x, y), (255, 255, 255), 40))
    assert cjk > 100, cjk
    svc.request("alice", "DELETE", "/api/processes/%s?thread_id=%s" % (pid, box))


WS_PROBE = r'''
import base64, os, socket
s = socket.create_connection(("127.0.0.1", 6080), timeout=10)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /websockify HTTP/1.1\r\nHost: 127.0.0.1:6080\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Protocol: binary\r\n\r\n" % key).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(4096)
head, rest = buf.split(b"\r\n\r\n", 1)
print(head.split(b"\r\n")[0].decode())
while len(rest) < 14:
    rest += s.recv(4096)
n = rest[1] & 127
print(rest[2:2 + n].decode().strip())
'''


def test_novnc_and_its_websocket_in_the_box(svc, box):
    out, code = sh(svc, box, "curl -sf --noproxy '*' http://127.0.0.1:6080/vnc.html")
    assert code == 0 and "noVNC" in out, out[:300]
    write(svc, box, UD + "/workspace/wsprobe.py", WS_PROBE)
    out, code = sh(svc, box, "python3 wsprobe.py")
    assert code == 0, out
    status, greeting = out.splitlines()[:2]
    assert status.startswith("HTTP/1.1 101"), out
    assert greeting.startswith("RFB 003.00"), out


def test_service_output_as_a_process_output(svc, box):
    base = "/api/services/%s/output?thread_id=" + box
    r = svc.request("alice", "GET", base % "novnc")
    assert r.status_code == 200, r.text
    o = r.json()
    assert o["state"] == "running" and o["running"] is True and o["offset"] == 0
    assert "yuxi-agent: service novnc: started" in o["data"]
    assert "ready (port 6080)" in o["data"] and "Listen on 127.0.0.1:6080" in o["data"]
    # from next_offset: nothing new, at once; a long-poll gets what comes
    r = svc.request("alice", "GET", (base % "vnc") + "&offset=0&max_bytes=10")
    assert r.status_code == 200 and len(r.json()["data"]) <= 10
    assert r.json()["next_offset"] == len(r.json()["data"].encode())
    for bad in ("nope", "Chromium", "svc-chromium", "x" * 40):
        r = svc.request("alice", "GET", base % bad)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", bad


def kill_and_wait(svc, tid, command, name, port):
    """Run command in the box, then wait until service name is ready again
    with one restart more and its port answers inside; seconds taken."""
    before = services(svc, tid)[name]["restarts"]
    t0 = time.monotonic()
    out, code = sh(svc, tid, command)
    assert code == 0, out
    wait_services(svc, tid, [name], restarts={name: before + 1})
    out, code = sh(svc, tid, LISTENING % port)
    assert code == 0, out
    return time.monotonic() - t0


# exits 0 once something accepts on 127.0.0.1:PORT (10 s at most)
LISTENING = ("python3 -c 'import socket, sys, time\n"
             "for i in range(100):\n"
             "    try: socket.create_connection((\"127.0.0.1\", %d), 1).close(); sys.exit(0)\n"
             "    except OSError: time.sleep(0.1)\n"
             "sys.exit(1)'")


def test_a_service_killed_inside_comes_back(svc):
    tid, _ = new_browser_thread(svc)
    took = {}
    # the service's processes: its loop starts it again
    took["chromium"] = kill_and_wait(svc, tid, "pkill -9 -x chromium", "chromium", 9222)
    out = svc.request("alice", "GET", "/api/services/chromium/output?thread_id=" + tid)
    assert "exited with status 137" in out.json()["data"], out.json()["data"][-2000:]
    assert "starting again in 0.5 s" in out.json()["data"]
    assert services(svc, tid)["chromium"]["last_exit_code"] == 137
    # its loop: the keeper's process ends, the supervisor starts a keeper
    took["vnc loop"] = kill_and_wait(
        svc, tid, "pkill -9 -f '^/opt/yuxi/bin/yuxi-agent --service vnc '", "vnc", 5900)
    # its keeper: the supervisor starts it again
    took["novnc keeper"] = kill_and_wait(
        svc, tid, "kill -9 $(ps -o ppid= -p $(pgrep -f '^/opt/yuxi/bin/yuxi-agent --service "
        "novnc '))", "novnc", 6080)
    # the agent daemon and the supervisor: services keep running; a keeper
    # killed then comes back once the next command started the agent
    out, code = sh(svc, tid, "s=$(pgrep -x yuxi-services); d=$(ps -o ppid= -p $s); "
                   "kill -9 $s $d; kill -9 $(ps -o ppid= -p $(pgrep -f "
                   "'^/opt/yuxi/bin/yuxi-agent --service display '))")
    assert code == 0, out
    took["agent, then display's keeper"] = kill_and_wait(svc, tid, "true", "display", 9222)
    out, _ = sh(svc, tid, "pgrep -x yuxi-services | wc -l")
    assert out.strip() == "1", out
    print("back after: " + ", ".join("%s %.1f s" % kv for kv in took.items()))
    svc.request("alice", "DELETE", "/api/threads/" + tid)


def box_processes(cid):
    """Host pids whose cgroup names the container."""
    left = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cgroup" % p) as f:
                    if cid in f.read():
                        left.append(int(p))
            except OSError:
                pass
    return left


def test_delete_leaves_no_process(svc):
    tid, _ = new_browser_thread(svc)
    name = svc.request("alice", "GET", "/api/threads/" + tid).json()["sandbox"]["container"]
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True,
                         text=True).stdout.strip()
    assert len(cid) == 64
    before = box_processes(cid)
    assert len(before) > 15, before	# Xvfb, Chromium's, x11vnc, websockify, agents
    r = svc.request("alice", "DELETE", "/api/threads/" + tid)
    assert r.status_code == 204, r.text
    assert box_processes(cid) == []
    assert subprocess.run(["docker", "inspect", name], capture_output=True).returncode != 0


@pytest.mark.skipif(not yxsvc.engine_has_runsc(), reason="the engine has no runsc runtime")
def test_under_gvisor(factory, tmp_path):
    s = factory(YUXI_AGENTS_FILE=agents_file(tmp_path, runtime="runsc"))
    tid, took = new_browser_thread(s)
    print("runsc: Chromium answered %.1f s after the first command" % took)
    out, _ = sh(s, tid, "dmesg 2>/dev/null | head -1; cat /proc/version")
    assert "gVisor" in out or "Starting gVisor" in out, out
    write(s, tid, UD + "/workspace/page.html", PAGE)
    serve_workspace(s, tid)
    out, code = sh(s, tid, "yuxi-cdp screenshot http://127.0.0.1:8000/page.html "
                   "%s/outputs/g.png" % UD)
    assert code == 0, out
    r = s.request("alice", "GET", "/api/filesystem/download?thread_id=%s&path=%s"
                  % (tid, UD + "/outputs/g.png"))
    img = pngcheck.decode(r.content)
    assert pngcheck.near(pngcheck.pixel(img, 20, 20), (0xff, 0x66, 0x00))
    out, code = sh(s, tid, "curl -sf --noproxy '*' http://127.0.0.1:6080/vnc.html | grep -c noVNC")
    assert code == 0, out
