/*
 * yuxi-run.c - the in-sandbox command runner (a tiny static binary).
 *
 * Bind-mounted read-only into every sandbox at /opt/yuxi/bin/yuxi-run; the
 * executor runs each command as
 *	yuxi-run [-t SECONDS] [-C DIR] -- /bin/sh -c 'CMD'
 * The Engine API can neither time out nor kill an exec, so this program
 * does: it starts the command in its own process group with stdin from
 * /dev/null and stdout+stderr on one pipe (so output keeps its write order),
 * copies the pipe to its own stdout, and
 *   - at the deadline kills the whole group with SIGKILL and exits 124;
 *   - on SIGTERM/SIGINT/SIGHUP kills the group and exits 128+N;
 *   - when the command's main process exits, copies what is already in the
 *     pipe, then kills what is left of the group (background jobs included:
 *     nothing a command started outlives it; a command that wants a daemon
 *     must use setsid itself) and exits with the command's status (128+N when
 *     it was killed by signal N).
 * Its own failures: 125 usage, 126 cannot chdir / not executable, 127 not
 * found. No dynamic allocation; it links nothing but libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_BUFSZ	65536

static char	 run_buf[RUN_BUFSZ];

static void
run_msg(const char *a, const char *b, const char *c)
{
	char	 line[1024];
	int	 n;

	n = snprintf(line, sizeof(line), "yuxi-run: %s%s%s\n", a, b, c);
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n :
		    sizeof(line) - 1);
}

static long long
run_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write all of buf to stdout; 0, or -1 when the reader is gone. */
static int
run_copy_out(const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(1, p, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Copy what can be read from fd without blocking. -1 when stdout broke. */
static int
run_drain(int fd)
{
	ssize_t r;

	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		r = read(fd, run_buf, sizeof(run_buf));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		if (run_copy_out(run_buf, (size_t)r) == -1)
			return -1;
	}
}

/* Kill the group (the main process is still unreaped, so pgid is ours),
 * reap the main process, return its shell-style status. */
static int
run_finish(pid_t pid)
{
	int st = 0;

	(void)kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 125;
}

/* In the child: own group, /dev/null stdin, both outputs on w, exec. */
static void __attribute__((noreturn))
run_child(char **argv, int w, int failw, const sigset_t *mask)
{
	int fd, e;

	(void)setpgid(0, 0);
	(void)signal(SIGPIPE, SIG_DFL);
	(void)sigprocmask(SIG_UNBLOCK, mask, NULL);
	if ((fd = open("/dev/null", O_RDONLY)) == -1 || dup2(fd, 0) == -1 ||
	    dup2(w, 1) == -1 || dup2(w, 2) == -1)
		goto fail;
	/* the command inherits 0, 1 and 2 only (docs/security.md, group 7) */
	if (fd > 2)
		close(fd);
	execvp(argv[0], argv);
fail:
	e = errno;
	(void)!write(failw, &e, sizeof(e));
	_exit(127);
}

/* True once the main child has exited (it is left unreaped). */
static int
run_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno != EINTR;
	return si.si_pid == pid;
}

/*
 * Supervise pid: copy the pipe, watch signals and the deadline (0 = none).
 * Returns the exit status of yuxi-run.
 */
static int
run_loop(pid_t pid, int rfd, int sfd, long long deadline)
{
	struct signalfd_siginfo	 ssi;
	struct pollfd		 pfd[2];
	long long		 left;
	ssize_t			 r;

	for (;;) {
		pfd[0].fd = rfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = sfd;
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		left = deadline ? deadline - run_now_ms() : -1;
		if (deadline && left <= 0) {
			(void)run_finish(pid);
			return 124;
		}
		if (poll(pfd, 2, left > 0x7fffffff ? 0x7fffffff : (int)left) ==
		    -1 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN &&
		    read(sfd, &ssi, sizeof(ssi)) == sizeof(ssi) &&
		    ssi.ssi_signo != SIGCHLD) {
			(void)run_finish(pid);
			return 128 + (int)ssi.ssi_signo;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP)) {
			r = read(rfd, run_buf, sizeof(run_buf));
			if (r == 0)
				rfd = -1;	/* every writer is gone */
			else if (r > 0 &&
			    run_copy_out(run_buf, (size_t)r) == -1)
				break;
		}
		if (run_exited(pid)) {
			/* Kill first so no writer can keep the drain busy. */
			(void)kill(-pid, SIGKILL);
			if (rfd != -1 && run_drain(rfd) == -1)
				break;
			return run_finish(pid);
		}
	}
	(void)run_finish(pid);
	return 128 + SIGPIPE;
}

/* Parse argv; fills the timeout, directory and command. 0 or -1. */
static int
run_args(int argc, char **argv, long *timeout, const char **dir,
    char ***cmd)
{
	char	*end;
	int	 c;

	while ((c = getopt(argc, argv, "+t:C:")) != -1) {
		switch (c) {
		case 't':
			errno = 0;
			*timeout = strtol(optarg, &end, 10);
			if (errno || *end != '\0' || *timeout < 0 ||
			    *timeout > 86400)
				return -1;
			break;
		case 'C':
			*dir = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind >= argc)
		return -1;
	*cmd = argv + optind;
	return 0;
}

int
main(int argc, char *argv[])
{
	sigset_t	 mask;
	const char	*dir = NULL;
	char		**cmd = NULL;
	long		 timeout = 0;
	int		 p[2], fp[2], sfd, e = 0;
	pid_t		 pid;
	ssize_t		 r;

	if (run_args(argc, argv, &timeout, &dir, &cmd) == -1) {
		run_msg("usage: yuxi-run [-t SECONDS] [-C DIR] -- COMMAND "
		    "[ARG...]", "", "");
		return 125;
	}
	if (dir != NULL && chdir(dir) == -1) {
		run_msg("cannot change directory to ", dir, errno == ENOENT ?
		    ": No such file or directory" : ": not accessible");
		return 126;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	(void)signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1 ||
	    pipe2(p, O_CLOEXEC) == -1 || pipe2(fp, O_CLOEXEC) == -1) {
		run_msg("setup failed: ", strerror(errno), "");
		return 125;
	}
	if ((pid = fork()) == -1) {
		run_msg("fork: ", strerror(errno), "");
		return 125;
	}
	if (pid == 0)
		run_child(cmd, p[1], fp[1], &mask);
	(void)setpgid(pid, pid);	/* both sides: no window without it */
	close(p[1]);
	close(fp[1]);
	while ((r = read(fp[0], &e, sizeof(e))) == -1 && errno == EINTR)
		;
	if (r == sizeof(e)) {
		(void)run_finish(pid);
		run_msg(cmd[0], ": ", strerror(e));
		return e == ENOENT ? 127 : 126;
	}
	close(fp[0]);
	return run_loop(pid, p[0], sfd,
	    timeout > 0 ? run_now_ms() + timeout * 1000LL : 0);
}
