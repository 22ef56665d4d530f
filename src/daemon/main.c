/*
 * main.c - yuxi-sandboxd: the sandbox service's FastCGI daemon.
 *
 * Loads the configuration from the environment (docs/design.md §6) and the
 * agents file; any invalid value stops the start with a message naming the
 * variable and exit status 2. Then the master runs in the foreground
 * (supervisors and scripts/run-service.sh handle daemonising) and logs to
 * stderr.
 *
 * usage: yuxi-sandboxd [-d] [-t]
 *   -d  debug logging (as YUXI_DEBUG=1)
 *   -t  check the configuration and the agents file, then exit
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/log.h"

static void
usage(void)
{
	fprintf(stderr, "usage: yuxi-sandboxd [-d] [-t]\n");
	exit(2);
}

/* Validate what workers load on their own, so a bad file stops the start. */
static int
check_files(const struct yx_config *cfg)
{
	struct yx_agents	*ag = NULL;
	struct yx_errctx	 e;
	struct stat		 sb;

	yx_errctx_clear(&e);
	if (cfg->skills_dir[0] != '\0' &&
	    (stat(cfg->skills_dir, &sb) == -1 || !S_ISDIR(sb.st_mode))) {
		fprintf(stderr, "yuxi-sandboxd: YUXI_SKILLS_DIR: %s is not a directory\n",
		    cfg->skills_dir);
		return -1;
	}
	if (yx_agents_load(&ag, cfg->agents_file, cfg->skills_dir, &e) != YX_OK) {
		fprintf(stderr, "yuxi-sandboxd: YUXI_AGENTS_FILE: %s: %s\n",
		    cfg->agents_file, e.msg);
		return -1;
	}
	yx_agents_free(ag);
	return 0;
}

int
main(int argc, char *argv[])
{
	static struct yx_config	cfg;
	char			err[512];
	int			ch, debug = 0, test = 0;

	while ((ch = getopt(argc, argv, "dt")) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 't':
			test = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (yx_config_load(&cfg, err, sizeof(err)) != YX_OK) {
		fprintf(stderr, "yuxi-sandboxd: %s\n", err);
		return 2;
	}
	if (debug)
		cfg.verbose = 1;
	log_init("yuxi-sandboxd", cfg.verbose);
	if (check_files(&cfg) == -1)
		return 2;
	if (test) {
		fprintf(stderr, "yuxi-sandboxd: configuration ok\n");
		return 0;
	}
	return yx_master_main(&cfg);
}
