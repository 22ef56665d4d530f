# SPDX-License-Identifier: MIT
"""Primed shells (docs/agent.md "Primed shells") through the real service,
on the default image, whose /bin/sh is dash (the one shell the agent
primes; skipped when that image is not built). Which path a command took
is read from its own shell's command line: "/bin/sh -s" for a primed
shell, "/bin/sh -c CMD" for one spawned for it.

- a warm sandbox's commands run in primed shells; a command too long to be
  primed, or one that could move the shell's stdin (exec, eval, source,
  the dot command), in one spawned for it;
- what a primed command sees is what "/bin/sh -c" gives it: the answer to a
  probe of $-, $0, $#, LINENO, the environment and shell variables, the
  directory, umask, descriptors, stdin, error messages and exit status is
  the same, byte for byte, as the answer to the same probe made too long to
  be primed;
- a command that moves its stdin (`exec <file`, also from a sourced file)
  reads the file as data, never runs it as script;
- a first line that does not parse is reported once, as the spawned shell
  reports it, and such commands in a row do not turn priming off; a command
  runs once; a heredoc, a timeout (the whole group killed), 1 MiB of
  output and a background job killed at the end behave as when spawned;
- the host's pipe, writable by others so that a primed shell can reopen
  it, cannot be opened for reading from the sandbox; a sandbox of the
  shared user (YUXI_SANDBOX_UID_RANGE=off) gets a pipe of mode 0600 (its
  uid may be a host account's) and no primed shell.

The command path policy is off in this instance so that the probes may
read /proc.
"""
import os
import time

import pytest

from conftest import Service, engine_up
from yxsvc import image_present

IMAGE = "yuxi-sandbox:latest"
RUNSC = os.environ.get("YUXI_TEST_RUNTIME") == "runsc"
# longer than the longest command a primed shell takes (one atomic pipe
# write): such a command is always spawned
PAD = "\n#" + "x" * 4200

pytestmark = pytest.mark.skipif(not engine_up() or not image_present(IMAGE),
                                reason="no engine or default image")

PROBE = r"""tr '\0' ' ' </proc/$$/cmdline | head -c 10; echo
echo "[$-] $0 $# $LINENO"
env | sort
set | grep -v -e '^PPID=' | sort
pwd; echo "PWD=$PWD OLDPWD=${OLDPWD-unset}"; umask
ls -l /proc/self/fd > fds.txt; awk 'NR > 1 {print $9, $10, $11}' fds.txt | sed -e 's/pipe:\[[0-9]*\]/pipe/' -e 's|/proc/[0-9]*/fd|/proc/N/fd|'
cat; echo "cat=$?"
trap; (exit 3); echo "sub=$?"
nosuch_command_xyz
echo "line $LINENO"; exit 7"""

# appended to a command: which shell ran it
SHELL = r"""; tr '\0' ' ' </proc/$$/cmdline | head -c 10; echo"""
PRIMED = "/bin/sh -s\n"
SPAWNED = "/bin/sh -c\n"



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



def test_a_warm_sandbox_runs_commands_in_primed_shells(svc, tid):
    for _ in range(3):
        assert settled(svc, tid, "true" + SHELL)["output"] == PRIMED
        assert settled(svc, tid, "true" + SHELL + PAD)["output"] == SPAWNED
    # commands that could move the shell's stdin are spawned
    for cmd in ("exec 3>&1; true", "eval true", "source /dev/null 2>/dev/null",
                ". /dev/null", "true && . /dev/null"):
        assert settled(svc, tid, cmd + SHELL)["output"] == SPAWNED, cmd
    # a dot in a word is no dot command
    assert settled(svc, tid, "ls ./ >/dev/null 2>&1; echo a.b" + SHELL)["output"] == \
        "a.b\n" + PRIMED


def test_a_primed_shell_is_what_sh_c_gives(svc, tid):
    for _ in range(2):
        primed = settled(svc, tid, PROBE)
        spawned = settled(svc, tid, PROBE + PAD)
        assert primed["output"].startswith(PRIMED)
        assert spawned["output"].startswith(SPAWNED)
        assert primed["exit_code"] == 7
        assert primed["output"][len(PRIMED):] == spawned["output"][len(SPAWNED):]
        assert primed["exit_code"] == spawned["exit_code"]
    out = primed["output"][len(PRIMED):]
    assert out.startswith("[] /bin/sh 0 ")
    assert "cat=0\n" in out and "sub=3\n" in out and "OLDPWD=unset" in out
    assert "/bin/sh: 9: nosuch_command_xyz: not found\n" in out
    assert out.endswith("line \n") or out.endswith("line 10\n")
    # the command inherits 0, 1 and 2 only (ls's own: 1 its file, 3 /proc;
    # gVisor lists no /proc/self/fd)
    if not RUNSC:
        assert ("0 -> /dev/null\n1 -> /home/yuxi/user-data/workspace/fds.txt\n"
                "2 -> pipe\n3 -> ") in out
        assert "\n4 -> " not in out


def test_a_first_line_that_does_not_parse_is_reported_once(svc, tid):
    bad = "echo never >> runs.txt; )\necho never2 >> runs.txt"
    primed = settled(svc, tid, bad)
    spawned = settled(svc, tid, bad + PAD)
    assert primed == dict(spawned, duration_ms=primed["duration_ms"])
    assert primed["exit_code"] == 2
    assert primed["output"] == '/bin/sh: 1: Syntax error: ")" unexpected\n'
    assert settled(svc, tid, "cat runs.txt 2>&1; true")["output"].endswith(
        "No such file or directory\n")
    # such commands, however many, do not turn priming off
    for _ in range(10):
        assert run(svc, tid, bad)["exit_code"] == 2
    assert settled(svc, tid, "true" + SHELL)["output"] == PRIMED


def test_a_command_runs_once(svc, tid):
    for i in range(5):
        j = settled(svc, tid, f"echo {i} >> once.txt" + SHELL)
        assert j["exit_code"] == 0 and j["output"] == PRIMED
    assert run(svc, tid, "cat once.txt")["output"] == "0\n1\n2\n3\n4\n"


def test_heredoc_timeout_output_and_jobs_as_spawned(svc, tid):
    here = "cat <<EOF\nline one\n$((6 * 7))\nEOF\necho after" + SHELL
    assert settled(svc, tid, here)["output"] == "line one\n42\nafter\n" + PRIMED
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


def test_a_command_that_moves_its_stdin_reads_data_never_script(svc, tid):
    setup = ("printf 'first\\necho INJECTED >> injected.txt\\n' > data.txt; "
             "printf 'exec <data.txt\\n' > moves.sh; rm -f injected.txt")
    assert run(svc, tid, setup)["exit_code"] == 0
    for cmd in ("exec <data.txt; read h; echo read=$h",
                ". ./moves.sh; read h; echo read=$h"):
        for pad in ("", PAD):
            j = settled(svc, tid, cmd + pad)
            assert j["exit_code"] == 0 and j["output"] == "read=first\n", (cmd, j)
            k = run(svc, tid, "ls injected.txt 2>/dev/null; true")
            assert k["output"] == "", (cmd, k)


@pytest.mark.skipif(RUNSC, reason="gVisor cannot stat /proc/<pid>/fd/N")
def test_pipe_mode_and_priming_follow_the_uid(svc, tid):
    mode = "stat -L -c %a /proc/$$/fd/1" + SHELL
    assert settled(svc, tid, mode)["output"] == "602\n" + PRIMED
    shared = Service(stem="qyxpn", overrides={"YUXI_SANDBOX_IMAGE": IMAGE,
                                              "YUXI_EXEC_AGENT": "only",
                                              "YUXI_SANDBOX_UID_RANGE": "off",
                                              "YUXI_COMMAND_PATH_POLICY": "off"})
    shared.start()
    try:
        t = shared.new_thread()
        for _ in range(3):
            assert run(shared, t, "true")["exit_code"] == 0
        for _ in range(3):
            assert settled(shared, t, mode)["output"] == "600\n" + SPAWNED
    finally:
        shared.stop()
