/* SPDX-License-Identifier: MIT */
/*
 * cli_host.c - what the yuxi-sandbox CLI takes from the host it runs on:
 * the identity it acts as, and where its data files are.
 *
 * Identity. On an installed host the service runs as its own user (the
 * package's yuxi-sandbox, which owns YUXI_SAVES_DIR) with the five
 * capabilities of its unit, and everything it makes belongs to that user:
 * the shared table, the thread store's files, the agent's run directories
 * (whose owner the executor checks). The operator runs the CLI as root.
 * Acting as root there would make files the service cannot replace (a
 * table it cannot recreate) and fail the service's own ownership checks,
 * so before it touches anything the CLI becomes the owner of
 * YUXI_SAVES_DIR when that is not root: its uid, its primary group, its
 * groups from /etc/group (docker: the engine's socket), HOME its home
 * directory, and exactly the unit's capabilities (CAP_CHOWN, CAP_FOWNER,
 * CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_KILL; ambient too, as the
 * unit gives them, so a docker command it runs has them as well). When the
 * saves directory belongs to root (a development run as root) or does not
 * exist yet, the CLI stays what it is.
 *
 * Data files. An installed CLI finds the nginx templates, the workbench
 * page and the image recipes under $(pkgdatadir); one run from a build
 * tree uses its checkout's nginx/, web/ and images/ (yx_config_source_tree),
 * so the README's examples work before anything is installed.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "yuxi/config.h"

/* The unit's AmbientCapabilities= (systemd/yuxi-sandbox.service.in). */
static const int cli_caps[] = {
	CAP_CHOWN,
	CAP_DAC_OVERRIDE,
	CAP_DAC_READ_SEARCH,
	CAP_FOWNER,
	CAP_KILL,
};

/* Permitted, effective and inheritable = cli_caps; then ambient. 0 or -1. */
static int
cli_set_caps(void)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[_LINUX_CAPABILITY_U32S_3];
	size_t				i;

	memset(d, 0, sizeof(d));
	for (i = 0; i < sizeof(cli_caps) / sizeof(cli_caps[0]); i++) {
		d[cli_caps[i] / 32].permitted |= 1U << (cli_caps[i] % 32);
		d[cli_caps[i] / 32].effective |= 1U << (cli_caps[i] % 32);
		d[cli_caps[i] / 32].inheritable |= 1U << (cli_caps[i] % 32);
	}
	if (syscall(SYS_capset, &hdr, d) == -1)
		return -1;
	for (i = 0; i < sizeof(cli_caps) / sizeof(cli_caps[0]); i++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cli_caps[i], 0, 0) == -1)
			return -1;
	return 0;
}

int
cli_become_service_user(const struct yx_config *cfg)
{
	struct passwd	*pw;
	struct stat	 sb;

	if (geteuid() != 0 || stat(cfg->saves_dir, &sb) == -1 || sb.st_uid == 0)
		return 0;
	if ((pw = getpwuid(sb.st_uid)) == NULL) {
		fprintf(stderr, "yuxi-sandbox: %s belongs to uid %u, which has no "
				"user entry: not acting as the service's user\n",
		    cfg->saves_dir, (unsigned)sb.st_uid);
		return 1;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) == -1 ||
	    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1 ||
	    cli_set_caps() == -1 || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == -1) {
		fprintf(stderr, "yuxi-sandbox: acting as %s, the owner of %s: %s\n",
		    pw->pw_name, cfg->saves_dir, strerror(errno));
		return 1;
	}
	if (setenv("HOME", pw->pw_dir, 1) == -1 ||
	    setenv("USER", pw->pw_name, 1) == -1 ||
	    setenv("LOGNAME", pw->pw_name, 1) == -1) {
		fprintf(stderr, "yuxi-sandbox: setenv: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

const char *
cli_datadir(const char *installed, const char *sub, char *buf, size_t len)
{
	char top[PATH_MAX];

	if (!yx_config_source_tree(top, sizeof(top)) ||
	    (size_t)snprintf(buf, len, "%s/%s", top, sub) >= len)
		return installed;
	return buf;
}
