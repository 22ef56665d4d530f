#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/hygiene/check-spdx.sh - every source, script and configuration file
# of the repository names its license (LICENSE) in an SPDX line within its
# first lines. Third-party files vendored under a vendor/ directory are kept
# byte for byte as published (web/vendor/xterm/README.md): instead of the
# line, their directory must hold their LICENSE. Without git (a release
# tarball) the check is skipped.
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || { echo "check-spdx: not a git checkout; skipped"; exit 77; }
missing=$(git -C "$top" ls-files -- '*.c' '*.h' '*.py' '*.sh' '*.js' '*.mjs' \
    '*.css' '*.am' '*.mk' '*.ac' '*.conf' '*.conf.in' |
    grep -v '/node_modules/' | while read -r f; do
	case "$f" in
	*/vendor/*/*)
		[ -f "$top/$(dirname "$f")/LICENSE" ] || echo "$f (no LICENSE beside it)"
		continue;;
	esac
	head -n 5 "$top/$f" | grep -q 'SPDX-License-Identifier:' || echo "$f"
done)
if [ -n "$missing" ]; then
	echo "check-spdx: files without an SPDX-License-Identifier line:"
	echo "$missing"
	exit 1
fi
echo "check-spdx: ok"
