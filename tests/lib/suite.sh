# SPDX-License-Identifier: MIT
# tests/lib/suite.sh - sourced by the run-*.sh wrappers of the suites that
# run against the real service (e2e, security, proof, web, deepagents).
#
# Sets srcdir (top_srcdir; default: the checkout holding this file),
# builddir (top_builddir, as `make check` sets it; there is no default: the
# wrapper exits 99 when it is unset), py (Debian's python3, which has pytest
# and requests) and PYTHONPATH with tests/lib (yxsvc.py, the harness), and
# exports top_srcdir and top_builddir. serve_start / serve_stop run a
# serve.py (tests/lib/yxsvc.py serve()) in the background for a Node.js
# runner.
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
if [ -z "${top_builddir:-}" ]; then
	echo "$(basename "$0"): top_builddir is not set (make check sets it;" \
	    "else set it to the build directory)" >&2
	exit 99
fi
builddir=$(cd "$top_builddir" && pwd) || exit 99
export top_srcdir="$srcdir" top_builddir="$builddir"
PYTHONPATH=$srcdir/tests/lib${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# serve_start SERVE_PY NAME: start the service in the background with a
# fresh temporary directory $serve_dir (${TMPDIR:-/tmp}/NAME.XXXXXX) and
# wait (60 s at most) until it has written $serve_info there; returns 1,
# saying why, when it exits or does not answer. Until serve_stop, an exit
# or a signal stops it and removes $serve_dir.
serve_pid=
serve_dir=
serve_start() {
	serve_dir=$(mktemp -d "${TMPDIR:-/tmp}/$2.XXXXXX") || return 1
	serve_info=$serve_dir/info.json
	trap 'serve_stop; exit 130' INT TERM
	trap serve_stop EXIT
	"$py" "$1" "$serve_info" &
	serve_pid=$!
	_i=0
	while [ ! -s "$serve_info" ]; do
		if ! kill -0 "$serve_pid" 2>/dev/null; then
			echo "$(basename "$0"): the service did not start" >&2
			return 1
		fi
		if [ $_i -ge 600 ]; then
			echo "$(basename "$0"): the service did not answer in 60 s" >&2
			return 1
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
}

# serve_stop: SIGTERM the service started by serve_start and wait for it
# (it stops nginx and the daemon and removes its containers); remove
# $serve_dir.
serve_stop() {
	if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
		kill -TERM "$serve_pid"
		wait "$serve_pid" 2>/dev/null
	fi
	serve_pid=
	[ -z "$serve_dir" ] || rm -rf "$serve_dir"
	serve_dir=
	trap - EXIT INT TERM
}
