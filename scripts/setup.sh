#!/bin/sh
# SPDX-License-Identifier: MIT
# Prepare this machine for yuxi-sandbox (Debian 12, as root), idempotently:
#   1. install the Debian packages the build, the service and the tests need;
#   2. give the engine gVisor's runtime "runsc" (merged into
#      /etc/docker/daemon.json; an engine already running gets SIGHUP, never
#      a restart) unless YUXI_SKIP_RUNSC=1, and start dockerd when no engine
#      answers on the socket (an engine that answers is left alone);
#   3. configure and build the project out of tree in $BUILD_DIR (./build);
#   4. build the sandbox images offline (test image always; the default image
#      unless YUXI_SKIP_DEFAULT_IMAGE=1; the browser image, ~3 minutes and
#      1.2 GB the first time, unless YUXI_SKIP_BROWSER_IMAGE=1: the browser
#      suite needs it, docs/browser.md).
# Safe to run twice: every step checks before it acts.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$top/build}
DOCKER_SOCK=${YUXI_DOCKER_API_SOCKET:-/var/run/docker.sock}

PACKAGES="build-essential autoconf automake libtool pkg-config libfcgi-dev libjson-c-dev
libcurl4-openssl-dev libssl-dev libcriterion-dev nginx openssl curl wrk hyperfine
docker.io busybox-static mmdebstrap btrfs-progs python3 python3-pytest python3-requests
python3-docker valgrind clang libclang-rt-14-dev clang-format-14 chromium runsc
python3-pytest-asyncio python3-wcmatch python3-typing-extensions python3-pip
iptables iproute2"
DAEMON_JSON=${YUXI_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}
# The engine's shim with sandboxes grouped (src/shim, docs/configuration.md
# "Shim groups"): copied here from the build, first on the PATH of the
# dockerd this script starts. A stable place: containerd remembers where it
# found the shim for as long as it runs.
SHIM_DIR=${YUXI_SHIM_DIR:-/usr/local/libexec/yuxi-sandbox/engine}

say() { printf '==> %s\n' "$*"; }

install_packages() {
	missing=""
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		say "packages: all present"
		return
	fi
	say "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Installs the grouping shim into $SHIM_DIR (atomically: a running engine
# may be starting one), unless YUXI_SHIM_GROUP_SIZE=0.
install_shim() {
	[ "${YUXI_SHIM_GROUP_SIZE:-16}" != 0 ] || return 0
	[ -x "$BUILD_DIR/containerd-shim-runc-v2" ] || return 0
	mkdir -p "$SHIM_DIR"
	install -m 0755 "$BUILD_DIR/containerd-shim-runc-v2" "$SHIM_DIR/.containerd-shim-runc-v2.new"
	mv -f "$SHIM_DIR/.containerd-shim-runc-v2.new" "$SHIM_DIR/containerd-shim-runc-v2"
}

engine_ping() {
	curl -sf --max-time 2 --unix-socket "$DOCKER_SOCK" http://localhost/_ping >/dev/null 2>&1
}

start_engine() {
	if engine_ping; then
		say "docker engine: answering on $DOCKER_SOCK"
		# started elsewhere (a system docker.service or containerd):
		# its sandboxes share shims only if it was told how
		cpid=$(pgrep -x containerd | head -1 || true)
		if [ "${YUXI_SHIM_GROUP_SIZE:-16}" != 0 ] && { [ -z "$cpid" ] ||
		    ! tr '\0' '\n' <"/proc/$cpid/environ" 2>/dev/null | grep -q "^PATH=$SHIM_DIR:"; }; then
			say "docker engine: started without $SHIM_DIR first on its PATH: one engine shim per sandbox (docs/configuration.md \"Shim groups\")"
		fi
		return
	fi
	mkdir -p /var/log
	# An engine restoring many containers left by an earlier run first has
	# its containerd clean up their dead shims, and dockerd gives up on a
	# containerd that takes too long ("timeout waiting for containerd to
	# start"); the cleanup done, the next start is quick. So: up to three
	# starts, each given 120 s while its dockerd lives.
	for attempt in 1 2 3; do
		say "docker engine: starting dockerd (attempt $attempt)"
		# from /: containerd looks for its shim in its working
		# directory before PATH, and remembers where it found it
		(cd / && PATH="$SHIM_DIR:$PATH" exec nohup dockerd) >>/var/log/yuxi-dockerd.log 2>&1 &
		dpid=$!
		i=0
		while ! engine_ping; do
			i=$((i + 1))
			if ! kill -0 "$dpid" 2>/dev/null || [ $i -gt 240 ]; then
				break
			fi
			sleep 0.5
		done
		if engine_ping; then
			say "docker engine: up"
			return
		fi
		kill "$dpid" 2>/dev/null
		wait "$dpid" 2>/dev/null
		echo "dockerd did not answer (attempt $attempt); tail of /var/log/yuxi-dockerd.log:" >&2
		grep -v 'dead shim\|shim disconnected\|cleanup warnings' /var/log/yuxi-dockerd.log | tail -5 >&2 || true
	done
	echo "dockerd did not start; see /var/log/yuxi-dockerd.log" >&2
	exit 1
}

# The engine's runtime entry for gVisor (docs/deployment.md): --network=none
# (gVisor refuses to start a sandbox with networking in the root network
# namespace, and sandboxes have none anyway) and --host-uds=all (the
# in-sandbox agent's socket and the egress relay's are host unix sockets).
# Merged into daemon.json (other keys and runtimes kept); prints "changed"
# when it wrote the file.
merge_runsc() {
	python3 - "$DAEMON_JSON" <<'PY'
import json, os, sys
path = sys.argv[1]
want = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--host-uds=all"]}
try:
    with open(path) as f:
        conf = json.load(f)
except FileNotFoundError:
    conf = {}
if not isinstance(conf, dict) or not isinstance(conf.get("runtimes", {}), dict):
    sys.exit("%s: not a JSON object with a runtimes object; fix it by hand" % path)
if conf.get("runtimes", {}).get("runsc") == want:
    sys.exit(0)
conf.setdefault("runtimes", {})["runsc"] = want
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path + ".yuxi-tmp", "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
os.rename(path + ".yuxi-tmp", path)
print("changed")
PY
}

engine_has_runsc() {
	docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'
}

configure_runsc() {
	if [ "${YUXI_SKIP_RUNSC:-0}" = 1 ]; then
		say "gVisor runtime: skipped (YUXI_SKIP_RUNSC=1)"
		return
	fi
	if [ ! -x /usr/bin/runsc ]; then
		say "gVisor runtime: /usr/bin/runsc missing; profiles with runtime runsc will not start"
		return
	fi
	changed=$(merge_runsc)
	[ -z "$changed" ] || say "gVisor runtime: runsc added to $DAEMON_JSON"
	# A running engine reloads its runtimes on SIGHUP; a restart would
	# stop every container it runs.
	if engine_ping && { [ -n "$changed" ] || ! engine_has_runsc; }; then
		pid=$(cat /var/run/docker.pid 2>/dev/null || pgrep -x dockerd | head -1)
		if [ -n "$pid" ] && kill -HUP "$pid" 2>/dev/null; then
			i=0
			while ! engine_has_runsc && [ $i -lt 20 ]; do
				sleep 0.25
				i=$((i + 1))
			done
		fi
	fi
	if engine_ping && ! engine_has_runsc; then
		echo "setup.sh: the engine does not list runsc after SIGHUP; see $DAEMON_JSON" >&2
		exit 1
	fi
	say "gVisor runtime: runsc configured ($DAEMON_JSON)"
}

build() (
	say "building in $BUILD_DIR"
	cd "$top"
	if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
		autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
	fi
	mkdir -p "$BUILD_DIR"
	cd "$BUILD_DIR"
	[ -f Makefile ] || "$top/configure" -q ${YUXI_CONFIGURE_FLAGS:-}
	make -s -j"$(nproc)" >/dev/null
)

web_deps() {
	# The browser tests drive Debian's chromium with playwright-core (npm).
	command -v npm >/dev/null 2>&1 || {
		say "installing nodejs and npm"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	}
	if [ ! -d "$top/tests/web/node_modules/playwright-core" ]; then
		say "installing the browser test driver (playwright-core)"
		(cd "$top/tests/web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
	# The deepagents adapter and its tests (deepagents, @langchain/core,
	# vitest; Node.js >= 20).
	if [ ! -d "$top/clients/deepagents-js/node_modules/deepagents" ]; then
		say "installing the deepagents adapter's packages (npm)"
		(cd "$top/clients/deepagents-js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
	# The MCP endpoint's client tests (the TypeScript SDK, the Inspector).
	if [ ! -d "$top/tests/mcp/node_modules/@modelcontextprotocol/inspector" ]; then
		say "installing the MCP client tests' packages (npm)"
		(cd "$top/tests/mcp" &&
		    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
	fi
}

images() {
	"$top/images/test/build.sh"
	if [ "${YUXI_SKIP_DEFAULT_IMAGE:-0}" != 1 ]; then
		"$top/images/default/build.sh"
	fi
	if [ "${YUXI_SKIP_BROWSER_IMAGE:-0}" != 1 ]; then
		"$top/images/browser/build.sh"
	fi
}

[ "$(id -u)" = 0 ] || { echo "setup.sh: run as root (it installs packages and starts dockerd)" >&2; exit 1; }
install_packages
configure_runsc
build
install_shim
start_engine
images
web_deps
say "setup done"
