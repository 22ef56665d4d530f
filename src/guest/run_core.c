/* SPDX-License-Identifier: MIT */
/*
 * run_core.c - spawn and supervise one command inside a sandbox; see
 * run_core.h. Used by yuxi-run and yuxi-agent (static, libc only).
 *
 * On these machines a fork() of even a tiny static process costs ~0.7 ms
 * (vfork: ~0.05 ms), so run_spawn uses vfork(): the child borrows the
 * parent's memory until its execve(). It writes only its own stack and
 * errno (the parent's thread-local errno: run_spawn reads errno right
 * after vfork returns, before anything else can change it, and the child
 * reports its own failures on its output, not through errno), calls only
 * async-signal-safe functions and snprintf()/strerrordesc_np() on local
 * buffers, and execvpe() searches the parent's PATH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest/run_core.h"

#define RUN_BUFSZ	65536
#define RUN_DRAIN_MAX	32	/* reads after the exit: 2 MiB > any pipe */
#define RUN_TICK_MS	50	/* exit polling without a pidfd... */
#define RUN_CHLD_TICK_MS 1000	/* ... or, with a SIGCHLD signalfd, only
				 * as a safety net */

static char		run_buf[RUN_BUFSZ];
static sigset_t		run_ign;		/* see run_init */
static int		run_ign_known;

int
run_write_all(int fd, const void *p, size_t n, int sock)
{
	const char	*c = p;
	ssize_t		 w;

	while (n > 0) {
		w = sock ? send(fd, c, n, MSG_NOSIGNAL) : write(fd, c, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

void
run_say(const char *fmt, ...)
{
	va_list	ap;
	char	line[512];
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)run_write_all(2, line,
		    (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1, 0);
}

size_t
run_fmt(char *buf, size_t len, const char *a, const char *b, const char *c)
{
	int n;

	n = snprintf(buf, len, "yuxi: %s%s%s\n", a, b, c);
	if (n < 0)
		return 0;
	if ((size_t)n >= len) {
		buf[len - 2] = '\n';
		return len - 1;
	}
	return (size_t)n;
}

void
run_init(void)
{
	struct sigaction	sa;
	int			sig;

	sigemptyset(&run_ign);
	for (sig = 1; sig <= SIGRTMAX; sig++)
		if (sig != SIGKILL && sig != SIGSTOP &&
		    sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigaddset(&run_ign, sig);
	run_ign_known = 1;
}

/*
 * In a new child, before the exec: own group (or, on a terminal, own
 * session with it as controlling terminal), death with the parent,
 * default signals, empty mask, stdin `in` (-1: /dev/null), 1 and 2 on w
 * (both > 2); a->ctl on RUN_CTL_FD. Async-signal-safe calls only (it runs
 * in a vfork child). 0 or -1.
 */
static int
run_child_setup(const struct run_args *a, int w, int in)
{
	sigset_t	none;
	int		fd = in, sig;

	if (a != NULL && a->tty > 2) {
		if (setsid() == -1 || ioctl(a->tty, TIOCSCTTY, 0) == -1)
			return -1;
		fd = w = a->tty;
	} else if (setpgid(0, 0) == -1)
		return -1;
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* ignored signals would stay ignored across exec */
	for (sig = 1; sig <= SIGRTMAX; sig++)
		if (sig != SIGKILL && sig != SIGSTOP &&
		    (!run_ign_known || sigismember(&run_ign, sig)))
			(void)signal(sig, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if ((fd == -1 && (fd = open("/dev/null", O_RDONLY)) == -1) ||
	    dup2(fd, 0) == -1 || dup2(w, 1) == -1 || dup2(w, 2) == -1)
		return -1;
	if (a != NULL && a->ctl > 2 && dup2(a->ctl, RUN_CTL_FD) == -1)
		return -1;
	/* the command inherits 0, 1 and 2 only (docs/security.md, group 7),
	 * and a session's shell its RUN_CTL_FD */
	if (fd > 2 && fd != in && fd != w)
		(void)close(fd);
	return 0;
}

/* A child's own failure, worded and numbered as yuxi-run's. */
static void __attribute__((noreturn))
run_child_fail(const char *a, const char *b, const char *c, int st)
{
	char line[1024];

	(void)!write(2, line, run_fmt(line, sizeof(line), a, b, c));
	_exit(st);
}

/* Change to a->cwd and exec; else say why on the output. Never returns. */
static void __attribute__((noreturn))
run_child_exec(const struct run_args *a)
{
	int e;

	if (a->cwd != NULL && chdir(a->cwd) == -1)
		run_child_fail("cannot change directory to ", a->cwd,
		    errno == ENOENT ? ": No such file or directory" :
				      ": not accessible",
		    RUN_STATUS_NOEXEC);
	execvpe(a->argv[0], a->argv, a->envp);
	e = errno;
	run_child_fail(a->argv[0], ": ",
	    strerrordesc_np(e) != NULL ? strerrordesc_np(e) : "cannot execute",
	    e == ENOENT ? RUN_STATUS_NOTFOUND : RUN_STATUS_NOEXEC);
}

/* The vfork child. Never returns. */
static void __attribute__((noreturn))
run_child(const struct run_args *a, int w, pid_t parent)
{
	/* the supervisor may have died before PR_SET_PDEATHSIG took hold */
	if (run_child_setup(a, w, a->in) == -1 || getppid() != parent)
		_exit(RUN_STATUS_USAGE);
	run_child_exec(a);
}

/* vfork and start the child; kept apart so that no caller variable lives
 * across the vfork (-Wclobbered). The child's pid or -1. */
static pid_t __attribute__((noinline))
run_vfork(const struct run_args *a, int w, pid_t parent)
{
	pid_t pid = vfork();

	if (pid == 0)
		run_child(a, w, parent);
	return pid;
}

/*
 * The primed shell's child (run_prime): own group, death with the parent,
 * default signals, stdin the script pipe, 1 and 2 on /dev/null, the
 * acknowledgement pipe on RUN_PRIME_ACK_FD, the directory dirfd. Never
 * returns.
 */
static void __attribute__((noreturn))
run_prime_child(const struct run_prime_args *a, pid_t parent)
{
	static char *const	argv[] = { "/bin/sh", "-s", NULL };
	int			null;

	if ((null = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1 ||
	    run_child_setup(NULL, null, a->script) == -1 || getppid() != parent ||
	    dup2(a->ack, RUN_PRIME_ACK_FD) == -1 || fchdir(a->dirfd) == -1)
		_exit(RUN_STATUS_USAGE);
	execve(argv[0], argv, a->envp);
	_exit(RUN_STATUS_NOEXEC);
}

static pid_t __attribute__((noinline))
run_prime_vfork(const struct run_prime_args *a, pid_t parent)
{
	pid_t pid = vfork();

	if (pid == 0)
		run_prime_child(a, parent);
	return pid;
}

int
run_prime(struct run_cmd *c, const struct run_prime_args *a)
{
	pid_t pid;

	c->rfd = c->pidfd = -1;
	if (a->script <= 2 || a->ack <= 2 || a->ack == RUN_PRIME_ACK_FD ||
	    a->script == RUN_PRIME_ACK_FD)
		return EINVAL;	/* each must survive the child's dup2()s */
	pid = run_prime_vfork(a, getpid());
	if (pid == -1)
		return errno;
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

/* Reap pid; its shell-style status. */
static int
run_reap(pid_t pid)
{
	int	st = 0;
	pid_t	r;

	while ((r = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
		;
	if (r != pid)
		return RUN_STATUS_USAGE;	/* not ours to reap (SIGCHLD ignored?) */
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return RUN_STATUS_USAGE;
}

int
run_spawn(struct run_cmd *c, const struct run_args *a, int out)
{
	int	p[2] = { -1, -1 }, w, e;
	pid_t	pid;

	c->pid = -1;
	c->rfd = c->pidfd = -1;
	if (a->tty > 2)
		out = a->tty;	/* the terminal carries the output */
	else if (out == -1) {
		if (pipe2(p, O_CLOEXEC) == -1)
			return errno;
		out = p[1];
	}
	/* 1 and 2 are dup2()ed from w in the child: it must not be one of them */
	w = out > 2 ? out : fcntl(out, F_DUPFD_CLOEXEC, 3);
	if (w == -1) {
		e = errno;
		goto fail;
	}
	pid = run_vfork(a, w, getpid());
	e = errno;
	if (w != out)
		close(w);
	if (pid == -1)
		goto fail;
	if (p[1] != -1)
		close(p[1]);
	c->pid = pid;
	c->rfd = p[0];
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
fail:
	if (p[0] != -1) {
		close(p[0]);
		close(p[1]);
	}
	return e;
}

/* True once the main process has exited (it is left unreaped). */
static int
run_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno != EINTR;
	return si.si_pid == pid;
}

/* Copy what the pipe holds without blocking (bounded). 0 or RUN_BROKEN. */
static int
run_drain(struct run_cmd *c)
{
	ssize_t	r;
	int	i;

	(void)fcntl(c->rfd, F_SETFL, O_NONBLOCK);
	for (i = 0; i < RUN_DRAIN_MAX; i++) {
		r = read(c->rfd, run_buf, sizeof(run_buf));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (c->out(c->arg, run_buf, (size_t)r) == -1)
			return RUN_BROKEN;
	}
	return 0;
}

static void
run_chld_noop(int sig)
{
	(void)sig;
}

/*
 * Without a pidfd (gVisor has no pidfd_open): a signalfd for SIGCHLD, so
 * that the exit wakes the supervisor at once rather than at its next
 * RUN_TICK_MS. SIGCHLD is blocked while it lives, and has a handler that
 * does nothing (a signal whose action is to ignore it, SIGCHLD's default,
 * may be discarded when it comes); an exit before the block is seen by the
 * waitid() of the loop's first turn, which does not wait. A child
 * spawned meanwhile sets its own mask, and exec resets the handler. The fd
 * or -1; run_chld_close() restores both.
 */
static int
run_chld_open(sigset_t *old, struct sigaction *oact)
{
	struct sigaction	sa;
	sigset_t		s;
	int			fd;

	sigemptyset(&s);
	sigaddset(&s, SIGCHLD);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_chld_noop;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigprocmask(SIG_BLOCK, &s, old) == -1)
		return -1;
	if (sigaction(SIGCHLD, &sa, oact) == -1) {
		(void)sigprocmask(SIG_SETMASK, old, NULL);
		return -1;
	}
	if ((fd = signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK)) == -1) {
		(void)sigaction(SIGCHLD, oact, NULL);
		(void)sigprocmask(SIG_SETMASK, old, NULL);
	}
	return fd;
}

static void
run_chld_close(int fd, const sigset_t *old, const struct sigaction *oact)
{
	close(fd);
	(void)sigaction(SIGCHLD, oact, NULL);
	(void)sigprocmask(SIG_SETMASK, old, NULL);
}

static void
run_chld_drain(int fd)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) > 0)
		;
}

int
run_supervise(struct run_cmd *c)
{
	struct pollfd	pfd[3];
	long long	left;
	struct sigaction oact;
	sigset_t	mask;
	ssize_t		r;
	int		n, ms, st, chld = -1, tick, first = 1;

	if (c->pidfd == -1)
		chld = run_chld_open(&mask, &oact);
	tick = chld != -1 ? RUN_CHLD_TICK_MS : RUN_TICK_MS;
	for (;;) {
		pfd[0].fd = c->rfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = c->watch_fd;
		pfd[1].events = c->watch_events;
		pfd[2].fd = c->pidfd != -1 ? c->pidfd : chld;
		pfd[2].events = POLLIN;
		pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
		ms = -1;
		if (c->deadline_ms != 0) {
			if ((left = c->deadline_ms - yx_mono_ms()) <= 0) {
				st = RUN_STATUS_TIMEOUT;
				goto kill;
			}
			ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		if (c->pidfd == -1 && (ms == -1 || ms > tick))
			ms = tick;
		if (chld != -1 && first)
			ms = 0;	/* an exit before the block sent no signal */
		first = 0;
		if ((n = poll(pfd, 3, ms)) == -1 && errno != EINTR) {
			st = RUN_BROKEN;
			goto kill;
		}
		if (n > 0 && pfd[1].revents != 0 && c->on_watch != NULL &&
		    (st = c->on_watch(c->arg)) != -1)
			goto kill;
		if (pfd[0].revents != 0) {
			r = read(c->rfd, run_buf, sizeof(run_buf));
			if (r == 0 || (r == -1 && errno != EINTR && errno != EAGAIN)) {
				close(c->rfd);	/* every writer is gone */
				c->rfd = -1;
			} else if (r > 0 &&
			    c->out(c->arg, run_buf, (size_t)r) == -1) {
				st = RUN_BROKEN;
				goto kill;
			}
		}
		if (chld != -1 && pfd[2].revents != 0)
			run_chld_drain(chld);
		if ((c->pidfd != -1 && pfd[2].revents != 0) ||
		    (c->pidfd == -1 && run_exited(c->pid))) {
			/* kill first so that no writer keeps the drain busy */
			(void)kill(-c->pid, SIGKILL);
			if (c->rfd != -1 && run_drain(c) == RUN_BROKEN) {
				st = RUN_BROKEN;
				goto kill;
			}
			st = run_reap(c->pid);
			goto out;
		}
	}
kill:
	/* the main process is unreaped, so the group id is still ours */
	(void)kill(-c->pid, SIGKILL);
	(void)run_reap(c->pid);
out:
	if (c->rfd != -1)
		close(c->rfd);
	if (c->pidfd != -1)
		close(c->pidfd);
	c->rfd = c->pidfd = -1;
	if (chld != -1)
		run_chld_close(chld, &mask, &oact);
	return st;
}
