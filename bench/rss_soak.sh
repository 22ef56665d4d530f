#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/rss_soak.sh - worker RSS over 100k requests (issue 3, §5).
#
# Starts the real service (bench/benchsvc.py: nginx TLS on a free 127.0.0.1
# port -> yuxi-sandboxd, YUXI_WORKERS=4), then drives a cheap endpoint mix
# (bench/wrk_mix.lua: GET /api/threads, viewer tree, viewer file, /healthz,
# in turn) with wrk (2 threads, 16 connections, keep-alive) in slices of
# 1 s up to the first checkpoint and SLICE seconds (default 5) after, until the service's request log shows the target count of
# served requests. Each worker's VmRSS (/proc/<pid>/status) is read before
# the load, after FIRST requests and after TOTAL requests; the worker pids
# must be the same throughout (no respawn) and every answer 2xx.
#
# usage: bench/rss_soak.sh BUILD_DIR [TOTAL [FIRST]]   (default 100000 10000)
# bounded: gives up after MAX_SECONDS (default 900) of load.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
total=${2:-100000}
first=${3:-10000}
slice=${SLICE:-5}
max_secs=${MAX_SECONDS:-900}
py=/usr/bin/python3
dir=$(mktemp -d /tmp/yxbrss.XXXXXX)
export top_builddir=$build

cleanup() {
	"$py" "$here/benchsvc.py" stop "$dir/svc" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$dir/svc"
timeout 120 "$py" "$here/benchsvc.py" start "$build" "$dir/svc" YUXI_WORKERS=4
. "$dir/svc/env.sh"
ws="$THREAD_DIR/workspace"
for i in $(seq -w 1 12); do printf 'file %s\n' "$i" > "$ws/f$i.txt"; done
head -c 2048 /dev/zero | tr '\0' 'a' | fold -w 63 > "$ws/notes.txt"
chown -R --reference="$ws" "$ws"

served() { grep -c ' route=' "$LOG" || true; }
rss() {
	for p in $WORKER_PIDS; do
		awk '/^VmRSS/ { printf "%s ", $2 }' "/proc/$p/status" 2>/dev/null || printf 'gone '
	done
}
base=$(served)
rss0=$(rss)
export YXB_TOKEN=$TOKEN YXB_THREAD=$THREAD
rss1="" n=0 t0=$SECONDS
while [ "$n" -lt "$total" ]; do
	[ $((SECONDS - t0)) -lt "$max_secs" ] ||
	    { echo "rss_soak: only $n requests in ${max_secs}s" >&2; exit 1; }
	d=$slice
	[ -n "$rss1" ] || d=1	# short slices until the first checkpoint
	out=$(timeout $((d + 30)) wrk -t2 -c16 -d"${d}s" -s "$here/wrk_mix.lua" "$URL")
	if printf '%s\n' "$out" | grep -Eq 'Non-2xx|Socket errors'; then
		printf '%s\n' "$out" >&2
		echo "rss_soak: errors or non-2xx answers" >&2
		exit 1
	fi
	n=$(( $(served) - base ))
	if [ -z "$rss1" ] && [ "$n" -ge "$first" ]; then
		rss1=$(rss) n1=$n
	fi
done
secs=$((SECONDS - t0))
rss2=$(rss)
respawns=$(grep -c 'started worker pid' "$LOG" || true)

echo "$(date +%F): $n requests served (service log count) in ${secs} s of wrk" \
    "(2 threads, 16 connections, 1 s slices up to the first checkpoint, then ${slice} s), endpoint mix GET /api/threads," \
    "viewer tree, viewer file, /healthz; YUXI_WORKERS=$WORKERS; worker starts" \
    "logged: $respawns (= $WORKERS means no respawn)."
echo
echo "| worker pid | VmRSS KiB before | after ${n1:-?} req | after $n req | change after ${n1:-?} → end |"
echo "| --- | --- | --- | --- | --- |"
set -- $WORKER_PIDS
i=1
for p in "$@"; do
	a=$(echo $rss0 | cut -d' ' -f$i) b=$(echo $rss1 | cut -d' ' -f$i) c=$(echo $rss2 | cut -d' ' -f$i)
	d=$(awk -v b="$b" -v c="$c" 'BEGIN { if (b ~ /^[0-9]+$/ && c ~ /^[0-9]+$/) printf "%+d KiB", c - b; else print "n/a" }')
	echo "| $p | $a | $b | $c | $d |"
	i=$((i + 1))
done
[ "$respawns" = "$WORKERS" ] || { echo "rss_soak: a worker was respawned" >&2; exit 1; }
