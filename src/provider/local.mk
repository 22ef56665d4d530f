# SPDX-License-Identifier: MIT
# src/provider: the shared provider table (POSIX shm, robust mutexes) and
# the sandbox lifecycle over it (docs/design.md §2, §3).
libyuxi_a_SOURCES += \
	include/yuxi/shm_layout.h include/yuxi/shm_table.h \
	include/yuxi/provider.h src/provider/provider_int.h \
	src/provider/shm_table.c src/provider/provider.c \
	src/provider/provider_evict.c src/provider/provider_maint.c \
	src/provider/provider_mounts.c src/provider/provider_box.c \
	src/provider/provider_tx.c \
	src/provider/provider_pool.c src/provider/provider_view.c src/provider/provider_orphans.c
