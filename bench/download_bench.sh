#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/download_bench.sh - a large download through X-Accel-Redirect vs
# streamed by a FastCGI worker (issue 3, §5).
#
# Starts the real service (bench/benchsvc.py: nginx TLS on a free 127.0.0.1
# port -> yuxi-sandboxd) and, behind the same nginx server block, the
# bench-only streamer bench/bench_stream (libfcgi; FCGX_PutStr in 64 KiB
# chunks) on its own socket at location /_bench/stream (same fastcgi
# settings as /api/: nginx default fastcgi buffering). One random file of
# SIZE_MIB MiB in a thread's workspace is fetched with curl over TLS:
#   x-accel   GET /api/viewer/filesystem/download (the worker checks and
#             answers X-Accel-Redirect; nginx sends the file with sendfile)
#   streamed  GET /_bench/stream (bench_stream reads the same file and
#             writes it through the FastCGI connection)
# Each round runs both in shuffled order. Reported: throughput (MiB/s,
# size_download / time_total from curl) and worker busy time per download:
# for x-accel the worker's own request log line (dur_ms, route
# /api/viewer/filesystem/download), for the streamer its log line (accept
# to FCGX_Finish_r). Both files are checked byte-for-byte once first.
#
# usage: bench/download_bench.sh BUILD_DIR [SIZE_MIB [ROUNDS]]   (default 100 10)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
size_mib=${2:-100}
rounds=${3:-10}
py=/usr/bin/python3
dir=$(mktemp -d /tmp/yxbdl.XXXXXX)
spid=""
export top_builddir=$build

cleanup() {
	"$py" "$here/benchsvc.py" stop "$dir/svc" >/dev/null 2>&1 || true
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$build/bench/bench_stream" ] ||
    { echo "download_bench: build the peers first: make -C $build bench" >&2; exit 1; }
mkdir -p "$dir/svc"
cat > "$dir/extra.conf" <<EOF
		# bench only: the same file streamed by a FastCGI responder
		location = /_bench/stream {
			include /etc/nginx/fastcgi_params;
			fastcgi_read_timeout 700s;
			fastcgi_pass unix:$dir/stream.sock;
		}
EOF
timeout 120 "$py" "$here/benchsvc.py" start "$build" "$dir/svc" \
    --extra-conf "$dir/extra.conf" YUXI_WORKERS=3
. "$dir/svc/env.sh"
big="$THREAD_DIR/workspace/big.bin"
head -c $((size_mib * 1048576)) /dev/urandom > "$big"
chown --reference="$THREAD_DIR/workspace" "$big"
bytes=$(stat -c %s "$big")
"$build/bench/bench_stream" "$dir/stream.sock" "$big" 2> "$dir/stream.log" &
spid=$!
for _ in $(seq 1 50); do [ -S "$dir/stream.sock" ] && break; sleep 0.1; done

declare -A url=([x-accel]="$URL/api/viewer/filesystem/download?thread_id=$THREAD&path=/workspace/big.bin"
    [streamed]="$URL/_bench/stream")
fetch() {	# fetch NAME OUT -> "http_code size_download time_total"
	timeout 300 curl -sS -o "$2" --cacert "$CERT" -H "Authorization: Bearer $TOKEN" \
	    -w '%{http_code} %{size_download} %{time_total}\n' "${url[$1]}"
}
sum=$(sha256sum < "$big")
for t in x-accel streamed; do
	set -- $(fetch "$t" "$dir/check.bin")
	[ "$1" = 200 ] && [ "$(sha256sum < "$dir/check.bin")" = "$sum" ] ||
	    { echo "download_bench: $t: status $1 or wrong bytes" >&2; exit 1; }
	rm -f "$dir/check.bin"
done
skip_accel=$(grep -c 'route=/api/viewer/filesystem/download ' "$LOG" || true)
skip_stream=$(grep -c '^stream dur_ms=' "$dir/stream.log" || true)

for r in $(seq 1 "$rounds"); do
	for t in $(printf '%s\n' x-accel streamed | shuf); do
		set -- $(fetch "$t" /dev/null)
		if [ "$1" != 200 ] || [ "$2" != "$bytes" ]; then
			echo "download_bench: $t: status $1, $2 bytes" >&2
			exit 1
		fi
		echo "$t $3" >> "$dir/times"
	done
done
sleep 0.5	# let the last log lines land
grep 'route=/api/viewer/filesystem/download ' "$LOG" | tail -n +$((skip_accel + 1)) |
    sed -n 's/.*status=200 dur_ms=\([0-9.]*\).*/x-accel \1/p' > "$dir/busy"
grep '^stream dur_ms=.*status=ok' "$dir/stream.log" | tail -n +$((skip_stream + 1)) |
    sed -n 's/^stream dur_ms=\([0-9.]*\).*/streamed \1/p' >> "$dir/busy"

stats() {	# stats NAME FILE SCALE -> "n median p95" of x (SCALE 0) or SCALE/x
	awk -v t="$1" -v s="$3" '$1 == t { print (s > 0 ? s / $2 : $2) }' "$2" | sort -g |
	    awk '{ a[NR] = $1 } END {
		if (NR == 0) { print "0 nan nan"; exit }
		m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		k = int(0.95 * (NR - 1) + 0.5) + 1
		printf "%d %.1f %.1f\n", NR, m, a[k] }'
}
echo "File $size_mib MiB ($bytes B, random), curl over TLS to 127.0.0.1, $rounds" \
    "rounds (both contenders per round, shuffled), $(date +%F)."
echo
echo "| download | n | time s (median) | p95 s | MiB/s at median | MiB/s at p95 | worker busy ms (median) | p95 busy ms |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for t in x-accel streamed; do
	set -- $(awk -v t="$t" '$1 == t { print $1, $2 * 1000 }' "$dir/times" > "$dir/t.ms"; stats "$t" "$dir/t.ms" 0)
	n=$1 tm=$(awk -v x="$2" 'BEGIN { printf "%.3f", x / 1000 }') t95=$(awk -v x="$3" 'BEGIN { printf "%.3f", x / 1000 }')
	tp=$(awk -v s="$size_mib" -v x="$tm" 'BEGIN { printf "%.0f", s / x }')
	tp95=$(awk -v s="$size_mib" -v x="$t95" 'BEGIN { printf "%.0f", s / x }')
	set -- $(stats "$t" "$dir/busy" 0)
	[ "$1" = "$n" ] || echo "download_bench: $t: $1 busy records for $n downloads" >&2
	case $t in
	x-accel) name="X-Accel-Redirect (\`/api/viewer/filesystem/download\`)" ;;
	streamed) name="streamed by a FastCGI worker (\`bench/bench_stream\`, 64 KiB FCGX_PutStr)" ;;
	esac
	echo "| $name | $n | $tm | $t95 | $tp | $tp95 | $2 | $3 |"
done
