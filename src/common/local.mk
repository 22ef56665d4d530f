# SPDX-License-Identifier: MIT
# src/common: error vocabulary, logging, configuration, small utilities.
libyuxi_a_SOURCES += \
	include/yuxi/error.h src/common/error.c \
	include/yuxi/log.h src/common/log.c \
	include/yuxi/config.h src/common/config.c \
	include/yuxi/buf.h src/common/buf.c \
	include/yuxi/hash.h src/common/hash.c \
	include/yuxi/hostlist.h src/common/hostlist.c \
	include/yuxi/clock.h src/common/clock.c \
	include/yuxi/sig.h src/common/sig.c \
	include/yuxi/text.h src/common/text.c \
	include/yuxi/ident.h src/common/ident.c \
	include/yuxi/tree.h src/common/tree.c \
	include/yuxi/tablelock.h src/common/tablelock.c \
	include/yuxi/passwd.h src/common/passwd.c
