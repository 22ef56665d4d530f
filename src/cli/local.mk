# SPDX-License-Identifier: MIT
# src/cli: yuxi-sandbox, the operator CLI.
bin_PROGRAMS += yuxi-sandbox
yuxi_sandbox_SOURCES = src/cli/main.c src/cli/cli_int.h src/cli/cli_nginx.c src/cli/cli_host.c \
	src/cli/cli_htpasswd.c
yuxi_sandbox_LDADD = $(YX_LIBS)
