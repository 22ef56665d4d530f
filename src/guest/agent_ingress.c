/* SPDX-License-Identifier: MIT */
/*
 * agent_ingress.c - the preview relay inside a sandbox; see
 * agent_ingress.h and docs/security.md "Previews".
 *
 * One process per sandbox, one poll loop. It never listens: every
 * connection it serves is a descriptor the host passed on the host's own
 * connection (the host accepted it from nginx on a socket it made where
 * no sandbox reaches), and the only thing the relay connects to is the
 * box's own loopback at the port the host named. So nothing new is
 * reachable from inside the box, and nothing the box does makes nginx
 * connect anywhere. Each connection is two sockets and two buffers (one
 * per direction); a side that ends its writing is shut down for writing
 * on the other side once its bytes are through, so half-closed HTTP and
 * WebSocket closes pass as they came. The host keeps a copy of each
 * browser connection (to close it on a revoke): closing ours would not
 * end it for nginx, so every end is a shutdown first.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "yuxi/sock.h"
#include "guest/agent_ingress.h"
#include "guest/agent_proto.h"

#define ING_PAIRS	256		/* connections at once */
#define ING_BUF		(64 * 1024)	/* per direction */

enum { PAIR_FREE,
	PAIR_CONNECTING,
	PAIR_OPEN };

struct ing_pair {
	int			state;
	int			a;	/* the browser's connection (from the host) */
	int			b;	/* to 127.0.0.1:port */
	int			port;
	bool			v6;	/* trying [::1] */
	bool			eof[2];	/* 0: a->b read side ended, 1: b->a */
	bool			shut[2];
	size_t			len[2], off[2];
	unsigned long long	bytes[2];
	char			buf[2][ING_BUF];
};

static struct ing_pair	*pairs;
static int		 npairs;
static int		 link_fd = -1;
static unsigned char	 lbuf[YX_AGENT_HDR + YX_AGENT_PASS_MAX];
static size_t		 llen;
static int		 lpassed = -1;

/* Report a finished connection to the host (best effort, never blocks). */
static void
ing_report(const struct ing_pair *p)
{
	char	f[YX_AGENT_HDR + 64];
	int	n;

	if (link_fd == -1)
		return;
	n = snprintf(f + YX_AGENT_HDR, sizeof(f) - YX_AGENT_HDR, "%d %llu %llu", p->port,
	    p->bytes[0], p->bytes[1]);
	f[0] = YX_AGENT_T_REPORT;
	f[1] = f[2] = f[3] = 0;
	f[4] = (char)n;
	(void)send(link_fd, f, YX_AGENT_HDR + (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void
ing_pair_end(struct ing_pair *p)
{
	(void)shutdown(p->a, SHUT_RDWR);	/* nginx sees the end, whatever holds a copy */
	close(p->a);
	if (p->b != -1)
		close(p->b);
	ing_report(p);
	p->state = PAIR_FREE;
	npairs--;
}

/* Start connecting p to the box's loopback (IPv4, else IPv6). 0 or -1. */
static int
ing_connect(struct ing_pair *p)
{
	struct sockaddr_in	sin;
	struct sockaddr_in6	sin6;
	int			s, on = 1;

	if ((s = socket(p->v6 ? AF_INET6 : AF_INET,
		 SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	(void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)p->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons((unsigned short)p->port);
	sin6.sin6_addr = in6addr_loopback;
	if ((p->v6 ? connect(s, (struct sockaddr *)&sin6, sizeof(sin6)) :
		     connect(s, (struct sockaddr *)&sin, sizeof(sin))) == -1 &&
	    errno != EINPROGRESS) {
		close(s);
		return -1;
	}
	p->b = s;
	return 0;
}

/* A connection from the host for port: start it. */
static void
ing_pair_new(int fd, int port)
{
	struct ing_pair	*p = NULL;
	int		 i;

	for (i = 0; i < ING_PAIRS && p == NULL; i++)
		if (pairs[i].state == PAIR_FREE)
			p = &pairs[i];
	if (p == NULL) {
		(void)shutdown(fd, SHUT_RDWR);
		close(fd);
		return;
	}
	memset(p, 0, offsetof(struct ing_pair, buf));
	p->a = fd;
	p->b = -1;
	p->port = port;
	p->state = PAIR_CONNECTING;
	npairs++;
	(void)fcntl(fd, F_SETFL, O_NONBLOCK | O_RDWR);
	if (ing_connect(p) == -1 && (p->v6 = true, ing_connect(p) == -1))
		ing_pair_end(p);
}

/* The connect finished (POLLOUT): open, or the next address, or the end. */
static void
ing_connected(struct ing_pair *p)
{
	socklen_t	len = sizeof(int);
	int		err = 0;

	if (getsockopt(p->b, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == 0) {
		p->state = PAIR_OPEN;
		return;
	}
	close(p->b);
	p->b = -1;
	if (!p->v6) {
		p->v6 = true;
		if (ing_connect(p) == 0)
			return;
	}
	ing_pair_end(p);	/* nothing listens: nginx answers 502 */
}

/* Move bytes of direction d as far as they go. -1: the connection failed. */
static int
ing_pump(struct ing_pair *p, int d)
{
	int	src = d == 0 ? p->a : p->b, dst = d == 0 ? p->b : p->a;
	ssize_t	n;

	for (;;) {
		if (p->len[d] == 0 && !p->eof[d]) {
			n = recv(src, p->buf[d], ING_BUF, MSG_DONTWAIT);
			if (n == 0)
				p->eof[d] = true;
			else if (n > 0) {
				p->len[d] = (size_t)n;
				p->off[d] = 0;
				p->bytes[d] += (unsigned long long)n;
			} else
				return errno == EAGAIN || errno == EINTR ? 0 : -1;
		}
		while (p->off[d] < p->len[d]) {
			n = send(dst, p->buf[d] + p->off[d], p->len[d] - p->off[d],
			    MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 0 : -1;
			p->off[d] += (size_t)n;
		}
		p->len[d] = p->off[d] = 0;
		if (p->eof[d]) {
			if (!p->shut[d])
				(void)shutdown(dst, SHUT_WR);
			p->shut[d] = true;
			return 0;
		}
	}
}

/* Read the host's frames: 'J' with a descriptor. false: the link ended. */
static bool
ing_link_read(void)
{
	size_t	need, nfd;
	ssize_t	r;
	int	fds[YX_SOCK_FDS_MAX], odd, port, i;

	for (;;) {
		need = llen < YX_AGENT_HDR ? YX_AGENT_HDR : YX_AGENT_HDR + lbuf[4];
		r = yx_sock_recv_fds(link_fd, lbuf + llen, need - llen, MSG_DONTWAIT, fds,
		    &nfd, &odd);
		if (r > 0 && yx_sock_settle_fds(fds, nfd, odd, &lpassed) == -1)
			return false;	/* more than one descriptor: not the host */
		if (r == -1 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (r <= 0)
			return false;
		llen += (size_t)r;
		if (llen == YX_AGENT_HDR &&
		    (lbuf[0] != YX_AGENT_T_PASS || lbuf[1] != 0 || lbuf[2] != 0 ||
			lbuf[3] != 0 || lbuf[4] == 0 || lbuf[4] > YX_AGENT_PASS_MAX))
			return false;
		if (llen < YX_AGENT_HDR || llen < (size_t)YX_AGENT_HDR + lbuf[4])
			continue;
		for (port = 0, i = YX_AGENT_HDR; i < (int)llen; i++) {
			if (lbuf[i] < '0' || lbuf[i] > '9')
				return false;
			port = port * 10 + (lbuf[i] - '0');
		}
		if (lpassed == -1 || port < 1 || port > 65535)
			return false;
		ing_pair_new(lpassed, port);
		lpassed = -1;
		llen = 0;
	}
}

/* Fill pfd for pair i from index n; returns the new count. */
static int
ing_poll_set(struct pollfd *pfd, int n, struct ing_pair *p)
{
	short ea = 0, eb = 0;

	if (p->state == PAIR_CONNECTING) {
		pfd[n] = (struct pollfd){ p->b, POLLOUT, 0 };
		pfd[n + 1] = (struct pollfd){ -1, 0, 0 };
		return n + 2;
	}
	if (p->len[0] == 0 && !p->eof[0])
		ea |= POLLIN;
	if (p->len[0] > 0)
		eb |= POLLOUT;
	if (p->len[1] == 0 && !p->eof[1])
		eb |= POLLIN;
	if (p->len[1] > 0)
		ea |= POLLOUT;
	pfd[n] = (struct pollfd){ p->a, ea, 0 };
	pfd[n + 1] = (struct pollfd){ p->b, eb, 0 };
	return n + 2;
}

void
agent_ingress(int conn)
{
	static struct pollfd	pfd[1 + 2 * ING_PAIRS];
	sigset_t		none;
	int			i, n;

	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGCHLD, SIG_DFL);
	pairs = mmap(NULL, sizeof(*pairs) * ING_PAIRS, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pairs == MAP_FAILED)
		_exit(1);
	link_fd = conn;
	while (link_fd != -1 || npairs > 0) {
		n = 1;
		pfd[0] = (struct pollfd){ link_fd, POLLIN, 0 };
		for (i = 0; i < ING_PAIRS; i++) {
			if (pairs[i].state != PAIR_FREE) {
				n = ing_poll_set(pfd, n, &pairs[i]);
				continue;
			}
			pfd[n++] = (struct pollfd){ -1, 0, 0 };
			pfd[n++] = (struct pollfd){ -1, 0, 0 };
		}
		if (poll(pfd, (nfds_t)n, -1) == -1)
			continue;
		if (pfd[0].revents != 0 && !ing_link_read()) {
			close(link_fd);	/* no more connections come */
			link_fd = -1;
			if (lpassed != -1) {
				(void)shutdown(lpassed, SHUT_RDWR);
				close(lpassed);
				lpassed = -1;
			}
		}
		for (i = 0; i < ING_PAIRS; i++) {
			struct ing_pair	*p = &pairs[i];
			short		 ra = pfd[1 + 2 * i].revents, rb = pfd[2 + 2 * i].revents;

			if (p->state == PAIR_FREE || (ra == 0 && rb == 0))
				continue;
			if (p->state == PAIR_CONNECTING) {
				ing_connected(p);
				continue;
			}
			if (ing_pump(p, 0) == -1 || ing_pump(p, 1) == -1 ||
			    (p->shut[0] && p->shut[1]))
				ing_pair_end(p);
		}
	}
	_exit(0);
}
