#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mcp/run-mcp.sh - the MCP endpoint (POST /mcp, docs/mcp.md) against
# the real service, in three parts:
#   1. sdk.test.mjs: the official TypeScript SDK's client
#      (@modelcontextprotocol/sdk, Streamable HTTP, a bearer token) through
#      a site nginx that includes the rendered snippets, under the URL
#      prefix /sandbox (serve.py);
#   2. the MCP Inspector's CLI mode (@modelcontextprotocol/inspector) lists
#      the tools of that same service;
#   3. test_mcp.py (pytest): the transport's answers, every tool, and the
#      attack and limit cases, each protection against a control daemon.
# The npm packages (tests/mcp/package-lock.json) are installed into
# tests/mcp/node_modules when missing (a read-only tree: into the build
# tree). Exits with the first failing part's status; 77 (skip) without
# Node.js >= 20 or without the packages and no way to install them.
#
# environment: top_srcdir, top_builddir (as for the other suites),
# YUXI_MCP_IMAGE (sandbox image of parts 1-2, default yuxi-sandbox:latest),
# YUXI_MCP_KEEP=1 keeps the service's state directory. Extra arguments go
# to pytest (e.g. -k batch).
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"
pkg=$srcdir/tests/mcp

say() { echo "run-mcp: $*" >&2; }

command -v node >/dev/null 2>&1 || { say "node not installed; skipped"; exit 77; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] 2>/dev/null || { say "Node.js $major < 20; skipped"; exit 77; }

if [ ! -d "$pkg/node_modules/@modelcontextprotocol/sdk" ] ||
    [ ! -d "$pkg/node_modules/@modelcontextprotocol/inspector" ]; then
	if [ ! -w "$pkg" ]; then	# distcheck: a read-only source tree
		copy=$builddir/tests/mcp
		mkdir -p "$copy" || exit 1
		cp "$pkg/package.json" "$pkg/package-lock.json" "$pkg/sdk.test.mjs" "$copy/" ||
		    exit 1
		chmod -R u+w "$copy"
		pkg=$copy
	fi
	if [ ! -d "$pkg/node_modules/@modelcontextprotocol/inspector" ]; then
		say "installing the npm packages in $pkg"
		(cd "$pkg" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
		    >/dev/null) || { say "npm ci failed in $pkg; skipped"; exit 77; }
	fi
fi

serve_start "$here/serve.py" yxmcp-run || exit 1
field() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$serve_info" "$1"; }
YUXI_MCP_URL=$(field url)/mcp
YUXI_MCP_TOKEN=$(field token)
YUXI_MCP_TOKEN_BOB=$(field token_bob)
NODE_EXTRA_CA_CERTS=$(field ca)
export YUXI_MCP_URL YUXI_MCP_TOKEN YUXI_MCP_TOKEN_BOB NODE_EXTRA_CA_CERTS

say "1. the TypeScript SDK's client at $YUXI_MCP_URL"
(cd "$pkg" && node --test --test-reporter=spec sdk.test.mjs)
rc=$?

say "2. the MCP Inspector's CLI mode: tools/list"
out=$serve_dir/inspector.json
"$pkg/node_modules/.bin/mcp-inspector" --cli "$YUXI_MCP_URL" --transport http \
    --header "Authorization: Bearer $YUXI_MCP_TOKEN" --method tools/list >"$out" 2>"$out.err"
irc=$?
if [ $irc -eq 0 ] && node -e '
	const got = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
	    .tools.map((t) => t.name);
	const want = ["create_thread", "list_threads", "execute", "read_file", "write_file",
	    "edit_file", "ls", "glob", "grep", "upload", "download", "start_process",
	    "process_output", "process_stdin", "stop_process", "create_session", "end_session"];
	if (want.some((n) => !got.includes(n))) { console.error("missing:", want, got); process.exit(1); }
	console.log(`inspector: ${got.length} tools: ${got.join(", ")}`);
    ' "$out"; then
	:
else
	say "the inspector did not list the tools (exit $irc):"
	tail -20 "$out.err" >&2
	[ $rc -eq 0 ] && rc=1
fi
serve_stop

say "3. the transport, the tools, attacks and limits (pytest)"
cd "$here" || exit 99
"$py" -m pytest -p no:cacheprovider -q -s "$@" "$here/test_mcp.py"
prc=$?
[ $rc -eq 0 ] && rc=$prc
exit $rc
