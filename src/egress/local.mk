# SPDX-License-Identifier: MIT
# src/egress: network egress by allowlist (include/yuxi/egress.h): the rules
# (rule.c, pure), the host's filtering proxy (proxy.c: the process, its
# control socket and registrations; conn.c: one proxied connection) and the
# executor's client (client.c).
libyuxi_a_SOURCES += include/yuxi/egress.h src/egress/rule.c \
	src/egress/egress_int.h src/egress/proxy.c src/egress/conn.c \
	src/egress/client.c src/egress/resolve.c
