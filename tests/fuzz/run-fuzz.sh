#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the libFuzzer harnesses (clang, ASan+UBSan) in $BUILD_DIR and run
# each for SECONDS (default 30) from its seed corpus. A crash, leak or broken
# property fails the run and leaves the reproducer in $BUILD_DIR/fuzz-out/;
# copy it into tests/fuzz/corpus/<harness>/ as a regression case.
# Usage: tests/fuzz/run-fuzz.sh [SECONDS]
set -eu
secs=${1:-30}
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$top/build-fuzz}
mkdir -p "$BUILD_DIR"
cd "$BUILD_DIR"
[ -f Makefile ] || CC=clang "$top/configure" -q --enable-fuzzing
harnesses=$(sed -n 's|^noinst_PROGRAMS += ||p' "$top/tests/fuzz/local.mk")
make -s -j"$(nproc)" $harnesses >/dev/null
pass=0 fail=0
for h in $harnesses; do
	name=$(basename "$h")
	corpus=$top/tests/fuzz/corpus/${name#fuzz_}
	out=$BUILD_DIR/fuzz-out/$name
	rm -rf "$out"
	mkdir -p "$out/scratch"
	if "./$h" -max_total_time="$secs" -artifact_prefix="$out/" -print_final_stats=1 \
	    "$out/scratch" "$corpus" >"$out/log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log")
		echo "ok - $name: ${runs:-?} runs in ${secs}s, no crash"
		pass=$((pass + 1))
	else
		echo "not ok - $name: see $out/log"
		tail -30 "$out/log"
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
