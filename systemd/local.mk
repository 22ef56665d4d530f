# SPDX-License-Identifier: MIT
# systemd: the unit of the installed daemon, its system user (sysusers.d)
# and its directories (tmpfiles.d), with the configured paths. Where they go:
# configure's --with-systemdsystemunitdir, --with-sysusersdir,
# --with-tmpfilesdir (default beneath $(prefix)/lib; =no: not installed).
YX_EDITED += systemd/yuxi-sandbox.service \
	systemd/sysusers.d/yuxi-sandbox.conf \
	systemd/tmpfiles.d/yuxi-sandbox.conf
EXTRA_DIST += systemd/yuxi-sandbox.service.in \
	systemd/sysusers.d/yuxi-sandbox.conf.in \
	systemd/tmpfiles.d/yuxi-sandbox.conf.in
if HAVE_SYSTEMDSYSTEMUNITDIR
systemdsystemunit_DATA = systemd/yuxi-sandbox.service
endif
if HAVE_SYSUSERSDIR
sysusers_DATA = systemd/sysusers.d/yuxi-sandbox.conf
endif
if HAVE_TMPFILESDIR
tmpfiles_DATA = systemd/tmpfiles.d/yuxi-sandbox.conf
endif
systemd/yuxi-sandbox.service: $(srcdir)/systemd/yuxi-sandbox.service.in
systemd/sysusers.d/yuxi-sandbox.conf: $(srcdir)/systemd/sysusers.d/yuxi-sandbox.conf.in
systemd/tmpfiles.d/yuxi-sandbox.conf: $(srcdir)/systemd/tmpfiles.d/yuxi-sandbox.conf.in
