# src/agents: the agents registry (YUXI_AGENTS_FILE) and visible skills.
libyuxi_a_SOURCES += include/yuxi/agents.h src/agents/agents.c
