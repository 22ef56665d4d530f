# SPDX-License-Identifier: MIT
# bench: benchmark peers (built by `make bench`, not installed).
EXTRA_PROGRAMS = bench/bench_exec bench/bench_stream
bench_bench_exec_SOURCES = bench/bench_exec.c
bench_bench_exec_LDADD = $(YX_LIBS)
bench_bench_stream_SOURCES = bench/bench_stream.c
bench_bench_stream_LDADD = $(FCGI_LIBS)
bench: bench/bench_exec bench/bench_stream
.PHONY: bench
EXTRA_DIST += bench/exec_bench.py bench/agent_bench.py bench/README.md \
	bench/runtime_bench.py \
	bench/benchsvc.py bench/http_exec_bench.py bench/stream_bench.py bench/viewer_wrk.sh \
	bench/wrk_auth.lua bench/wrk_mix.lua bench/download_bench.sh \
	bench/rss_soak.sh bench/remote_bench.py bench/floor_bench.py \
	bench/cold_bench.py bench/python_bench.py bench/session_bench.py \
	bench/mcp_bench.py bench/preview_bench.py \
	bench/snap_bench.py bench/browser_bench.py bench/density.py
CLEANFILES += bench/bench_exec bench/bench_stream
