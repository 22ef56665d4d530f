#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/run-service.sh - run yuxi-sandbox for development: yuxi-sandboxd
# behind a local nginx with TLS on https://127.0.0.1:8443 and bearer tokens.
#
# usage: scripts/run-service.sh [--detach] [--provisioners N] | --stop
#   (default)  foreground: logs on the terminal, Ctrl-C stops both
#   --detach   start in the background; returns once /healthz answers
#   --provisioners N
#              the remote mode (docs/scaling.md): N sandbox hosts
#              (YUXI_MODE=provisioner, 1..8) on 127.0.0.1:PORT+1.., each
#              behind its own nginx with its own state in
#              var/provisioner-<n>/ (saves, run/yuxi-sandboxd.pid, log with
#              its audit log, nginx, tls), table /yuxi-host<n> and container
#              prefix yuxi-host<n>- (yuxi-<instance>-host<n>... when
#              YUXI_INSTANCE is set: two dev runs never share them) and uid range;
#              the daemon at PORT is their front (YUXI_MODE=front). The
#              credential is var/front.token
#   --stop     stop a detached instance (and its provisioners)
# environment:
#   BUILD_DIR           build directory with yuxi-sandboxd (default ./build)
#   YUXI_DEV_PORT       TLS port on 127.0.0.1 (default 8443)
#   YUXI_SANDBOX_IMAGE  sandbox image (default yuxi-sandbox:latest)
#   other YUXI_* settings (and a file YUXI_CONFIG names) go into the
#   instance's configuration file, var/yuxi-sandbox.conf.
#
# State lives in ./var (gitignored): var/yuxi-sandbox.conf (the instance's
# settings, written at each start: yuxi-sandboxd reads it through
# YUXI_CONFIG, and build/yuxi-sandbox run from the checkout finds it, so the
# CLI acts on this instance; docs/configuration.md), var/dev-tokens (one
# "user token [role]" per line: alice, bob, admin), var/tls (self-signed
# certificate), var/saves, var/run (socket, pid files), var/nginx (prefix,
# rendered config), var/log (logs, the audit log audit.jsonl).
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
sd_pid="$run/yuxi-sandboxd.pid"
ng_pid="$run/nginx.pid"

die() { echo "run-service: $*" >&2; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfiles() {
	for f in "$@"; do
		if alive "$f"; then
			pid=$(cat "$f")
			kill -TERM "$pid"
			i=0
			while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do
				sleep 0.2; i=$((i + 1))
			done
			# 30 s and still there (a loaded host): a stop stops
			if kill -0 "$pid" 2>/dev/null; then
				echo "run-service: pid $pid still running after 30 s: SIGKILL" >&2
				kill -KILL "$pid" 2>/dev/null
				i=0
				while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
					sleep 0.2; i=$((i + 1))
				done
			fi
		fi
		rm -f "$f"
	done
}

stop_detached() {
	stop_pidfiles "$ng_pid" "$sd_pid"
	for d in "$var"/provisioner-*; do
		[ -d "$d/run" ] || continue
		stop_pidfiles "$d/run/nginx.pid" "$d/run/yuxi-sandboxd.pid"
		# a stopped sandbox host keeps its containers; nothing else would
		# ever see them again (gc --orphans: only what no live instance owns)
		n=${d##*/provisioner-}
		[ -x "$build/yuxi-sandbox" ] &&
			YUXI_CONFIG=none "$build/yuxi-sandbox" gc --orphans --remove \
			    --prefix "$(host_name $n)-" >/dev/null 2>&1
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

# A self-signed pair for localhost, 127.0.0.1 and the previews'
# *.preview.localhost (docs/api.md "Previews"); one made before previews
# existed is made again.
make_cert_in() {
	d=$1
	[ -s "$d/cert.pem" ] && openssl x509 -in "$d/cert.pem" -noout -text 2>/dev/null |
	    grep -q 'DNS:\*\.preview\.localhost' && return 0
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 825 \
	    -keyout "$d/key.pem" -out "$d/cert.pem" -subj "/CN=localhost" \
	    -addext "subjectAltName=DNS:localhost,DNS:*.preview.localhost,IP:127.0.0.1" \
	    2>/dev/null || die "openssl could not make a certificate"
	chmod 600 "$d/key.pem"
}

make_cert() {
	make_cert_in "$var/tls"
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

# The instance's settings as a configuration file: every YUXI_* setting
# of this environment (the names the installed file lists), after the
# lines of a file YUXI_CONFIG names (the later line wins). The daemon
# reads only the file from here on (its reload too), and so does
# build/yuxi-sandbox run from the checkout (docs/configuration.md).
write_conf() {
	conf="$var/yuxi-sandbox.conf"
	names=$(sed -n 's/^#\{0,1\}\(YUXI_[A-Z0-9_]*\)=.*/\1/p' \
	    "$top/conf/yuxi-sandbox.conf.in" | sort -u)
	{
		echo "# $conf - written by scripts/run-service.sh at each start:"
		echo "# the settings of the development instance. yuxi-sandboxd reads"
		echo "# it (YUXI_CONFIG); build/yuxi-sandbox run from the checkout too."
		if [ -n "${YUXI_CONFIG:-}" ] && [ "$YUXI_CONFIG" != none ]; then
			echo "# from $YUXI_CONFIG:"
			cat "$YUXI_CONFIG" || die "YUXI_CONFIG: cannot read $YUXI_CONFIG"
			echo "# from the environment:"
		fi
		for n in $names; do
			eval "isset=\${$n+x} v=\${$n-}"
			if [ -n "$isset" ]; then printf '%s=%s\n' "$n" "$v"; fi
		done
	} > "$conf.tmp" || die "cannot write $conf"
	mv "$conf.tmp" "$conf"
	for n in $names; do unset "$n"; done
	export YUXI_CONFIG="$conf"
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

# --- the remote mode (docs/scaling.md) --------------------------------------
# A sandbox host: its own state, certificate, nginx and daemon, detached.
# The sandbox host n's table and container prefix name: of this instance
# when YUXI_INSTANCE names one.
host_name() {
	echo "yuxi-${YUXI_INSTANCE:+$YUXI_INSTANCE-}host$1"
}

start_provisioner() {
	n=$1
	pd="$var/provisioner-$n"
	pport=$((port + n))
	mkdir -p "$pd/saves" "$pd/run" "$pd/log" "$pd/nginx/client_body" "$pd/nginx/proxy" \
	    "$pd/nginx/fastcgi" "$pd/nginx/uwsgi" "$pd/nginx/scgi"
	alive "$pd/run/yuxi-sandboxd.pid" && die "provisioner $n already running; use --stop"
	make_cert_in "$pd/tls"
	sed -e "s|@PREFIX@|$pd/nginx|g" -e "s|@PORT@|$pport|g" \
	    -e "s|@SOCKET@|$pd/run/fcgi.sock|g" -e "s|@SAVES@|$pd/saves|g" \
	    -e "s|@SKILLS@|$top/examples/skills|g" -e "s|@CERT@|$pd/tls/cert.pem|g" \
	    -e "s|@KEY@|$pd/tls/key.pem|g" -e "s|@ERRLOG@|$pd/log/nginx-error.log|g" \
	    -e "s|@ACCESSLOG@|$pd/log/nginx-access.log|g" \
	    -e "s|@PIDFILE@|$pd/run/nginx.pid|g" -e "s|@UPLOAD@|64m|g" \
	    "$top/nginx/provisioner.conf.in" > "$pd/nginx/nginx.conf"
	lo=$((2000000000 + 100000 * n))
	env YUXI_MODE=provisioner YUXI_PROVISIONER_TOKEN_FILE="$var/front.token" \
	    YUXI_SAVES_DIR="$pd/saves" YUXI_FCGI_SOCKET="$pd/run/fcgi.sock" \
	    YUXI_SHM_NAME="/$(host_name $n)" YUXI_SANDBOX_CONTAINER_PREFIX="$(host_name $n)-" \
	    YUXI_SANDBOX_UID_RANGE="$lo-$((lo + 65535))" \
	    YUXI_SKILLS_DIR="$top/examples/skills" YUXI_AGENTS_FILE="$top/examples/agents.json" \
	    YUXI_SANDBOX_IMAGE="$image" YUXI_AUDIT_LOG="$pd/log/audit.jsonl" \
	    YUXI_PREVIEW_DOMAIN="$YUXI_PREVIEW_DOMAIN" \
	    nohup "$build/yuxi-sandboxd" > "$pd/log/sandboxd.log" 2>&1 < /dev/null &
	echo $! > "$pd/run/yuxi-sandboxd.pid"
	i=0
	while [ ! -S "$pd/run/fcgi.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	nohup "$nginx_bin" -p "$pd/nginx" -c "$pd/nginx/nginx.conf" \
	    -e "$pd/log/nginx-error.log" > "$pd/log/nginx.log" 2>&1 < /dev/null &
	i=0
	until curl -fsS --cacert "$pd/tls/cert.pem" "https://127.0.0.1:$pport/healthz" \
	    >/dev/null 2>&1; do
		alive "$pd/run/yuxi-sandboxd.pid" ||
		    die "provisioner $n exited; see $pd/log/sandboxd.log"
		[ $i -lt 150 ] || die "provisioner $n did not answer; see $pd/log/"
		sleep 0.2; i=$((i + 1))
	done
	hosts="${hosts:+$hosts,}p$n=https://127.0.0.1:$pport"
	cat "$pd/tls/cert.pem" >> "$var/hosts-ca.pem.tmp"
	echo "provisioner p$n: https://127.0.0.1:$pport (master pid $(cat "$pd/run/yuxi-sandboxd.pid"))"
}

# N hosts, then the front's settings and its nginx snippets for them.
start_provisioners() {
	if [ ! -s "$var/front.token" ]; then
		umask 077
		od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$var/front.token"
		echo >> "$var/front.token"
		umask 022
	fi
	hosts=
	: > "$var/hosts-ca.pem.tmp"
	n=1
	while [ $n -le "$nprov" ]; do
		start_provisioner $n
		n=$((n + 1))
	done
	mv "$var/hosts-ca.pem.tmp" "$var/hosts-ca.pem"
	sh "$top/scripts/remote-nginx-conf.sh" --out "$var/nginx/remote" \
	    --token-file "$var/front.token" --ca "$var/hosts-ca.pem" --ssl-name localhost \
	    --fcgi-socket "$run/fcgi.sock" "$hosts" || die "remote-nginx-conf.sh failed"
	# the snippets go into the front's nginx: upstreams in http {}, the
	# internal download locations beside the service's own
	sed -i -e "s|^\tmap_hash_bucket_size 128;\$|&\n\tinclude $var/nginx/remote/yuxi-remote-http.conf;|" \
	    -e "s|^\(\t\t# X-Accel-Redirect targets\)|\t\tinclude $var/nginx/remote/yuxi-remote-server.conf;\n\n\1|" \
	    "$var/nginx/nginx.conf"
	# the previews' server: the front's locations, which proxy to the hosts
	awk -v inc="$var/nginx/remote/yuxi-remote-preview.conf" '
	    { line[NR] = $0 }
	    /server_name "~\^\[a-z2-7\]\{32\}/ { name = NR }
	    END {
		for (start = name; start > 0 && line[start] !~ /^\tserver \{$/; start--);
		for (i = 1; i < start; i++) print line[i]
		print "\tserver {"
		for (i = start + 1; i <= NR; i++)
			if (line[i] ~ /^\t\t(listen|server_name|ssl_|access_log)/) print line[i]
			else if (line[i] ~ /^\t\t(location|error_log|client_max)/) break
		print "\t\tinclude " inc ";"
		print "\t}"
		print "}"
	    }' "$var/nginx/nginx.conf" > "$var/nginx/nginx.conf.tmp" &&
	    mv "$var/nginx/nginx.conf.tmp" "$var/nginx/nginx.conf"
	export YUXI_MODE=front YUXI_SANDBOX_PROVISIONER_URL="$hosts"
	export YUXI_PROVISIONER_TOKEN_FILE="$var/front.token" YUXI_PROVISIONER_CA="$var/hosts-ca.pem"
	export YUXI_SANDBOX_UID_RANGE=off
}

mode=fg
nprov=0
while [ $# -gt 0 ]; do
	case $1 in
	--detach) mode=detach; shift ;;
	--provisioners)
		nprov=${2:-}; shift 2 || die "--provisioners needs a number"
		case $nprov in [1-8]) ;; *) die "--provisioners: 1 to 8" ;; esac ;;
	--stop) stop_detached; exit 0 ;;
	*) die "usage: $0 [--detach] [--provisioners N] | --stop" ;;
	esac
done

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
export YUXI_AUDIT_LOG="${YUXI_AUDIT_LOG:-$var/log/audit.jsonl}"
# previews: https://<capability>.preview.localhost:PORT/ (empty: off)
export YUXI_PREVIEW_DOMAIN="${YUXI_PREVIEW_DOMAIN-preview.localhost:$port}"

[ "$nprov" -gt 0 ] && start_provisioners
write_conf

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
	stop_detached
}
trap cleanup INT TERM EXIT
wait_health
banner
echo "Ctrl-C stops the service."
wait
