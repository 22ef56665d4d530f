# SPDX-License-Identifier: MIT
# tests/priv: the privileged helper and the thread disk images, with a real
# forked helper, real ext4 images, loop devices and mounts (root only).
PRIV_TESTS = tests/priv/test_priv tests/priv/test_priv_pool tests/priv/test_priv_snap
check_PROGRAMS += $(PRIV_TESTS)
TESTS += $(PRIV_TESTS)
