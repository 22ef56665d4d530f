#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/viewer_wrk.sh - viewer throughput with wrk (issue 3, §5).
#
# Starts the real service (bench/benchsvc.py: nginx TLS on a free 127.0.0.1
# port -> yuxi-sandboxd with YUXI_WORKERS=4), fills one thread's workspace
# with 12 small files and a 2 KiB text file, then runs wrk (2 threads, TLS,
# keep-alive, Authorization header via bench/wrk_auth.lua) against
#   tree         GET /api/viewer/filesystem/tree?thread_id=T&path=/workspace
#   file         GET /api/viewer/filesystem/file?thread_id=T&path=/workspace/notes.txt
#   static-tree  nginx serving a static copy of the tree reply (same bytes)
#   static-file  nginx serving a static copy of the file reply (same bytes)
# The static targets sit in the same TLS server block and show what nginx
# alone costs, so the difference is the FastCGI + worker overhead.
# For each connection level, each round runs the four targets in shuffled
# order; the table gives the median over the rounds of req/s and of wrk's
# latency p50/p99. Any non-2xx answer makes the script fail.
#
# usage: bench/viewer_wrk.sh BUILD_DIR [SECONDS [ROUNDS]]   (default 10 3)
# environment: CONNS (default "16 64"), WORKERS (default 4)
# wrk, nginx and the workers share the same machine (2 cores here).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
secs=${2:-10}
rounds=${3:-3}
conns=${CONNS:-16 64}
workers=${WORKERS:-4}
py=/usr/bin/python3
dir=$(mktemp -d /tmp/yxbwrk.XXXXXX)
export top_builddir=$build

cleanup() {
	"$py" "$here/benchsvc.py" stop "$dir/svc" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$dir/svc" "$dir/static"
cat > "$dir/extra.conf" <<EOF
		# bench only: static copies of the viewer replies
		location /_bench/ {
			alias $dir/static/;
			default_type application/json;
		}
EOF
timeout 120 "$py" "$here/benchsvc.py" start "$build" "$dir/svc" \
    --extra-conf "$dir/extra.conf" YUXI_WORKERS="$workers"
. "$dir/svc/env.sh"
ws="$THREAD_DIR/workspace"
for i in $(seq -w 1 12); do
	printf 'file %s\n' "$i" > "$ws/f$i.txt"
done
head -c 2048 /dev/zero | tr '\0' 'a' | fold -w 63 > "$ws/notes.txt"
chown -R --reference="$ws" "$ws"

tree="/api/viewer/filesystem/tree?thread_id=$THREAD&path=/workspace"
file="/api/viewer/filesystem/file?thread_id=$THREAD&path=/workspace/notes.txt"
get() {
	curl -fsS --cacert "$CERT" -H "Authorization: Bearer $TOKEN" "$URL$1"
}
get "$tree" > "$dir/static/tree.json"
get "$file" > "$dir/static/file.json"
chmod 755 "$dir" "$dir/static"
declare -A path=([tree]="$tree" [file]="$file"
    [static-tree]=/_bench/tree.json [static-file]=/_bench/file.json)
for t in static-tree static-file; do
	get "${path[$t]}" | cmp -s - "$dir/static/${t#static-}.json" ||
	    { echo "viewer_wrk: static copy $t differs" >&2; exit 1; }
done
size_tree=$(stat -c %s "$dir/static/tree.json")
size_file=$(stat -c %s "$dir/static/file.json")

# wrk output -> "req/s p50_ms p99_ms non2xx"
parse() {
	awk '
	function ms(v) {
		if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
		if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
		if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
		return v
	}
	$1 == "50%" { p50 = ms($2) }
	$1 == "99%" { p99 = ms($2) }
	/^Requests\/sec:/ { rps = $2 }
	/Non-2xx or 3xx responses:/ { bad = $NF }
	/Socket errors:/ { bad += 1000000 }
	END { printf "%s %.2f %.2f %d\n", rps, p50, p99, bad + 0 }'
}

export YXB_TOKEN=$TOKEN
for c in $conns; do
	for r in $(seq 1 "$rounds"); do
		for t in $(printf '%s\n' tree file static-tree static-file | shuf); do
			out=$(timeout $((secs + 30)) wrk -t2 -c"$c" -d"${secs}s" --latency \
			    -s "$here/wrk_auth.lua" "$URL${path[$t]}")
			set -- $(printf '%s\n' "$out" | parse)
			if [ "$4" != 0 ]; then
				printf '%s\n' "$out" >&2
				echo "viewer_wrk: $t c=$c: errors or non-2xx answers" >&2
				exit 1
			fi
			echo "$t $c $1 $2 $3" >> "$dir/results"
		done
	done
done

rss=""
for p in $WORKER_PIDS; do
	rss="$rss $(awk '/^VmRSS/ { print $2 }' "/proc/$p/status")"
done

echo "wrk 2 threads, TLS keep-alive, ${secs} s per run, $rounds round(s) per" \
    "connection level (targets shuffled per round), YUXI_WORKERS=$workers," \
    "$(date +%F). Reply sizes: tree $size_tree B, file $size_file B." \
    "Worker RSS after the runs (KiB):$rss."
echo
for t in tree file; do
	grep " route=/api/viewer/filesystem/$t status=200 " "$LOG" |
	    sed -n 's/.* dur_ms=\([0-9.]*\) .*/\1/p' | sort -g |
	    awk -v t="$t" '{ a[NR] = $1 } END { if (NR) printf "Time inside the worker" \
		" (request log dur_ms), %s: median %.2f ms, p99 %.2f ms over %d requests.\n",
		t, a[int((NR + 1) / 2)], a[int(0.99 * (NR - 1) + 0.5) + 1], NR }'
done
echo
echo "| target | connections | req/s (median) | p50 ms | p99 ms |"
echo "| --- | --- | --- | --- | --- |"
for c in $conns; do
	for t in tree file static-tree static-file; do
		awk -v t="$t" -v c="$c" '
		function med(a, n,   i, j, x) {
			for (i = 2; i <= n; i++) {
				x = a[i]
				for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]
				a[j + 1] = x
			}
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		$1 == t && $2 == c { n++; r[n] = $3; p[n] = $4; q[n] = $5 }
		END {
			name = t ~ /^static/ ? "nginx static copy of " substr(t, 8) : \
			    "`GET /api/viewer/filesystem/" t "`"
			printf "| %s | %d | %.0f | %.2f | %.2f |\n", name, c, med(r, n),
			    med(p, n), med(q, n)
		}' "$dir/results"
	done
done
