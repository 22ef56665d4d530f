#!/bin/sh
# SPDX-License-Identifier: MIT
# web/vendor/update-xterm.sh - vendors the terminal emulator of the
# workbench's Terminal tab (web/term.js) into web/vendor/xterm/: the ES
# module builds, stylesheet and licences of the npm packages @xterm/xterm
# and @xterm/addon-fit, byte for byte as npm publishes them (lib/*.mjs
# renamed *.js: nginx serves .js with a JavaScript type, which module
# scripts need), and SHA256SUMS of what it wrote. npm checks each tarball
# against the registry's integrity hash. Running it again at the same
# versions changes nothing (git status stays clean): that is the check that
# the checked-in files are the published ones.
#
# usage: web/vendor/update-xterm.sh [XTERM_VERSION [FIT_VERSION]]
#        (defaults: the versions vendored now, see web/vendor/xterm/README.md)
set -eu

xterm_version=${1:-6.0.0}
fit_version=${2:-0.11.0}
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/xterm"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

command -v npm >/dev/null 2>&1 || { echo "update-xterm: npm not installed" >&2; exit 1; }
(cd "$tmp" && npm pack --silent "@xterm/xterm@$xterm_version" "@xterm/addon-fit@$fit_version" >/dev/null)
mkdir "$tmp/xterm" "$tmp/fit"
tar -xzf "$tmp/xterm-xterm-$xterm_version.tgz" -C "$tmp/xterm"
tar -xzf "$tmp/xterm-addon-fit-$fit_version.tgz" -C "$tmp/fit"

mkdir -p "$dest"
cp "$tmp/xterm/package/lib/xterm.mjs" "$dest/xterm.js"
cp "$tmp/xterm/package/css/xterm.css" "$dest/xterm.css"
cp "$tmp/xterm/package/LICENSE" "$dest/LICENSE"
cp "$tmp/fit/package/lib/addon-fit.mjs" "$dest/addon-fit.js"
cp "$tmp/fit/package/LICENSE" "$dest/LICENSE.addon-fit"
(cd "$dest" && sha256sum xterm.js xterm.css LICENSE addon-fit.js LICENSE.addon-fit > SHA256SUMS)
echo "update-xterm: @xterm/xterm $xterm_version, @xterm/addon-fit $fit_version in $dest"
cat "$dest/SHA256SUMS"
