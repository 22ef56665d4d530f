# SPDX-License-Identifier: MIT
"""Fixtures of the stream suite (streamed execute and background processes,
docs/api.md), over the shared harness tests/lib/yxsvc.py: the real service
(master, workers, reaper, nginx with TLS, dockerd) on its own port, shm
name, container prefix and temporary directory.

`svc` is one instance for the session; `factory(**YUXI_overrides)` makes
further instances with their own settings, all stopped afterwards; `thread`
is a fresh thread of alice whose sandbox already runs (a plain execute made
it), so that timings measure the stream, not a container's creation.

Helpers: `stream(svc, tid, command, who, **body)` POSTs a streamed execute
and returns [(seconds since the request, event)], `proc_*` wrap the process
routes, `reaped_after(...)` times the reaper on an idle and a busy thread.
"""
import json
import os
import secrets
import ssl
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from yxsvc import Service, build_path, engine_up, factory_of, started, \
    wait_for  # noqa: E402,F401


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running (skipped unless YUXI_E2E_SLOW=1)")


@pytest.fixture(scope="session")
def svc():
    yield from started(Service(stem="qyxst"))


CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")


@pytest.fixture
def factory():
    """factory(control_off=None, **YUXI_overrides): a started instance; with
    control_off, of the test-only control daemon with those protections
    off (docs/security.md "Control mode")."""
    def new(control_off=None, **overrides):
        s = Service(stem="qyxsf", overrides=overrides,
                    binary=CONTROL if control_off else None)
        if control_off:
            s.env["YX_CONTROL_OFF"] = control_off
        return s
    yield from factory_of(new)


def warm_thread(s, who="alice"):
    """A new thread of `who` whose sandbox and agent already run."""
    tid = s.new_thread(who)
    r = s.execute(tid, "true", who=who)
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return tid


def reaped_after(s, t0, idle, busy, kept, busy_within):
    """The seconds from t0 until the reaper removed the sandbox of thread
    idle (within 15 s) and then that of thread busy (within busy_within
    s more), as (t_idle, t_busy); asserts busy's was still there when
    idle's went (`kept`: the message, what kept it)."""
    assert wait_for(lambda: not s.containers(thread=idle), 15, 0.2)
    t_idle = time.monotonic() - t0
    assert s.containers(thread=busy), kept
    assert wait_for(lambda: not s.containers(thread=busy), busy_within, 0.2)
    return t_idle, time.monotonic() - t0


@pytest.fixture
def thread(svc):
    tid = warm_thread(svc)
    yield tid
    svc.request("alice", "DELETE", "/api/threads/" + tid)


def stream(s, tid, command, who="alice", **body):
    """POST a streamed execute; returns (response, [(t, event)]) with t the
    seconds from sending the request to the event's line arriving."""
    b = {"thread_id": tid, "command": command, "stream": True}
    b.update(body)
    t0 = time.monotonic()
    r = s.request(who, "POST", "/api/execute", json=b, stream=True)
    events = []
    if r.status_code != 200:
        r.content
        return r, events
    buf = b""
    for chunk in r.iter_content(chunk_size=None):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            events.append((time.monotonic() - t0, json.loads(line.decode("utf-8"))))
    assert buf == b"", buf
    return r, events


def outputs(events):
    return "".join(e["data"] for _, e in events if e["type"] == "output")


def raw_stream_open(s, tid, command, who="alice", **extra):
    """A streamed execute over a socket of our own (so the test can cut it
    exactly): returns the TLS socket after the first output event arrived."""
    b = {"thread_id": tid, "command": command, "stream": True}
    b.update(extra)
    body = json.dumps(b).encode()
    ctx = ssl.create_default_context(cafile=s.cert)
    ctx.check_hostname = False
    raw = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    t = ctx.wrap_socket(raw, server_hostname="localhost")
    t.sendall(b"POST /api/execute HTTP/1.1\r\nHost: localhost\r\n"
              b"Authorization: Bearer " + s.tokens[who].encode() + b"\r\n"
              b"Content-Type: application/json\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b'"type":"output"' not in got:
        c = t.recv(65536)
        assert c, got
        got += c
    return t


def proc_start(s, tid, command, who="alice", **body):
    b = {"thread_id": tid, "command": command}
    b.update(body)
    return s.request(who, "POST", "/api/processes", json=b)


def proc_url(tid, pid="", tail=""):
    return "/api/processes%s%s?thread_id=%s" % ("/" + pid if pid else "", tail, tid)


def proc_output(s, tid, pid, offset=0, wait_ms=0, who="alice", **q):
    url = proc_url(tid, pid, "/output") + "&offset=%d&wait_ms=%d" % (offset, wait_ms)
    for k, v in q.items():
        url += "&%s=%s" % (k, v)
    return s.request(who, "GET", url)


def proc_read_until(s, tid, pid, pred, timeout=20):
    """Read the output from 0 with long-polls until pred(text); the text."""
    text, off = "", 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = proc_output(s, tid, pid, off, 1000)
        assert r.status_code == 200, r.text
        j = r.json()
        text += j["data"]
        off = j["next_offset"]
        if pred(text) or not j["running"] and j["data"] == "":
            break
    return text


def sandbox_ps(s, tid, who="alice"):
    """The argument lists of the processes in the thread's sandbox (through
    a plain execute: the agent path answers in milliseconds)."""
    r = s.execute(tid, "ps -eo args", who=who)
    assert r.status_code == 200, r.text
    return r.json()["output"]


def new_tid():
    return "t%s" % secrets.token_hex(6)
