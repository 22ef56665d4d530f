# SPDX-License-Identifier: MIT
"""YuxiSandbox's per-command and per-thread options against the real
service: the backend's default cwd and env and execute's own reach the
command, metadata and idle_timeout reach the thread record, bad options
raise before any request, and the service's refusals of a cwd or env
raise with their code (they are the caller's settings, not a command's
failure)."""
import pytest
from conftest import ConnCounter, thread_id

from yuxi_sandbox import errors

WS = "/home/yuxi/user-data/workspace"


@pytest.fixture(scope="module")
def sb(YuxiSandbox, opts, make_client):
    tag = thread_id("tag")
    b = YuxiSandbox.create(**opts, thread_id=thread_id("opt"), metadata={"project": tag},
                           idle_timeout=300, cwd="sub/dir",
                           env={"FOO": "bar baz", "Q": "it's $HOME"})
    b.tag = tag
    yield b
    b.delete()


def test_create_sends_metadata_and_idle_timeout(sb, make_client):
    c = make_client("alice")
    rec = c.get_thread(sb.id)
    assert rec["metadata"] == {"project": sb.tag} and rec["idle_timeout"] == 300
    assert [t["thread_id"] for t in c.list_threads(metadata={"project": sb.tag})] == [sb.id]


def test_default_cwd_and_env_reach_every_command(sb):
    assert sb.upload_files([(WS + "/sub/dir/here.txt", b"x\n")])[0].error is None
    r = sb.execute('pwd; echo "$FOO|$Q"; ls')
    assert (r.output, r.exit_code) == ("%s/sub/dir\nbar baz|it's $HOME\nhere.txt\n" % WS, 0)
    assert sb.cwd == "sub/dir" and sb.env == {"FOO": "bar baz", "Q": "it's $HOME"}


def test_per_call_cwd_replaces_env_is_set_over(sb):
    r = sb.execute('pwd; echo "$FOO/$BAR/$HOME"', cwd="/mnt/user-data/outputs",
                   env={"BAR": "2", "HOME": "/home/yuxi/h"})
    assert r.output == "/home/yuxi/user-data/outputs\nbar baz/2//home/yuxi/h\n"
    assert sb.execute("pwd", cwd=WS).output == WS + "\n"


async def test_aexecute_passes_them(sb):
    r = await sb.aexecute('pwd; echo "$FOO"', cwd="/workspace/sub", env={"FOO": "async"})
    assert r.output == WS + "/sub\nasync\n"


def test_bad_options_raise_before_any_request(YuxiSandbox, opts, sb, monkeypatch):
    counter = ConnCounter(monkeypatch)
    for kw, exc in [({"env": {"1A": "x"}}, ValueError), ({"env": {"A": 1}}, TypeError),
                    ({"env": {"V%d" % i: "" for i in range(65)}}, ValueError),
                    ({"env": {"A": "x" * (32 * 1024)}}, ValueError),
                    ({"cwd": ""}, ValueError), ({"cwd": 7}, TypeError)]:
        with pytest.raises(exc):
            sb.execute("true", **kw)
        with pytest.raises(exc):
            YuxiSandbox(**opts, thread_id="t1", **kw)
        with pytest.raises(exc):
            YuxiSandbox.create(**opts, **kw)
    # 63 more names are 65 with the backend's two
    with pytest.raises(ValueError):
        sb.execute("true", env={"V%d" % i: "" for i in range(63)})
    assert counter.n == 0


def test_refusals_of_the_service_raise_with_their_code(YuxiSandbox, opts, sb):
    for cwd, code in [("nope", "cwd_not_found"), ("/etc", "invalid_path")]:
        with pytest.raises(errors.BadRequestError) as ei:
            sb.execute("true", cwd=cwd)
        assert ei.value.code == code
    net = YuxiSandbox.create(**opts, thread_id=thread_id("net"), agent_id="fetcher",
                             env={"HTTP_PROXY": "http://evil:1"})
    try:
        with pytest.raises(errors.BadRequestError) as ei:
            net.execute("true")
        assert ei.value.code == "invalid_env"
    finally:
        net.delete()
    # a failing command stays a result
    r = sb.execute("exit 3")
    assert r.exit_code == 3
