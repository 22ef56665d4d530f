# bench: benchmark peers (built by `make bench`, not installed).
EXTRA_PROGRAMS = bench/bench_exec
bench_bench_exec_SOURCES = bench/bench_exec.c
bench_bench_exec_LDADD = $(YX_LIBS)
bench: bench/bench_exec
.PHONY: bench
EXTRA_DIST += bench/exec_bench.py bench/README.md
CLEANFILES += bench/bench_exec
