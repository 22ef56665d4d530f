# SPDX-License-Identifier: MIT
# web: the workbench page (docs/workbench.md), installed to
# $(pkgdatadir)/web; nginx serves it (`yuxi-sandbox nginx-conf`).
webdir = $(pkgdatadir)/web
dist_web_DATA = web/index.html web/app.css web/app.js web/api.js \
	web/tree.js web/favicon.svg
