# SPDX-License-Identifier: MIT
# src/broker: the safe host-side file broker (include/yuxi/broker.h).
BROKER_SOURCES = \
	include/yuxi/broker.h src/broker/broker_int.h \
	src/broker/broker.c src/broker/broker_read.c \
	src/broker/broker_write.c src/broker/broker_list.c \
	src/broker/broker_glob.c
libyuxi_a_SOURCES += $(BROKER_SOURCES)
