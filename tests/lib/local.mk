# SPDX-License-Identifier: MIT
# tests/lib: what the tests share.
#   libyxtest.a  the C test support library: tests/lib/*.c (corpus replay,
#                golden tables, the configuration file, executor and
#                thread-store fixtures, clocks) and, added by tests/<dir>/local.mk, each
#                directory's own fixtures. Every test program links it
#                before libyuxi.a (LDADD in Makefile.am), so a test is one
#                name in its directory's list: tests/<dir>/test_x is built
#                from tests/<dir>/test_x.c.
#   yxsvc.py     the Python harness that starts the real service (e2e,
#                security, proof, web and deepagents suites, bench/)
#   routes.py    the suites' endpoint lists, from `yuxi-sandbox routes --json`
#   suite.sh     the common start of the suites' run-*.sh wrappers
check_LIBRARIES += tests/lib/libyxtest.a
tests_lib_libyxtest_a_SOURCES = tests/lib/conffix.c tests/lib/conffix.h \
	tests/lib/corpus.c tests/lib/corpus.h \
	tests/lib/exectest.c tests/lib/exectest.h \
	tests/lib/storetest.c tests/lib/storetest.h \
	tests/lib/tsv.c tests/lib/tsv.h tests/lib/tutil.c tests/lib/tutil.h
EXTRA_DIST += tests/lib/yxsvc.py tests/lib/routes.py tests/lib/suite.sh \
	tests/lib/mcpclient.py
