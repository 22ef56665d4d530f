/* SPDX-License-Identifier: MIT */
/*
 * priv_util.c - what the helper's disk files share (src/priv/priv_int.h):
 * opening beneath a directory without symlinks, whether a loop device is
 * backed by a given image, and running mkfs on a device with a fixed argv
 * and a clean environment, bounded in time. Helper only.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <linux/loop.h>
#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/sig.h"
#include "yuxi/tree.h"
#include "priv/priv_int.h"

#define PRIV_MKFS_MS		120000	/* mkfs may take this long */

/* Does LOOP_GET_STATUS64 of the loop device fd name the file img? */
bool
priv_loop_backs_fd(int fd, const struct stat *img)
{
	struct loop_info64 li;

	memset(&li, 0, sizeof(li));
	if (ioctl(fd, LOOP_GET_STATUS64, &li) == -1)
		return false;
	return li.lo_inode == (uint64_t)img->st_ino &&
	    major((dev_t)li.lo_device) == major(img->st_dev) &&
	    minor((dev_t)li.lo_device) == minor(img->st_dev);
}

/* In the mkfs child: wire descriptors, exec; never returns. */
static void __attribute__((noreturn))
priv_mkfs_child(const char *path, char *const argv[], char *const envp[], int img,
    int devnull, int failw)
{
	int e;

	yx_signals_default();
	/* above 3 first, so that the dup2s below cannot clobber each other */
	if ((img = fcntl(img, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    (devnull = fcntl(devnull, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    (failw = fcntl(failw, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    dup2(devnull, 0) == -1 || dup2(devnull, 1) == -1 ||
	    dup2(img, 3) == -1 ||
	    close_range(4, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		goto fail;
	execve(path, argv, envp);
fail:
	e = errno;
	(void)!write(failw, &e, sizeof(e));
	_exit(127);
}

/* Wait for pid at most PRIV_MKFS_MS, then kill it. Its wait status or -1. */
static int
priv_wait(pid_t pid)
{
	int64_t	deadline = yx_mono_ms() + PRIV_MKFS_MS;
	int	ws;
	pid_t	r;

	while ((r = waitpid(pid, &ws, WNOHANG)) == 0 && yx_mono_ms() < deadline)
		(void)poll(NULL, 0, 5);
	if (r == 0) {
		log_warnx("mkfs took over %d ms: killed", PRIV_MKFS_MS);
		kill(pid, SIGKILL);
		r = waitpid(pid, &ws, 0);
	}
	return r == pid ? ws : -1;
}

/* See priv_int.h: exec failures come back over a close-on-exec pipe. */
int
priv_exec_on(const char *path, char *const argv[], int fd, struct yx_errctx *e)
{
	char	*envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
		NULL };
	int	 pfd[2] = { -1, -1 }, devnull = -1, en = 0, ws, rc;
	pid_t	 pid;

	if (pipe2(pfd, O_CLOEXEC) == -1 ||
	    (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
		rc = yx_fail(e, yx_err_from_errno(errno), "mkfs: %s", strerror(errno));
		goto done;
	}
	if ((pid = fork()) == -1) {
		rc = yx_fail(e, yx_err_from_errno(errno), "mkfs: %s", strerror(errno));
		goto done;
	}
	if (pid == 0)
		priv_mkfs_child(path, argv, envp, fd, devnull, pfd[1]);
	close(pfd[1]);
	pfd[1] = -1;
	if (read(pfd[0], &en, sizeof(en)) != (ssize_t)sizeof(en))
		en = 0;		/* EOF: the exec happened */
	ws = priv_wait(pid);
	if (en != 0) {
		log_warnx("cannot run %s: %s", path, strerror(en));
		rc = yx_fail(e, YX_E_IO, "cannot format the disk image");
	} else if (ws == -1 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		log_warnx("%s failed (wait status %d)", path, ws);
		rc = yx_fail(e, YX_E_IO, "cannot format the disk image");
	} else
		rc = YX_OK;
done:
	if (pfd[0] != -1)
		close(pfd[0]);
	if (pfd[1] != -1)
		close(pfd[1]);
	if (devnull != -1)
		close(devnull);
	return rc;
}
