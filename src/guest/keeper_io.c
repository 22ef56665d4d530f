/* SPDX-License-Identifier: MIT */
/*
 * keeper_io.c - the keeper's low parts (keeper_int.h), shared by its loop
 * (agent_keeper.c) and its session mode (agent_session.c): frames to the
 * host, the connections' table, the output ring, the sandbox's processes
 * as /proc tells them, terminals, and starting the process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "guest/keeper_int.h"
#include "guest/run_core.h"
#include "yuxi/clock.h"
#include "yuxi/fdio.h"

#define KEEP_PIPE_SIZE	(1024 * 1024)

struct keep_conn	kc[KEEP_CONNS];

/* Send all of p before the deadline. 0 or -1. */
int
keep_send(int fd, const void *p, size_t n, long long deadline)
{
	struct pollfd	 pfd;
	const char	*c = p;
	long long	 left;
	ssize_t		 w;

	while (n > 0) {
		w = send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
			continue;
		}
		if (w == -1 && errno != EAGAIN && errno != EINTR)
			return -1;
		if ((left = deadline - yx_mono_ms()) <= 0)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		(void)poll(&pfd, 1, (int)left);
	}
	return 0;
}

/* One frame. 0 or -1. */
int
keep_frame(int fd, int type, const void *p, size_t n, long long deadline)
{
	unsigned char h[YX_AGENT_HDR];

	h[0] = (unsigned char)type;
	h[1] = (unsigned char)(n >> 24);
	h[2] = (unsigned char)(n >> 16);
	h[3] = (unsigned char)(n >> 8);
	h[4] = (unsigned char)n;
	if (keep_send(fd, h, sizeof(h), deadline) == -1)
		return -1;
	return n > 0 ? keep_send(fd, p, n, deadline) : 0;
}

void
keep_close(struct keeper *k, struct keep_conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	if (k->writer == (int)(c - kc))
		k->writer = -1;
	c->fd = -1;
	c->state = KC_FREE;
}

/* Copy one read of the output pipe into the ring. */
void
keep_read_out(struct keeper *k)
{
	size_t	pos = (size_t)(k->total % k->cap), n = k->cap - pos;
	ssize_t	r;

	r = read(k->rfd, k->ring + pos, n < KEEP_CHUNK ? n : KEEP_CHUNK);
	if (r > 0) {
		k->total += (uint64_t)r;
		return;
	}
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	close(k->rfd);		/* every writer is gone */
	k->rfd = -1;
}

/* One /proc/<pid>/stat into *p. 0 or -1. */
static int
keep_ps_one(int dfd, const char *name, struct keep_ps *p)
{
	char		 buf[1024], path[64], *q;
	unsigned long long v[20];
	int		 fd, i;

	snprintf(path, sizeof(path), "%s/stat", name);
	if ((fd = openat(dfd, path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    yx_fd_read_str(fd, buf, sizeof(buf)) == -1)
		return -1;
	/* "pid (comm) state ppid pgrp session ... starttime(22)": comm may
	 * hold anything, so parse from its last ')' */
	if ((q = strrchr(buf, ')')) == NULL || q[1] != ' ' || q[2] == '\0')
		return -1;
	q += 4;	/* past ") S " */
	for (i = 0; i < 19; i++) {
		while (*q == ' ')
			q++;
		if (*q == '-' || (*q >= '0' && *q <= '9'))
			v[i] = strtoull(q, &q, 10);
		else
			return -1;
	}
	p->pid = (pid_t)atoi(name);
	p->ppid = (pid_t)v[0];
	p->pgrp = (pid_t)v[1];
	p->sid = (pid_t)v[2];
	p->start = v[18];
	return 0;
}

size_t
keep_ps(struct keep_ps *v, size_t max)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 n = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while (n < max && (de = readdir(d)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    keep_ps_one(dirfd(d), de->d_name, &v[n]) == 0)
			n++;
	closedir(d);
	return n;
}

int
keep_ps_under(const struct keep_ps *v, size_t n, size_t i, pid_t pid)
{
	pid_t	 up = v[i].ppid;
	size_t	 j;
	int	 depth;

	for (depth = 0; depth < 64 && up > 1; depth++) {
		if (up == pid)
			return 1;
		for (j = 0; j < n && v[j].pid != up; j++)
			;
		if (j == n)
			return 0;
		up = v[j].ppid;
	}
	return 0;
}

/* Parse "COLS ROWS" (1..YX_AGENT_TTY_MAX each). 0 or -1. */
int
keep_parse_size(const char *s, struct winsize *ws)
{
	unsigned long	 cols, rows;
	char		*end;

	if (*s < '1' || *s > '9')
		return -1;
	cols = strtoul(s, &end, 10);
	if (*end != ' ' || end[1] < '1' || end[1] > '9')
		return -1;
	rows = strtoul(end + 1, &end, 10);
	if (*end != '\0' || cols > YX_AGENT_TTY_MAX || rows > YX_AGENT_TTY_MAX)
		return -1;
	memset(ws, 0, sizeof(*ws));
	ws->ws_col = (unsigned short)cols;
	ws->ws_row = (unsigned short)rows;
	return 0;
}

/*
 * A new pseudo-terminal of "COLS ROWS" (r->mode "pty COLS ROWS"): its
 * master into *master (non-blocking), its slave's descriptor returned
 * (above 2), or -1.
 */
int
keep_pty(const char *size, int *master)
{
	struct winsize	ws;
	char		name[64];
	int		m, s = -1, fd;

	*master = -1;
	if (keep_parse_size(size, &ws) == -1 ||
	    (m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1)
		return -1;
	if (grantpt(m) == 0 && unlockpt(m) == 0 &&
	    ptsname_r(m, name, sizeof(name)) == 0 &&
	    (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) != -1 && s <= 2 &&
	    (fd = fcntl(s, F_DUPFD_CLOEXEC, 3)) != -1) {
		close(s);
		s = fd;
	}
	if (s <= 2 || ioctl(m, TIOCSWINSZ, &ws) == -1) {
		if (s != -1)
			close(s);
		close(m);
		return -1;
	}
	(void)fcntl(m, F_SETFL, O_NONBLOCK);
	*master = m;
	return s;
}

/*
 * Start the process of a (its argv, environment, directory; a->ctl set by
 * a session) with stdin and output on pipes of ours, or on a terminal
 * (r->mode "pty ..."); or with its output on out (not -1: the caller's,
 * who then sets k->rfd). 0 or -1.
 */
int
keep_spawn(struct keeper *k, const struct keep_req *r, struct run_args *a,
    int out)
{
	struct run_cmd	c;
	int		in[2] = { -1, -1 }, fd, master = -1;

	if (r->mode != NULL && strncmp(r->mode, "pty ", 4) == 0) {
		if ((a->tty = keep_pty(r->mode + 4, &master)) == -1)
			return -1;
	} else if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	/* the child dup2()s its stdin before 1 and 2, a session's control
	 * descriptor onto RUN_CTL_FD: keep it above them */
	if (in[0] != -1 && in[0] <= RUN_CTL_FD &&
	    (fd = fcntl(in[0], F_DUPFD_CLOEXEC, RUN_CTL_FD + 1)) != -1) {
		close(in[0]);
		in[0] = fd;
	}
	a->in = in[0];
	memset(&c, 0, sizeof(c));
	if ((in[0] != -1 && in[0] <= RUN_CTL_FD) || run_spawn(&c, a, out) != 0) {
		if (in[0] != -1) {
			close(in[0]);
			close(in[1]);
		}
		if (master != -1) {
			close(a->tty);
			close(master);
		}
		return -1;
	}
	if (master != -1) {	/* the terminal: output and stdin at once */
		close(a->tty);
		k->tty = 1;
		k->rfd = master;
		k->wfd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	} else {
		close(in[0]);
		k->wfd = in[1];
		k->rfd = c.rfd;	/* -1 with out given: the caller's to set */
		if (k->rfd != -1)
			(void)fcntl(k->rfd, F_SETPIPE_SZ, KEEP_PIPE_SIZE);
	}
	(void)fcntl(k->wfd, F_SETFL, O_NONBLOCK);
	if (k->rfd != -1)
		(void)fcntl(k->rfd, F_SETFL, O_NONBLOCK);
	k->pid = c.pid;
	k->pidfd = c.pidfd;
	k->running = 1;
	k->deadline = r->timeout > 0 ? yx_mono_ms() + r->timeout * 1000LL : 0;
	snprintf(k->rec, sizeof(k->rec), "cmd.%d.%d", (int)getpid(), (int)k->pid);
	if (k->recdir != -1)
		(void)mknodat(k->recdir, k->rec, S_IFREG | 0600, 0);
	return 0;
}
