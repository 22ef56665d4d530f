# SPDX-License-Identifier: MIT
"""YuxiSandbox.glob narrows the service's answer with yuxi_sandbox's own
matcher (_globmatch): it must keep exactly the files deepagents 0.7.8's
BaseSandbox.glob script finds. Compared on a tree with dot-files,
dot-directories and nesting, for patterns of every feature, against that
script itself run on this machine (LocalSandbox). No service needed."""
import os

import pytest
from conftest import need_deepagents

PATTERNS = [
    "*", "*.py", "**/*.py", "*.{py,txt}", "**/*.{py,md}", "src/*.py", "src/**/*.py",
    "src/**", "**", ".*", "**/.*", ".env", "*.yml", "**/*.yml", "/*.py", "/src/*.py",
    "file[0-9].txt", "file[!0-9].txt", "file[^0-9].txt", "file?.txt", "src/**/", "src/",
    "{src,lib{,s}}/*.py", "a{b}c.txt", "**/pkg/*", "*/*", "*/*/*", "**/*/**/*",
    "src/pkg/../x.py", ".github/**/*.yml", "**/.hidden/*", "*.{}",
]
FILES = [
    "a.py", "b.txt", ".env", ".hidden.py", "file1.txt", "file2.txt", "fileA.txt",
    "file10.txt", "abc.txt", "a{b}c.txt", "notes.md", "src/main.py", "src/x.txt",
    "src/pkg/util.py", "src/pkg/.secret.py", "src/.cache/c.py", "lib/l.py", "libs/m.py",
    ".github/workflows/ci.yml", ".hidden/h.py", "deep/a/b/c/d.py", "deep/a/b/c.md",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("globtree")
    for f in FILES:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")
    (root / "emptydir").mkdir()
    return str(root)


def walk(root):
    for d, _, names in os.walk(root):
        for n in names:
            yield os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_files_as_basesandbox(tree, pattern):
    need_deepagents()
    from localsandbox import LocalSandbox
    from yuxi_sandbox import _globmatch
    ref = LocalSandbox(tree).glob(pattern, path=tree)
    alts = _globmatch.candidates(pattern)
    ours = sorted(tree + "/" + r for r in walk(tree) if _globmatch.matches(r, pattern, alts))
    if ref.error is not None:	# the script refuses it (".."): the service does too
        assert ".." in pattern, ref.error
        return
    assert sorted(m["path"] for m in ref.matches) == ours
