/* SPDX-License-Identifier: MIT */
/*
 * main.c - yuxi-sandboxd: the sandbox service's FastCGI daemon.
 *
 * Loads the configuration (the configuration file, then the environment,
 * docs/configuration.md) and the agents file; any invalid value stops the
 * start with a message naming the variable (and the file's line) and exit
 * status 2. The protections on by default (YUXI_POOL_SIZE and
 * YUXI_THREAD_DISK_QUOTA "auto") are settled against what this host gives
 * (yx_priv_probe): off, and said so loudly, where it does not. Then the master runs in the foreground (systemd and
 * scripts/run-service.sh handle supervision) and logs to stderr. SIGHUP
 * makes it read both again (docs/operations.md); SIGTERM stops it.
 *
 * usage: yuxi-sandboxd [-dt] [-c FILE] | --version | --help
 *   -c FILE  the configuration file (default: YUXI_CONFIG, else
 *            $(sysconfdir)/yuxi-sandbox/yuxi-sandbox.conf when it exists)
 *   -d       debug logging (as YUXI_DEBUG=1)
 *   -t       check the configuration and the agents file, then exit
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"

static void
usage(FILE *f, int status)
{
	fprintf(f, "usage: yuxi-sandboxd [-dt] [-c FILE]\n"
		   "       yuxi-sandboxd --version | --help\n\n"
		   "  -c FILE    configuration file (default: $YUXI_CONFIG, else\n"
		   "             %s when it exists);\n"
		   "             YUXI_* environment variables override it\n"
		   "  -d         debug logging\n"
		   "  -t         check the configuration and the agents file, then exit\n"
		   "  --version  print the version and exit\n\n"
		   "See yuxi-sandboxd(8), yuxi-sandbox.conf(5).\n",
	    YX_CONF_FILE);
	exit(status);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct yx_config	 cfg;
	const char		*file = NULL;
	char			 err[512], why[YX_CFG_STR];
	int			 ch, debug = 0, test = 0;

	yx_instance_save_argv(argc, argv);	/* before getopt reorders it */
	while ((ch = getopt_long(argc, argv, "c:dt", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'd':
			debug = 1;
			break;
		case 't':
			test = 1;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		case 'V':
			printf("yuxi-sandboxd %s\n", YX_VERSION);
			return 0;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc)
		usage(stderr, 2);
	/* in the environment, so that a reload (SIGHUP) keeps it too */
	if (debug && setenv("YUXI_DEBUG", "1", 1) == -1) {
		perror("yuxi-sandboxd: setenv");
		return 1;
	}
	if (yx_config_load_file(&cfg, file, err, sizeof(err)) != YX_OK ||
	    yx_daemon_check_files(&cfg, err, sizeof(err)) != YX_OK) {
		fprintf(stderr, "yuxi-sandboxd: %s\n", err);
		return 2;
	}
	log_init("yuxi-sandboxd", cfg.verbose);
	/* the protections on by default, as far as this host gives them */
	yx_config_settle(&cfg, yx_priv_probe(cfg.disk_fs, why, sizeof(why)), why);
	if (yx_config_protect_check(&cfg, err, sizeof(err)) != YX_OK) {
		fprintf(stderr, "yuxi-sandboxd: %s\n", err);
		return 2;
	}
	if (test) {
		fprintf(stderr, "yuxi-sandboxd: configuration ok (%s)\n",
		    cfg.config_file[0] != '\0' ? cfg.config_file :
						 "environment only");
		return 0;
	}
	return yx_master_main(&cfg);
}
