# SPDX-License-Identifier: MIT
# src/priv: the privileged helper (CAP_SYS_ADMIN: per-thread disk images).
libyuxi_a_SOURCES += include/yuxi/priv.h src/priv/priv_int.h \
	src/priv/priv.c src/priv/priv_helper.c src/priv/priv_disk.c \
	src/priv/priv_pool.c src/priv/priv_box.c src/priv/priv_snap.c src/priv/priv_util.c \
	src/priv/priv_probe.c
