/* SPDX-License-Identifier: MIT */
/*
 * cli_int.h - private interfaces of the yuxi-sandbox CLI (src/cli): the
 * commands that live in files of their own beside main.c.
 */
#ifndef YUXI_CLI_INT_H
#define YUXI_CLI_INT_H

#include "yuxi/config.h"

/*
 * `yuxi-sandbox nginx-conf [OPTIONS]` (cli_nginx.c): render the nginx
 * snippets for a server that already exists from cfg and the options in
 * argv (argv[0] is the command's name). Touches neither the shared table
 * nor the engine. Returns the exit status with its message printed: 0, 1
 * (reading a template or writing a file failed) or 2 (usage, or a value
 * refused).
 */
int	cli_nginx_conf(const struct yx_config *cfg, int argc, char **argv);

#endif /* YUXI_CLI_INT_H */
