# SPDX-License-Identifier: MIT
# conf: the configuration file, $(sysconfdir)/yuxi-sandbox/yuxi-sandbox.conf
# (every setting with its default; yuxi-sandbox.conf(5)). `make install`
# never overwrites an existing one (it says so); `make uninstall` removes it
# only while it is still the installed sample.
YX_EDITED += conf/yuxi-sandbox.conf
EXTRA_DIST += conf/yuxi-sandbox.conf.in
yxconfdir = $(sysconfdir)/yuxi-sandbox
conf/yuxi-sandbox.conf: $(srcdir)/conf/yuxi-sandbox.conf.in

install-data-local: install-yx-conf
uninstall-local: uninstall-yx-conf
install-yx-conf: conf/yuxi-sandbox.conf
	@$(NORMAL_INSTALL)
	$(MKDIR_P) '$(DESTDIR)$(yxconfdir)'
	@if test -f '$(DESTDIR)$(yxconfdir)/yuxi-sandbox.conf'; then \
	  echo " kept $(DESTDIR)$(yxconfdir)/yuxi-sandbox.conf (not overwritten; the new sample is conf/yuxi-sandbox.conf)"; \
	else \
	  echo " $(INSTALL_DATA) conf/yuxi-sandbox.conf '$(DESTDIR)$(yxconfdir)/yuxi-sandbox.conf'"; \
	  $(INSTALL_DATA) conf/yuxi-sandbox.conf '$(DESTDIR)$(yxconfdir)/yuxi-sandbox.conf'; \
	fi
uninstall-yx-conf:
	@$(NORMAL_UNINSTALL)
	@f='$(DESTDIR)$(yxconfdir)/yuxi-sandbox.conf'; \
	if test ! -f "$$f"; then :; \
	elif cmp -s conf/yuxi-sandbox.conf "$$f"; then \
	  echo " rm -f $$f"; rm -f "$$f"; \
	else \
	  echo " kept $$f (changed since installation)"; \
	fi
.PHONY: install-yx-conf uninstall-yx-conf

# logrotate(8) of the audit log (YUXI_AUDIT_LOG): SIGUSR1 reopens it.
logrotatedir = $(sysconfdir)/logrotate.d
dist_logrotate_DATA = packaging/logrotate/yuxi-sandbox
