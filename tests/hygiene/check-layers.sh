#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering rules on the source tree (tests/hygiene/check-layers.py).
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$srcdir/tests/hygiene/check-layers.py" "$srcdir"
