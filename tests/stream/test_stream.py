# SPDX-License-Identifier: MIT
"""POST /api/execute with "stream": true through the real nginx and engine
(docs/api.md): events as the command writes, UTF-8 across chunk
boundaries, masking in events, the output cap and spill, timeouts, the
plain form's errors before the stream, and a client that goes away stopping
the command's whole process group."""
import os
import time

from conftest import (engine_up, new_tid, outputs, raw_stream_open,  # noqa: F401
                      sandbox_ps, stream, warm_thread, wait_for)
import pytest

pytestmark = pytest.mark.skipif(not engine_up(), reason="no engine or test image")


def test_five_events_as_written(svc, thread):
    r, ev = stream(svc, thread, "for i in 1 2 3 4 5; do echo $i; sleep 1; done")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/x-ndjson")
    assert "X-Accel-Buffering" not in r.headers	# nginx consumed it
    out = [(t, e) for t, e in ev if e["type"] == "output"]
    assert [e["data"] for _, e in out] == ["%d\n" % i for i in range(1, 6)], ev
    gaps = [b[0] - a[0] for a, b in zip(out, out[1:])]
    print("\nstream: first event %.1f ms after the request; gaps %s s" %
          (out[0][0] * 1000, ", ".join("%.3f" % g for g in gaps)))
    assert out[0][0] < 0.3, out[0][0]
    assert all(g >= 0.8 for g in gaps), gaps
    assert ev[-1][1]["type"] == "exit" and ev[-1][1]["exit_code"] == 0, ev[-1]
    assert ev[-1][1]["timed_out"] is False and ev[-1][1]["truncated"] is False
    assert sum(1 for _, e in ev if e["type"] == "exit") == 1


def test_client_gone_stops_the_group(svc, thread):
    # a group: the shell, a background child and the foreground sleep
    t = raw_stream_open(svc, thread, "sleep 1231 & echo started; sleep 1232")
    assert "sleep 1232" in sandbox_ps(svc, thread)
    t0 = time.monotonic()
    t.close()
    gone = wait_for(lambda: "sleep 123" not in sandbox_ps(svc, thread), 5, 0.05)
    took = time.monotonic() - t0
    print("\nstream cut by the client: the command's group gone %.0f ms later" %
          (took * 1000))
    assert gone, sandbox_ps(svc, thread)
    assert took < 1.0, took


def test_control_clientgone_leaks(factory):
    """Control: with the worker blind to a client gone (yx_http_client_gone
    says false) a quiet command outlives its stream: the test above can
    fail."""
    s = factory(control_off="clientgone")
    tid = warm_thread(s)
    t = raw_stream_open(s, tid, "sleep 1241 & echo started; sleep 1242", timeout=4)
    t.close()
    gone = wait_for(lambda: "sleep 124" not in sandbox_ps(s, tid), 2, 0.1)
    assert not gone, "the control daemon stopped the command: the test cannot fail"


def test_utf8_cut_between_chunks(svc, thread):
    # U+20AC written in two pieces, 0.3 s apart: never split, never replaced
    r, ev = stream(svc, thread, "printf 'a\\342\\202'; sleep 0.3; printf '\\254b\\377c\\n'")
    assert r.status_code == 200
    out = [e["data"] for _, e in ev if e["type"] == "output"]
    assert len(out) == 2, ev
    assert out[0] == "a", out	# the cut character waited for its end
    assert "".join(out) == "a\u20acb\ufffdc\n", out
    # a character cut by the end of the output is replaced, not lost
    r, ev = stream(svc, thread, "printf 'x\\342\\202'")
    assert outputs(ev) == "x\ufffd\ufffd", ev


def test_masking_in_events(factory):
    s = factory(YUXI_COMMAND_PATH_POLICY="off")	# /proc is outside the policy
    tid = warm_thread(s)
    host = os.path.join(s.saves, "threads", tid, "user-data")
    r, ev = stream(s, tid, "cat /proc/self/mountinfo")
    text = outputs(ev)
    assert "/home/yuxi/user-data" in text
    assert s.saves not in text and all(s.saves not in e.get("data", "") for _, e in ev)
    plain = s.execute(tid, "cat /proc/self/mountinfo").json()["output"]
    assert text == plain
    # a host path cut between two writes: held back, then masked whole
    half = len(host) // 2
    r, ev = stream(s, tid, "printf '%%s' '%s'; sleep 0.3; printf '%%s\\n' '%s'" %
                   (host[:half], host[half:]))
    assert outputs(ev) == "/home/yuxi/user-data\n", ev
    assert all(host[:half] not in e.get("data", "") for _, e in ev), ev


def test_output_cap_and_spill(factory):
    s = factory(YUXI_SANDBOX_OUTPUT_LIMIT="4k")
    tid = warm_thread(s)
    cmd = "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"
    r, ev = stream(s, tid, cmd)
    text = outputs(ev)
    plain = s.execute(tid, cmd).json()
    assert len(text.encode()) == 4096 and text == plain["output"]
    last = ev[-1][1]
    assert last["type"] == "exit" and last["truncated"] is True, last
    path = last["full_output_path"]
    assert path.startswith("/home/yuxi/user-data/large_tool_results/exec-")
    host = os.path.join(s.saves, "threads", tid, "user-data", path[len("/home/yuxi/user-data/"):])
    with open(host) as f:
        full = f.read()
    assert full.startswith(text) and full.endswith("line-1999\n")
    assert len(full.splitlines()) == 2000


def test_timeout_kills_group(svc, thread):
    r, ev = stream(svc, thread, "echo a; sleep 30", timeout=1)
    last = ev[-1][1]
    assert outputs(ev) == "a\n"
    assert last["type"] == "exit" and last["exit_code"] == 124 and last["timed_out"] is True
    assert "sleep 30" not in sandbox_ps(svc, thread)


def test_refused_command(svc, thread):
    r, ev = stream(svc, thread, "cat /etc/passwd")
    assert r.status_code == 200
    assert outputs(ev).startswith("command refers to a path outside the sandbox")
    assert ev[-1][1]["exit_code"] == 126 and ev[-1][1]["refused"] == "path_not_allowed"


def test_errors_before_the_stream_are_plain(svc, thread):
    cases = [
        ({"thread_id": "../x", "command": "true"}, 400, "invalid_thread_id"),
        ({"thread_id": new_tid(), "command": "true"}, 404, "not_found"),
        ({"thread_id": thread, "command": ""}, 400, "bad_request"),
        ({"thread_id": thread, "command": "true", "stream": "yes"}, 400, "bad_request"),
        ({"thread_id": thread, "command": "true", "timeout": -1}, 400, "bad_request"),
    ]
    for body, status, code in cases:
        b = dict(body)
        b.setdefault("stream", True)
        r = svc.request("alice", "POST", "/api/execute", json=b)
        p = dict(b)
        p.pop("stream")
        if body.get("stream") is not None:
            p["stream"] = body["stream"]
        r2 = svc.request("alice", "POST", "/api/execute", json=p)
        assert r.status_code == status and r.json()["error"]["code"] == code, (body, r.text)
        # the same answer, but for each request's own id
        for x in (r, r2):
            x.j = x.json()
            x.j["error"].pop("request_id", None)
        assert (r2.status_code, r2.j) == (r.status_code, r.j), body
        assert r.headers["Content-Type"].startswith("application/json")
    # another user's thread: the same 404 as an unknown one
    r = svc.request("bob", "POST", "/api/execute",
                    json={"thread_id": thread, "command": "true", "stream": True})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_engine_path_streams_too(factory):
    s = factory(YUXI_EXEC_AGENT="off")
    tid = warm_thread(s)
    r, ev = stream(s, tid, "echo one; sleep 1; echo two")
    out = [(t, e) for t, e in ev if e["type"] == "output"]
    assert outputs(ev) == "one\ntwo\n"
    assert len(out) == 2 and out[1][0] - out[0][0] >= 0.8, out
    assert ev[-1][1]["exit_code"] == 0
