# SPDX-License-Identifier: MIT
# web: the workbench page (docs/workbench.md), installed to
# $(pkgdatadir)/web; nginx serves it (`yuxi-sandbox nginx-conf`).
webdir = $(pkgdatadir)/web
dist_web_DATA = web/index.html web/app.css web/app.js web/api.js \
	web/tree.js web/term.js web/desk.js web/xterm-csp.js web/favicon.svg
# xterm.js for the Terminal tab, as published on npm (web/vendor/xterm/README.md);
# its licences ship beside it
webxtermdir = $(pkgdatadir)/web/vendor/xterm
dist_webxterm_DATA = web/vendor/xterm/xterm.js web/vendor/xterm/xterm.css \
	web/vendor/xterm/addon-fit.js web/vendor/xterm/LICENSE \
	web/vendor/xterm/LICENSE.addon-fit
EXTRA_DIST += web/vendor/update-xterm.sh web/vendor/xterm/README.md \
	web/vendor/xterm/SHA256SUMS
