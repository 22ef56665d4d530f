# SPDX-License-Identifier: MIT
# src/threads: the thread store (records, ownership, safe removal).
libyuxi_a_SOURCES += include/yuxi/threads.h src/threads/threads.c \
	src/threads/threads_limit.c \
	src/threads/threads_int.h src/threads/threads_disk.c \
	src/threads/threads_uids.c src/threads/threads_meta.c \
	src/threads/threads_snap.c
