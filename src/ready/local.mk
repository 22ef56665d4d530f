# SPDX-License-Identifier: MIT
# src/ready: the readiness checks shared by /readyz, the master's start-up
# and `yuxi-sandbox doctor` (above driver and provider, below the programs).
libyuxi_a_SOURCES += \
	include/yuxi/ready.h src/ready/ready.c
