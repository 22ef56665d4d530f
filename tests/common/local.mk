# SPDX-License-Identifier: MIT
# tests/common: the ground floor (src/common).
#   test_text      UTF-8 scanning and cleaning, JSON strings
#   test_conffile  the configuration file and its errors
#   test_config    configuration from the environment, yx_parse_size
#   test_log       log_escape (untrusted bytes in log lines)
#   test_hostlist  the sandbox hosts of a front, rendezvous placement
#   test_remote_config  YUXI_MODE, the front's hosts and the credential file
#   test_replace   yx_replace_at: a file, link or socket put in place whole
#   test_passwd    SHA-512-crypt for nginx's htpasswd (vectors, glibc's hashes)
#   test_tablelock the lock of a shared table's owner (one instance per table)
COMMON_TESTS = tests/common/test_text tests/common/test_conffile \
	tests/common/test_config tests/common/test_log \
	tests/common/test_hostlist tests/common/test_remote_config \
	tests/common/test_replace tests/common/test_passwd tests/common/test_tablelock
check_PROGRAMS += $(COMMON_TESTS)
TESTS += $(COMMON_TESTS)
