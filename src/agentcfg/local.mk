# SPDX-License-Identifier: MIT
# src/agentcfg: the agent configuration registry (YUXI_AGENTS_FILE), visible
# skills and sandbox profiles.
libyuxi_a_SOURCES += include/yuxi/agents.h src/agentcfg/agents.c \
	src/agentcfg/agentcfg_int.h src/agentcfg/profile.c \
	src/agentcfg/profile_svc.c
