# SPDX-License-Identifier: MIT
# src/exec: the executor (policy, acquire, run, cap + spill, mask) and the
# host side of the in-sandbox agent.
libyuxi_a_SOURCES += \
	include/yuxi/executor.h include/yuxi/skills.h \
	src/exec/executor.c src/exec/exec_prepare.c src/exec/exec_acquire.c \
	src/exec/exec_lease.c src/exec/exec_tx.c src/exec/exec_tx_recover.c src/exec/etc_hosts.c src/exec/outcap.h src/exec/outcap.c \
	src/exec/exec_int.h src/exec/agent_client.h src/exec/agent_client.c \
	include/yuxi/procs.h src/exec/proc.c src/exec/keeper_rec.c src/exec/services.c \
	src/exec/exec_svc.c \
	include/yuxi/sessions.h src/exec/session.c \
	src/guest/agent_proto.h
