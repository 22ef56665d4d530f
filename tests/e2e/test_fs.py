# SPDX-License-Identifier: MIT
"""Agent filesystem, viewer and execute endpoints through the real stack."""
import json
import os
import secrets
import urllib.parse

import pytest

from conftest import UPLOAD_LIMIT, engine_up


def q(tid, **kw):
    kw["thread_id"] = tid
    return urllib.parse.urlencode(kw)


def err(r):
    return r.json()["error"]["code"]


def test_write_cat_edit(alice, thread):
    w = alice.post("/api/filesystem/write", json={"thread_id": thread, "path": "notes/a.txt",
                                                  "content": "one\ntwo\nthree\ntwo\n"})
    assert w.status_code == 201 and w.json() == {"path": "/home/yuxi/user-data/workspace/notes/a.txt"}
    again = alice.post("/api/filesystem/write", json={"thread_id": thread, "path": "/workspace/notes/a.txt",
                                                      "content": "x"})
    assert again.status_code == 409 and err(again) == "file_exists"
    c = alice.get("/api/filesystem/cat?" + q(thread, path="notes/a.txt", offset=1, limit=2))
    assert c.status_code == 200
    j = c.json()
    assert j["content"] == "     2\ttwo\n     3\tthree"
    assert (j["start_line"], j["end_line"], j["total_lines"], j["next_offset"]) == (2, 3, 4, 3)
    last = alice.get("/api/filesystem/cat?" + q(thread, path="notes/a.txt", offset=3)).json()
    assert last["next_offset"] is None
    e = alice.post("/api/filesystem/edit", json={"thread_id": thread, "path": "notes/a.txt",
                                                 "old_string": "two", "new_string": "2"})
    assert e.status_code == 409 and err(e) == "ambiguous_match" and "2" in e.json()["error"]["message"]
    e = alice.post("/api/filesystem/edit", json={"thread_id": thread, "path": "notes/a.txt",
                                                 "old_string": "two", "new_string": "2",
                                                 "replace_all": True})
    assert e.status_code == 200 and e.json()["occurrences"] == 2
    e = alice.post("/api/filesystem/edit", json={"thread_id": thread, "path": "notes/a.txt",
                                                 "old_string": "absent", "new_string": "x"})
    assert e.status_code == 409 and err(e) == "string_not_found"
    ow = alice.post("/api/filesystem/write", json={"thread_id": thread, "path": "notes/a.txt",
                                                   "content": "new", "overwrite": True})
    assert ow.status_code == 201
    assert alice.get("/api/viewer/filesystem/file?" + q(thread, path="notes/a.txt")).json()["content"] == "new"


def test_path_errors(alice, thread):
    r = alice.get("/api/filesystem/cat?" + q(thread, path="/etc/passwd"))
    assert r.status_code == 403 and err(r) == "path_not_allowed"
    r = alice.get("/api/filesystem/cat?" + q(thread, path="../../etc/passwd"))
    assert r.status_code == 400 and err(r) == "invalid_path"
    r = alice.get("/api/filesystem/cat?" + q(thread, path="missing.txt"))
    assert r.status_code == 404 and err(r) == "file_not_found"
    r = alice.get("/api/filesystem/cat?" + q(thread, path="/home/yuxi/user-data/outputs"))
    assert r.status_code == 400 and err(r) == "is_directory"
    r = alice.post("/api/filesystem/write", json={"thread_id": thread, "path": "/skills/x.md",
                                                  "content": "x"})
    assert r.status_code == 403 and err(r) == "read_only"
    r = alice.get("/api/filesystem/cat?" + q(thread))
    assert r.status_code == 400 and err(r) == "invalid_path"
    r = alice.get("/api/filesystem/cat?" + q(thread, path="a.txt", offset="-1"))
    assert r.status_code == 400 and err(r) == "bad_request"


def test_binary_file(alice, thread):
    r = alice.post("/api/filesystem/upload?" + q(thread, path="/uploads/b.bin"),
                   data=b"ab\x00cd", headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201 and r.json() == {"path": "/home/yuxi/user-data/uploads/b.bin", "size": 5}
    r = alice.get("/api/filesystem/cat?" + q(thread, path="/uploads/b.bin"))
    assert r.status_code == 400 and err(r) == "binary_file"


def test_invalid_utf8_text_stays_valid_json(alice, thread):
    """Text with invalid UTF-8 (no NUL, so not binary): cat, grep and the
    viewer answer valid UTF-8 JSON, each invalid byte as U+FFFD (docs/api.md)."""
    raw = b"ok \xff\xfe needle\nsecond \xc3\x28\n"
    r = alice.post("/api/filesystem/upload?" + q(thread, path="/uploads/bad.txt"),
                   data=raw, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201
    line1, line2 = "ok \ufffd\ufffd needle", "second \ufffd("
    for url, pick, check in (
            ("/api/filesystem/cat?" + q(thread, path="/uploads/bad.txt"),
             lambda j: j["content"], lambda c: line1 in c and line2 in c),
            ("/api/filesystem/grep?" + q(thread, pattern="needle", path="/uploads"),
             lambda j: j["matches"][0]["text"], lambda c: c.rstrip("\n") == line1),
            ("/api/viewer/filesystem/file?" + q(thread, path="/uploads/bad.txt"),
             lambda j: j["content"], lambda c: c == raw.decode("utf-8", "replace"))):
        r = alice.get(url)
        assert r.status_code == 200, (url, r.text)
        j = json.loads(r.content.decode("utf-8"))   # strict: raises on raw bytes
        assert check(pick(j)), (url, pick(j))


def test_upload_too_large_leaves_nothing(svc, alice, thread):
    r = alice.post("/api/filesystem/upload?" + q(thread, path="/uploads/big.bin"),
                   data=b"z" * (UPLOAD_LIMIT + 1))
    assert r.status_code == 413 and err(r) == "payload_too_large"
    up = os.path.join(svc.saves, "threads", thread, "user-data", "uploads")
    assert os.listdir(up) == ["attachments"]


def test_ls_glob_grep(alice, thread):
    for p, c in (("src/a.py", "print('needle')\n"), ("src/deep/b.py", "x = 1\nneedle = 2\n"),
                 ("README.txt", "no match\n")):
        assert alice.post("/api/filesystem/write", json={"thread_id": thread, "path": p,
                                                         "content": c}).status_code == 201
    ls = alice.get("/api/filesystem/ls?" + q(thread, path="/workspace")).json()
    assert ls["path"] == "/home/yuxi/user-data/workspace"
    names = {e["path"]: e for e in ls["entries"]}
    assert names["/home/yuxi/user-data/workspace/src"]["is_dir"] is True
    assert names["/home/yuxi/user-data/workspace/README.txt"]["size"] == 9
    g = alice.get("/api/filesystem/glob?" + q(thread, pattern="**/*.py", path="/workspace")).json()
    assert [m["path"] for m in g["matches"]] == [
        "/home/yuxi/user-data/workspace/src/a.py",
        "/home/yuxi/user-data/workspace/src/deep/b.py"]
    assert g["truncated"] is False
    gr = alice.get("/api/filesystem/grep?" + q(thread, pattern="needle", glob="*.py")).json()
    assert sorted((m["path"], m["line"]) for m in gr["matches"]) == [
        ("/home/yuxi/user-data/workspace/src/a.py", 1),
        ("/home/yuxi/user-data/workspace/src/deep/b.py", 2)]
    r = alice.get("/api/filesystem/grep?" + q(thread, pattern="("))   # literal, not a regex
    assert r.status_code == 200
    r = alice.get("/api/filesystem/glob?" + q(thread))
    assert r.status_code == 400


def test_download_x_accel(alice, thread):
    name = "résumé \"final\" 100%.txt"
    body = b"hello download\n"
    r = alice.post("/api/filesystem/upload?" + q(thread, path="/outputs/" + name), data=body)
    assert r.status_code == 201, r.text
    for ep in ("/api/filesystem/download", "/api/viewer/filesystem/download"):
        d = alice.get(ep + "?" + q(thread, path="/outputs/" + name))
        assert d.status_code == 200, d.text
        assert d.content == body
        cd = d.headers["Content-Disposition"]
        assert cd.startswith("attachment; filename=\"")
        assert "filename*=UTF-8''" + urllib.parse.quote(name, safe="") in cd
        assert "\r" not in cd and "\n" not in cd
        assert "X-Accel-Redirect" not in d.headers
    r = alice.get("/api/viewer/filesystem/download?" + q(thread, path="/outputs"))
    assert r.status_code == 400 and err(r) == "is_directory"


def test_internal_location_not_reachable(alice, thread):
    r = alice.get("/_yuxi_files/%s/user-data/workspace/" % thread)
    assert r.status_code == 404


def test_viewer_tree_and_skills_visibility(alice):
    tids = {}
    for cfg, want in (("default", ["python-basics", "shell-tips"]), ("python", ["python-basics"]),
                      ("minimal", [])):
        tid = "sk-" + secrets.token_hex(4)
        assert alice.post("/api/threads", json={"thread_id": tid, "agent_id": "coder",
                                                "agent_config_id": cfg}).status_code == 201
        tids[tid] = want
    try:
        for tid, want in tids.items():
            root = alice.get("/api/viewer/filesystem/tree?" + q(tid, path="/")).json()
            assert [e["name"] for e in root["entries"]] == ["user-data", "skills"]
            sk = alice.get("/api/viewer/filesystem/tree?" + q(tid, path="/home/yuxi/skills"))
            assert sk.status_code == 200
            assert sorted(e["name"] for e in sk.json()["entries"]) == want
        tid = [t for t, w in tids.items() if w == ["python-basics"]][0]
        f = alice.get("/api/viewer/filesystem/file?" + q(tid, path="/skills/python-basics/SKILL.md"))
        assert f.status_code == 200 and "python-basics" in f.json()["content"]
        hidden = alice.get("/api/viewer/filesystem/file?" + q(tid, path="/skills/shell-tips/SKILL.md"))
        assert hidden.status_code == 404 and err(hidden) == "file_not_found"
        d = alice.get("/api/filesystem/download?" + q(tid, path="/skills/python-basics/SKILL.md"))
        assert d.status_code == 200 and b"python-basics" in d.content
    finally:
        for tid in tids:
            alice.delete("/api/threads/" + tid)


@pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")
def test_execute_output_encoding(alice, thread):
    """The reply is written by hand (h_exec.c), not by json-c: quotes,
    backslashes, every control byte, NUL, DEL, multi-byte UTF-8 and invalid
    bytes (each one U+FFFD) must come back exactly, in valid JSON."""
    raw = (b'q"b\\c' + bytes(range(1, 32)) + b"\x7f\x00z" +
           "é€😀".encode() + b"\xff\xc0x\x80y")
    cmd = "printf '%s'" % "".join("\\%03o" % c for c in raw)
    r = alice.post("/api/execute", json={"thread_id": thread, "command": cmd})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    j = r.json()
    assert j["output"] == raw.decode("utf-8", "replace")
    assert j["output"].count("\ufffd") == 3
    assert set(j) == {"output", "exit_code", "truncated", "timed_out", "duration_ms"}
    assert j["exit_code"] == 0 and j["truncated"] is False


def test_execute(svc, alice, thread):
    r = alice.post("/api/execute", json={"thread_id": thread, "command": "echo $((1+1)); pwd"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["output"] == "2\n/home/yuxi/user-data/workspace\n"
    assert j["exit_code"] == 0 and j["truncated"] is False and j["timed_out"] is False
    r = alice.post("/api/execute", json={"thread_id": thread, "command": "exit 3"})
    assert r.json()["exit_code"] == 3
    # a refused command is an ordinary result: exit 126, the reason, nothing ran
    r = alice.post("/api/execute", json={"thread_id": thread, "command": "cat /etc/shadow"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["exit_code"] == 126 and j["refused"] == "path_not_allowed"
    assert j["output"] == "command refers to a path outside the sandbox: /etc/shadow"
    assert j["duration_ms"] == 0 and not j["truncated"] and not j["timed_out"]
    r = alice.post("/api/execute", json={"thread_id": thread})
    assert r.status_code == 400 and err(r) == "bad_request"
    r = alice.post("/api/execute", json={"thread_id": thread, "command": "true", "timeout": "x"})
    assert r.status_code == 400
    g = alice.get("/api/threads/" + thread).json()
    assert g["sandbox"]["state"] == "active"
    assert g["sandbox"]["container"].startswith(svc.prefix)
    # deleting the thread removes its container too
    assert alice.delete("/api/threads/" + thread).status_code == 204
    import subprocess
    out = subprocess.run(["docker", "ps", "-a", "--filter", "name=^/" + g["sandbox"]["container"],
                          "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    assert out.strip() == ""
