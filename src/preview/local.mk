# SPDX-License-Identifier: MIT
# src/preview: preview URLs (include/yuxi/preview.h): the records and
# tokens (preview.c), the ingress process that hands nginx's connections
# to the sandboxes' relays (ingress.c, ingress_link.c) and its clients'
# calls (client.c).
libyuxi_a_SOURCES += include/yuxi/preview.h src/preview/preview_int.h \
	src/preview/preview.c src/preview/ingress.c src/preview/ingress_link.c \
	src/preview/client.c
