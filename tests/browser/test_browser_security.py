# SPDX-License-Identifier: MIT
"""The browser profile's attack surface (docs/security.md "Browser
sandboxes"): what is new is reachable by nobody new.

- Another user: bob's requests for alice's browser thread - its services,
  their output, the thread record - answer 404 like every route. Control:
  the control daemon with YX_CONTROL_OFF=procowner (the process routes skip
  the owner check): bob reads alice's Chromium output.
- The service state files are the sandbox's: the host reads svc.<name>
  beneath the agent directory's descriptor, no symlink followed, a regular
  file of the sandbox's uid. A symlink planted in place of svc.display to a
  host file shaped like a state line is not read (the state is "unknown").
  Control: YX_CONTROL_OFF=svcstate (a plain open that follows symlinks):
  the host file's restarts=4242 shows in the thread record.
- services.conf, written by the host into the agent directory: a symlink
  the sandbox plants in its place, pointing at a host file, is removed with
  the directory's other entries before the next container starts and the
  file is written beside it, never through it (the host file is unchanged).
- From the box nothing new is reachable: the services listen on 127.0.0.1
  only, the box's only interface is lo, a connection to the host's nginx
  port from inside fails (the box's loopback is its own), and Chromium
  reaches the web only through the egress proxy, which refuses a name
  outside the allowlist (the allowlist's own controls are in
  tests/security/test_egress.py).
"""
import os
import subprocess

from conftest import agents_file, new_browser_thread, services, sh, wait_services

RUN = "/opt/yuxi/run"	# the agent directory inside


def container_id(s, tid):
    name = s.request("alice", "GET", "/api/threads/" + tid).json()["sandbox"]["container"]
    if not name:
        return ""
    return subprocess.run(["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True,
                          text=True).stdout.strip()


def test_another_user_cannot_reach_the_services(svc, box):
    for path in ("/api/threads/" + box, "/api/services?thread_id=" + box,
                 "/api/services/chromium/output?thread_id=" + box,
                 "/api/services/novnc/output?thread_id=%s&wait_ms=1000" % box):
        r = svc.request("bob", "GET", path)
        assert r.status_code == 404, (path, r.status_code, r.text)
        assert "chromium" not in r.text
        r = svc.request(None, "GET", path)
        assert r.status_code == 401, (path, r.status_code)


def test_control_procowner_leaks_service_output(factory, tmp_path):
    s = factory(control_off="procowner", YUXI_AGENTS_FILE=agents_file(tmp_path))
    tid, _ = new_browser_thread(s)
    r = s.request("bob", "GET", "/api/services/chromium/output?thread_id=" + tid)
    leaked = r.status_code == 200 and "service chromium: started" in r.json()["data"]
    assert leaked, (r.status_code, r.text[:300])


PLANTED = "state=ready pid=4242 restarts=4242 code=-1 since=1\n"


def plant_state_symlink(s, tmp_path):
    """A browser thread whose svc.display is a symlink to a host file
    shaped like a state line (outside every sandbox); its services."""
    host = tmp_path / "planted-state"
    host.write_text(PLANTED)
    os.chmod(str(tmp_path), 0o755)
    tid, _ = new_browser_thread(s)
    # stop display's loop from writing its state again: its keeper goes
    # (SIGSTOP), then the name becomes the symlink
    out, code = sh(s, tid, "l=$(pgrep -f '^/opt/yuxi/bin/yuxi-agent --service display '); "
                   "kill -STOP $(ps -o ppid= -p $l) $l $(pgrep -x yuxi-services); "
                   "ln -sfn %s %s/svc.display && ls -l %s/svc.display"
                   % (host, RUN, RUN))
    assert code == 0 and "->" in out, out
    return tid, services(s, tid)


def test_state_file_symlink_is_not_followed(factory, tmp_path):
    s = factory(YUXI_AGENTS_FILE=agents_file(tmp_path), YUXI_COMMAND_PATH_POLICY="off")
    tid, st = plant_state_symlink(s, tmp_path)
    assert st["display"]["restarts"] != 4242 and st["display"]["state"] == "unknown", st
    assert st["chromium"]["state"] == "ready", st	# the others as they are


def test_control_svcstate_follows_the_symlink(factory, tmp_path):
    s = factory(control_off="svcstate", YUXI_AGENTS_FILE=agents_file(tmp_path),
                YUXI_COMMAND_PATH_POLICY="off")
    tid, st = plant_state_symlink(s, tmp_path)
    assert st["display"]["restarts"] == 4242 and st["display"]["pid"] == 4242, st


def test_services_conf_symlink_is_never_written_through(factory, tmp_path):
    s = factory(YUXI_AGENTS_FILE=agents_file(tmp_path), YUXI_COMMAND_PATH_POLICY="off")
    victim = tmp_path / "victim"
    victim.write_text("host file\n")
    os.chmod(str(tmp_path), 0o755)
    tid, _ = new_browser_thread(s)
    # plant the symlink, then have the box removed (the admin route): the
    # next command gets a new container, whose services.conf is written anew
    out, code = sh(s, tid, "ln -sfn %s %s/services.conf.new && mv -f %s/services.conf.new "
                   "%s/services.conf && ls -l %s/services.conf"
                   % (victim, RUN, RUN, RUN, RUN))
    assert code == 0 and "->" in out, out
    old = container_id(s, tid)
    sid = s.request("alice", "GET", "/api/threads/" + tid).json()["sandbox"]["sandbox_id"]
    r = s.request("admin", "DELETE", "/api/admin/sandboxes/" + sid)
    assert r.status_code in (200, 204), r.text
    sh(s, tid, "true")	# a new container: its agent directory emptied first
    assert container_id(s, tid) not in ("", old)
    wait_services(s, tid)
    assert victim.read_text() == "host file\n"
    out, _ = sh(s, tid, "ls -l %s/services.conf; head -c 15 %s/services.conf" % (RUN, RUN))
    assert "->" not in out and "yuxi-services=1" in out, out


def test_nothing_new_is_reachable_from_the_box(svc, box):
    # listening sockets: all on 127.0.0.1 (/proc/net/tcp, local 0100007F)
    out, code = sh(svc, box, "awk 'NR>1 && $4==\"0A\" {print $2}' /proc/net/tcp /proc/net/tcp6")
    assert code == 0, out
    ports = {int(a.split(":")[1], 16): a.split(":")[0] for a in out.split()}
    for p in (9222, 5900, 6080, 3128):
        assert p in ports, (p, out)
    assert all(a in ("0100007F", "00000000000000000000000001000000") for a in ports.values()), out
    # the only interface is lo
    out, _ = sh(svc, box, "ls /sys/class/net")
    assert out.split() == ["lo"], out
    # the host's nginx port is not the box's
    port = int(svc.origin.rsplit(":", 1)[1])
    out, code = sh(svc, box, "curl -sk --noproxy '*' -m 3 https://127.0.0.1:%d/healthz; "
                   "echo rc=$?" % port)
    assert "rc=7" in out, out
    # Chromium goes through the egress proxy: a name off the allowlist is
    # refused there (the proxy's 403 page is what the tab shows)
    out, code = sh(svc, box, "yuxi-cdp eval http://denied.test/ "
                   "document.body.innerText")
    assert "yuxi egress proxy" in out or "ERR_TUNNEL" in out or "403" in out, out
