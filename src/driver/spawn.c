/* SPDX-License-Identifier: MIT */
/*
 * spawn.c - run the `docker` command without a shell, bounded in time.
 *
 * Hygiene after libuv's src/unix/process.c: every descriptor is O_CLOEXEC,
 * the child resets its signal mask and dispositions before exec, and an exec
 * failure travels back to the parent over a close-on-exec pipe (the parent
 * reads either EOF = exec succeeded, or the child's errno). Everything the
 * child needs (argv, envp) is built before fork(), so the child only calls
 * async-signal-safe functions.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/buf.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/sig.h"
#include "driver/driver_int.h"

extern char **environ;

/* environ without the keys of envadd, then envadd. Heap array of borrowed
 * strings (free the array only), or NULL on allocation failure. */
static char **
spawn_envp(const char *const envadd[])
{
	size_t	  n = 0, m = 0, i, j, k = 0;
	char	**envp;

	while (environ[n] != NULL)
		n++;
	while (envadd != NULL && envadd[m] != NULL)
		m++;
	if ((envp = calloc(n + m + 1, sizeof(*envp))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		for (j = 0; j < m; j++) {
			size_t kl = strcspn(envadd[j], "=");

			if (strncmp(environ[i], envadd[j], kl + 1) == 0)
				break;
		}
		if (j == m)
			envp[k++] = environ[i];
	}
	for (j = 0; j < m; j++)
		envp[k++] = (char *)envadd[j];
	envp[k] = NULL;
	return envp;
}

/* In the child: reset signals, wire descriptors, exec; never returns. */
static void __attribute__((noreturn))
spawn_child(char *const argv[], char **envp, int devnull, int outw, int errw,
    int failw)
{
	int e;

	yx_signals_default();
	if (dup2(devnull, 0) == -1 || dup2(outw, 1) == -1 ||
	    dup2(errw, 2) == -1)
		goto fail;
	execvpe(argv[0], argv, envp);
fail:
	e = errno;
	(void)!write(failw, &e, sizeof(e));
	_exit(127);
}

struct spawn_io {
	struct yx_buf	*out;
	yx_output_fn	 out_fn;
	void		*arg;
	struct yx_buf	*errbuf;
};

/* Deliver bytes read from fd index i (0 = stdout, 1 = stderr). */
static int
spawn_deliver(struct spawn_io *io, int i, const char *data, size_t n)
{
	if (i == 1) {
		if (io->errbuf != NULL)
			(void)yx_buf_append(io->errbuf, data, n);	/* cut */
		return YX_OK;
	}
	if (io->out_fn != NULL)
		return io->out_fn(io->arg, data, n);
	if (io->out != NULL)
		return yx_buf_append(io->out, data, n);
	return YX_OK;
}

/*
 * Read both pipes until EOF or the deadline. Returns YX_OK (EOF),
 * YX_E_TIMEOUT, YX_E_IO, or the sink's error.
 */
static int
spawn_pump(int fds[2], struct spawn_io *io, int64_t deadline)
{
	struct pollfd	pfd[2];
	char		chunk[16384];
	ssize_t		r;
	int		i, rc = YX_OK, wait;

	while (rc == YX_OK && (fds[0] != -1 || fds[1] != -1)) {
		for (i = 0; i < 2; i++) {
			pfd[i].fd = fds[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		wait = (int)(deadline - yx_mono_ms());
		if (wait <= 0)
			return YX_E_TIMEOUT;
		if (poll(pfd, 2, wait) == -1) {
			if (errno == EINTR)
				continue;
			return YX_E_IO;
		}
		for (i = 0; rc == YX_OK && i < 2; i++) {
			if (fds[i] == -1 || pfd[i].revents == 0)
				continue;
			r = read(fds[i], chunk, sizeof(chunk));
			if (r == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			rc = spawn_deliver(io, i, chunk, (size_t)r);
		}
	}
	return rc;
}

/* Wait for pid; returns the shell-style status (128+N for signal N). */
static int
spawn_wait(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

int
yx_spawn_run(char *const argv[], const char *const envadd[],
    struct yx_buf *out, yx_output_fn out_fn, void *arg,
    struct yx_buf *errbuf, bool merge, int timeout_ms,
    struct yx_spawn_out *so, struct yx_errctx *err)
{
	struct spawn_io	 io = { out, out_fn, arg, errbuf };
	char		**envp = NULL;
	int		 op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int		 fp[2] = { -1, -1 }, devnull = -1, e = 0, rc;
	int		 fds[2];
	pid_t		 pid = -1;
	ssize_t		 r;

	so->status = -1;
	so->timed_out = false;
	rc = YX_E_IO;
	if ((envp = spawn_envp(envadd)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	if (pipe2(op, O_CLOEXEC) == -1 || (!merge && pipe2(ep, O_CLOEXEC) == -1) || pipe2(fp, O_CLOEXEC) == -1 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1) {
		rc = yx_fail(err, YX_E_IO, "cannot create pipes: %s",
		    strerror(errno));
		goto done;
	}
	if ((pid = fork()) == -1) {
		rc = yx_fail(err, YX_E_IO, "fork: %s", strerror(errno));
		goto done;
	}
	if (pid == 0)
		spawn_child(argv, envp, devnull, op[1], merge ? op[1] : ep[1],
		    fp[1]);
	close(op[1]);
	op[1] = -1;
	if (ep[1] != -1) {
		close(ep[1]);
		ep[1] = -1;
	}
	close(fp[1]);
	fp[1] = -1;
	while ((r = read(fp[0], &e, sizeof(e))) == -1 && errno == EINTR)
		;
	if (r == sizeof(e)) {
		so->status = spawn_wait(pid);
		pid = -1;
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "cannot run %s: %s", argv[0], strerror(e));
		goto done;
	}
	fds[0] = op[0];
	fds[1] = ep[0];
	op[0] = ep[0] = -1;
	rc = spawn_pump(fds, &io, yx_mono_ms() + timeout_ms);
	if (rc != YX_OK) {
		so->timed_out = rc == YX_E_TIMEOUT;
		(void)kill(pid, SIGKILL);
		if (so->timed_out)
			rc = YX_OK;
		else if (rc == YX_E_IO)
			yx_fail(err, rc, "reading from %s failed", argv[0]);
	}
	so->status = spawn_wait(pid);
	pid = -1;
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
done:
	if (op[0] != -1)
		close(op[0]);
	if (op[1] != -1)
		close(op[1]);
	if (ep[0] != -1)
		close(ep[0]);
	if (ep[1] != -1)
		close(ep[1]);
	if (fp[0] != -1)
		close(fp[0]);
	if (fp[1] != -1)
		close(fp[1]);
	if (devnull != -1)
		close(devnull);
	free(envp);
	return rc;
}
