#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/python/run-python.sh - the Python client (clients/python) against
# the real service: client routes, streamed execute, retries, errors and
# argument checks (test_client.py); LangChain's standard sandbox suite on
# YuxiSandbox (test_standard.py, 77 tests from the vendored kit); an agent
# loop, odd reads and glob patterns compared with deepagents' own
# BaseSandbox (test_agent_loop.py, test_globmatch.py); YuxiSandbox's cwd,
# env, metadata and idle timeout (test_options.py); the offline install
# (test_packaging.py). Debian's /usr/bin/python3 with pytest and
# pytest-asyncio (asyncio_mode=auto, which the suite needs), wcmatch and
# typing-extensions (the deepagents kit imports them).
#
# The kit (deepagents 0.7.8 backends and LangChain's suite) is used from
# ../shared/third_party/deepagents-py beside the checkout
# (YUXI_DEEPAGENTS_PY overrides); without it those tests are skipped,
# saying so. Extra arguments go to pytest.
. "$(dirname "$0")/../lib/suite.sh"
kit=${YUXI_DEEPAGENTS_PY:-$srcdir/../shared/third_party/deepagents-py}
if [ -d "$kit/deepagents" ]; then
	PYTHONPATH=$(cd "$kit" && pwd):$PYTHONPATH
else
	echo "run-python.sh: no deepagents kit at $kit: the standard suite is skipped" >&2
fi
PYTHONPATH=$srcdir/clients/python:$PYTHONPATH
export PYTHONPATH
cd "$srcdir/tests/python" || exit 99
exec "$py" -m pytest -p no:cacheprovider -q -o asyncio_mode=auto -rfEs "$@" \
    "$srcdir/tests/python"
