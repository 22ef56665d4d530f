# SPDX-License-Identifier: MIT
# src/common: error vocabulary, logging, configuration, small utilities
# (sock.h and fdio.h are header-only: static inline, for the guest
# programs too).
libyuxi_a_SOURCES += \
	include/yuxi/error.h include/yuxi/log.h include/yuxi/config.h \
	include/yuxi/buf.h include/yuxi/hash.h include/yuxi/hostlist.h \
	include/yuxi/clock.h include/yuxi/sig.h include/yuxi/text.h \
	include/yuxi/ident.h include/yuxi/tree.h include/yuxi/replace.h \
	include/yuxi/sock.h include/yuxi/tablelock.h include/yuxi/passwd.h \
	include/yuxi/supervise.h include/yuxi/fdio.h \
	src/common/error.c src/common/log.c src/common/config.c \
	src/common/buf.c src/common/hash.c src/common/hostlist.c \
	src/common/clock.c src/common/sig.c src/common/text.c \
	src/common/ident.c src/common/tree.c src/common/replace.c \
	src/common/tablelock.c src/common/passwd.c src/common/supervise.c
