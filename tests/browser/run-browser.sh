#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/browser/run-browser.sh - the browser suite (pytest): the browser
# profile's services (Chromium, Xvfb, VNC, noVNC) in real sandboxes through
# the real service built in $top_builddir (docs/browser.md); exits with
# pytest's status. Extra arguments go to pytest.
#
# It needs the image yuxi-sandbox-browser:latest (`yuxi-sandbox image build
# browser`, about 3 minutes; scripts/setup.sh builds it with
# YUXI_BROWSER_IMAGE=1): without it the suite is skipped (77) with a message,
# unless YUXI_TEST_REQUIRE_BROWSER=1, which makes the absence a failure (CI).
. "$(dirname "$0")/../lib/suite.sh"
cd "$srcdir/tests/browser" || exit 99
image=${YUXI_BROWSER_IMAGE_NAME:-yuxi-sandbox-browser:latest}
if ! docker image inspect "$image" >/dev/null 2>&1; then
	if [ "${YUXI_TEST_REQUIRE_BROWSER:-0}" = 1 ]; then
		echo "run-browser: image $image missing and YUXI_TEST_REQUIRE_BROWSER=1" \
		    "(build it: yuxi-sandbox image build browser)" >&2
		exit 1
	fi
	echo "run-browser: image $image not built; skipped (yuxi-sandbox image build" \
	    "browser, or scripts/setup.sh with YUXI_BROWSER_IMAGE=1)" >&2
	exit 77
fi
exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/browser"
