# SPDX-License-Identifier: MIT
"""The namespace as deepagents uses it (docs/api.md, issue 12): "/" is the
namespace root for ls, glob and grep; /large_tool_results and
/conversation_history are aliases into user-data; glob has braces and
dotfiles; cat has a raw form; delete removes files and trees. Nothing here
starts a container."""
import secrets


def new_thread(alice):
    tid = "ns-" + secrets.token_hex(5)
    assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
    return tid


def put(alice, tid, path, content):
    r = alice.post("/api/filesystem/write", json={"thread_id": tid, "path": path,
                                                   "content": content, "overwrite": True})
    assert r.status_code == 201, r.text
    return r.json()["path"]


def test_namespace_root(alice):
    tid = new_thread(alice)
    put(alice, tid, "/workspace/src/a.py", "print('needle')\n")
    r = alice.get("/api/filesystem/ls", params={"thread_id": tid, "path": "/"})
    assert r.status_code == 200, r.text
    assert [e["path"] for e in r.json()["entries"]] == [
        "/home/yuxi/user-data", "/home/yuxi/skills"]
    r = alice.get("/api/filesystem/glob", params={"thread_id": tid, "path": "/",
                                                  "pattern": "**/*.py"})
    j = r.json()
    assert r.status_code == 200 and j["path"] == "/"
    assert "/home/yuxi/user-data/workspace/src/a.py" in [m["path"] for m in j["matches"]]
    r = alice.get("/api/filesystem/grep", params={"thread_id": tid, "path": "/",
                                                  "pattern": "needle"})
    j = r.json()
    assert r.status_code == 200 and j["path"] == "/"
    assert [m["path"] for m in j["matches"]] == ["/home/yuxi/user-data/workspace/src/a.py"]
    # everything else still refuses "/"
    r = alice.get("/api/filesystem/cat", params={"thread_id": tid, "path": "/"})
    assert r.status_code == 403
    g = alice.get("/api/threads/" + tid).json()
    assert g["sandbox"]["state"] == "none"


def test_deepagents_aliases_round_trip(alice):
    tid = new_thread(alice)
    assert put(alice, tid, "/large_tool_results/call_1", "big\nresult\n") == \
        "/home/yuxi/user-data/large_tool_results/call_1"
    r = alice.get("/api/filesystem/cat", params={"thread_id": tid,
                                                 "path": "/large_tool_results/call_1",
                                                 "format": "raw"})
    assert r.status_code == 200 and r.json()["content"] == "big\nresult\n"
    assert put(alice, tid, "/conversation_history/s1.md", "# summary\n") == \
        "/home/yuxi/user-data/conversation_history/s1.md"
    r = alice.get("/api/filesystem/ls", params={"thread_id": tid,
                                                "path": "/conversation_history"})
    assert [e["path"] for e in r.json()["entries"]] == [
        "/home/yuxi/user-data/conversation_history/s1.md"]


def test_glob_braces_dotfiles_and_refusals(alice):
    tid = new_thread(alice)
    for p in ("/workspace/.env", "/workspace/notes.txt", "/workspace/src/a.py",
              "/workspace/.hid/sub/b.py", "/workspace/README.md"):
        put(alice, tid, p, "x\n")
    g = lambda pat, path=None: alice.get("/api/filesystem/glob", params=dict(
        {"thread_id": tid, "pattern": pat}, **({"path": path} if path else {})))
    names = lambda r: sorted(m["path"].rsplit("/", 1)[1] for m in r.json()["matches"])
    assert names(g("*")) == [".env", ".hid", "README.md", "notes.txt", "src"]
    assert names(g("**/*.py")) == ["a.py", "b.py"]
    assert names(g("*.{md,txt}")) == ["README.md", "notes.txt"]
    r = g("/home/yuxi/user-data/workspace/*.md", "/")
    assert [m["path"] for m in r.json()["matches"]] == [
        "/home/yuxi/user-data/workspace/README.md"]
    for bad in ("!(a)", "@(a|b)", "{1..3}", "../x"):
        r = g(bad)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_path", bad
    # grep's name filter: a leading dot only explicitly (as deepagents)
    put(alice, tid, "/workspace/.x.py", "needle\n")
    put(alice, tid, "/workspace/y.py", "needle\n")
    r = alice.get("/api/filesystem/grep", params={"thread_id": tid, "pattern": "needle",
                                                  "glob": "*.py"})
    assert [m["path"].rsplit("/", 1)[1] for m in r.json()["matches"]] == ["y.py"]


def test_cat_raw_and_cut_lines(alice):
    tid = new_thread(alice)
    put(alice, tid, "r.txt", "a\r\nb\n" + "z" * 2500 + "\nlast")
    r = alice.get("/api/filesystem/cat", params={"thread_id": tid, "path": "r.txt",
                                                 "format": "raw"})
    j = r.json()
    assert j["format"] == "raw" and j["content"].startswith("a\r\nb\n")
    assert j["cut_lines"] == [3] and j["total_lines"] == 4 and j["content"].endswith("\nlast")
    r = alice.get("/api/filesystem/cat", params={"thread_id": tid, "path": "r.txt"})
    assert r.json()["format"] == "numbered" and r.json()["cut_lines"] == [3]
    r = alice.get("/api/filesystem/cat", params={"thread_id": tid, "path": "r.txt",
                                                 "format": "pretty"})
    assert r.status_code == 400


def test_delete(alice, bob):
    tid = new_thread(alice)
    put(alice, tid, "/workspace/d/e/f.txt", "x")
    put(alice, tid, "/workspace/g.txt", "y")
    d = lambda who, p, rec=False: who.post("/api/filesystem/delete", json={
        "thread_id": tid, "path": p, "recursive": rec})
    assert d(bob, "/workspace/g.txt").status_code == 404	# another user's thread
    assert d(alice, "/workspace/g.txt").json() == {"path": "/home/yuxi/user-data/workspace/g.txt"}
    assert d(alice, "/workspace/g.txt").status_code == 404
    r = d(alice, "/workspace/d")
    assert r.status_code == 400 and "not empty" in r.json()["error"]["message"]
    assert d(alice, "/workspace/d", True).status_code == 200
    assert alice.get("/api/filesystem/ls", params={"thread_id": tid}).json()["entries"] == []
    assert d(alice, "/skills/shell-tips/SKILL.md").status_code in (403, 404)
    assert d(alice, "/outputs", True).status_code == 403
    assert d(alice, "/workspace/x", "yes").status_code == 400
    g = alice.get("/api/threads/" + tid).json()
    assert g["sandbox"]["state"] == "none"
