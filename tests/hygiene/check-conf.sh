#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/hygiene/check-conf.sh - every setting the configuration parser
# reads (src/common/config.c) is listed in the installed configuration file
# (conf/yuxi-sandbox.conf.in, with its default), in yuxi-sandbox.conf(5)
# and in docs/configuration.md, and none of them lists a setting that does
# not exist. YUXI_CONFIG (the environment only) is not a setting.
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
names=$(grep -o '"YUXI_[A-Z0-9_][A-Z0-9_]*"' "$top/src/common/config.c" | tr -d '"' |
    grep -vx YUXI_CONFIG | sort -u)
[ -n "$names" ] || { echo "check-conf: no settings found in config.c"; exit 1; }
bad=0
for n in $names; do
	grep -Eq "^#?$n=" "$top/conf/yuxi-sandbox.conf.in" ||
		{ echo "check-conf: $n missing from conf/yuxi-sandbox.conf.in"; bad=1; }
	grep -Eq "^\\.B $n\$" "$top/man/yuxi-sandbox.conf.5.in" ||
		{ echo "check-conf: $n missing from man/yuxi-sandbox.conf.5.in"; bad=1; }
	grep -Fq "| \`$n\` |" "$top/docs/configuration.md" ||
		{ echo "check-conf: $n missing from docs/configuration.md"; bad=1; }
done
for n in $(sed -n 's/^#\{0,1\}\(YUXI_[A-Z0-9_]*\)=.*/\1/p' "$top/conf/yuxi-sandbox.conf.in" | sort -u); do
	echo "$names" | grep -qx "$n" ||
		{ echo "check-conf: conf/yuxi-sandbox.conf.in lists $n, which is no setting"; bad=1; }
done
[ $bad -eq 0 ] && echo "check-conf: $(echo "$names" | wc -l) settings listed everywhere"
exit $bad
