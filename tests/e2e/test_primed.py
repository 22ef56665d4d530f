# SPDX-License-Identifier: MIT
"""Primed shells (docs/agent.md "Primed shells") through the real service,
on the default image, whose /bin/sh is dash (the one shell the agent
primes; skipped when that image is not built):

- a command of a warm sandbox runs in a shell that was started before the
  request was sent (its start time in /proc/$$/stat lies before it), and a
  command too long to be primed in one started for it: the test sees both
  paths, so the comparisons below compare the two;
- what a primed command sees is what "/bin/sh -c" gives it: the answer to a
  probe of $-, $0, $#, LINENO, the environment and shell variables, the
  directory, umask, descriptors, stdin, error messages and exit status is
  the same, byte for byte, as the answer to the same probe made too long to
  be primed;
- a first line that does not parse is reported once, as the spawned shell
  reports it; a command runs once; a heredoc, a timeout (the whole group
  killed), 1 MiB of output and a background job killed at the end behave
  as when spawned;
- the host's pipe, writable by others so that a primed shell can reopen
  it, cannot be opened for reading from the sandbox.

The command path policy is off in this instance so that the probes may
read /proc.
"""
import time

import pytest

from conftest import Service, engine_up
from yxsvc import image_present

IMAGE = "yuxi-sandbox:latest"
# longer than the longest command a primed shell takes (one atomic pipe
# write): such a command is always spawned
PAD = "\n#" + "x" * 4200

pytestmark = pytest.mark.skipif(not engine_up() or not image_present(IMAGE),
                                reason="no engine or default image")

PROBE = r"""echo "[$-] $0 $# $LINENO"
env | sort
set | grep -v -e '^PPID=' | sort
pwd; echo "PWD=$PWD OLDPWD=${OLDPWD-unset}"; umask
ls -l /proc/self/fd > fds.txt; awk 'NR > 1 {print $9, $10, $11}' fds.txt | sed -e 's/pipe:\[[0-9]*\]/pipe/' -e 's|/proc/[0-9]*/fd|/proc/N/fd|'
cat; echo "cat=$?"
trap; (exit 3); echo "sub=$?"
nosuch_command_xyz
echo "line $LINENO"; exit 7"""

AGE = r"""awk '{print $22}' /proc/$$/stat; cut -d' ' -f1 /proc/uptime; getconf CLK_TCK"""


@pytest.fixture(scope="module")
def svc():
    s = Service(stem="qyxpm", overrides={"YUXI_SANDBOX_IMAGE": IMAGE,
                                         "YUXI_EXEC_AGENT": "only",
                                         "YUXI_COMMAND_PATH_POLICY": "off"})
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tid(svc):
    t = svc.new_thread()
    for _ in range(3):      # the sandbox, then spares that know the key
        assert run(svc, t, "true")["exit_code"] == 0
    return t


def run(svc, tid, command, timeout=None):
    body = {"thread_id": tid, "command": command}
    if timeout is not None:
        body["timeout"] = timeout
    r = svc.request("alice", "POST", "/api/execute", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def settled(svc, tid, command, timeout=None):
    """Run command after the spares have had time to start their shells."""
    time.sleep(0.4)
    return run(svc, tid, command, timeout)


def shell_age(svc, tid, pad=""):
    """Seconds between the start of the command's shell and its answer."""
    j = settled(svc, tid, AGE + pad)
    start, uptime, hz = j["output"].split()
    return float(uptime) - int(start) / int(hz)


def test_a_warm_sandbox_runs_commands_in_primed_shells(svc, tid):
    primed = [shell_age(svc, tid) for _ in range(3)]
    spawned = [shell_age(svc, tid, PAD) for _ in range(3)]
    # spares start their shells as soon as they are forked, >= 0.4 s before
    assert min(primed) >= 0.25, (primed, spawned)
    assert max(spawned) < 0.2, (primed, spawned)


def test_a_primed_shell_is_what_sh_c_gives(svc, tid):
    for _ in range(2):
        primed = settled(svc, tid, PROBE)
        spawned = settled(svc, tid, PROBE + PAD)
        assert primed["exit_code"] == 7
        assert primed["output"] == spawned["output"]
        assert primed["exit_code"] == spawned["exit_code"]
    out = primed["output"]
    assert out.startswith("[] /bin/sh 0 ")
    # the command inherits 0, 1 and 2 only (ls's own: 1 its file, 3 /proc)
    assert "0 -> /dev/null\n1 -> /home/yuxi/user-data/workspace/fds.txt\n2 -> pipe\n3 -> " in out
    assert "\n4 -> " not in out
    assert "cat=0\n" in out and "sub=3\n" in out and "OLDPWD=unset" in out
    assert "/bin/sh: 8: nosuch_command_xyz: not found\n" in out
    assert out.endswith("line \n") or out.endswith("line 9\n")


def test_a_first_line_that_does_not_parse_is_reported_once(svc, tid):
    bad = "echo never >> runs.txt; )\necho never2 >> runs.txt"
    primed = settled(svc, tid, bad)
    spawned = settled(svc, tid, bad + PAD)
    assert primed == dict(spawned, duration_ms=primed["duration_ms"])
    assert primed["exit_code"] == 2
    assert primed["output"] == '/bin/sh: 1: Syntax error: ")" unexpected\n'
    assert settled(svc, tid, "cat runs.txt 2>&1; true")["output"].endswith(
        "No such file or directory\n")


def test_a_command_runs_once(svc, tid):
    for i in range(5):
        assert settled(svc, tid, f"echo {i} >> once.txt")["exit_code"] == 0
    assert run(svc, tid, "cat once.txt")["output"] == "0\n1\n2\n3\n4\n"


def test_heredoc_timeout_output_and_jobs_as_spawned(svc, tid):
    here = "cat <<EOF\nline one\n$((6 * 7))\nEOF\necho after"
    assert settled(svc, tid, here)["output"] == "line one\n42\nafter\n"
    t0 = time.monotonic()
    j = settled(svc, tid, "sleep 30 & sleep 30; echo never", timeout=1)
    assert j["timed_out"] is True and j["exit_code"] == 124
    assert time.monotonic() - t0 < 10
    big = settled(svc, tid, "head -c 1048576 /dev/zero | tr '\\0' a; echo; echo end")
    assert big["output"].endswith("end\n") or big["truncated"] is True
    # a job left behind is killed with the group when the shell exits
    j = settled(svc, tid, "sleep 60 & echo $! > job.pid")
    assert j["exit_code"] == 0
    j = settled(svc, tid, "kill -0 $(cat job.pid) 2>/dev/null && echo alive || echo gone")
    assert j["output"] == "gone\n"


def test_the_sandbox_cannot_open_the_hosts_pipe_for_reading(svc, tid):
    for pad in ("", PAD):
        j = settled(svc, tid, "(exec 3</proc/$$/fd/1) && echo opened; "
                    "(exec 3<>/proc/$$/fd/1) && echo opened; "
                    "echo x >/proc/$$/fd/1 && echo wrote" + pad)
        assert "opened" not in j["output"], j
        assert j["output"].count("Permission denied") == 2, j
        assert j["output"].endswith("x\nwrote\n"), j
