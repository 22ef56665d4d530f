# SPDX-License-Identifier: MIT
# src/agentcfg: the agent configuration registry (YUXI_AGENTS_FILE) and visible skills.
libyuxi_a_SOURCES += include/yuxi/agents.h src/agentcfg/agents.c
