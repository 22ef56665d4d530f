#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/run-service.sh - run yuxi-sandbox for development: yuxi-sandboxd
# behind a local nginx with TLS on https://127.0.0.1:8443 and bearer tokens.
#
# usage: scripts/run-service.sh [--detach | --stop]
#   (default)  foreground: logs on the terminal, Ctrl-C stops both
#   --detach   start in the background; returns once /healthz answers
#   --stop     stop a detached instance
# environment:
#   BUILD_DIR           build directory with yuxi-sandboxd (default ./build)
#   YUXI_DEV_PORT       TLS port on 127.0.0.1 (default 8443)
#   YUXI_SANDBOX_IMAGE  sandbox image (default yuxi-sandbox:latest)
#   other YUXI_* variables pass through to yuxi-sandboxd.
#
# State lives in ./var (gitignored): var/dev-tokens (one "user token [role]"
# per line: alice, bob, admin), var/tls (self-signed certificate), var/saves,
# var/run (socket, pid files), var/nginx (prefix, rendered config), var/log.
# Installing packages, starting dockerd and building images is done by
# scripts/setup.sh, not here.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
var="$top/var"
build=${BUILD_DIR:-$top/build}
case $build in /*) ;; *) build="$top/$build" ;; esac
port=${YUXI_DEV_PORT:-8443}
image=${YUXI_SANDBOX_IMAGE:-yuxi-sandbox:latest}
run="$var/run"
sd_pid="$run/sandboxd.pid"
ng_pid="$run/nginx.pid"

die() { echo "run-service: $*" >&2; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_detached() {
	for f in "$ng_pid" "$sd_pid"; do
		if alive "$f"; then
			pid=$(cat "$f")
			kill -TERM "$pid"
			i=0
			while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do
				sleep 0.2; i=$((i + 1))
			done
		fi
		rm -f "$f"
	done
	echo "run-service: stopped"
}

make_tokens() {
	[ -s "$var/dev-tokens" ] && return 0
	umask 077
	: > "$var/dev-tokens.tmp"
	for spec in alice bob "admin admin"; do
		tok=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
		set -- $spec
		echo "$1 $tok${2:+ $2}" >> "$var/dev-tokens.tmp"
	done
	mv "$var/dev-tokens.tmp" "$var/dev-tokens"
	umask 022
}

make_cert() {
	[ -s "$var/tls/cert.pem" ] && return 0
	mkdir -p "$var/tls"
	openssl req -x509 -newkey rsa:2048 -nodes -days 825 \
	    -keyout "$var/tls/key.pem" -out "$var/tls/cert.pem" \
	    -subj "/CN=localhost" \
	    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null ||
	    die "openssl could not make a certificate"
	chmod 600 "$var/tls/key.pem"
}

# tokens file -> nginx maps of the Authorization header
make_map() {
	{
		echo 'map $http_authorization $yuxi_user {'
		echo '	default "";'
		while read -r u t r; do echo "	\"Bearer $t\" $u;"; done < "$var/dev-tokens"
		echo '}'
		echo 'map $http_authorization $yuxi_role {'
		echo '	default "";'
		while read -r u t r; do
			[ "${r:-}" = admin ] && echo "	\"Bearer $t\" admin;"
		done < "$var/dev-tokens"
		echo '}'
	} > "$var/nginx/tokens.map"
}

render_conf() {
	sed -e "s|@PREFIX@|$var/nginx|g" -e "s|@PORT@|$port|g" \
	    -e "s|@SOCKET@|$run/fcgi.sock|g" -e "s|@SAVES@|$var/saves|g" \
	    -e "s|@SKILLS@|$top/examples/skills|g" -e "s|@CERT@|$var/tls/cert.pem|g" \
	    -e "s|@KEY@|$var/tls/key.pem|g" -e "s|@TOKENS@|$var/nginx/tokens.map|g" \
	    -e "s|@ERRLOG@|$var/log/nginx-error.log|g" \
	    -e "s|@ACCESSLOG@|$var/log/nginx-access.log|g" \
	    -e "s|@PIDFILE@|$ng_pid|g" \
	    -e "s|@WEB_ROOT@|$top/web|g" \
	    -e "s|@WORKBENCH_CONF@|$top/nginx/workbench.conf|g" \
	    "$top/nginx/dev.conf.in" > "$var/nginx/nginx.conf"
}

wait_health() {
	i=0
	while [ $i -lt 150 ]; do
		if curl -fsS --cacert "$var/tls/cert.pem" \
		    "https://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
			return 0
		fi
		alive "$sd_pid" || die "yuxi-sandboxd exited; see $var/log/sandboxd.log"
		sleep 0.2; i=$((i + 1))
	done
	[ "$mode" = detach ] && stop_detached
	die "https://127.0.0.1:$port/healthz did not answer; see $var/log/"
}

banner() {
	tok=$(awk '$1 == "alice" { print $2 }' "$var/dev-tokens")
	cat <<MSG
yuxi-sandbox is up: https://127.0.0.1:$port  (certificate: $var/tls/cert.pem)
tokens: $var/dev-tokens  (alice, bob, admin)
try:
  curl --cacert $var/tls/cert.pem -H 'Authorization: Bearer $tok' \\
      -H 'Content-Type: application/json' -d '{"thread_id":"demo"}' \\
      https://127.0.0.1:$port/api/threads
  curl --cacert $var/tls/cert.pem -H 'Authorization: Bearer $tok' \\
      -H 'Content-Type: application/json' \\
      -d '{"thread_id":"demo","command":"python3 -c '\\''print(1+1)'\\''"}' \\
      https://127.0.0.1:$port/api/execute
MSG
}

mode=fg
case ${1:-} in
"") ;;
--detach) mode=detach ;;
--stop) stop_detached; exit 0 ;;
*) die "usage: $0 [--detach | --stop]" ;;
esac

[ -x "$build/yuxi-sandboxd" ] || die "no $build/yuxi-sandboxd (set BUILD_DIR)"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx is not installed"
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
alive "$sd_pid" && die "already running (pid $(cat "$sd_pid")); use --stop"

mkdir -p "$var/saves" "$run" "$var/log" "$var/nginx/client_body" "$var/nginx/proxy" \
    "$var/nginx/fastcgi" "$var/nginx/uwsgi" "$var/nginx/scgi"
make_tokens
make_cert
make_map
render_conf

export YUXI_SAVES_DIR="$var/saves"
export YUXI_SKILLS_DIR="$top/examples/skills"
export YUXI_AGENTS_FILE="$top/examples/agents.json"
# the fetcher agent's allowed.test: 127.0.0.1, and no DNS query leaves
export YUXI_EGRESS_HOSTS="${YUXI_EGRESS_HOSTS:-$top/examples/egress-hosts}"
export YUXI_FCGI_SOCKET="$run/fcgi.sock"
export YUXI_SANDBOX_IMAGE="$image"
export YUXI_HOST_PROJECT_DIR="${YUXI_HOST_PROJECT_DIR:-}"

"$build/yuxi-sandboxd" -t || die "configuration refused"

if [ $mode = detach ]; then
	nohup "$build/yuxi-sandboxd" > "$var/log/sandboxd.log" 2>&1 < /dev/null &
	echo $! > "$sd_pid"
	i=0
	while [ ! -S "$run/fcgi.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	nohup "$nginx_bin" -p "$var/nginx" -c "$var/nginx/nginx.conf" \
	    -e "$var/log/nginx-error.log" > "$var/log/nginx.log" 2>&1 < /dev/null &
	wait_health
	banner
	echo "logs: $var/log/; stop with: $0 --stop"
	exit 0
fi

# foreground: both children log here; Ctrl-C (or TERM) stops both
"$build/yuxi-sandboxd" &
echo $! > "$sd_pid"
i=0
while [ ! -S "$run/fcgi.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$nginx_bin" -p "$var/nginx" -c "$var/nginx/nginx.conf" -e "$var/log/nginx-error.log" &
ngx=$!
cleanup() {
	trap - INT TERM EXIT
	kill -TERM "$ngx" 2>/dev/null || true
	[ -f "$sd_pid" ] && kill -TERM "$(cat "$sd_pid")" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -f "$sd_pid" "$ng_pid"
	echo "run-service: stopped"
}
trap cleanup INT TERM EXIT
wait_health
banner
echo "Ctrl-C stops the service."
wait
