# SPDX-License-Identifier: MIT
"""The sandbox's network as a command sees it (docs/design.md §3).

With network mode `none` the Engine API driver asks the engine for no network
at all (Config.NetworkDisabled) and mounts the service's own /etc/hosts; the
`docker` CLI driver cannot, and keeps the engine's setup of mode `none`. From
inside, both must look the same: only `lo`, up; no route; loopback works; the
same /etc/hosts, read-only. The one difference is `::1` on `lo` (configured by
the runtime, not by the engine), which is printed, not compared."""
import base64
import json
import subprocess

import pytest

from conftest import engine_up

pytestmark = pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")

HOSTS = ("127.0.0.1\tlocalhost\n"
         "::1\tlocalhost ip6-localhost ip6-loopback\n"
         "fe00::0\tip6-localnet\n"
         "ff00::0\tip6-mcastprefix\n"
         "ff02::1\tip6-allnodes\n"
         "ff02::2\tip6-allrouters\n")

# Absolute paths outside the sandbox are refused in a command line: the
# script goes in base64.
SCRIPT = """
echo "ifaces=$(ls /sys/class/net | tr '\\n' ' ')"
echo "loflags=$(cat /sys/class/net/lo/flags)"
echo "routes=$(tail -n +2 /proc/net/route | wc -l)"
echo "inet6=$(grep -c . /proc/net/if_inet6)"
echo "hosts=$(base64 /etc/hosts | tr -d '\\n')"
if (echo x >> /etc/hosts) 2>/dev/null; then echo hostsw=yes; else echo hostsw=no; fi
(for j in 1 2 3 4 5 6 7 8 9 10; do echo pong | nc -l -p 18999 >/dev/null; done &)
i=0; got=""
while [ $i -lt 50 ] && [ -z "$got" ]; do
  got=$(echo ping | nc 127.0.0.1 18999 2>/dev/null); i=$((i + 1)); sleep 0.1
done
echo "loopback=$got"
"""


def inside(s):
    tid = s.new_thread()
    cmd = "echo %s | base64 -d | sh" % base64.b64encode(SCRIPT.encode()).decode()
    r = s.execute(tid, cmd)
    assert r.status_code == 200, r.text
    out = r.json()["output"]
    kv = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    (cid, _), = s.containers(thread=tid)
    info = json.loads(subprocess.run(["docker", "inspect", cid], capture_output=True,
                                     text=True, check=True).stdout)[0]
    return kv, info


def test_no_engine_network_looks_like_mode_none(factory):
    api = factory(YUXI_DOCKER_DRIVER="api")
    cli = factory(YUXI_DOCKER_DRIVER="cli")
    seen = {}
    for name, s in (("api", api), ("cli", cli)):
        kv, info = inside(s)
        print("%s: NetworkDisabled=%s NetworkMode=%s %s" % (
            name, info["Config"].get("NetworkDisabled"), info["HostConfig"]["NetworkMode"],
            {k: v for k, v in kv.items() if k != "hosts"}))
        assert info["HostConfig"]["NetworkMode"] == "none"
        assert bool(info["Config"].get("NetworkDisabled")) == (name == "api")
        assert kv["ifaces"].split() == ["lo"], kv
        assert int(kv["loflags"], 16) & 1, kv  # IFF_UP
        assert kv["routes"] == "0", kv
        assert base64.b64decode(kv["hosts"]).decode() == HOSTS, kv
        assert kv["hostsw"] == "no", kv
        assert kv["loopback"] == "pong", kv
        seen[name] = {k: kv[k] for k in ("ifaces", "loflags", "routes", "hosts", "hostsw",
                                         "loopback")}
    assert seen["api"] == seen["cli"], seen
