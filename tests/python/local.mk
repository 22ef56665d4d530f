# SPDX-License-Identifier: MIT
# tests/python: the Python client and deepagents backend (clients/python)
# against the real service (nginx + yuxi-sandboxd + dockerd, default
# sandbox image), with LangChain's standard sandbox suite from
# ../shared/third_party/deepagents-py beside the checkout.
TESTS += tests/python/run-python.sh
EXTRA_DIST += tests/python/run-python.sh tests/python/conftest.py \
	tests/python/localsandbox.py tests/python/test_client.py \
	tests/python/test_standard.py tests/python/test_agent_loop.py \
	tests/python/test_globmatch.py tests/python/test_packaging.py \
	tests/python/test_options.py tests/python/test_sessions.py \
	clients/python/pyproject.toml clients/python/README.md \
	clients/python/pep517_backend.py clients/python/yuxi_sandbox/__init__.py \
	clients/python/yuxi_sandbox/py.typed clients/python/yuxi_sandbox/client.py \
	clients/python/yuxi_sandbox/errors.py clients/python/yuxi_sandbox/types.py \
	clients/python/yuxi_sandbox/deepagents.py clients/python/yuxi_sandbox/_check.py \
	clients/python/yuxi_sandbox/_transport.py clients/python/yuxi_sandbox/_threads.py \
	clients/python/yuxi_sandbox/_execute.py clients/python/yuxi_sandbox/_processes.py \
	clients/python/yuxi_sandbox/_sessions.py \
	clients/python/yuxi_sandbox/_files.py clients/python/yuxi_sandbox/_globmatch.py \
	docs/python.md
