/* SPDX-License-Identifier: MIT */
/*
 * cli_int.h - private interfaces of the yuxi-sandbox CLI (src/cli): the
 * commands that live in files of their own beside main.c, and what the CLI
 * takes from its host (cli_host.c).
 */
#ifndef YUXI_CLI_INT_H
#define YUXI_CLI_INT_H

#include <stddef.h>

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

/*
 * `nginx-conf --htpasswd FILE --htpasswd-user USER` (cli_htpasswd.c): set
 * USER's password in FILE, read from stdin (asked twice on a terminal),
 * as SHA-512-crypt; FILE written whole, group nginx's (YUXI_FCGI_SOCKET_GROUP,
 * else www-data), mode 0640. 0, 1 (failed) or 2 (usage), message printed.
 */
int	cli_htpasswd_set(const struct yx_config *cfg, const char *file,
    const char *user);
/*
 * Run as root where the service runs as the owner of YUXI_SAVES_DIR (an
 * installed host): become that user with the unit's capabilities
 * (cli_host.c says what exactly). 0: done, or nothing to do; 1: it failed
 * (message printed).
 */
int	cli_become_service_user(const struct yx_config *cfg);
/*
 * The directory of data files `sub` (nginx, web, images): the checkout's
 * when this program runs from a build tree (written into buf, len bytes),
 * else `installed`. Returns one of the two.
 */
const char *cli_datadir(const char *installed, const char *sub, char *buf,
    size_t len);

#endif /* YUXI_CLI_INT_H */
