# SPDX-License-Identifier: MIT
# src/shim: the engine's runc shim with sandboxes grouped
# (docs/configuration.md "Shim groups"): installed as
# $(pkglibexecdir)/engine/containerd-shim-runc-v2, found first on the
# engine's PATH, it names a container's group (YUXI_SHIM_GROUP in its
# environment) in the bundle's annotations, then runs the real shim.
# libc and json-c only.
shimdir = $(pkglibexecdir)/engine
shim_PROGRAMS = containerd-shim-runc-v2
containerd_shim_runc_v2_SOURCES = src/shim/shim_group.c

containerd_shim_runc_v2_LDADD = $(JSONC_LIBS)
