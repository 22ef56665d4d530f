/* SPDX-License-Identifier: MIT */
/*
 * yuxi-agent.c - the in-sandbox exec agent (a tiny static binary).
 *
 * Bind-mounted read-only into every sandbox at /opt/yuxi/bin/yuxi-agent and
 * started by the host executor through one ordinary engine exec:
 *	yuxi-agent --daemon --socket /opt/yuxi/run/agent.sock
 * which forks, setsid()s, forks again and returns as soon as the listener is
 * up (exit 0; also when another agent already holds the lock file
 * <socket>.lock). A container made by the service starts it as its main
 * process instead (the engine's init is pid 1):
 *	yuxi-agent --init --socket /opt/yuxi/run/agent.sock
 * does the same, then stays: it waits forever in place of the image's
 * command, so the agent listens by the time the container has started, with
 * no engine exec (docs/agent.md). When the daemon is killed the container
 * keeps running and the host starts a new one with an exec, as before. The daemon listens on the unix socket in the per-sandbox
 * run directory (bind-mounted from the host, no networking) and keeps
 * AGENT_SPARES handler processes forked ahead of time, waiting to accept: a
 * fork costs ~0.7 ms here, so none happens between a request and its
 * command. A used spare is replaced once the machine is quiet again.
 *
 * A handler reads one request (argv, env, workdir, timeout; agent_proto.h)
 * and runs it exactly as yuxi-run would - the same code, run_core.c: own
 * process group, stdin /dev/null, stdout+stderr on one pipe, the timeout
 * kills the group (124), 128+N for signal N, the group is killed when the
 * main process exits. The output goes to the write end of a pipe the host
 * created and passed with the request (SCM_RIGHTS on 'G'): the host reads
 * it itself, so the bytes never pass through the agent (nor count against
 * the sandbox's CPU quota), and the host's end is its own open file, which
 * nothing in the sandbox can turn blocking. The handler ends with the exit
 * status. If the host hangs up, the group is killed. A request that ends
 * with 'B' instead asks for a background process: the handler becomes its
 * keeper (agent_keeper.c), which outlives the daemon and the host worker.
 * A request that is only 'H' 'L' <id> asks whether that keeper lives
 * (agent_alive): the handler answers from the keeper's lock and exits.
 *
 * A handler that dies mid-command (killed from inside the sandbox) cannot
 * clean up: its command's main process gets SIGKILL (PR_SET_PDEATHSIG), and
 * the rest of the group is found through the record cmd.<handler>.<group>
 * the handler leaves in /dev/shm/yuxi-agent while the command runs; the daemon kills such orphaned groups when a handler
 * dies by a signal and when it starts (so after the agent was killed, its
 * restart cleans up).
 *
 * The agent runs with the identity of whoever started it (the sandbox user);
 * it trusts nothing it reads: every frame is bounded (agent_proto.h) and the
 * request must arrive within 10 s. It refuses to run as pid 1. No dynamic
 * allocation; it links nothing but libc.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yuxi/sock.h"
#include "guest/agent_ingress.h"
#include "guest/agent_keeper.h"
#include "guest/agent_prime.h"
#include "guest/agent_proto.h"
#include "guest/agent_services.h"
#include "guest/relay.h"
#include "guest/run_core.h"

#define AGENT_REQ_WAIT_MS	10000	/* whole request must arrive by then */
#define AGENT_READY_WAIT_MS	5000	/* --daemon waits that long for the listener */
#define AGENT_GONE		(-2)	/* run_supervise: the host hung up */
#define AGENT_TIMEOUT_MAX	86400
#define AGENT_RECORDS		"/dev/shm/yuxi-agent"	/* see agent_records_open */
#define AGENT_SPARES		2	/* handlers forked ahead of time */
#define AGENT_REFILL_MS		20	/* replace a used spare after that... */
#define AGENT_RETRY_MS		10	/* ... or, after a failed fork, that */

/* One request; its strings live in arena. */
struct agent_req {
	char		*cwd;
	char		*argv[YX_AGENT_ARGS_MAX + 1];
	char		*env[YX_AGENT_ENVS_MAX + 1];
	long		 timeout;	/* seconds, 0 = none */
	int		 out;		/* the output pipe's write end, passed */
	int		 background;	/* ended by 'B': a background process */
	char		*procid;	/* 'I' */
	char		*alive;		/* 'L': a liveness question */
	char		*mode;		/* 'P': a terminal or a session */
	int		 ingress;	/* 'N': become the preview relay */
	long		 ring;		/* 'M' */
	size_t		 nargv, nenv, used;
	struct run_args	 args;
	char		 arena[YX_AGENT_REQ_MAX + YX_AGENT_ARGS_MAX +
	       YX_AGENT_ENVS_MAX + 2];
};
static int	 agent_lockfd = -1;
static int	 agent_dirfd = -1;	/* where the records are */
static char	 agent_sockdir[108];	/* agent.sock's directory */

static void
agent_msg(const char *a, const char *b)
{
	run_say("yuxi-agent: %s%s\n", a, b);
}

/*
 * recv() that also takes the descriptor the host passes with the request
 * (the write end of the output pipe, SCM_RIGHTS on 'G'): the first one
 * goes to *passed, any other is closed and the read fails.
 */
static ssize_t
agent_recv(int fd, char *p, size_t n, int *passed)
{
	ssize_t	r;
	size_t	nfd;
	int	fds[YX_SOCK_FDS_MAX], bad;

	if ((r = yx_sock_recv_fds(fd, p, n, MSG_DONTWAIT, fds, &nfd, &bad)) == -1)
		return -1;
	return yx_sock_settle_fds(fds, nfd, bad, passed) == -1 ? -1 : r;
}

/* Read exactly n bytes before the deadline. 0, or -1 (EOF, error, late). */
static int
agent_read_full(int fd, void *p, size_t n, long long deadline, int *passed)
{
	struct pollfd	pfd;
	long long	left;
	ssize_t		r;
	char		*c = p;

	while (n > 0) {
		r = agent_recv(fd, c, n, passed);
		if (r > 0) {
			c += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0 || (errno != EINTR && errno != EAGAIN))
			return -1;
		if ((left = deadline - yx_mono_ms()) <= 0)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLIN;
		(void)poll(&pfd, 1, (int)left);
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
	return run_write_all(fd, f, YX_AGENT_HDR + n, 1);
}

/* Read one string payload of len bytes into the arena. Its start or NULL. */
static char *
agent_read_str(int fd, struct agent_req *rq, uint32_t len, long long deadline)
{
	char *s;

	if (len > YX_AGENT_STR_MAX || rq->used + len + 1 > sizeof(rq->arena))
		return NULL;
	s = rq->arena + rq->used;
	if (agent_read_full(fd, s, len, deadline, &rq->out) == -1 ||
	    memchr(s, '\0', len) != NULL)
		return NULL;
	s[len] = '\0';
	rq->used += len + 1;
	return s;
}

/* A decimal frame in lo..hi (a timeout in seconds, a ring size). 0 or -1. */
static int
agent_parse_long(const char *s, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0 && *v >= lo &&
		*v <= hi ?
	    0 :
	    -1;
}

/* A process id: [a-z0-9], 1..YX_AGENT_PROCID_MAX bytes (it names files). */
static int
agent_procid_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789");

	return n > 0 && n <= YX_AGENT_PROCID_MAX && s[n] == '\0';
}

/* The end of a request: 'G' with the output pipe, or 'B' (background)
 * after its id and ring size. 0 or -1. */
static int
agent_req_end(int type, uint32_t len, struct agent_req *rq)
{
	if (len != 0 || rq->nargv == 0)
		return -1;
	if (type == YX_AGENT_T_GO)
		return rq->out != -1 && rq->procid == NULL && rq->mode == NULL ?
		    0 :
		    -1;
	rq->background = 1;
	return rq->out == -1 && rq->procid != NULL && rq->ring != 0 ? 0 : -1;
}

/* Read one request (agent_proto.h). 0, or -1 on any protocol error. */
static int
agent_read_req(int fd, struct agent_req *rq)
{
	long long	 deadline = yx_mono_ms() + AGENT_REQ_WAIT_MS;
	unsigned char	 h[YX_AGENT_HDR];
	uint32_t	 len;
	char		*s;
	int		 first = 1, frames = 0;

	for (;;) {
		if (agent_read_full(fd, h, sizeof(h), deadline, &rq->out) == -1)
			return -1;
		len = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 |
		    (uint32_t)h[3] << 8 | h[4];
		if (first != (h[0] == YX_AGENT_T_HELLO))
			return -1;
		if (h[0] == YX_AGENT_T_GO || h[0] == YX_AGENT_T_BACKGROUND)
			return agent_req_end(h[0], len, rq);
		if ((s = agent_read_str(fd, rq, len, deadline)) == NULL)
			return -1;
		first = 0;
		frames++;
		switch (h[0]) {
		case YX_AGENT_T_HELLO:
			if (strcmp(s, YX_AGENT_MAGIC) != 0)
				return -1;
			break;
		case YX_AGENT_T_CWD:
			rq->cwd = s;
			break;
		case YX_AGENT_T_TIMEOUT:
			if (agent_parse_long(s, 0, AGENT_TIMEOUT_MAX, &rq->timeout) == -1)
				return -1;
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
		case YX_AGENT_T_PROCID:
			if (!agent_procid_ok(s))
				return -1;
			rq->procid = s;
			break;
		case YX_AGENT_T_RING:
			if (agent_parse_long(s, YX_AGENT_RING_MIN, YX_AGENT_RING_MAX, &rq->ring) == -1)
				return -1;
			break;
		case YX_AGENT_T_MODE:	/* checked by the keeper */
			if (len > YX_AGENT_MODE_MAX)
				return -1;
			rq->mode = s;
			break;
		case YX_AGENT_T_INGRESS:	/* right after 'H', ends the request */
			if (frames != 2 || rq->out != -1 || len != 0)
				return -1;
			rq->ingress = 1;
			return 0;
		case YX_AGENT_T_ALIVE:	/* right after 'H', ends the request */
			if (frames != 2 || rq->out != -1 || !agent_procid_ok(s))
				return -1;
			rq->alive = s;
			return 0;
		default:
			return -1;
		}
	}
}

/* The host's end reported: it hung up, or sent something (a protocol
 * error: it sends nothing after 'G'). Either way the command ends. */
static int
agent_on_host(void *arg)
{
	(void)arg;
	return AGENT_GONE;
}

/* The record of this handler's command group (rec: 64 bytes). */
static void
agent_record(char *rec, pid_t pgid)
{
	snprintf(rec, 64, "cmd.%d.%d", (int)getpid(), (int)pgid);
	if (agent_dirfd != -1)
		(void)mknodat(agent_dirfd, rec, S_IFREG | 0600, 0);
}

/* Drop the record (its group is dead or never ran). */
static void
agent_unrecord(char *rec)
{
	if (agent_dirfd != -1 && rec[0] != '\0')
		(void)unlinkat(agent_dirfd, rec, 0);
	rec[0] = '\0';
}

/* A handler's end: drop the record. */
static void __attribute__((noreturn))
agent_exit(char *rec, int code)
{
	agent_unrecord(rec);
	_exit(code);
}

/* A background process: this handler becomes its keeper. Exits. */
static void __attribute__((noreturn))
agent_background(int conn, const struct agent_req *rq)
{
	struct keep_req k;

	k.args = &rq->args;
	k.timeout = rq->timeout;
	k.id = rq->procid;
	k.ring = (size_t)rq->ring;
	k.dir = agent_sockdir;
	k.recdir = agent_dirfd;
	k.mode = rq->mode;
	agent_keep(conn, &k);
}

/*
 * 'L': does the keeper of process id live? It holds an exclusive flock on
 * keep.<id> in the records' directory while it runs (agent_keeper.c): a
 * lock we can take means it died; one we cannot, that it lives (running,
 * stopped or slow). No file or no directory: we cannot tell ('F'). The
 * file stays: the same question must get the same answer. Exits.
 */
static void __attribute__((noreturn))
agent_alive(int conn, const char *id)
{
	char	name[YX_AGENT_PROCID_MAX + 16];
	int	fd = -1, r = -1;

	snprintf(name, sizeof(name), YX_AGENT_KEEP_PREFIX "%s", id);
	if (agent_dirfd != -1 &&
	    (fd = openat(agent_dirfd, name,
		 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) != -1) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			r = 0;
		else if (errno == EWOULDBLOCK)
			r = 1;
		close(fd);
	}
	if (r == -1)
		(void)agent_send_small(conn, YX_AGENT_T_FAIL, "cannot tell", 11);
	else
		(void)agent_send_small(conn, YX_AGENT_T_STATE,
		    r == 1 ? "alive=1" : "alive=0", 7);
	_exit(0);
}

/* Serve one connection: read the request, start it with its output on the
 * pipe the host passed (or hand it to a keeper), supervise, report. Exits. */
static void __attribute__((noreturn))
agent_handle(int conn)
{
	static struct agent_req	 rq;
	struct run_cmd		 c;
	unsigned char		 x[4];
	char			 rec[64] = "";
	pid_t			 pid;
	int			 st;

	rq.out = -1;
	if (agent_read_req(conn, &rq) == -1) {
		(void)agent_send_small(conn, YX_AGENT_T_FAIL, "bad request", 11);
		_exit(1);
	}
	if (rq.alive != NULL || rq.background || rq.ingress)
		prime_drop();
	if (rq.alive != NULL)
		agent_alive(conn, rq.alive);
	if (rq.ingress)	/* previews: this handler becomes the relay */
		agent_ingress(conn);
	rq.args.cwd = rq.cwd;
	rq.args.argv = rq.argv;
	rq.args.envp = rq.env;
	rq.args.in = rq.args.ctl = rq.args.tty = -1;
	if (rq.background)
		agent_background(conn, &rq);
	memset(&c, 0, sizeof(c));
	c.deadline_ms = rq.timeout > 0 ? yx_mono_ms() + rq.timeout * 1000 : 0;
	/* the primed shell, when it fits (agent_prime.h), else a spawn */
	if ((pid = prime_fits(rq.cwd, rq.argv, rq.nargv, rq.env, rq.nenv)) > 0) {
		agent_record(rec, pid);
		if (prime_run(&c, rq.argv[2], &rq.out, conn, c.deadline_ms) == 0)
			agent_unrecord(rec);
	}
	if (c.pid <= 0) {
		if (run_spawn(&c, &rq.args, rq.out) != 0) {
			(void)agent_send_small(conn, YX_AGENT_T_FAIL, "cannot start", 12);
			_exit(1);
		}
		close(rq.out);	/* the command holds it; the host reads it */
		rq.out = -1;
		agent_record(rec, c.pid);
	}
	c.watch_fd = conn;
	c.watch_events = POLLIN | POLLRDHUP;
	c.on_watch = agent_on_host;
	if (agent_send_small(conn, YX_AGENT_T_STARTED, NULL, 0) == -1)
		c.deadline_ms = 1;	/* the host is gone: kill and reap */
	st = run_supervise(&c);
	if (rq.out != -1)	/* a primed shell that never said it started */
		close(rq.out);
	if (st < 0 || c.deadline_ms == 1)
		agent_exit(rec, 1);
	x[0] = (unsigned char)(st >> 24);
	x[1] = (unsigned char)(st >> 16);
	x[2] = (unsigned char)(st >> 8);
	x[3] = (unsigned char)st;
	(void)agent_send_small(conn, YX_AGENT_T_EXIT, x, sizeof(x));
	agent_exit(rec, 0);
}

/* Parse a decimal pid (>= 2) from s up to stop; -1 if it is not one. */
static long
agent_pid_of(const char *s, char stop, const char **end)
{
	long	v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9' && v < 0x400000)
		v = v * 10 + (*s++ - '0');
	*end = s;
	return *s == stop && v >= 2 && v < 0x400000 ? v : -1;
}

/*
 * Kill the command groups whose handler is gone (records cmd.H.G) and
 * drop their records. Reads the directory with getdents64 into a stack
 * buffer (no allocation).
 */
static void
agent_sweep(void)
{
	char		 buf[8192];
	struct dirent64	*de;
	const char	*p;
	long		 h, g, n, off;
	int		 fd;

	if (agent_dirfd == -1 ||
	    (fd = openat(agent_dirfd, ".",
		 O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n; off += de->d_reclen) {
			de = (struct dirent64 *)(buf + off);
			if (strncmp(de->d_name, "cmd.", 4) != 0 ||
			    (h = agent_pid_of(de->d_name + 4, '.', &p)) == -1 ||
			    (g = agent_pid_of(p + 1, '\0', &p)) == -1)
				continue;
			if (kill((pid_t)h, 0) == 0 || errno != ESRCH)
				continue;	/* its handler still runs */
			if (g != getpgrp())
				(void)kill(-(pid_t)g, SIGKILL);
			(void)unlinkat(agent_dirfd, de->d_name, 0);
		}
	close(fd);
}

/*
 * Where the records go: a private directory on the sandbox's /dev/shm. It
 * is tmpfs, so a record costs a few microseconds (~0.15 ms on the run
 * directory's disk), and it dies with the container: a record never names
 * a group of an earlier container, whose numbers a new one may reuse.
 * Without a usable /dev/shm there are no records (and no such cleanup).
 */
static void
agent_records_open(void)
{
	struct stat	st;
	int		fd;

	(void)mkdir(AGENT_RECORDS, 0700);
	fd = open(AGENT_RECORDS, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
	    (st.st_mode & 077) == 0) {
		agent_dirfd = fd;
		return;
	}
	if (fd != -1)
		close(fd);
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
	if (strlen(path) >= sizeof(sun.sun_path) ||
	    strlen(path) >= sizeof(agent_sockdir))
		return -1;
	memcpy(sun.sun_path, path, strlen(path));
	memcpy(agent_sockdir, path, strlen(path) + 1);
	*strrchr(agent_sockdir, '/') = '\0';	/* path is absolute */
	if (agent_sockdir[0] == '\0')
		snprintf(agent_sockdir, sizeof(agent_sockdir), "/");
	snprintf(lock, sizeof(lock), "%s.lock", path);
	if ((agent_lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	if (flock(agent_lockfd, LOCK_EX | LOCK_NB) == -1)
		return errno == EWOULDBLOCK ? -2 : -1;
	agent_records_open();
	(void)unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 128) == -1) {
		close(fd);
		return -1;
	}
	agent_sweep();		/* groups left by a killed agent */
	return fd;
}

/* The spare: take the next connection, tell the daemon, handle it. */
static void __attribute__((noreturn))
agent_spare(int lfd, int notify, pid_t daemon)
{
	struct pollfd	pfd[2];
	sigset_t	none;
	int		conn = -1;

	close(agent_lockfd);	/* the lock dies with the daemon */
	/* an idle spare dies with the daemon (a restarted agent listens on a
	 * new socket: nothing could reach it any more) */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != daemon)
		_exit(1);
	umask(022);		/* what an engine exec gets */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGCHLD, SIG_DFL);
	prime_start();		/* a shell for the next "/bin/sh -c" */
	pfd[1].fd = prime_wait_fd();
	while (conn == -1) {
		pfd[0].fd = lfd;
		pfd[0].events = pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, -1) <= 0)
			continue;
		if (pfd[1].revents != 0) {	/* once: the first key came */
			prime_start();
			pfd[1].fd = -1;
		}
		if (pfd[0].revents == 0)
			continue;
		/* lfd is non-blocking: the other spare may have taken it */
		if ((conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1 &&
		    errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			usleep(10000);	/* EMFILE, ENOBUFS...: not a busy loop */
	}
	(void)prctl(PR_SET_PDEATHSIG, 0);	/* a handler finishes its command */
	(void)!write(notify, "A", 1);
	close(notify);
	close(lfd);
	agent_handle(conn);
}

/* Fork one spare into slot *rfd (the read end of its notify pipe). 0, -1. */
static int
agent_fork_spare(int lfd, int sfd, int *rfd)
{
	pid_t	pid, self = getpid();
	int	p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		if (sfd != -1)
			close(sfd);
		agent_spare(lfd, p[1], self);
	}
	close(p[1]);
	*rfd = p[0];
	return 0;
}

/*
 * Keep AGENT_SPARES handlers ready; reap handlers; when one died by a
 * signal, kill its orphaned command group (agent_sweep).
 *
 * A used spare is replaced once a handler exits or AGENT_REFILL_MS later,
 * whichever comes first, not at once: forking right away would compete for
 * the CPU with the command that was just accepted (measured: ~0.7 ms of a
 * ~5 ms round trip). The second spare serves a concurrent command meanwhile.
 */
static void __attribute__((noreturn))
agent_serve(int lfd)
{
	struct signalfd_siginfo	si;
	struct pollfd		pfd[AGENT_SPARES + 1];
	sigset_t		chld;
	long long		refill = 0, now;
	char			b;
	pid_t			pid;
	int			sp[AGENT_SPARES], sfd, st, dead, i, ms;

	for (i = 0; i < AGENT_SPARES; i++)
		sp[i] = -1;
	prime_init();
	(void)signal(SIGCHLD, SIG_DFL);
	run_init();		/* as a handler will have them (agent_spare) */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) == -1 ||
	    (sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) == -1) {
		(void)sigprocmask(SIG_UNBLOCK, &chld, NULL);
		(void)signal(SIGCHLD, SIG_IGN);	/* reaped by the kernel */
		sfd = -1;
	}
	for (;;) {
		now = yx_mono_ms();
		if (refill != 0 && now >= refill)
			refill = 0;
		for (i = 0; refill == 0 && i < AGENT_SPARES; i++)
			if (sp[i] == -1 && agent_fork_spare(lfd, sfd, &sp[i]) == -1)
				refill = now + AGENT_RETRY_MS;
		for (i = 0; i < AGENT_SPARES; i++) {
			pfd[i].fd = sp[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		pfd[i].fd = sfd;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
		ms = refill == 0 ? -1 : (int)(refill - now);
		if (poll(pfd, AGENT_SPARES + 1, ms) == -1)
			continue;
		for (i = 0; i < AGENT_SPARES; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (read(sp[i], &b, 1) == 1) {
				if (refill == 0)
					refill = yx_mono_ms() + AGENT_REFILL_MS;
			} else
				refill = yx_mono_ms() + AGENT_RETRY_MS;	/* died unused */
			close(sp[i]);
			sp[i] = -1;
		}
		if (pfd[AGENT_SPARES].revents == 0)
			continue;
		while (read(sfd, &si, sizeof(si)) > 0)
			;
		dead = 0;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			if (relay_reaped(pid) || svc_reaped(pid, st))
				continue;	/* restarted */
			if (WIFEXITED(st))
				refill = 0;	/* a handler is done: refill now */
			else
				dead = 1;
		}
		if (dead)
			agent_sweep();
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
	if (lfd >= 0) {	/* the egress relay, with --relay (relay.h) */
		(void)relay_start((int[]){ lfd, agent_lockfd }, 2);
		/* the profile's services, with --services (agent_services.h) */
		(void)svc_start(agent_sockdir, agent_dirfd,
		    (int[]){ lfd, agent_lockfd }, 2, agent_sweep);
	}
	ok = lfd >= 0 ? 'R' : lfd == -2 ? 'A' :
					  'E';
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
	int		 i, daemon = 0, init = 0, lfd;

	if (argc > 1 && strcmp(argv[1], "--service") == 0)
		return svc_loop_main(argc - 1, argv + 1);	/* a service's loop */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--daemon") == 0)
			daemon = 1;
		else if (strcmp(argv[i], "--init") == 0)
			init = 1;
		else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--relay") == 0 && i + 1 < argc &&
		    relay_set(argv[i + 1]) == 0)
			i++;
		else if (strcmp(argv[i], "--services") == 0 && i + 1 < argc &&
		    svc_set(argv[i + 1], argv[0]) == 0)
			i++;
		else
			path = NULL, i = argc;
	}
	if (path == NULL || path[0] != '/') {
		agent_msg("usage: yuxi-agent [--daemon | --init] --socket ABSPATH "
			  "[--relay PORT:ABSPATH] [--services ABSPATH]",
		    "");
		return 125;
	}
	if (getpid() == 1) {
		agent_msg("refusing to run as the container's init", "");
		return 125;
	}
	if (init) {
		/* the container's main process: start the daemon, then stay
		 * (a failed start leaves the host's exec to try again) */
		(void)agent_daemonize(path);
		agent_detach_stdio();
		(void)prctl(PR_SET_NAME, "yuxi-agent-init", 0, 0, 0);
		for (;;)
			pause();
	}
	if (daemon)
		return agent_daemonize(path);
	(void)signal(SIGPIPE, SIG_IGN);
	if ((lfd = agent_listen(path)) < 0) {
		agent_msg(lfd == -2 ? "already running: " : "cannot listen on ",
		    path);
		return lfd == -2 ? 0 : 1;
	}
	(void)relay_start((int[]){ lfd, agent_lockfd }, 2);
	(void)svc_start(agent_sockdir, agent_dirfd, (int[]){ lfd, agent_lockfd },
	    2, agent_sweep);
	agent_serve(lfd);
}
