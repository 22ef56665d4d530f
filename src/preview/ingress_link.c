/* SPDX-License-Identifier: MIT */
/*
 * ingress_link.c - the ingress's connection to one sandbox's preview relay
 * (preview_int.h; the wire format: src/guest/agent_proto.h 'N', 'J', 'V').
 *
 * The ingress connects to the box's agent.sock exactly as the executor
 * does (yx_executor_agent_dial: resolved beneath the run directory's
 * descriptor, never through a symlink, a socket of the sandbox's uid,
 * descriptors from the sandbox refused where the kernel can) and asks the
 * agent's handler to become the relay ('H', 'N'). From then on it only
 * writes: one 'J' frame per browser connection, the connection's
 * descriptor attached. Every write is non-blocking: a relay that does not
 * read fails the connection being handed (nginx answers 502) and the link
 * is closed, never waited for. What the relay sends back is read into a
 * fixed buffer, frame by frame, and only 'V' reports (bytes of a finished
 * connection: the metrics) are taken; anything else ends the link. The
 * descriptors never go the other way: the host takes none from the box.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/sock.h"
#include "yuxi/text.h"
#include "guest/agent_proto.h"
#include "preview/preview_int.h"

static size_t
link_frame(char *f, int type, const char *payload)
{
	size_t n = payload != NULL ? strlen(payload) : 0;

	f[0] = (char)type;
	f[1] = (char)(n >> 24);
	f[2] = (char)(n >> 16);
	f[3] = (char)(n >> 8);
	f[4] = (char)n;
	if (n > 0)
		memcpy(f + YX_AGENT_HDR, payload, n);
	return YX_AGENT_HDR + n;
}

int
ing_link_open(struct ing_box *b)
{
	struct yx_errctx	e;
	char			f[2 * YX_AGENT_HDR + 8];
	size_t			n;
	int			s;

	if (b->link != -1)
		return 0;
	yx_errctx_clear(&e);
	if (b->rundir == -1 ||
	    yx_executor_agent_dial(b->rundir, b->uid, &s, &e) != YX_OK) {
		log_debug("ingress: thread %s: %s", b->tid, e.msg);
		return -1;
	}
	n = link_frame(f, YX_AGENT_T_HELLO, YX_AGENT_MAGIC);
	n += link_frame(f + n, YX_AGENT_T_INGRESS, NULL);
	if (send(s, f, n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n) {
		close(s);
		return -1;
	}
	b->link = s;
	b->rlen = 0;
	return 0;
}

void
ing_link_close(struct ing_box *b)
{
	if (b->link != -1)
		close(b->link);
	b->link = -1;
	b->rlen = 0;
}

int
ing_link_pass(struct ing_box *b, int fd, int port)
{
	char	f[YX_AGENT_HDR + 8], p[8];
	size_t	n;
	ssize_t	w;

	if (b->link == -1)
		return -1;
	snprintf(p, sizeof(p), "%d", port);
	n = link_frame(f, YX_AGENT_T_PASS, p);
	/* a small frame goes whole or not at all on a unix stream socket;
	 * anything else is treated as a broken link */
	w = yx_sock_send_fd(b->link, f, n, fd, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w == (ssize_t)n)
		return 0;
	if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		log_warnx("ingress: thread %s: its relay does not take connections",
		    b->tid);
		return -1;
	}
	ing_link_close(b);
	return -1;
}

/* One 'V' report: "PORT IN OUT". false when it does not parse. */
static bool
link_report(const char *p, size_t n, struct ing_counts *c)
{
	char			s[ING_REPORT_MAX + 1], tail;
	unsigned long long	in, out;
	int			port;

	memcpy(s, p, n);
	s[n] = '\0';
	if (sscanf(s, "%d %llu %llu%c", &port, &in, &out, &tail) != 3 || port < 1 ||
	    port > 65535)
		return false;
	c->bytes_in += in;
	c->bytes_out += out;
	return true;
}

bool
ing_link_read(struct ing_box *b, struct ing_counts *c)
{
	char		m[128];
	uint32_t	len;
	ssize_t		r;
	size_t		used;

	for (;;) {
		r = recv(b->link, b->rbuf + b->rlen, sizeof(b->rbuf) - b->rlen,
		    MSG_DONTWAIT);
		if (r == -1 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (r <= 0)
			break;
		b->rlen += (size_t)r;
		while (b->rlen >= YX_AGENT_HDR) {
			len = (uint32_t)(unsigned char)b->rbuf[1] << 24 |
			    (uint32_t)(unsigned char)b->rbuf[2] << 16 |
			    (uint32_t)(unsigned char)b->rbuf[3] << 8 |
			    (unsigned char)b->rbuf[4];
			if ((b->rbuf[0] == YX_AGENT_T_REPORT && len > ING_REPORT_MAX) ||
			    (b->rbuf[0] == YX_AGENT_T_FAIL && len > YX_AGENT_FAIL_MAX) ||
			    (b->rbuf[0] != YX_AGENT_T_REPORT && b->rbuf[0] != YX_AGENT_T_FAIL))
				goto broken;
			if (b->rlen < YX_AGENT_HDR + len)
				break;
			if (b->rbuf[0] == YX_AGENT_T_FAIL) {
				log_warnx("ingress: thread %s: the agent refused: %s", b->tid,
				    log_escape(m, sizeof(m), b->rbuf + YX_AGENT_HDR, len));
				goto broken;
			}
			if (!link_report(b->rbuf + YX_AGENT_HDR, len, c))
				goto broken;
			used = YX_AGENT_HDR + len;
			memmove(b->rbuf, b->rbuf + used, b->rlen - used);
			b->rlen -= used;
		}
	}
broken:
	ing_link_close(b);
	return false;
}

bool
ing_link_check(struct ing_box *b, struct ing_counts *c)
{
	struct pollfd p;

	if (b->link == -1)
		return false;
	p.fd = b->link;
	p.events = POLLIN | POLLRDHUP;
	p.revents = 0;
	if (poll(&p, 1, 0) == 1 && p.revents != 0)
		return ing_link_read(b, c);	/* reports, or the end */
	return true;
}
