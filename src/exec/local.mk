# src/exec: the executor (policy, acquire, run, cap + spill, mask).
libyuxi_a_SOURCES += \
	include/yuxi/executor.h include/yuxi/skills.h \
	src/exec/executor.c src/exec/outcap.h src/exec/outcap.c
