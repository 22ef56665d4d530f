/* SPDX-License-Identifier: MIT */
/*
 * agent_keeper.c - the keeper of one background process; see
 * agent_keeper.h and docs/agent.md "Background processes".
 *
 * A keeper is an agent handler that stays: it owns the process (its own
 * group, as run_core.c starts every command), reads its output into a ring
 * of the last `ring` bytes (the oldest dropped first, their count reported
 * as the offset where the ring starts), holds the write end of its stdin,
 * and answers the host on proc.<id>.sock, one poll loop, no threads. It
 * belongs to the sandbox, not to a host worker: a worker that dies, a
 * service restart, even the agent daemon's death leave it running (its
 * parent's death does not kill it; the container's does). Everything it
 * reads is bounded: frames by agent_proto.h, a request by KEEP_REQ_MS,
 * a reply it cannot send by KEEP_SEND_MS, connections by KEEP_CONNS.
 *
 * The process ends by itself, at its lifetime (the whole group killed:
 * status 124, timedout=1) or by 'K' (group killed, killed=1). Like a
 * command, what is left of its group is killed when its main process
 * exits. Then the keeper writes proc.<id>.exit, so that the host still
 * learns the outcome after the keeper left, and stays KEEP_LINGER_MS for
 * the rest of the output to be read (or until 'K').
 *
 * As long as it lives it holds an exclusive flock on keep.<id> in the
 * agent's records directory (keep_lock): the agent answers the host's
 * "does it live?" ('L') from that lock, since under gVisor a dead keeper's
 * socket still takes connections.
 *
 * On a terminal ('P' "pty COLS ROWS"), the process leads a session of its
 * own with the slave of a new pseudo-terminal as controlling terminal and
 * as 0, 1 and 2; the keeper reads and writes the master (output and stdin
 * are the terminal's bytes), 'Y' resizes it (the kernel sends SIGWINCH),
 * and the end kills the whole session. A session's shell ('P' "session")
 * is agent_session.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "guest/keeper_int.h"
#include "yuxi/clock.h"

#define KEEP_REQ_MS	5000		/* a request must arrive by then */
#define KEEP_STDIN_MS	1000		/* stdin bytes must be taken by then */
#define KEEP_WAIT_MAX	60000		/* longest 'R' wait */
#define KEEP_LINGER_MS	(10 * 60 * 1000) /* output readable after the end */
#define KEEP_SESS_LINGER_MS 30000	/* ... of a session's shell */
#define KEEP_KILL_MS	2000		/* 'K': wait for the main process */
#define KEEP_TICK_MS	50		/* exit polling without a pidfd */
#define KEEP_DRAIN_MAX	32		/* reads after the end */

static long long
keep_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
keep_start(const struct keeper *k)
{
	return k->total > k->cap ? k->total - k->cap : 0;
}

/* The 'Z' status with the output range [from, to) and stdin's count. */
static int
keep_status(const struct keeper *k, int fd, uint64_t from, uint64_t to,
    size_t written, long long deadline)
{
	char	s[YX_AGENT_STATUS_MAX];
	int	n;

	n = snprintf(s, sizeof(s), "from=%llu to=%llu total=%llu run=%d "
				   "code=%d timedout=%d killed=%d written=%zu stdin=%d ended=%lld busy=%d "
				   "idle=%d",
	    (unsigned long long)from, (unsigned long long)to,
	    (unsigned long long)k->total, k->running, k->running ? -1 : k->code,
	    k->timedout, k->killed, written, k->wfd != -1, k->ended,
	    k->sess != NULL && sess_busy(k), k->sess != NULL && sess_idle_ended(k));
	if (n < 0 || (size_t)n >= sizeof(s))
		return -1;
	return keep_frame(fd, YX_AGENT_T_STATE, s, (size_t)n, deadline);
}

/* Answer an 'R': output from the asked offset (the ring's start when the
 * oldest bytes are gone), at most max bytes, in 'D' frames; then 'Z'. */
static void
keep_reply_read(struct keeper *k, struct keep_conn *c)
{
	long long	deadline = yx_mono_ms() + KEEP_SEND_MS;
	uint64_t	from = c->offset, to, at;
	size_t		pos, n;

	if (from < keep_start(k))
		from = keep_start(k);
	if (from > k->total)
		from = k->total;
	to = k->total - from > c->max ? from + c->max : k->total;
	for (at = from; at < to; at += n) {
		pos = (size_t)(at % k->cap);
		n = k->cap - pos;
		if (n > to - at)
			n = (size_t)(to - at);
		if (n > KEEP_CHUNK)
			n = KEEP_CHUNK;
		if (keep_frame(c->fd, YX_AGENT_T_DATA, k->ring + pos, n,
			deadline) == -1)
			break;
	}
	if (at == to)
		(void)keep_status(k, c->fd, from, to, 0, deadline);
	keep_close(k, c);
}

/* Answer a connection that is done with `written` stdin bytes. */
static void
keep_reply(struct keeper *k, struct keep_conn *c, size_t written)
{
	(void)keep_status(k, c->fd, k->total, k->total, written,
	    yx_mono_ms() + KEEP_SEND_MS);
	keep_close(k, c);
}

static void
keep_close_stdin(struct keeper *k)
{
	if (k->wfd != -1)
		close(k->wfd);
	k->wfd = -1;
}

/* proc.<id>.exit: the outcome, for a host that asks after we left. */
static void
keep_write_exit(const struct keeper *k)
{
	char	tmp[PATH_MAX + 8], s[128];
	int	fd, n;

	n = snprintf(s, sizeof(s), "code=%d ended=%lld timedout=%d killed=%d idle=%d\n",
	    k->code, k->ended, k->timedout, k->killed,
	    k->sess != NULL && sess_idle_ended(k));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", k->exitf) >= (int)sizeof(tmp) ||
	    (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		 0644)) == -1)
		return;
	if (n > 0 && write(fd, s, (size_t)n) == n && close(fd) == 0)
		(void)rename(tmp, k->exitf);
	else {
		close(fd);
		(void)unlink(tmp);
	}
}

/* Reap the main process: its shell-style status. */
static int
keep_reap(pid_t pid)
{
	int	st = 0;
	pid_t	r;

	while ((r = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
		;
	if (r != pid)
		return RUN_STATUS_USAGE;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : RUN_STATUS_USAGE;
}

/* Kill every process of the session sid (a terminal's: job control gives
 * its jobs groups of their own). */
static void
keep_kill_session(pid_t sid)
{
	static struct keep_ps	v[1024];
	size_t			n, i;

	n = keep_ps(v, sizeof(v) / sizeof(v[0]));
	for (i = 0; i < n; i++)
		if (v[i].sid == sid)
			(void)kill(v[i].pid, SIGKILL);
}

/*
 * The main process exited (or is about to, killed): kill the rest of its
 * group, keep what the pipe still holds (bounded), reap, record the end
 * and answer everyone waiting.
 */
static void
keep_end(struct keeper *k)
{
	int i, st;

	(void)kill(-k->pid, SIGKILL);
	if (k->tty)
		keep_kill_session(k->pid);	/* its jobs have groups of their own */
	for (i = 0; i < KEEP_DRAIN_MAX && k->rfd != -1; i++)
		keep_read_out(k);
	if (k->rfd != -1)
		close(k->rfd);
	k->rfd = -1;
	st = keep_reap(k->pid);
	k->code = k->timedout ? RUN_STATUS_TIMEOUT : st;
	k->running = 0;
	k->ended = keep_wall_ms();
	k->linger = yx_mono_ms() +
	    (k->sess != NULL ? KEEP_SESS_LINGER_MS : KEEP_LINGER_MS);
	if (k->pidfd != -1)
		close(k->pidfd);
	k->pidfd = -1;
	keep_close_stdin(k);
	if (k->recdir != -1 && k->rec[0] != '\0')
		(void)unlinkat(k->recdir, k->rec, 0);
	if (k->sess != NULL)
		sess_end(k);	/* answers the command running, if any */
	keep_write_exit(k);
	for (i = 0; i < KEEP_CONNS; i++)
		if (kc[i].state == KC_WAIT)
			keep_reply_read(k, &kc[i]);
		else if (kc[i].state == KC_STDIN)
			keep_reply(k, &kc[i], kc[i].wpos);
}

/* True once the main process has exited (left unreaped). */
static int
keep_exited(const struct keeper *k)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)k->pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno != EINTR;
	return si.si_pid == k->pid;
}

/* 'K': kill the group, wait (bounded) for the main process, end. */
static void
keep_kill(struct keeper *k)
{
	struct pollfd	pfd;
	long long	until = yx_mono_ms() + KEEP_KILL_MS;

	if (!k->running)
		return;
	k->killed = 1;
	(void)kill(-k->pid, SIGKILL);
	if (k->tty)
		keep_kill_session(k->pid);
	if (k->sess != NULL)
		sess_kill(k);
	while (!keep_exited(k) && yx_mono_ms() < until) {
		pfd.fd = k->pidfd;
		pfd.events = POLLIN;
		(void)poll(&pfd, k->pidfd != -1 ? 1 : 0, KEEP_TICK_MS);
	}
	keep_end(k);
}

/* Parse "OFFSET HAVE WAIT_MS MAX" (decimal). 0 or -1. */
static int
keep_parse_read(struct keep_conn *c, unsigned long long *wait)
{
	unsigned long long	v[4];
	char			*p = c->buf, *end;
	int			 i;

	if (c->len >= 96)
		return -1;
	c->buf[c->len] = '\0';
	for (i = 0; i < 4; i++) {
		if (*p < '0' || *p > '9')
			return -1;
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (errno != 0 || (*end != (i < 3 ? ' ' : '\0')))
			return -1;
		p = end + (i < 3);
	}
	c->offset = v[0];
	c->have = v[1];
	*wait = v[2] > KEEP_WAIT_MAX ? KEEP_WAIT_MAX : v[2];
	c->max = v[3];
	return 0;
}

/* 'Y' "COLS ROWS": the terminal's new size (the kernel sends SIGWINCH to
 * its foreground group). 0 or -1. */
static int
keep_resize(struct keeper *k, struct keep_conn *c)
{
	struct winsize ws;

	if (c->len >= 32 || k->rfd == -1)
		return -1;
	c->buf[c->len] = '\0';
	if (keep_parse_size(c->buf, &ws) == -1)
		return -1;
	return ioctl(k->rfd, TIOCSWINSZ, &ws) == 0 ? 0 : -1;
}

/* A whole operation frame arrived on c: act on it. */
static void
keep_op(struct keeper *k, struct keep_conn *c)
{
	unsigned long long	wait;
	int			type = c->hdr[0];

	if (type == YX_AGENT_T_STATUS && c->len == 0) {
		keep_reply(k, c, 0);
	} else if (type == YX_AGENT_T_READ && keep_parse_read(c, &wait) == 0) {
		if (!k->running || k->total > c->have || wait == 0) {
			keep_reply_read(k, c);
			return;
		}
		c->state = KC_WAIT;
		c->deadline = yx_mono_ms() + (long long)wait;
	} else if (type == YX_AGENT_T_STDIN && k->sess == NULL) {
		if (c->len == 0)
			keep_close_stdin(k);
		if (c->len == 0 || k->wfd == -1) {
			keep_reply(k, c, 0);
			return;
		}
		c->state = KC_STDIN;
		c->wpos = 0;
		c->deadline = yx_mono_ms() + KEEP_STDIN_MS;
		if (k->writer == -1)
			k->writer = (int)(c - kc);
	} else if (type == YX_AGENT_T_KILL && c->len == 0) {
		keep_kill(k);
		keep_reply(k, c, 0);
		k->quit = 1;
	} else if (type == YX_AGENT_T_RESIZE && k->tty && keep_resize(k, c) == 0) {
		keep_reply(k, c, 0);
	} else if (type == YX_AGENT_T_COMMAND && k->sess != NULL) {
		sess_command(k, c);
	} else
		keep_close(k, c);
}

/*
 * Read what arrived on c (non-blocking): the hello, then one operation.
 * Anything malformed closes the connection.
 */
static void
keep_conn_read(struct keeper *k, struct keep_conn *c)
{
	ssize_t	r;

	if (c->got < YX_AGENT_HDR)
		r = recv(c->fd, c->hdr + c->got, YX_AGENT_HDR - c->got,
		    MSG_DONTWAIT);
	else
		r = recv(c->fd, c->buf + (c->got - YX_AGENT_HDR),
		    c->len - (c->got - YX_AGENT_HDR), MSG_DONTWAIT);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		keep_close(k, c);
		return;
	}
	c->got += (size_t)r;
	if (c->got == YX_AGENT_HDR) {
		c->len = (uint32_t)c->hdr[1] << 24 | (uint32_t)c->hdr[2] << 16 |
		    (uint32_t)c->hdr[3] << 8 | c->hdr[4];
		if (c->len > sizeof(c->buf)) {
			keep_close(k, c);
			return;
		}
	}
	if (c->got < YX_AGENT_HDR || c->got - YX_AGENT_HDR < c->len)
		return;
	c->got = 0;
	if (c->hello) {
		keep_op(k, c);
		return;
	}
	if (c->hdr[0] != YX_AGENT_T_HELLO || c->len != strlen(YX_AGENT_MAGIC) ||
	    memcmp(c->buf, YX_AGENT_MAGIC, c->len) != 0) {
		keep_close(k, c);
		return;
	}
	c->hello = 1;
}

/* Write stdin bytes of the connection that owns stdin. */
static void
keep_write_in(struct keeper *k)
{
	struct keep_conn	*c = &kc[k->writer];
	ssize_t			 w;

	w = write(k->wfd, c->buf + c->wpos, c->len - c->wpos);
	if (w > 0)
		c->wpos += (size_t)w;
	else if (w == -1 && errno != EAGAIN && errno != EINTR)
		keep_close_stdin(k);	/* EPIPE: nobody reads it */
	if (c->wpos == c->len || k->wfd == -1)
		keep_reply(k, c, c->wpos);
}

/* A new connection into a free slot (none free: refused). */
static void
keep_accept(struct keeper *k)
{
	int fd, i;

	if ((fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1)
		return;
	for (i = 0; i < KEEP_CONNS && kc[i].state != KC_FREE; i++)
		;
	if (i == KEEP_CONNS) {
		close(fd);
		return;
	}
	memset(&kc[i], 0, offsetof(struct keep_conn, buf));
	kc[i].fd = fd;
	kc[i].state = KC_READ;
	kc[i].deadline = yx_mono_ms() + KEEP_REQ_MS;
}

/* Time-outs of connections, of a stdin write, of the lifetime. */
static void
keep_timers(struct keeper *k, long long now)
{
	int i;

	for (i = 0; i < KEEP_CONNS; i++) {
		if (kc[i].state == KC_FREE || kc[i].deadline > now)
			continue;
		if (kc[i].state == KC_WAIT)
			keep_reply_read(k, &kc[i]);
		else if (kc[i].state == KC_STDIN)
			keep_reply(k, &kc[i], kc[i].wpos);
		else
			keep_close(k, &kc[i]);
	}
	if (k->writer == -1)
		for (i = 0; i < KEEP_CONNS && k->writer == -1; i++)
			if (kc[i].state == KC_STDIN)
				k->writer = i;
	if (k->running && k->deadline != 0 && now >= k->deadline) {
		k->timedout = 1;
		(void)kill(-k->pid, SIGKILL);
		if (k->tty)
			keep_kill_session(k->pid);
		k->deadline = 0;	/* the exit comes through pidfd */
	}
	if (k->sess != NULL)
		sess_timers(k, now);
}

/* Milliseconds poll may sleep. */
static int
keep_sleep_ms(const struct keeper *k, long long now)
{
	long long	until = k->running ? k->deadline : k->linger, t;
	int		i;

	if (k->sess != NULL && (t = sess_next(k)) != 0 && (until == 0 || t < until))
		until = t;
	for (i = 0; i < KEEP_CONNS; i++)
		if (kc[i].state != KC_FREE &&
		    (until == 0 || kc[i].deadline < until))
			until = kc[i].deadline;
	if (k->running && k->pidfd == -1 &&
	    (until == 0 || until > now + KEEP_TICK_MS))
		until = now + KEEP_TICK_MS;
	if (until == 0)
		return -1;
	if (until <= now)
		return 0;
	return until - now > INT_MAX ? INT_MAX : (int)(until - now);
}

/* What a connection waits for in poll. */
static short
keep_conn_events(const struct keep_conn *c)
{
	switch (c->state) {
	case KC_READ:
	case KC_WAIT:
		return POLLIN | POLLRDHUP;
	case KC_CMD:	/* the host sends nothing more: only its hang-up */
		return POLLIN | POLLRDHUP | (c->opos < c->olen ? POLLOUT : 0);
	default:
		return 0;
	}
}

/* Poll once and act on what happened. */
static void
keep_step(struct keeper *k)
{
	enum { NP = 4 + KEEP_CONNS + SESS_PFDS };
	struct pollfd	pfd[NP];
	long long	now = yx_mono_ms();
	int		i;

	keep_timers(k, now);
	pfd[0].fd = k->lfd;
	pfd[1].fd = k->rfd;
	pfd[2].fd = k->pidfd;
	pfd[3].fd = k->writer != -1 ? k->wfd : -1;
	pfd[0].events = pfd[1].events = pfd[2].events = POLLIN;
	pfd[3].events = POLLOUT;
	for (i = 0; i < KEEP_CONNS; i++) {
		pfd[4 + i].events = keep_conn_events(&kc[i]);
		pfd[4 + i].fd = pfd[4 + i].events != 0 ? kc[i].fd : -1;
	}
	for (i = 4 + KEEP_CONNS; i < NP; i++)
		pfd[i].fd = -1;
	if (k->sess != NULL)
		sess_pollfds(k, pfd + 4 + KEEP_CONNS);
	for (i = 0; i < NP; i++)
		pfd[i].revents = 0;
	if (poll(pfd, NP, keep_sleep_ms(k, now)) == -1)
		return;
	if (pfd[1].revents != 0)
		keep_read_out(k);
	for (i = 0; i < KEEP_CONNS; i++)
		if (kc[i].state == KC_WAIT && k->total > kc[i].have)
			keep_reply_read(k, &kc[i]);
	if (pfd[3].revents != 0 && k->writer != -1)
		keep_write_in(k);
	for (i = 0; i < KEEP_CONNS; i++) {
		if (pfd[4 + i].revents == 0 || pfd[4 + i].fd != kc[i].fd)
			continue;
		if (kc[i].state == KC_READ)
			keep_conn_read(k, &kc[i]);
		else if (kc[i].state == KC_WAIT)
			keep_close(k, &kc[i]);	/* gone, or talking out of turn */
		else if (kc[i].state == KC_CMD)
			sess_conn_event(k, &kc[i], pfd[4 + i].revents);
	}
	if (k->sess != NULL)
		sess_events(k, pfd + 4 + KEEP_CONNS);
	if (k->running &&
	    (pfd[2].revents != 0 || (k->pidfd == -1 && keep_exited(k))))
		keep_end(k);
	if (pfd[0].revents != 0)
		keep_accept(k);
}

/*
 * Take the keeper's lock, keep.<id> in the records' directory, for as long
 * as this process lives (its descriptor is close-on-exec: the command does
 * not hold it): the agent answers whether a keeper lives by trying that
 * lock ('L', agent_proto.h). Without the directory or the lock, the agent
 * cannot tell, and says so.
 */
static void
keep_lock(struct keeper *k, const struct keep_req *r)
{
	int fd;

	if (k->recdir == -1)
		return;
	snprintf(k->lock, sizeof(k->lock), YX_AGENT_KEEP_PREFIX "%s", r->id);
	fd = openat(k->recdir, k->lock,
	    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (fd != -1)
			close(fd);
		k->lock[0] = '\0';
	}	/* else held until this process ends */
}

/* Leaving by itself: the lock's name goes too. */
static void
keep_unlock(const struct keeper *k)
{
	if (k->recdir != -1 && k->lock[0] != '\0')
		(void)unlinkat(k->recdir, k->lock, 0);
}

/* Listen on <dir>/proc.<id>.sock; name the exit file and the record. */
static int
keep_listen(struct keeper *k, const struct keep_req *r)
{
	struct sockaddr_un	sun;
	int			n;

	n = snprintf(k->sock, sizeof(k->sock), "%s/" YX_AGENT_PROC_PREFIX "%s.sock",
	    r->dir, r->id);
	if (n < 0 || (size_t)n >= sizeof(k->sock) ||
	    snprintf(k->exitf, sizeof(k->exitf), "%s/" YX_AGENT_PROC_PREFIX "%s.exit",
		r->dir, r->id) >= (int)sizeof(k->exitf))
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, k->sock, (size_t)n);
	(void)unlink(k->sock);
	(void)unlink(k->exitf);
	if ((k->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1)
		return -1;
	if (bind(k->lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(k->lfd, KEEP_CONNS) == -1)
		return -1;
	return 0;
}

void
agent_keep(int conn, const struct keep_req *r)
{
	static struct keeper	 k;
	struct run_args		 a = *r->args;
	const char		*why = "cannot listen";
	char			 started[32] = "";
	int			 i;

	memset(&k, 0, sizeof(k));
	k.pidfd = k.rfd = k.wfd = k.lfd = -1;
	k.writer = -1;
	k.recdir = r->recdir;
	k.cap = r->ring;
	for (i = 0; i < KEEP_CONNS; i++)
		kc[i].fd = -1;
	k.ring = mmap(NULL, k.cap, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	keep_lock(&k, r);	/* before the socket: no socket without it */
	if (k.ring == MAP_FAILED)
		why = "no memory for the output";
	else if (keep_listen(&k, r) == 0) {
		why = "cannot start";
		if (r->mode != NULL && strncmp(r->mode, "session ", 8) == 0)
			why = sess_start(&k, r, started, sizeof(started));
		else if (keep_spawn(&k, r, &a, -1) == 0)
			why = NULL;
	}
	if (why != NULL) {
		(void)keep_frame(conn, YX_AGENT_T_FAIL, why, strlen(why),
		    yx_mono_ms() + KEEP_SEND_MS);
		if (k.lfd != -1)
			(void)unlink(k.sock);
		keep_unlock(&k);
		_exit(1);
	}
	(void)keep_frame(conn, YX_AGENT_T_STARTED, started, strlen(started),
	    yx_mono_ms() + KEEP_SEND_MS);
	close(conn);
	while (!k.quit && (k.running || yx_mono_ms() < k.linger))
		keep_step(&k);
	(void)unlink(k.sock);
	keep_unlock(&k);
	if (k.quit)
		(void)unlink(k.exitf);
	_exit(0);
}
