# SPDX-License-Identifier: MIT
# man: the manual pages, with the configured paths and the version.
man_MANS = man/yuxi-sandboxd.8 man/yuxi-sandbox.1 man/yuxi-sandbox.conf.5
YX_EDITED += $(man_MANS)
EXTRA_DIST += man/yuxi-sandboxd.8.in man/yuxi-sandbox.1.in \
	man/yuxi-sandbox.conf.5.in
man/yuxi-sandboxd.8: $(srcdir)/man/yuxi-sandboxd.8.in
man/yuxi-sandbox.1: $(srcdir)/man/yuxi-sandbox.1.in
man/yuxi-sandbox.conf.5: $(srcdir)/man/yuxi-sandbox.conf.5.in
