# SPDX-License-Identifier: MIT
"""Bring up the real service for the MCP client tests (tests/mcp/sdk.mjs:
the official TypeScript SDK; the MCP Inspector's CLI mode) the way a host
that already runs nginx serves it: yuxi-sandboxd behind a site nginx that
includes the snippets `yuxi-sandbox nginx-conf` renders (recipe "request":
auth_request to an auth service that knows the bearer tokens), under the
URL prefix /sandbox (YUXI_MCP_URL_PREFIX overrides it; "" for none), so
the endpoint is https://127.0.0.1:PORT/sandbox/mcp.

Uses the shared harness (tests/lib/yxsvc.py SiteService: temporary saves
directory, its own shared-memory name and container prefix, a free
127.0.0.1 port, bearer tokens, the self-signed certificate) with the
default sandbox image (yuxi-sandbox:latest, which has python3;
YUXI_MCP_IMAGE overrides it) and the shipped body limit.

usage: serve.py INFO_JSON   writes {"url","token","token_bob","ca",...}
to INFO_JSON once /healthz answers, then runs until SIGTERM/SIGINT and
stops everything (nginx, yuxi-sandboxd, every container with the run's
prefix).
"""
import os
import sys

import yxsvc

OVERRIDES = {
    "YUXI_SANDBOX_IMAGE": os.environ.get("YUXI_MCP_IMAGE", "yuxi-sandbox:latest"),
    "YUXI_BODY_LIMIT": str(8 * 1024 * 1024),
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py INFO_JSON")
    svc = yxsvc.SiteService("request", url_prefix=os.environ.get("YUXI_MCP_URL_PREFIX",
                                                                 "/sandbox"),
                            overrides=OVERRIDES, stem="yxmcp")
    sys.exit(yxsvc.serve(svc, sys.argv[1], lambda s: {
        "token": s.tokens["alice"], "token_bob": s.tokens["bob"], "ca": s.cert,
        "audit": s.audit_path()}, keep=os.environ.get("YUXI_MCP_KEEP") == "1"))


if __name__ == "__main__":
    main()
