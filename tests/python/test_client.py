# SPDX-License-Identifier: MIT
"""yuxi_sandbox.Client against the real service over HTTPS: every route
it covers, streamed execute as the command writes, retries of a real
503 with Retry-After, errors, argument checks before any request, and
the one kept-alive connection."""
import socket
import threading
import time

import pytest
import yxsvc
from conftest import ConnCounter, thread_id

import yuxi_sandbox
from yuxi_sandbox import errors


@pytest.fixture(scope="module")
def tid(c):
    t = c.create_thread(thread_id("cl"))["thread_id"]
    yield t
    c.delete_thread(t)


# --- threads -------------------------------------------------------------------
def test_threads_create_get_list_update_delete(c):
    t = thread_id("th")
    rec = c.create_thread(t, agent_id="coder", metadata={"project": "p1"}, idle_timeout=60)
    assert rec["thread_id"] == t and rec["owner"] == "alice" and rec["agent_id"] == "coder"
    assert c.create_thread(t)["created_at"] == rec["created_at"]	# the caller's own: 200
    got = c.get_thread(t)
    assert got["sandbox"]["state"] == "none" and "disk" in got
    assert t in [r["thread_id"] for r in c.list_threads()]
    assert rec["metadata"] == {"project": "p1"} and rec["idle_timeout"] == 60
    mine = [r["thread_id"] for r in c.list_threads(metadata={"project": "p1"})]
    assert t in mine and len(mine) == 1
    assert c.list_threads(metadata={"project": "p2"}) == []
    up = c.update_thread(t, metadata={"project": None, "run": "r7"}, idle_timeout=None)
    assert up["metadata"] == {"run": "r7"} and up["idle_timeout"] is None
    assert c.update_thread(t, idle_timeout=30)["idle_timeout"] == 30
    with pytest.raises(errors.BadRequestError) as ei:
        c.update_thread(t, metadata={"bad key!": "x"})
    assert ei.value.code == "invalid_metadata"
    gen = c.create_thread()["thread_id"]
    assert gen.startswith("t-") and len(gen) == 18
    c.delete_thread(t)
    c.delete_thread(gen)
    with pytest.raises(errors.NotFoundError) as ei:
        c.get_thread(t)
    assert ei.value.code == "not_found" and ei.value.status == 404


def test_other_users_thread_is_not_found(c, make_client, tid):
    with pytest.raises(errors.NotFoundError):
        make_client("bob").get_thread(tid)
    with pytest.raises(errors.ConflictError) as ei:
        make_client("bob").create_thread(tid)
    assert ei.value.code == "thread_exists"


# --- execute ---------------------------------------------------------------------
def test_execute_plain(c, tid):
    r = c.execute(tid, "echo hello; echo err >&2; exit 3")
    assert r["output"] == "hello\nerr\n" and r["exit_code"] == 3
    assert r["timed_out"] is False and r["truncated"] is False
    r = c.execute(tid, "sleep 5", timeout=1)
    assert r["timed_out"] is True and r["exit_code"] == 124
    r = c.execute(tid, "cat /etc/passwd")
    assert r["exit_code"] == 126 and r["refused"] == "path_not_allowed"


def test_execute_stream_events_as_written(c, tid):
    """Each line arrives about when the command writes it (1 s apart),
    not all at the end."""
    c.execute(tid, "true")	# the sandbox runs before the clock starts
    t0 = time.monotonic()
    seen = []
    with c.execute(tid, "for i in 1 2 3; do echo line$i; sleep 1; done", stream=True) as s:
        assert s.request_id
        for ev in s:
            seen.append((time.monotonic() - t0, ev))
    out = [(round(t, 2), e["data"]) for t, e in seen if e["type"] == "output"]
    print("arrivals:", out)
    assert "".join(d for _, d in out) == "line1\nline2\nline3\n"
    assert seen[-1][1]["type"] == "exit" and seen[-1][1]["exit_code"] == 0
    assert s.result is not None and s.result["exit_code"] == 0
    times = {d.strip(): t for t, d in out}
    # line1 well before the end, each next one about a second later
    assert times["line1"] < 0.9, out
    assert 0.7 < times["line2"] - times["line1"] < 1.5, out
    assert 0.7 < times["line3"] - times["line2"] < 1.5, out
    assert seen[-1][0] > 2.8


def test_execute_stream_closed_early_kills_command(c, tid):
    """Leaving a stream hangs up; the service kills the command, and the
    client's next call works (on another connection)."""
    marker = "/home/yuxi/user-data/workspace/stream-left.txt"
    s = c.execute(tid, "echo start; sleep 3; echo done > %s" % marker, stream=True)
    first = next(iter(s))
    assert first == {"type": "output", "data": "start\n"}
    s.close()
    time.sleep(4)
    r = c.execute(tid, "test -e %s && echo present || echo absent" % marker)
    assert r["output"] == "absent\n"


def test_execute_stream_errors_before_start(c):
    with pytest.raises(errors.NotFoundError) as ei:
        c.execute(thread_id("none"), "true", stream=True)
    assert ei.value.code == "not_found" and ei.value.request_id


# --- cwd and env per command -----------------------------------------------------------
WS = "/home/yuxi/user-data/workspace"


def test_execute_cwd_env(c, tid):
    """cwd and env reach the command: plain, streamed and in the
    background; the limits the client checks are the service's (64
    entries of 32 KiB in all pass both)."""
    c.write(tid, "sub/dir/here.txt", "x\n", overwrite=True)
    env = {"FOO": "bar baz", "Q": "it's $HOME", "_x9": "é"}
    r = c.execute(tid, 'pwd; echo "$FOO|$Q|$_x9"; ls', cwd="sub/dir", env=env)
    assert r["output"] == "%s/sub/dir\nbar baz|it's $HOME|é\nhere.txt\n" % WS, r
    r = c.execute(tid, "pwd", cwd="/mnt/user-data/outputs")
    assert r["output"] == "/home/yuxi/user-data/outputs\n"
    with c.execute(tid, 'pwd; echo "$FOO"', cwd=WS + "/sub", env={"FOO": "s"},
                   stream=True) as s:
        data = "".join(ev["data"] for ev in s if ev["type"] == "output")
    assert data == WS + "/sub\ns\n" and s.result["exit_code"] == 0
    p = c.start_process(tid, 'pwd; echo "$FOO"', cwd="sub/dir", env={"FOO": "bg"})
    out = "".join(o["data"] for o in c.iter_process_output(tid, p["process_id"],
                                                            wait_ms=5000))
    assert out == WS + "/sub/dir\nbg\n"
    c.kill_process(tid, p["process_id"])
    # at the limits: 64 names, 32 KiB of names and values in all
    full = {"V%02d" % i: "" for i in range(63)}
    full["BIG"] = "x" * (32 * 1024 - sum(map(len, full)) - 3)
    r = c.execute(tid, 'printf %s "$BIG" | wc -c', env=full)
    assert r["output"].strip() == str(len(full["BIG"])), r
    with pytest.raises(ValueError):
        c.execute(tid, "true", env={**full, "BIG": full["BIG"] + "x"})


def test_execute_cwd_env_refused_by_the_service(c, tid):
    """What only the service can tell: each refusal raises with its code."""
    for cwd, code in [("nope", "cwd_not_found"), ("sub/dir/here.txt", "cwd_not_found"),
                      ("/etc", "invalid_path"), ("..", "invalid_path")]:
        with pytest.raises(errors.BadRequestError) as ei:
            c.execute(tid, "true", cwd=cwd)
        assert ei.value.code == code and ei.value.request_id, (cwd, ei.value)
    with pytest.raises(errors.BadRequestError) as ei:
        c.start_process(tid, "true", cwd="nope")
    assert ei.value.code == "cwd_not_found"
    net = c.create_thread(thread_id("net"), agent_id="fetcher")["thread_id"]
    try:
        with pytest.raises(errors.BadRequestError) as ei:
            c.execute(net, "true", env={"HTTP_PROXY": "http://evil:1"})
        assert ei.value.code == "invalid_env"
    finally:
        c.delete_thread(net)


# --- background processes ------------------------------------------------------------
def test_processes(c, tid):
    p = c.start_process(tid, "cat")
    pid = p["process_id"]
    assert p["state"] == "running" and pid.startswith("p")
    assert c.write_stdin(tid, pid, "hello\n") == {"written": 6, "stdin_open": True}
    assert pid in [x["process_id"] for x in c.list_processes(tid)]
    out = c.process_output(tid, pid, wait_ms=5000)
    assert out["data"] == "hello\n" and out["running"] is True
    c.close_stdin(tid, pid)
    chunks = list(c.iter_process_output(tid, pid, offset=out["next_offset"], wait_ms=2000))
    assert chunks == []	# nothing more; the iterator ends when cat exits
    assert c.get_process(tid, pid)["state"] == "exited"
    gone = c.kill_process(tid, pid)
    assert gone["forgotten"] is True
    with pytest.raises(errors.NotFoundError):
        c.get_process(tid, pid)


def test_process_output_iterator_long_polls(c, tid):
    p = c.start_process(tid, "for i in 1 2 3; do echo n$i; sleep 0.5; done")
    data = "".join(o["data"] for o in c.iter_process_output(tid, p["process_id"],
                                                            wait_ms=5000))
    assert data == "n1\nn2\nn3\n"
    c.kill_process(tid, p["process_id"])


# --- files ------------------------------------------------------------------------
def test_files(c, tid):
    w = c.write(tid, "notes/todo.txt", "alpha\nbeta TODO\ngamma TODO\n")
    assert w["path"] == "/home/yuxi/user-data/workspace/notes/todo.txt"
    with pytest.raises(errors.ConflictError) as ei:
        c.write(tid, "notes/todo.txt", "x")
    assert ei.value.code == "file_exists" and ei.value.request_id
    r = c.read(tid, "notes/todo.txt", offset=1, limit=1)
    assert r["content"] == "     2\tbeta TODO" and r["total_lines"] == 3
    assert c.cat(tid, "/workspace/notes/todo.txt", format="raw")["content"].startswith("alpha\n")
    with pytest.raises(errors.ConflictError) as ei:
        c.edit(tid, "notes/todo.txt", "TODO", "DONE")
    assert ei.value.code == "ambiguous_match"
    assert c.edit(tid, "notes/todo.txt", "TODO", "DONE", replace_all=True)["occurrences"] == 2
    g = c.grep(tid, "DONE", "/workspace")
    assert [(m["line"], m["text"]) for m in g["matches"]] == [(2, "beta DONE"), (3, "gamma DONE")]
    assert c.glob(tid, "**/*.txt")["matches"][0]["path"].endswith("/notes/todo.txt")
    names = [e["path"] for e in c.ls(tid, "/workspace/notes")["entries"]]
    assert names == ["/home/yuxi/user-data/workspace/notes/todo.txt"]
    up = c.upload(tid, "/outputs/blob.bin", bytes(range(256)))
    assert up["size"] == 256
    assert c.download(tid, "/outputs/blob.bin") == bytes(range(256))
    assert c.download(tid, "/outputs/blob.bin", max_bytes=10) == bytes(range(10))
    assert c.delete(tid, "/workspace/notes", recursive=True)["path"].endswith("/notes")
    with pytest.raises(errors.NotFoundError) as ei:
        c.download(tid, "/workspace/notes/todo.txt")
    assert ei.value.code == "file_not_found"


def test_upload_from_a_file(c, tid, tmp_path):
    src = tmp_path / "big.bin"
    src.write_bytes(b"0123456789abcdef" * 65536)	# 1 MiB
    with open(src, "rb") as f:
        assert c.upload(tid, "/uploads/big.bin", f)["size"] == 1 << 20
    assert c.download(tid, "/uploads/big.bin") == src.read_bytes()


# --- errors, retries, connections -------------------------------------------------------
def test_error_classes_carry_code_status_request_id(svc, tid):
    bad = yuxi_sandbox.Client(svc.url, "wrong-token", ca_file=svc.cert)
    with pytest.raises(errors.AuthenticationError) as ei:
        bad.list_threads()
    e = ei.value
    assert (e.status, e.code) == (401, "unauthenticated") and e.request_id
    assert e.request_id in str(e) and isinstance(e, errors.APIError)
    c = yuxi_sandbox.Client(svc.url, svc.tokens["alice"], ca_file=svc.cert)
    with pytest.raises(errors.PermissionDeniedError) as ei:
        c.write(tid, "/skills/x", "x")
    assert ei.value.code == "read_only"
    with pytest.raises(errors.BadRequestError) as ei:
        c.read(tid, "/workspace")
    assert ei.value.code == "is_directory"
    # nginx's own refusal (a file the sandbox made unreadable): no code
    c.execute(tid, "echo s > locked.txt && chmod 000 locked.txt")
    with pytest.raises(errors.PermissionDeniedError) as ei:
        c.download(tid, "locked.txt")
    assert ei.value.code == "" and ei.value.status == 403
    with pytest.raises(errors.TransportError):
        yuxi_sandbox.Client("https://127.0.0.1:9", "t", timeout=2).list_threads()


BAD_ARGS = [
    ("create_thread", ("bad id",), {}, ValueError),
    ("create_thread", (), {"agent_config_id": "x"}, ValueError),
    ("create_thread", (), {"metadata": {"a": 1}}, TypeError),
    ("create_thread", (), {"idle_timeout": 0}, ValueError),
    ("get_thread", ("x" * 129,), {}, ValueError),
    ("update_thread", ("t1",), {}, ValueError),
    ("update_thread", ("t1",), {"metadata": {"a": 1}}, TypeError),
    ("list_threads", (), {"metadata": {"a": None}}, TypeError),
    ("execute", ("t1", ""), {}, ValueError),
    ("execute", ("t1", "true"), {"timeout": 1.5}, TypeError),
    ("execute", ("t1", "true"), {"timeout": 0}, ValueError),
    ("execute", ("t1", "true"), {"stream": "yes"}, TypeError),
    ("execute", (None, "true"), {}, TypeError),
    ("execute", ("t1", "true"), {"env": {"1A": "x"}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"": "x"}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"A-B": "x"}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"É": "x"}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"A": 1}}, TypeError),
    ("execute", ("t1", "true"), {"env": {1: "x"}}, TypeError),
    ("execute", ("t1", "true"), {"env": {"A": "a\0b"}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"A": "\ud800"}}, ValueError),
    ("execute", ("t1", "true"), {"env": [("A", "x")]}, TypeError),
    ("execute", ("t1", "true"), {"env": {"V%d" % i: "" for i in range(65)}}, ValueError),
    ("execute", ("t1", "true"), {"env": {"A": "x" * (32 * 1024)}}, ValueError),
    ("execute", ("t1", "true"), {"cwd": ""}, ValueError),
    ("execute", ("t1", "true"), {"cwd": "a\0b"}, ValueError),
    ("execute", ("t1", "true"), {"cwd": 5}, TypeError),
    ("execute", ("t1", "true"), {"stream": True, "env": {"1A": "x"}}, ValueError),
    ("execute", ("t1", "true"), {"stream": True, "cwd": b"/x"}, TypeError),
    ("start_process", ("t1", "true"), {"timeout": True}, TypeError),
    ("start_process", ("t1", "true"), {"env": {"A=B": "x"}}, ValueError),
    ("start_process", ("t1", "true"), {"cwd": ""}, ValueError),
    ("process_output", ("t1", "p1"), {"wait_ms": 30001}, ValueError),
    ("process_output", ("t1", "../x"), {}, ValueError),
    ("write_stdin", ("t1", "p1", 5), {}, TypeError),
    ("start_process", ("t1", "sh"), {"pty": (0, 24)}, ValueError),
    ("start_process", ("t1", "sh"), {"pty": (80, 1001)}, ValueError),
    ("start_process", ("t1", "sh"), {"pty": (80,)}, TypeError),
    ("start_process", ("t1", "sh"), {"pty": {"cols": 80}}, ValueError),
    ("start_process", ("t1", "sh"), {"pty": (80.0, 24)}, TypeError),
    ("resize_process", ("t1", "p1", 0, 24), {}, ValueError),
    ("resize_process", ("t1", "../p", 80, 24), {}, ValueError),
    ("create_session", ("t1",), {"shell": "zsh"}, ValueError),
    ("create_session", ("t1",), {"cwd": ""}, ValueError),
    ("create_session", ("t1",), {"env": {"1A": "x"}}, ValueError),
    ("session_execute", ("t1", "s1", ""), {}, ValueError),
    ("session_execute", ("t1", "../s", "true"), {}, ValueError),
    ("session_execute", ("t1", "s1", "true"), {"timeout": 0}, ValueError),
    ("session_execute", ("t1", "s1", "true"), {"cwd": "x"}, TypeError),
    ("get_session", ("t1", "a/b"), {}, ValueError),
    ("delete_session", ("bad id", "s1"), {}, ValueError),
    ("read", ("t1", "a.txt"), {"format": "html"}, ValueError),
    ("read", ("t1", "a.txt"), {"offset": -1}, ValueError),
    ("read", ("t1", "a\0b"), {}, ValueError),
    ("write", ("t1", "a.txt", b"bytes"), {}, TypeError),
    ("write", ("t1", "a.txt", "x"), {"overwrite": 1}, TypeError),
    ("edit", ("t1", "a.txt", "", "y"), {}, ValueError),
    ("glob", ("t1", ""), {}, ValueError),
    ("grep", ("t1", "x"), {"max_count": 0}, ValueError),
    ("upload", ("t1", "a.txt", "text"), {}, TypeError),
    ("download", ("t1", ""), {}, ValueError),
    ("delete", ("t1", "a"), {"recursive": "yes"}, TypeError),
]


@pytest.mark.parametrize("name,args,kw,exc", BAD_ARGS,
                         ids=["%s-%d" % (b[0], i) for i, b in enumerate(BAD_ARGS)])
def test_bad_arguments_raise_before_any_request(svc, monkeypatch, name, args, kw, exc):
    c = yuxi_sandbox.Client(svc.url, svc.tokens["alice"], ca_file=svc.cert)
    counter = ConnCounter(monkeypatch)
    with pytest.raises(exc):
        getattr(c, name)(*args, **kw)
    assert counter.n == 0


def test_bad_client_arguments():
    for args, exc in [(("ftp://x", "t"), ValueError), (("https://x", ""), TypeError),
                      (("https://x", "t\n"), ValueError), (("https://x?a=1", "t"), ValueError)]:
        with pytest.raises(exc):
            yuxi_sandbox.Client(*args)
    with pytest.raises(ValueError):
        yuxi_sandbox.Client("https://x", "t", timeout=0)
    with pytest.raises(ValueError):
        yuxi_sandbox.Client("https://x", "t", ca_file="/nonexistent.pem")


def test_keep_alive_one_connection(svc, monkeypatch, tid):
    c = yuxi_sandbox.Client(svc.url, svc.tokens["alice"], ca_file=svc.cert)
    counter = ConnCounter(monkeypatch)
    for _ in range(20):
        c.get_thread(tid)
        c.execute(tid, "true")
    assert counter.n == 1
    # the server closes the idle connection: the next call reopens
    c.transport._idle.sock.shutdown(socket.SHUT_RDWR)
    assert c.get_thread(tid)["thread_id"] == tid
    assert counter.n == 2
    # a call inside a stream's loop takes a second connection
    with c.execute(tid, "echo a; sleep 0.3; echo b", stream=True) as s:
        for ev in s:
            if ev["type"] == "output":
                c.get_thread(tid)
    assert counter.n == 3
    c.get_thread(tid)
    assert counter.n == 3


def test_threads_share_a_client(svc, tid):
    c = yuxi_sandbox.Client(svc.url, svc.tokens["alice"], ca_file=svc.cert)
    outs, errs = [], []

    def run(i):
        try:
            outs.append(c.execute(tid, "echo %d" % i)["output"])
        except Exception as e:  # reported below
            errs.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs and sorted(outs) == ["%d\n" % i for i in range(6)]


def test_503_retry_after_is_retried(factory):
    """One user's commands over YUXI_USER_COMMANDS answer 503 capacity with
    Retry-After: 1 (docs/api.md); the client waits and asks again until
    the slot is free, within its bound, and raises after it."""
    s = factory(YUXI_USER_COMMANDS="1")
    mk = lambda **kw: yuxi_sandbox.Client(s.url, s.tokens["alice"], ca_file=s.cert, **kw)
    c = mk()
    t = c.create_thread(thread_id("ra"))["thread_id"]
    c.execute(t, "true")	# the sandbox exists before the race

    def hold(seconds, mark):
        """Another client of alice's runs a command for `seconds`; returns
        once it runs (its mark file is there: the file API takes no slot)."""
        th = threading.Thread(target=lambda: mk().execute(
            t, "touch %s && sleep %d" % (mark, seconds)))
        th.start()
        assert yxsvc.wait_for(lambda: any(e["path"].endswith("/" + mark)
                                          for e in c.ls(t)["entries"]), 20, 0.05)
        return th
    blocker = hold(3, "held-1")
    waits = []
    c.transport.on_retry = lambda ans, wait: waits.append((ans.status, wait))
    t0 = time.monotonic()
    r = c.execute(t, "echo after")
    took = time.monotonic() - t0
    blocker.join()
    assert r["output"] == "after\n"
    assert waits and all(w == (503, 1.0) for w in waits), waits
    assert 1.5 < took < 5, took	# the slot frees about 3 s after the mark
    lines = [ln for ln in s.audit_lines() if ln.get("op") == "execute"]
    assert sum(ln.get("status") == 503 for ln in lines) == len(waits)
    print("retried %d times, %.1f s" % (len(waits), took))
    # the bound: one retry only, while the blocker holds the slot for 4 s
    c1 = mk(retries=1)
    blocker = hold(4, "held-2")
    t0 = time.monotonic()
    with pytest.raises(errors.ServiceUnavailableError) as ei:
        c1.execute(t, "true")
    took = time.monotonic() - t0
    blocker.join()
    e = ei.value
    assert (e.status, e.code, e.retry_after) == (503, "capacity", 1.0) and e.request_id
    assert 0.9 < took < 3, took	# one wait of 1 s, then the second 503 is raised
