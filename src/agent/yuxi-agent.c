/*
 * yuxi-agent.c - the in-sandbox exec agent (a tiny static binary).
 *
 * Bind-mounted read-only into every sandbox at /opt/yuxi/bin/yuxi-agent and
 * started by the host executor through one ordinary engine exec:
 *	yuxi-agent --daemon --socket /opt/yuxi/run/agent.sock
 * which forks, setsid()s, forks again and returns as soon as the listener is
 * up (exit 0; also when another agent already holds the lock file
 * <socket>.lock). The daemon accepts connections on the unix socket in the
 * per-sandbox run directory (bind-mounted from the host, no networking) and
 * forks one handler per connection. A handler reads one request (argv, env,
 * workdir; agent_proto.h), runs argv[0] -- in practice the runner,
 * /opt/yuxi/bin/yuxi-run, which owns process groups, the timeout and exit
 * 124, so both exec paths share one implementation -- with stdin on
 * /dev/null and stdout+stderr on one pipe, relays the pipe as output frames
 * and ends with the exit status (128+N when killed by signal N).
 * If the host hangs up, or the handler dies (PR_SET_PDEATHSIG), the runner
 * gets SIGTERM and kills its whole group.
 *
 * The agent runs with the identity of whoever started it (the sandbox user);
 * it trusts nothing it reads: every frame is bounded (agent_proto.h) and the
 * request must arrive within 10 s. It refuses to run as pid 1. No dynamic
 * allocation; it links nothing but libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_proto.h"

#define AGENT_REQ_WAIT_MS	10000	/* whole request must arrive by then */
#define AGENT_READY_WAIT_MS	5000	/* --daemon waits that long for the listener */

struct agent_req {
	char	*cwd;
	char	*argv[YX_AGENT_ARGS_MAX + 1];
	char	*env[YX_AGENT_ENVS_MAX + 1];
	size_t	 nargv, nenv, used;
};

static char	 agent_arena[YX_AGENT_REQ_MAX + YX_AGENT_ARGS_MAX +
		    YX_AGENT_ENVS_MAX + 2];
static char	 agent_obuf[YX_AGENT_HDR + YX_AGENT_OUT_MAX];
static int	 agent_lockfd = -1;

static void
agent_msg(const char *a, const char *b)
{
	char	line[512];
	int	n;

	n = snprintf(line, sizeof(line), "yuxi-agent: %s%s\n", a, b);
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n :
		    sizeof(line) - 1);
}

static long long
agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read exactly n bytes before the deadline. 0, or -1 (EOF, error, late). */
static int
agent_read_full(int fd, void *p, size_t n, long long deadline)
{
	struct pollfd	pfd;
	long long	left;
	ssize_t		r;
	char		*c = p;

	while (n > 0) {
		if ((left = deadline - agent_now_ms()) <= 0)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		r = read(fd, c, n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Send a whole buffer (blocking socket). 0 or -1 when the host is gone. */
static int
agent_send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void
agent_hdr(char *h, int type, uint32_t len)
{
	h[0] = (char)type;
	h[1] = (char)(len >> 24);
	h[2] = (char)(len >> 16);
	h[3] = (char)(len >> 8);
	h[4] = (char)len;
}

/* Send a small frame (payload < 1 KiB). 0 or -1. */
static int
agent_send_small(int fd, int type, const void *p, size_t n)
{
	char f[YX_AGENT_HDR + YX_AGENT_FAIL_MAX];

	if (n > YX_AGENT_FAIL_MAX)
		n = YX_AGENT_FAIL_MAX;
	agent_hdr(f, type, (uint32_t)n);
	if (n > 0)
		memcpy(f + YX_AGENT_HDR, p, n);
	return agent_send_all(fd, f, YX_AGENT_HDR + n);
}

/* Read one string payload of len bytes into the arena. Its start or NULL. */
static char *
agent_read_str(int fd, struct agent_req *rq, uint32_t len, long long deadline)
{
	char *s;

	if (len > YX_AGENT_STR_MAX || rq->used + len + 1 > sizeof(agent_arena))
		return NULL;
	s = agent_arena + rq->used;
	if (agent_read_full(fd, s, len, deadline) == -1 ||
	    memchr(s, '\0', len) != NULL)
		return NULL;
	s[len] = '\0';
	rq->used += len + 1;
	return s;
}

/* Read one request (agent_proto.h). 0, or -1 on any protocol error. */
static int
agent_read_req(int fd, struct agent_req *rq)
{
	long long	 deadline = agent_now_ms() + AGENT_REQ_WAIT_MS;
	unsigned char	 h[YX_AGENT_HDR];
	uint32_t	 len;
	char		*s;
	int		 first = 1;

	for (;;) {
		if (agent_read_full(fd, h, sizeof(h), deadline) == -1)
			return -1;
		len = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 |
		    (uint32_t)h[3] << 8 | h[4];
		if (first != (h[0] == YX_AGENT_T_HELLO))
			return -1;
		if (h[0] == YX_AGENT_T_GO)
			return len == 0 && rq->nargv > 0 ? 0 : -1;
		if ((s = agent_read_str(fd, rq, len, deadline)) == NULL)
			return -1;
		first = 0;
		switch (h[0]) {
		case YX_AGENT_T_HELLO:
			if (strcmp(s, YX_AGENT_MAGIC) != 0)
				return -1;
			break;
		case YX_AGENT_T_CWD:
			rq->cwd = s;
			break;
		case YX_AGENT_T_ENV:
			if (rq->nenv == YX_AGENT_ENVS_MAX)
				return -1;
			rq->env[rq->nenv++] = s;
			break;
		case YX_AGENT_T_ARG:
			if (rq->nargv == YX_AGENT_ARGS_MAX)
				return -1;
			rq->argv[rq->nargv++] = s;
			break;
		default:
			return -1;
		}
	}
}

/* In the child: stdio, workdir, exec. Never returns. */
static void __attribute__((noreturn))
agent_child(const struct agent_req *rq, int w, pid_t parent)
{
	sigset_t	all;
	int		fd, e;

	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(125);
	(void)signal(SIGPIPE, SIG_DFL);
	(void)signal(SIGCHLD, SIG_DFL);
	(void)signal(SIGHUP, SIG_DFL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	if ((fd = open("/dev/null", O_RDONLY)) == -1 || dup2(fd, 0) == -1 ||
	    dup2(w, 1) == -1 || dup2(w, 2) == -1)
		_exit(125);
	/* the command inherits 0, 1 and 2 only (docs/security.md, group 7) */
	if (fd > 2)
		close(fd);
	if (rq->cwd != NULL && chdir(rq->cwd) == -1) {
		agent_msg("cannot change directory to ", rq->cwd);
		_exit(126);
	}
	execve(rq->argv[0], rq->argv, (char **)rq->env);
	e = errno;
	agent_msg("cannot execute ", rq->argv[0]);
	_exit(e == ENOENT ? 127 : 126);
}

/*
 * Relay one read of the pipe as an output frame: 1 data sent, 2 nothing to
 * read now, 0 EOF, -1 the host is gone.
 */
static int
agent_relay(int conn, int rfd)
{
	ssize_t r;

	r = read(rfd, agent_obuf + YX_AGENT_HDR, YX_AGENT_OUT_MAX);
	if (r == -1 && (errno == EINTR || errno == EAGAIN))
		return 2;
	if (r <= 0)
		return 0;
	agent_hdr(agent_obuf, YX_AGENT_T_OUTPUT, (uint32_t)r);
	if (agent_send_all(conn, agent_obuf, YX_AGENT_HDR + (size_t)r) == -1)
		return -1;
	return 1;
}

/* Reap pid; its shell-style status. */
static int
agent_reap(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 125;
}

/*
 * Relay the child's output until it exits (pidfd) or, without a pidfd,
 * until the pipe closes. Returns its status, or -1 when the host is gone
 * (the child was then sent SIGTERM and reaped).
 */
static int
agent_supervise(int conn, pid_t pid, int rfd)
{
	struct pollfd	pfd[3];
	int		pidfd, rc;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		pfd[0].fd = rfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = conn;
		pfd[1].events = POLLIN | POLLRDHUP;
		pfd[2].fd = pidfd;
		pfd[2].events = POLLIN;
		pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
		if (rfd == -1 && pidfd == -1)
			break;
		if (poll(pfd, 3, -1) == -1 && errno != EINTR)
			break;
		if (pfd[1].revents != 0)
			goto gone;		/* host hung up or sent junk */
		if (pfd[0].revents != 0 && (rc = agent_relay(conn, rfd)) <= 0) {
			if (rc == -1)
				goto gone;
			rfd = -1;
		}
		if (pfd[2].revents != 0) {
			/* exited: copy what is already in the pipe, then stop */
			(void)fcntl(rfd, F_SETFL, O_NONBLOCK);
			rc = 0;
			while (rfd != -1 && (rc = agent_relay(conn, rfd)) == 1)
				;
			if (rfd != -1 && rc == -1)
				goto gone;
			break;
		}
	}
	return agent_reap(pid);
gone:
	(void)kill(pid, SIGTERM);
	(void)agent_reap(pid);
	return -1;
}

/* Serve one connection: read the request, run it, report. Exits. */
static void __attribute__((noreturn))
agent_handle(int conn)
{
	static struct agent_req	 rq;
	unsigned char		 x[4];
	int			 p[2], st;
	pid_t			 pid;

	(void)signal(SIGCHLD, SIG_DFL);
	if (agent_read_req(conn, &rq) == -1) {
		(void)agent_send_small(conn, YX_AGENT_T_FAIL, "bad request", 11);
		_exit(1);
	}
	if (pipe2(p, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		(void)agent_send_small(conn, YX_AGENT_T_FAIL, "cannot fork", 11);
		_exit(1);
	}
	if (pid == 0)
		agent_child(&rq, p[1], getppid());
	close(p[1]);
	if (agent_send_small(conn, YX_AGENT_T_STARTED, NULL, 0) == -1 ||
	    (st = agent_supervise(conn, pid, p[0])) == -1) {
		(void)kill(pid, SIGTERM);
		_exit(1);
	}
	x[0] = (unsigned char)(st >> 24);
	x[1] = (unsigned char)(st >> 16);
	x[2] = (unsigned char)(st >> 8);
	x[3] = (unsigned char)st;
	(void)agent_send_small(conn, YX_AGENT_T_EXIT, x, sizeof(x));
	_exit(0);
}

/*
 * Take <path>.lock and listen on path. Returns the listening fd, -2 when
 * another agent holds the lock, -1 on error.
 */
static int
agent_listen(const char *path)
{
	struct sockaddr_un	sun;
	char			lock[sizeof(sun.sun_path) + 8];
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path));
	snprintf(lock, sizeof(lock), "%s.lock", path);
	if ((agent_lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		return -1;
	if (flock(agent_lockfd, LOCK_EX | LOCK_NB) == -1)
		return errno == EWOULDBLOCK ? -2 : -1;
	(void)unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 128) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Accept forever, one handler process per connection. */
static void __attribute__((noreturn))
agent_serve(int lfd)
{
	pid_t	pid;
	int	c;

	(void)signal(SIGCHLD, SIG_IGN);		/* handlers reap themselves */
	for (;;) {
		if ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOMEM || errno == ENOBUFS)
				usleep(10000);
			continue;
		}
		if ((pid = fork()) == 0) {
			close(lfd);
			close(agent_lockfd);	/* the lock dies with the daemon */
			agent_handle(c);
		}
		close(c);
	}
}

/* Detach stdio so the starting exec's streams close at once. */
static void
agent_detach_stdio(void)
{
	int fd;

	if ((fd = open("/dev/null", O_RDWR)) == -1)
		return;
	(void)dup2(fd, 0);
	(void)dup2(fd, 1);
	(void)dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/*
 * --daemon: setsid + double fork; the caller's process returns 0 once the
 * grandchild listens (or found another agent), 1 otherwise.
 */
static int
agent_daemonize(const char *path)
{
	struct pollfd	pfd;
	pid_t		pid;
	char		ok = 0;
	int		p[2], lfd;

	if (pipe2(p, O_CLOEXEC) == -1 || (pid = fork()) == -1)
		return 1;
	if (pid > 0) {
		close(p[1]);
		pfd.fd = p[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, AGENT_READY_WAIT_MS) == 1)
			(void)!read(p[0], &ok, 1);
		(void)waitpid(pid, NULL, 0);
		return ok == 'R' || ok == 'A' ? 0 : 1;
	}
	close(p[0]);
	if (setsid() == -1 || (pid = fork()) != 0)
		_exit(pid > 0 ? 0 : 1);
	agent_detach_stdio();
	(void)!chdir("/");
	umask(077);
	(void)signal(SIGHUP, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	lfd = agent_listen(path);
	ok = lfd >= 0 ? 'R' : lfd == -2 ? 'A' : 'E';
	(void)!write(p[1], &ok, 1);
	close(p[1]);
	if (lfd < 0)
		_exit(ok == 'A' ? 0 : 1);
	agent_serve(lfd);
}

int
main(int argc, char *argv[])
{
	const char	*path = NULL;
	int		 i, daemon = 0, lfd;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--daemon") == 0)
			daemon = 1;
		else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
			path = argv[++i];
		else
			path = NULL, i = argc;
	}
	if (path == NULL || path[0] != '/') {
		agent_msg("usage: yuxi-agent [--daemon] --socket ABSPATH", "");
		return 125;
	}
	if (getpid() == 1) {
		agent_msg("refusing to run as the container's init", "");
		return 125;
	}
	if (daemon)
		return agent_daemonize(path);
	(void)signal(SIGPIPE, SIG_IGN);
	if ((lfd = agent_listen(path)) < 0) {
		agent_msg(lfd == -2 ? "already running: " : "cannot listen on ",
		    path);
		return lfd == -2 ? 0 : 1;
	}
	agent_serve(lfd);
}
