/* SPDX-License-Identifier: MIT */
/*
 * instance.c - what makes a master the one instance of its configuration
 * on the host: the lock of its shared table (yuxi/tablelock.h), its pid
 * file, and the restart in place on SIGUSR2 (docs/operations.md "Reload
 * and stop").
 *
 * The lock: another live process of the table's owner makes the start
 * wait up to 3 s (the processes of a master just killed, such as the
 * egress proxy under its supervisor, leave on their own a moment later),
 * then refuse, naming the owner.
 *
 * Pid file: <directory of YUXI_FCGI_SOCKET>/yuxi-sandboxd.pid
 * (yuxi-sandboxd.NAME.pid with YUXI_INSTANCE=NAME): /run/yuxi-sandbox/ for
 * the package. Written after the lock was taken, removed at exit. Who
 * signals the master without a service manager reads it: logrotate's
 * SIGUSR1, the package's maintainer scripts (SIGTERM on removal, SIGUSR2
 * on upgrade). A pid file that cannot be written is logged, not fatal.
 *
 * Restart in place: the master stops exactly as on SIGTERM (drain,
 * children gone, table removed, lock dropped), then execs the program
 * file it was started from - after an upgrade, the new one at that path -
 * with the same arguments and environment. Same pid, credentials,
 * capabilities, namespaces and system call filter: what a service manager
 * gave it carries over, which is how the package restarts a daemon no
 * manager runs. Refused (one log line, nothing stops) when the program
 * file does not accept the configuration (`-t` is run first), and when the
 * privileged helper is asked for explicitly (YUXI_THREAD_DISK_QUOTA,
 * YUXI_POOL_SIZE set to a size): CAP_SYS_ADMIN left this process for good
 * when the helper was forked. With their defaults ("auto") the restarted
 * master runs without them, as on any host that does not give them, and
 * its start-up report says so.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/sig.h"

#define INST_ARGS_MAX		32	/* arguments kept for the restart */
#define INST_CLAIM_WAIT_MS	3000	/* a previous master's processes leaving */

/* Saved by main() before anything runs: what the restart executes. */
static char	 inst_exe[PATH_MAX];
static char	*inst_argv[INST_ARGS_MAX + 2];

void
yx_instance_save_argv(int argc, char **argv)
{
	ssize_t	 n;
	char	*del;
	int	 i;

	inst_exe[0] = '\0';
	if ((n = readlink("/proc/self/exe", inst_exe, sizeof(inst_exe) - 1)) > 0)
		inst_exe[n] = '\0';
	else
		inst_exe[0] = '\0';
	/* a file replaced since: its name is still the path to execute */
	if ((del = strstr(inst_exe, " (deleted)")) != NULL)
		*del = '\0';
	for (i = 0; i < argc && i < INST_ARGS_MAX; i++)
		inst_argv[i] = argv[i];
	inst_argv[i] = NULL;
	if (argc > INST_ARGS_MAX)
		inst_exe[0] = '\0';	/* cannot be repeated: no restart */
}

/* The pid file's path for cfg into out (PATH_MAX bytes); false if none. */
static bool
inst_pidfile_path(const struct yx_config *cfg, char *out)
{
	const char	*slash = strrchr(cfg->fcgi_socket, '/');
	int		 n;

	if (slash == NULL)
		return false;
	n = snprintf(out, PATH_MAX, "%.*s/yuxi-sandboxd%s%s.pid",
	    (int)(slash - cfg->fcgi_socket), cfg->fcgi_socket,
	    cfg->instance[0] != '\0' ? "." : "", cfg->instance);
	return n > 0 && n < PATH_MAX;
}

/* Write our pid into in->pidfile (logged when it cannot be). */
static void
inst_pidfile_write(struct yx_instance *in, const struct yx_config *cfg)
{
	char	line[32];
	int	fd, n;

	if (!inst_pidfile_path(cfg, in->pidfile)) {
		in->pidfile[0] = '\0';
		return;
	}
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	fd = open(in->pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd == -1 || write(fd, line, (size_t)n) != n) {
		log_warn("pid file %s (logrotate and the package's scripts "
			 "cannot signal this master without it)",
		    in->pidfile);
		in->pidfile[0] = '\0';
	}
	if (fd != -1)
		close(fd);
}

int
yx_instance_claim(struct yx_instance *in, const struct yx_config *cfg)
{
	char	desc[YX_CFG_PATH + 256], holder[YX_CFG_PATH + 256];
	int64_t	deadline;
	int	rc;

	in->pidfile[0] = '\0';
	/* the container prefix last: gc --orphans reads it (provider_orphans.c) */
	snprintf(desc, sizeof(desc), "%s%s%s (master pid %ld, %s) " YX_ORPHAN_PREFIX_TAG "%s",
	    cfg->instance[0] != '\0' ? "instance '" : "the default instance",
	    cfg->instance, cfg->instance[0] != '\0' ? "'" : "", (long)getpid(),
	    cfg->config_file[0] != '\0' ? cfg->config_file : "no configuration file",
	    cfg->container_prefix);
	/* the processes of a master just killed may take a moment to go */
	deadline = yx_mono_ms() + INST_CLAIM_WAIT_MS;
	while ((rc = yx_tablelock_take(&in->lock, cfg->shm_name, desc, holder,
		    sizeof(holder))) == YX_E_BUSY &&
	    yx_mono_ms() < deadline)
		usleep(100 * 1000);
	if (rc == YX_E_BUSY) {
		log_warnx("shared table %s is in use by %s: refusing to start; "
			  "another instance on this host needs a YUXI_INSTANCE of "
			  "its own (or its own YUXI_SHM_NAME)",
		    cfg->shm_name, holder);
		return rc;
	}
	if (rc != YX_OK) {
		log_warnx("shared table %s: lock: %s", cfg->shm_name, holder);
		return rc;
	}
	inst_pidfile_write(in, cfg);
	return YX_OK;
}

void
yx_instance_release(struct yx_instance *in, bool keep_pidfile)
{
	if (in->pidfile[0] != '\0' && !keep_pidfile)
		(void)unlink(in->pidfile);
	in->pidfile[0] = '\0';
	yx_tablelock_drop(&in->lock);
}

/*
 * Run the program file with -t and our arguments: does it accept the
 * configuration? YX_OK, or YX_E_BAD_REQUEST (it said why on stderr, which
 * is our log).
 */
static int
inst_precheck(void)
{
	char	*argv[INST_ARGS_MAX + 3];
	pid_t	 pid;
	int	 i, ws;

	argv[0] = inst_exe;
	argv[1] = (char *)"-t";
	for (i = 1; inst_argv[i] != NULL; i++)
		argv[i + 1] = inst_argv[i];
	argv[i + 1] = NULL;
	if ((pid = fork()) == -1) {
		log_warn("restart: fork");
		return YX_E_IO;
	}
	if (pid == 0) {
		yx_signals_default();
		execv(inst_exe, argv);
		_exit(127);
	}
	while (waitpid(pid, &ws, 0) == -1)
		if (errno != EINTR)
			return YX_E_IO;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? YX_OK : YX_E_BAD_REQUEST;
}

bool
yx_instance_restart_ok(const struct yx_config *cfg)
{
	if (inst_exe[0] == '\0') {
		log_warnx("SIGUSR2: restart refused: the program file or its "
			  "arguments are not known; restart the service");
		return false;
	}
	if ((cfg->thread_disk_quota > 0 && !cfg->disk_quota_auto) ||
	    (cfg->pool_size > 0 && !cfg->pool_auto)) {
		log_warnx("SIGUSR2: restart refused: YUXI_THREAD_DISK_QUOTA and "
			  "YUXI_POOL_SIZE need CAP_SYS_ADMIN, which this master gave "
			  "up; restart the service");
		return false;
	}
	if (cfg->thread_disk_quota > 0 || cfg->pool_size > 0)
		log_warnx("SIGUSR2: the program executed again has no "
			  "CAP_SYS_ADMIN (this master gave it up): the pool and "
			  "the per-thread disk quota (on by default) stay off until "
			  "the service is restarted");
	if (inst_precheck() != YX_OK) {
		log_warnx("SIGUSR2: restart refused: %s -t does not accept the "
			  "configuration (above); this master keeps serving",
		    inst_exe);
		return false;
	}
	log_info("SIGUSR2: stopping, then executing %s again (same pid)", inst_exe);
	return true;
}

void
yx_instance_exec(void)
{
	yx_signals_default();
	execv(inst_exe, inst_argv);
	log_warn("restart: exec %s", inst_exe);
}
