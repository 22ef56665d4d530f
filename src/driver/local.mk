# SPDX-License-Identifier: MIT
# src/driver: container engine drivers (Engine API over libcurl, docker CLI).
libyuxi_a_SOURCES += \
	include/yuxi/driver.h src/driver/driver_int.h src/driver/api_int.h \
	src/driver/driver.c src/driver/driver_common.c src/driver/demux.c \
	src/driver/spec.c src/driver/spawn.c src/driver/api.c \
	src/driver/api_exec.c src/driver/docker_cli.c
