# SPDX-License-Identifier: MIT
# src/remote: a front's HTTPS client of its sandbox hosts (docs/scaling.md).
libyuxi_a_SOURCES += include/yuxi/remote.h src/remote/remote.c
