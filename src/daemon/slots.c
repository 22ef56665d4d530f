/* SPDX-License-Identifier: MIT */
/*
 * slots.c - what one user may hold of the pre-forked workers
 * (docs/security.md "Between tenants"), taken by the router for the routes
 * that declare it (YX_R_SLOT, YX_R_WAIT in the route table, router.c).
 *
 * - A user's slots: a request that holds its worker (a command, a stream,
 *   a background process's start, stdin or control, a long-poll that
 *   waits) takes one of YUXI_USER_COMMANDS (default one fewer than the
 *   workers): whatever one user runs, the other users' requests find a
 *   worker. One more answers 503 capacity with Retry-After: 1 at once.
 * - Wait slots: an output long-poll that waits also takes one of
 *   YUXI_PROCESS_WAITERS across the service (default half the workers),
 *   and a user holds at most half of those (at least one), so one user's
 *   long-polls never leave the others none; without one the long-poll
 *   answers at once ("wait_capped").
 *
 * - A sandbox host's slots (a front, docs/scaling.md "Failure"): every
 *   call of the front's workers to one host takes one of YUXI_HOST_CALLS
 *   (default half the workers), so a host that is slow or does not answer
 *   holds at most that many of them, and the other hosts' threads find a
 *   worker. One more call answers 503 capacity with Retry-After: 1 at once.
 *
 * Every slot is an OFD write lock on one byte of a file beneath the saves
 * directory (<saves>/user-commands/<user>, <saves>/user-waits/<user>,
 * <saves>/proc-waits.lock, <saves>/host-calls/<host>): the kernel drops it when its descriptor
 * closes, also when the worker dies, so no slot is ever lost. The files
 * are opened once per worker (the directories) or per request (a user's,
 * a host's).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/log.h"

#define USER_CMDS_DIR	"user-commands"
#define USER_WAITS_DIR	"user-waits"
#define PROC_WAITS_FILE	"proc-waits.lock"
#define HOST_CALLS_DIR	"host-calls"

/* This worker's descriptors: -1 until first used. */
static int	slot_cmds_dfd = -1;	/* <saves>/user-commands */
static int	slot_waits_dfd = -1;	/* <saves>/user-waits */
static int	slot_global_fd = -1;	/* <saves>/proc-waits.lock */
static int	slot_hosts_dfd = -1;	/* <saves>/host-calls */
static bool	slot_warned;		/* a slot file failed: said once */

/* One byte's OFD lock on fd: F_WRLCK or F_UNLCK. */
static int
byte_lock(int fd, int k, short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = k;
	fl.l_len = 1;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int
yx_byte_slot_take(int fd, int n)
{
	int k;

	for (k = 0; k < n; k++)
		if (byte_lock(fd, k, F_WRLCK) == 0)
			return k;
	return -1;
}

void
yx_byte_slot_give(int fd, int k)
{
	(void)byte_lock(fd, k, F_UNLCK);
}

/*
 * A slot file could not be used: the request goes uncounted (the cap
 * protects the others; it must not stop everyone). Said once per worker.
 */
static void
slot_unusable(const char *what)
{
	if (!slot_warned)
		log_warn("%s: requests not counted", what);
	slot_warned = true;
}

/* <saves>/<name> opened (made 0700) into *dfd once. false when unusable. */
static bool
slot_dir(const struct yx_config *cfg, const char *name, int *dfd)
{
	char path[YX_CFG_PATH + 32];

	if (*dfd != -1)
		return true;
	snprintf(path, sizeof(path), "%s/%s", cfg->saves_dir, name);
	if ((mkdir(path, 0700) == -1 && errno != EEXIST) ||
	    (*dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		slot_unusable(path);
		return false;
	}
	return true;
}

/*
 * One of n slots of file `name` (a user's, a host's) in dfd: YX_OK with
 * *fdp holding it, or YX_E_BUSY when all n are taken. *fdp -1: unusable
 * (uncounted).
 */
static int
slot_file(int dfd, const char *dir, const char *name, int n, int *fdp)
{
	int fd;

	*fdp = -1;
	/* a valid user or host name is a file name: no '/', no leading '.' */
	if ((fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
		slot_unusable(dir);
		return YX_OK;
	}
	if (yx_byte_slot_take(fd, n) == -1) {
		close(fd);
		return YX_E_BUSY;
	}
	*fdp = fd;
	return YX_OK;
}

int
yx_slots_per_user(const struct yx_config *cfg)
{
	int cap = cfg->user_commands > 0 ? cfg->user_commands : cfg->workers - 1;

	return cap < 1 || cap >= cfg->workers ? 0 : cap;	/* one worker: nothing to keep */
}

int
yx_slot_user_take(const struct yx_config *cfg, const char *user, int *fdp)
{
	int cap = yx_slots_per_user(cfg);

	*fdp = -1;
	if (cap == 0 || !slot_dir(cfg, USER_CMDS_DIR, &slot_cmds_dfd))
		return YX_OK;
	return slot_file(slot_cmds_dfd, USER_CMDS_DIR, user, cap, fdp);
}

void
yx_slot_user_give(int fd)
{
	if (fd != -1)
		close(fd);
}

int
yx_slot_user_refuse(const struct yx_config *cfg, struct yx_http_req *r)
{
	char	msg[160];
	int	cap = yx_slots_per_user(cfg);

	if (cap == 1)
		snprintf(msg, sizeof(msg), "a command of yours is running, or waiting for a "
					   "process's output: one at a time");
	else
		snprintf(msg, sizeof(msg), "%d commands of yours are running or waiting for "
					   "output, the most one user may have at once",
		    cap);
	yx_http_send_error_hdr(r, YX_E_BUSY, msg, "Retry-After: 1\r\n");
	return YX_E_BUSY;
}

/* YUXI_PROCESS_WAITERS, or half the workers (at least one). */
static int
slot_waiters(const struct yx_config *cfg)
{
	int cap = cfg->proc_waiters > 0 ? cfg->proc_waiters : cfg->workers / 2;

	return cap < 1 ? 1 : cap;
}

bool
yx_slot_wait_take(const struct yx_config *cfg, const char *user, struct yx_wait_slot *ws)
{
	char	path[YX_CFG_PATH + 32];
	int	all = slot_waiters(cfg), mine = all / 2 > 0 ? all / 2 : 1;

	ws->user = ws->fair = ws->k = -1;
	/* the user's first: a user's long-polls and commands together leave
	 * a worker to the others */
	if (yx_slot_user_take(cfg, user, &ws->user) != YX_OK)
		return false;
	/* then the user's share of the waiters: never all of them */
	if (slot_dir(cfg, USER_WAITS_DIR, &slot_waits_dfd) &&
	    slot_file(slot_waits_dfd, USER_WAITS_DIR, user, mine, &ws->fair) != YX_OK)
		goto none;
	if (slot_global_fd == -1) {
		snprintf(path, sizeof(path), "%s/" PROC_WAITS_FILE, cfg->saves_dir);
		if ((slot_global_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			 0600)) == -1) {
			log_warn("%s", path);
			goto none;
		}
	}
	if ((ws->k = yx_byte_slot_take(slot_global_fd, all)) != -1)
		return true;
none:
	yx_slot_wait_give(ws);
	return false;
}

void
yx_slot_wait_give(struct yx_wait_slot *ws)
{
	yx_slot_user_give(ws->user);
	yx_slot_user_give(ws->fair);
	if (ws->k >= 0 && slot_global_fd != -1)
		yx_byte_slot_give(slot_global_fd, ws->k);
	ws->user = ws->fair = ws->k = -1;
}

int
yx_slots_per_host(const struct yx_config *cfg, size_t nhosts)
{
	int cap = cfg->host_calls > 0 ? cfg->host_calls : cfg->workers / 2;

	if (cap < 1)
		cap = 1;
	/* one host: no other host's threads to keep workers for */
	return nhosts < 2 || cap >= cfg->workers ? 0 : cap;
}

int
yx_slot_host_take(const struct yx_config *cfg, size_t nhosts, const char *host, int *fdp)
{
	int cap = yx_slots_per_host(cfg, nhosts);

	*fdp = -1;
	if (cap == 0 || !slot_dir(cfg, HOST_CALLS_DIR, &slot_hosts_dfd))
		return YX_OK;
	return slot_file(slot_hosts_dfd, HOST_CALLS_DIR, host, cap, fdp);
}

void
yx_slot_host_give(int fd)
{
	if (fd != -1)
		close(fd);
}
