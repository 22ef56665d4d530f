#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
format.py - check or apply the project's .clang-format to the tracked C
sources under src/, include/ and tests/ (`make format-check`, `make format`).

clang-format aligns declarations and trailing comments at the longest name
plus one, never at tab stops as BSD KNF does (`size_t<TAB> n;`), so a plain
clang-format run would rewrite ~3,000 well-formed lines. The comparison is
therefore made modulo the width of whitespace inside a line: the leading
indentation, the line breaks, and whether two tokens are separated by
whitespace at all must match clang-format exactly; how many tabs or spaces
separate them need not. --fix writes clang-format's lines only where they
differ in that sense and keeps every other line as it is. --strict compares
byte for byte instead (plain clang-format).

  format.py --check [--strict] [FILE...]   print the diff, exit 1 if any
  format.py --fix [--strict] [FILE...]     rewrite the files in place

Without FILEs: `git ls-files` of src/ include/ tests/ (*.c, *.h), or a walk
of those folders when the tree is not a git checkout; node_modules/ is
skipped. The clang-format binary is $CLANG_FORMAT, else clang-format-14 (the
version the configuration was measured with; others format a few
constructs differently), else clang-format.
"""
import argparse
import concurrent.futures
import difflib
import os
import re
import shutil
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("src", "include", "tests")
LEAD = re.compile(r"[ \t]*")
INNER = re.compile(r"[ \t]+")


def sources():
    try:
        out = subprocess.run(["git", "-C", TOP, "ls-files", "-z", "--"] +
            ["%s/*.%s" % (d, e) for d in DIRS for e in ("c", "h")],
            capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d in DIRS:
            for dp, dns, fns in os.walk(os.path.join(TOP, d)):
                dns[:] = sorted(n for n in dns if n != "node_modules")
                files += [os.path.relpath(os.path.join(dp, n), TOP)
                    for n in sorted(fns) if n.endswith((".c", ".h"))]
    return [f for f in files if "node_modules/" not in f]


def binary():
    cf = os.environ.get("CLANG_FORMAT")
    if cf:
        if not shutil.which(cf):
            sys.exit("format.py: CLANG_FORMAT=%s: not found" % cf)
        return cf
    for name in ("clang-format-14", "clang-format"):
        if shutil.which(name):
            return name
    sys.exit("format.py: no clang-format (Debian: apt-get install clang-format-14)")


def norm(line):
    """The line with every run of blanks after the indentation made one space."""
    n = LEAD.match(line).end()
    return line[:n] + INNER.sub(" ", line[n:])


def merge(old, new, strict):
    """Lines of the result: new's lines where they differ from old's (in the
    chosen sense), old's everywhere else."""
    if strict:
        return new
    out = []
    sm = difflib.SequenceMatcher(None, [norm(l) for l in old],
        [norm(l) for l in new], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        out += old[i1:i2] if tag == "equal" else new[j1:j2]
    return out


def run(cf, path, strict):
    with open(os.path.join(TOP, path), encoding="utf-8") as fp:
        text = fp.read()
    r = subprocess.run([cf, "--style=file", "--assume-filename=" +
        os.path.join(TOP, path)], input=text, capture_output=True,
        text=True, cwd=TOP)
    if r.returncode != 0:
        return path, text, None, r.stderr
    old = text.splitlines(True)
    return path, text, "".join(merge(old, r.stdout.splitlines(True), strict)), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--fix", action="store_true")
    ap.add_argument("--strict", action="store_true",
        help="byte-for-byte clang-format (also aligns declarations)")
    ap.add_argument("files", nargs="*", help="paths relative to the top")
    a = ap.parse_args()
    cf = binary()
    files = a.files or sources()
    bad = errors = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for path, old, new, err in ex.map(lambda f: run(cf, f, a.strict), files):
            if new is None:
                errors += 1
                sys.stderr.write("%s: %s: %s" % (cf, path, err))
                continue
            if new == old:
                continue
            bad += 1
            if a.fix:
                with open(os.path.join(TOP, path), "w", encoding="utf-8") as fp:
                    fp.write(new)
            else:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True),
                    "a/" + path, "b/" + path, n=1))
    sys.stdout.flush()
    what = "reformatted" if a.fix else "need formatting"
    print("format: %d of %d files %s (%s%s)" % (bad, len(files), what, cf,
        ", strict" if a.strict else ""), file=sys.stderr)
    if errors:
        return 2
    return 1 if bad and a.check else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:     # `make format-check | head`
        sys.exit(1)
