# SPDX-License-Identifier: MIT
# src/daemon: yuxi-sandboxd - master, workers, reaper, the HTTP layer, the
# router and the endpoint handlers. Everything but main.c goes into the
# convenience library so tests can link it.
libyuxi_a_SOURCES += \
	include/yuxi/http.h \
	src/daemon/daemon_int.h \
	src/daemon/http.c \
	src/daemon/metrics.c \
	src/daemon/audit.c \
	src/daemon/router.c \
	src/daemon/h_common.c \
	src/daemon/slots.c \
	src/daemon/h_threads.c src/daemon/h_snap.c \
	src/daemon/thread_req.c \
	src/daemon/h_ops.c \
	src/daemon/ready_reply.c \
	src/daemon/sandbox_req.c \
	src/daemon/h_users.c \
	src/daemon/h_fs.c \
	src/daemon/h_exec.c \
	src/daemon/remote_int.h \
	src/daemon/remote_route.c \
	src/daemon/h_front.c \
	src/daemon/front_hosts.c \
	src/daemon/h_front_admin.c \
	src/daemon/h_prov.c \
	src/daemon/exec_stream.c \
	src/daemon/h_proc.c \
	src/daemon/h_session.c \
	src/daemon/keeper_req.c \
	src/daemon/mcp_int.h \
	src/daemon/mcp.c \
	src/daemon/mcp_tools.c \
	src/daemon/mcp_call.c \
	src/daemon/h_preview.c \
	src/daemon/h_front_preview.c \
	src/daemon/worker.c \
	src/daemon/reaper.c \
	src/daemon/master.c \
	src/daemon/reload.c \
	src/daemon/instance.c \
	src/daemon/signals.c

sbin_PROGRAMS += yuxi-sandboxd
yuxi_sandboxd_SOURCES = src/daemon/main.c
yuxi_sandboxd_LDADD = $(YX_LIBS)
