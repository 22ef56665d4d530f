"""Group 7: confinement, checked from inside the container (docs/security.md).

One probe script runs as an ordinary command through POST /api/execute and
reports what the command can see: effective and bounding capabilities,
no_new_privs, the seccomp mode, the uid, whether the root filesystem is
mounted read-only, the /tmp tmpfs size and whether writing past it fails,
network interfaces and routes, any container-engine socket, the open file
descriptors of a command (`ls -l /proc/self/fd`: only 0, 1, 2 and ls's own
directory handle) and whether any skill mount is writable.

Controls (each check must fail there):
- a second service with the weakening YUXI_* settings:
  YUXI_SANDBOX_READONLY_ROOTFS=0, YUXI_SANDBOX_NETWORK=bridge (only the
  presence of an interface is checked; nothing is sent),
  YUXI_SANDBOX_TMP_SIZE=256m, YUXI_SANDBOX_SECURITY_OPTS=seccomp=unconfined;
- a container made directly with a weakened spec (root user with the
  engine's default capabilities, no no-new-privileges, the engine socket
  bind-mounted read-only, a writable skill copy), probed with docker exec;
- for descriptors, the same probe in a shell holding an extra descriptor.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

import prooffix as P
from prooffix import stats

G = 7
TMP_MB = 64

PROBE = r"""
st=/proc/self/status
echo "capeff=$(awk '/^CapEff:/{print $2}' $st)"
echo "capbnd=$(awk '/^CapBnd:/{print $2}' $st)"
echo "nnp=$(awk '/^NoNewPrivs:/{print $2}' $st)"
echo "seccomp=$(awk '/^Seccomp:/{print $2}' $st)"
echo "uid=$(id -u)"
echo "rootopts=$(awk '$2=="/"{print $4}' /proc/mounts)"
echo "tmpopts=$(awk '$2=="/tmp"{print $4}' /proc/mounts)"
dd if=/dev/zero of=/tmp/yxfill bs=1048576 count=%(fill)d 2>/dev/null
echo "tmpfill_kb=$(du -k /tmp/yxfill | cut -f1)"
rm -f /tmp/yxfill
echo "ifaces=$(ls /sys/class/net | tr '\n' ' ')"
echo "routes=$(tail -n +2 /proc/net/route | wc -l)"
for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock \
    /var/run/containerd/containerd.sock /run/podman/podman.sock; do
	[ -e "$s" ] && echo "enginesock=$s"
done
echo "dockerhost=${DOCKER_HOST:-}"
ls -l /proc/self/fd | sed -n 's/^.* \([0-9][0-9]*\) -> \(.*\)$/fd=\1 \2/p'
for d in /home/yuxi/skills/*; do
	[ -d "$d" ] || continue
	if touch "$d/.yxprobe" 2>/dev/null; then echo "skillw=$d"; rm -f "$d/.yxprobe"; fi
done
echo "skills=$(ls /home/yuxi/skills | tr '\n' ' ')"
echo probe-done
"""


def probe_script():
    return PROBE % {"fill": TMP_MB + 8}


def parse(out):
    kv = {"fd": [], "enginesock": [], "skillw": []}
    for line in out.splitlines():
        k, sep, v = line.partition("=")
        if not sep:
            continue
        if k in kv and isinstance(kv[k], list):
            kv[k].append(v)
        else:
            kv[k] = v
    assert "probe-done" in out, out
    return kv


def verdict(kv):
    """{check: True when confined}."""
    def fds_ok():
        for e in kv["fd"]:
            num, _, target = e.partition(" ")
            if num in ("0", "1", "2"):
                continue
            if target.startswith("/proc/") and target.endswith("/fd"):
                continue  # ls's own handle on the directory it lists
            return False
        return True
    opts = kv.get("rootopts", "").split(",")
    tmpopts = kv.get("tmpopts", "")
    size_kb = None
    for o in tmpopts.split(","):
        if o.startswith("size="):
            v = o[5:]
            mult = {"k": 1, "m": 1024, "g": 1024 * 1024}.get(v[-1:].lower(), None)
            size_kb = int(v[:-1]) * mult if mult else int(v) // 1024
    fill = int(kv.get("tmpfill_kb") or 0)
    return {
        "capabilities": int(kv.get("capeff", "1"), 16) == 0 and int(kv.get("capbnd", "1"), 16) == 0,
        "no_new_privs": kv.get("nnp") == "1",
        "seccomp": kv.get("seccomp") == "2",
        "non_root": kv.get("uid") not in (None, "", "0"),
        "readonly_root": "ro" in opts,
        "tmpfs_size": size_kb is not None and size_kb <= TMP_MB * 1024
        and fill <= TMP_MB * 1024,
        "no_network": kv.get("ifaces", "").split() == ["lo"] and kv.get("routes") == "0",
        "no_engine_socket": not kv["enginesock"] and not kv.get("dockerhost"),
        "no_inherited_fds": fds_ok(),
        "skills_readonly": not kv["skillw"],
    }


pytestmark = pytest.mark.skipif(not P.image_present(P.TEST_IMAGE),
                                reason="image %s not built" % P.TEST_IMAGE)


def service(**weak):
    env = {"YUXI_COMMAND_PATH_POLICY": "off", "YUXI_SANDBOX_TMP_SIZE": "%dm" % TMP_MB}
    env.update(weak)
    return P.ProofService("prod", "dev", **env).start()


def test_confined_prod():
    svc = service()
    try:
        tid = svc.new_thread()
        kv = parse(svc.run(tid, probe_script(), timeout=60)["output"])
        v = verdict(kv)
        print("prod probe:", kv, v)
        for k, ok in v.items():
            stats.case(G, k + " " + str({kk: kv.get(kk) for kk in kv if kk[:3] == k[:3]}),
                       escapes=not ok)
        # the skills the API shows are the ones mounted, and they exist
        assert kv["skills"].split(), kv
        assert all(v.values()), {k: ok for k, ok in v.items() if not ok}
    finally:
        svc.stop()


def test_control_weak_settings():
    svc = service(YUXI_SANDBOX_READONLY_ROOTFS="0", YUXI_SANDBOX_NETWORK="bridge",
                  YUXI_SANDBOX_TMP_SIZE="256m",
                  YUXI_SANDBOX_SECURITY_OPTS="seccomp=unconfined")
    try:
        tid = svc.new_thread()
        kv = parse(svc.run(tid, probe_script(), timeout=60)["output"])
        v = verdict(kv)
        print("weak-settings probe:", kv, v)
        for k in ("readonly_root", "no_network", "tmpfs_size", "seccomp"):
            stats.control(G, not v[k], "YUXI setting weakens " + k)
        assert not any(v[k] for k in ("readonly_root", "no_network", "tmpfs_size", "seccomp")), v
    finally:
        svc.stop()


def test_control_weak_container():
    name = "yxpf%dw-weak" % os.getpid()
    skills = tempfile.mkdtemp(prefix="yxpf-skills-")
    os.makedirs(os.path.join(skills, "rwskill"))
    os.chmod(os.path.join(skills, "rwskill"), 0o777)
    sock = "/var/run/docker.sock"
    cmd = ["docker", "run", "-d", "--name", name, "--network", "none", "--user", "0",
           "--tmpfs", "/tmp:size=%dm" % TMP_MB,
           "-v", "%s/rwskill:/home/yuxi/skills/rwskill" % skills,
           P.TEST_IMAGE, "tail", "-f", "/dev/null"]
    if os.path.exists(sock):
        cmd[3:3] = ["-v", "%s:/var/run/docker.sock:ro" % sock]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["docker", "exec", name, "sh", "-c", probe_script()],
                           capture_output=True, text=True, timeout=120)
        kv = parse(r.stdout)
        v = verdict(kv)
        print("weak-container probe:", kv, v)
        checks = ["capabilities", "no_new_privs", "non_root", "skills_readonly"]
        if os.path.exists(sock):
            checks.append("no_engine_socket")
        for k in checks:
            stats.control(G, not v[k], "weak container breaks " + k)
        assert not any(v[k] for k in checks), v
        # descriptors: a shell that holds one more must be caught
        r = subprocess.run(["docker", "exec", name, "sh", "-c",
                            "exec 7</dev/null; " + probe_script()],
                           capture_output=True, text=True, timeout=120)
        v = verdict(parse(r.stdout))
        stats.control(G, not v["no_inherited_fds"], "extra descriptor caught")
        assert not v["no_inherited_fds"]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)
        shutil.rmtree(skills, ignore_errors=True)
