# SPDX-License-Identifier: MIT
# tests/stream: streamed execute and background processes (docs/api.md)
# against the real service (nginx + yuxi-sandboxd + dockerd), driven by
# pytest.
TESTS += tests/stream/run-stream.sh
EXTRA_DIST += tests/stream/run-stream.sh tests/stream/conftest.py \
	tests/stream/test_stream.py tests/stream/test_procs.py \
	tests/stream/test_sessions.py
