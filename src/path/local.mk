# SPDX-License-Identifier: MIT
# src/path: the virtual path namespace, the command path policy, output masking.
libyuxi_a_SOURCES += \
	include/yuxi/path.h \
	src/path/path.c \
	src/path/cmd.c \
	src/path/mask.c
