# SPDX-License-Identifier: MIT
# tests/security: the proof suites of docs/security.md (groups 1, 2, 4, 5,
# 6 and the corpus replay of group 10), run by pytest against the real
# service (nginx + TLS + workers). Every protection test also runs against
# a control daemon with that protection switched off and must observe the
# leak there:
#   yuxi-sandboxd-control         all sources again with -DYX_CONTROL_UNSAFE:
#                                 YX_CONTROL_OFF=identity,path,headers,
#                                 threadid,authz switches protections off
#   yuxi-sandboxd-control-broker  the same plus -DYX_BROKER_CONTROL_UNSAFE
#                                 (the broker follows symlinks, writes in place)
# Both are check_PROGRAMS: built for `make check`, never installed. They link
# from source lists, not libyuxi.a, so no production object is reused.
SEC_CONTROL_SOURCES = src/daemon/main.c src/common/control.c \
	src/common/control_int.h $(libyuxi_a_SOURCES)
SEC_CONTROL_LIBS = $(FCGI_LIBS) $(JSONC_LIBS) $(CURL_LIBS) $(CRYPTO_LIBS) -lrt

check_PROGRAMS += tests/security/yuxi-sandboxd-control \
	tests/security/yuxi-sandboxd-control-broker
tests_security_yuxi_sandboxd_control_SOURCES = $(SEC_CONTROL_SOURCES)
tests_security_yuxi_sandboxd_control_CPPFLAGS = $(AM_CPPFLAGS) -DYX_CONTROL_UNSAFE
tests_security_yuxi_sandboxd_control_LDADD = $(SEC_CONTROL_LIBS)
tests_security_yuxi_sandboxd_control_broker_SOURCES = $(SEC_CONTROL_SOURCES)
tests_security_yuxi_sandboxd_control_broker_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_CONTROL_UNSAFE -DYX_BROKER_CONTROL_UNSAFE
tests_security_yuxi_sandboxd_control_broker_LDADD = $(SEC_CONTROL_LIBS)

# Group 10 in every `make check`: the JSON / query / FastCGI-param corpora
# replayed through the fuzz harnesses' property checks.
check_PROGRAMS += tests/security/test_http_corpus
TESTS += tests/security/test_http_corpus
tests_lib_libyxtest_a_SOURCES += tests/fuzz/http_props.c tests/fuzz/http_props.h

TESTS += tests/security/run-security.sh
SOAK_TESTS += tests/security/run-security-soak-1.sh \
	tests/security/run-security-soak-2.sh tests/security/run-security-soak-3.sh
EXTRA_DIST += tests/security/run-security.sh tests/security/run-security-soak.sh \
	tests/security/run-security-soak-1.sh tests/security/run-security-soak-2.sh \
	tests/security/run-security-soak-3.sh \
	tests/security/secfix.py tests/security/fcgi.py \
	tests/security/test_identity.py tests/security/test_paths.py \
	tests/security/test_downloads.py tests/security/test_uploads.py \
	tests/security/test_listing.py tests/security/test_control_build.py \
	tests/security/test_slowloris.py tests/security/slowloris.py \
	tests/security/test_crosssite.py \
	tests/security/test_procs.py tests/security/test_sessions.py \
	tests/security/test_egress.py tests/security/test_profiles.py \
	tests/security/test_snapshots.py \
	docs/security.md
CLEANFILES += tests/security/results.json tests/security/results-soak-*.json
