# SPDX-License-Identifier: MIT
# tests/mcp: the MCP endpoint (docs/mcp.md) against the real service: the
# official TypeScript SDK's client and the MCP Inspector's CLI (npm,
# tests/mcp/package-lock.json) through the rendered nginx snippets under a
# URL prefix, then the transport, the tools and the attack and limit cases
# (pytest), each protection against the control daemon
# (tests/security/yuxi-sandboxd-control: mcpidentity, mcpbatch,
# clientgone). Exits 77 (skip) without Node.js >= 20.
TESTS += tests/mcp/run-mcp.sh
EXTRA_DIST += tests/mcp/run-mcp.sh tests/mcp/serve.py tests/mcp/conftest.py \
	tests/mcp/test_mcp.py tests/mcp/sdk.test.mjs tests/mcp/package.json \
	tests/mcp/package-lock.json docs/mcp.md
