#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering rules of docs/architecture.md, checked on the source tree:

1. no call cycle between source files: a.c -> b.c when a.c calls a
   function that b.c defines (not static); every strongly connected
   component must be a single file;
2. only src/provider/ takes the shared table's lock (yx_table_lock);
3. no file outside src/daemon/ includes a header of src/daemon/, and no
   file outside src/cli/ one of src/cli/ (the two programs are the top);
4. every reference names a file in the repository (none of the design, API
   or style documents of the project's origin, which live outside it);
5. at most 2 calls from one handler file (src/daemon/h_*.c but h_common.c)
   into a function of another.

Prints what breaks a rule and exits 1; prints the counts and exits 0 when
all hold. Argument: the source tree (top_srcdir)."""
import glob
import os
import re
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("top_srcdir", ".")
bad = []


def read(p):
    with open(p, errors="replace") as f:
        return f.read()


def strip(s):
    s = re.sub(r"/\*.*?\*/", "", s, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', s)


cfiles = sorted(glob.glob(os.path.join(top, "src", "**", "*.c"), recursive=True))
allfiles = cfiles + sorted(glob.glob(os.path.join(top, "src", "**", "*.h"), recursive=True))
allfiles += sorted(glob.glob(os.path.join(top, "include", "**", "*.h"), recursive=True))
rel = lambda p: os.path.relpath(p, top)

# 1. call cycles
defs, code = {}, {}
for f in cfiles:
    code[f] = strip(read(f))
    for m in re.finditer(r"^(?!static)[A-Za-z_][\w \*]*\n([A-Za-z_]\w*)\(", code[f], re.M):
        defs.setdefault(m.group(1), set()).add(f)
edges = {f: set() for f in cfiles}
for f, s in code.items():
    for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", s)) - {"main"}:
        edges[f] |= {g for g in defs.get(name, ()) if g != f}
index, low, stack, on, comps = {}, {}, [], set(), []


def tarjan(v, n=[0]):
    index[v] = low[v] = n[0]
    n[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            tarjan(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop()
            on.discard(w)
            c.append(w)
            if w == v:
                break
        comps.append(c)


sys.setrecursionlimit(10000)
for v in cfiles:
    if v not in index:
        tarjan(v)
cycles = [c for c in comps if len(c) > 1]
for c in cycles:
    bad.append("call cycle: " + " ".join(sorted(rel(x) for x in c)))

# 2. the table lock (its declaration lives in include/yuxi/shm_table.h)
for f in glob.glob(os.path.join(top, "src", "**", "*.[ch]"), recursive=True):
    if not rel(f).startswith("src/provider/") and "yx_table_lock" in strip(read(f)):
        bad.append("%s takes the table lock (only src/provider/ may)" % rel(f))

# 5. handlers call no handlers: a function one endpoint file (src/daemon/
#    h_*.c; h_common.c holds the helpers they share) calls in another one,
#    at most HANDLER_CROSS of them in all (issue 28: shared code lives in
#    files that are not handlers)
HANDLER_CROSS = 2
hfiles = [f for f in cfiles if re.match(r"h_\w+\.c$", os.path.basename(f)) and
          rel(f).startswith("src/daemon/") and not f.endswith("h_common.c")]
cross = sorted({(rel(f), name, rel(g)) for f in hfiles
                for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", code[f]))
                for g in defs.get(name, ()) if g != f and g in hfiles})
if len(cross) > HANDLER_CROSS:
    for f, name, g in cross:
        bad.append("handler %s calls %s of handler %s" % (f, name, g))

# 3. includes from the top layers
for f in allfiles:
    for m in re.finditer(r'#include "(daemon|cli)/', read(f)):
        if not rel(f).startswith("src/%s/" % m.group(1)):
            bad.append("%s includes a header of src/%s/" % (rel(f), m.group(1)))

# 4. references outside the repository
for d in ("src", "include", "tests"):
    for f in glob.glob(os.path.join(top, d, "**", "*"), recursive=True):
        if (not os.path.isfile(f) or "node_modules" in f or
                f.endswith((".o", ".a")) or os.path.samefile(f, __file__)):
            continue
        try:
            s = read(f)
        except (OSError, UnicodeDecodeError):
            continue
        for m in re.finditer(r"(?<![a-z/])(DESIGN|STYLE|API)[.]md", s):
            bad.append("%s names %s (not part of the project)" % (rel(f), m.group(0)))

for b in bad:
    print(b)
print("layers: %d source files, %d call edges, %d cycles, %d handler-to-handler calls, %d problems" % (
    len(cfiles), sum(len(e) for e in edges.values()), len(cycles), len(cross), len(bad)))
sys.exit(1 if bad else 0)
