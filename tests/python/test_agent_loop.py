# SPDX-License-Identifier: MIT
"""A deepagents-style agent loop without a model, through YuxiSandbox only:
the tool calls an agent makes to write a Python program, run it, fix it,
search the tree and fetch what it produced. The same script runs on
deepagents' own BaseSandbox over this machine's shell (LocalSandbox) in a
directory laid out the same way; every tool result must be the same, the
root of the tree aside. Then the same in async form, and glob patterns of
every feature on one tree, compared the same way."""
import asyncio
import os

import pytest
from conftest import need_deepagents, thread_id

ROOT = "/home/yuxi/user-data/workspace/loop"

PROGRAM = '''import json, sys

def mean(xs):
    return sum(xs) / len(xs)

data = [3, 4, 8]
print("mean", mean(data))
json.dump({"mean": mean(data), "n": len(data)}, open(sys.argv[1], "w"))
'''


def script(sb, root):
    """The tool calls, in order; returns [(tool, result)] with the root
    replaced by <root> so both runs compare."""
    out = []

    def rec(tool, value):
        shown = value
        if tool == "glob":	# YuxiSandbox adds size and modified_at
            shown = (value.error, value.truncated,
                     [(m["path"], m["is_dir"]) for m in value.matches or []])
        out.append((tool, repr(shown).replace(root, "<root>")))
        return value
    rec("write", sb.write(root + "/app/main.py", PROGRAM))
    rec("write", sb.write(root + "/app/util.py", "def double(x):\n    return 2 * x\n"))
    rec("write", sb.write(root + "/app/README.md", "# app\nTODO: explain\n"))
    rec("ls", sorted(e["path"] for e in sb.ls(root + "/app").entries))
    rec("read", sb.read(root + "/app/main.py"))
    rec("read", sb.read(root + "/app/main.py", offset=2, limit=2))
    r = rec("execute", sb.execute("cd %s && python3 app/main.py out.json" % root))
    assert r.exit_code == 0 and r.output == "mean 5.0\n", r
    # the agent changes its mind: a median instead
    rec("edit", sb.edit(root + "/app/main.py", "return sum(xs) / len(xs)",
                        "return sorted(xs)[len(xs) // 2]"))
    rec("edit", sb.edit(root + "/app/main.py", "mean", "median", replace_all=False))
    rec("edit", sb.edit(root + "/app/main.py", "mean", "median", replace_all=True))
    rec("edit", sb.edit(root + "/app/main.py", "no such text", "x"))
    rec("edit", sb.edit(root + "/app/missing.py", "a", "b"))
    r = rec("execute", sb.execute("cd %s && python3 app/main.py out.json; echo rc=$?" % root))
    assert r.output == "median 4\nrc=0\n", r
    rec("execute", sb.execute("cd %s && python3 -c 'import sys; sys.exit(3)'" % root))
    rec("grep", sb.grep("median", path=root))
    rec("grep", sb.grep("TODO", path=root, glob="*.md"))
    rec("grep", sb.grep("def ", path=root + "/app", glob="*.py", max_count=1))
    rec("glob", sb.glob("**/*.py", path=root))
    rec("glob", sb.glob("*.json", path=root))
    rec("read", sb.read(root + "/app/nothere.txt"))
    rec("read", sb.read(root + "/app/main.py", offset=100))
    down = rec("download", sb.download_files([root + "/out.json", root + "/none.json"]))
    assert down[0].content == b'{"median": 4, "n": 3}' and down[1].error == "file_not_found"
    rec("delete", sb.delete(root + "/out.json"))
    rec("glob", sb.glob("*.json", path=root))
    return out


@pytest.fixture(scope="module")
def backend(svc):
    need_deepagents()
    from yuxi_sandbox.deepagents import YuxiSandbox
    sb = YuxiSandbox.create(url=svc.url, token=svc.tokens["alice"], ca_file=svc.cert,
                            thread_id=thread_id("loop"), agent_id="coder",
                            metadata={"purpose": "agent-loop test"})
    yield sb
    sb.delete()


def test_loop_same_as_basesandbox(backend, tmp_path):
    from localsandbox import LocalSandbox
    ours = script(backend, ROOT)
    local_root = str(tmp_path / "loop")
    ref = script(LocalSandbox(str(tmp_path)), local_root)
    assert len(ours) == len(ref)
    for (tool, a), (_, b) in zip(ours, ref):
        assert a == b, "%s differs:\n yuxi:  %s\n local: %s" % (tool, a, b)
    print("%d tool calls, each the same as deepagents' BaseSandbox" % len(ours))


def test_async_loop(backend):
    async def run():
        root = ROOT + "-async"
        w = await backend.awrite(root + "/a.py", "print('hi')\n")
        assert w.error is None
        r = await backend.aexecute("python3 %s/a.py" % root)
        assert (r.output, r.exit_code) == ("hi\n", 0)
        e = await backend.aedit(root + "/a.py", "hi", "ho")
        assert e.occurrences == 1
        reads, greps = await asyncio.gather(backend.aread(root + "/a.py"),
                                            backend.agrep("ho", path=root))
        assert reads.file_data["content"] == "print('ho')"
        assert greps.matches == [{"path": root + "/a.py", "line": 1, "text": "print('ho')"}]
        g = await backend.aglob("*.py", path=root)
        assert [m["path"] for m in g.matches] == [root + "/a.py"]
        ls = await backend.als(root)
        assert [x["path"] for x in ls.entries] == [root + "/a.py"]
        assert (await backend.adelete(root)).error is None
    asyncio.run(run())


GLOBS = ["*.py", "**/*.py", "*.{py,md}", "src/**/*.py", "src/*", ".*", "**/.*", "*.yml",
         "/*.py", "file[0-9].txt", "file?.txt", "{src,lib}/*.py", "**", "*/*"]
TREE = ["a.py", ".env", ".hidden.py", "file1.txt", "file10.txt", "notes.md",
        "src/main.py", "src/pkg/util.py", "src/pkg/.secret.py", "src/.cache/c.py",
        "lib/l.py", ".github/workflows/ci.yml"]


def test_glob_same_as_basesandbox(backend, tmp_path):
    from localsandbox import LocalSandbox
    root = ROOT + "-glob"
    local = LocalSandbox(str(tmp_path))
    lroot = str(tmp_path / "g")
    assert all(r.error is None for r in backend.upload_files([(root + "/" + f, b"x") for f in TREE]))
    local.upload_files([(lroot + "/" + f, b"x") for f in TREE])
    os.makedirs(lroot + "/emptydir")
    backend.execute("mkdir -p %s/emptydir" % root)
    for pat in GLOBS:
        ours = sorted(m["path"].replace(root, "<root>") for m in backend.glob(pat, root).matches)
        ref = sorted(m["path"].replace(lroot, "<root>") for m in local.glob(pat, lroot).matches)
        assert ours == ref, pat


EDGE_FILES = {
    "empty.txt": b"",
    "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "nul.txt": b"text\0with nul\nline 2\n",
    "latin1.txt": b"caf\xe9\nno utf-8\n",
    "long.txt": b"short\n" + b"y" * 5000 + b"\nend",
    "blank.txt": b"\n\n  \n",
    "pic.png": bytes(range(256)) * 4,
    "big.png": b"\x89PNG" + b"\0" * (600 * 1024),
    "huge.txt": (b"%07d " % 0 + b"z" * 1000 + b"\n") * 11000,	# 11 MB: over the service's cat
}
READS = [(0, 2000), (1, 1), (0, 0), (2, 5), (5, 1), (-3, 2), (10990, 20)]


def test_read_edges_same_as_basesandbox(backend, tmp_path):
    """read() of odd files (empty, CRLF, NUL, not UTF-8, lines over
    the service's 2000 bytes, whitespace only, images small and over the
    preview size, a file over the service's 10 MiB) and edit() of CRLF
    text with what read() showed: as BaseSandbox answers."""
    from localsandbox import LocalSandbox
    root, lroot = ROOT + "-edge", str(tmp_path / "e")
    local = LocalSandbox(str(tmp_path))
    backend.upload_files([(root + "/" + n, d) for n, d in EDGE_FILES.items()])
    local.upload_files([(lroot + "/" + n, d) for n, d in EDGE_FILES.items()])
    for name in EDGE_FILES:
        for off, lim in READS:
            if name == "latin1.txt" and off > 0:
                continue	# a page without the bad bytes is text here (docs/python.md)
            a = repr(backend.read(root + "/" + name, off, lim)).replace(root, "<r>")
            b = repr(local.read(lroot + "/" + name, off, lim)).replace(lroot, "<r>")
            assert a == b, (name, off, lim)
    for sb, r in ((backend, root), (local, lroot)):
        e = sb.edit(r + "/crlf.txt", "one\ntwo", "1\n2")
        assert (e.error, e.occurrences) == (None, 1)
    assert (backend.download_files([root + "/crlf.txt"])[0].content
            == local.download_files([lroot + "/crlf.txt"])[0].content == b"1\r\n2\r\nthree\r\n")
