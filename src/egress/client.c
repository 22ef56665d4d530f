/* SPDX-License-Identifier: MIT */
/*
 * client.c - the executor's side of the egress proxy's control socket
 * (egress_int.h "Control protocol"): register a thread's allowlist before
 * its sandbox is acquired, so the directory to mount exists and its
 * socket is served with that allowlist.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/egress.h"
#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "egress/egress_int.h"

/* Wait for fd to be ready for `events` until deadline. 0, or -1 (late). */
static int
egress_wait(int fd, short events, int64_t deadline)
{
	struct pollfd	pfd = { fd, events, 0 };
	int64_t		left;
	int		r;

	do {
		if ((left = deadline - yx_mono_ms()) <= 0)
			return -1;
		r = poll(&pfd, 1, (int)left);
	} while (r == -1 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

/* Connect to <saves>/egress/ctl.sock (any path length). fd or -1. */
static int
egress_ctl_connect(const struct yx_config *cfg)
{
	struct sockaddr_un	sun;
	char			path[YX_CFG_PATH + 32];
	int			pfd, s = -1;

	snprintf(path, sizeof(path), "%s/%s/%s", cfg->saves_dir, EGRESS_DIR,
	    EGRESS_CTL);
	if ((pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) != -1 &&
	    connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(s);
		s = -1;
	}
	close(pfd);
	return s;
}

/* Send b and read the answer line into ans. YX_OK or YX_E_IO. */
static int
egress_exchange(int s, const struct yx_buf *b, char *ans, size_t anslen)
{
	int64_t	deadline = yx_mono_ms() + EGRESS_CTL_WAIT_MS;
	size_t	off = 0;
	ssize_t	n;

	while (off < b->len) {
		if (egress_wait(s, POLLOUT, deadline) == -1)
			return YX_E_IO;
		if ((n = send(s, b->data + off, b->len - off, MSG_NOSIGNAL)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return YX_E_IO;
		}
		off += (size_t)n;
	}
	off = 0;
	while (off + 1 < anslen && memchr(ans, '\n', off) == NULL) {
		if (egress_wait(s, POLLIN, deadline) == -1)
			return YX_E_IO;
		if ((n = recv(s, ans + off, anslen - 1 - off, 0)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return YX_E_IO;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	ans[off] = '\0';
	ans[strcspn(ans, "\n")] = '\0';
	return off > 0 ? YX_OK : YX_E_IO;
}

int
yx_egress_dir(const struct yx_config *cfg, const char *tid, char *dir,
    size_t dirlen)
{
	int n = snprintf(dir, dirlen, "%s/%s/%s/%s", cfg->saves_dir, EGRESS_DIR,
	    EGRESS_SB, tid);

	return n < 0 || (size_t)n >= dirlen ? YX_E_BAD_REQUEST : YX_OK;
}

int
yx_egress_ensure(const struct yx_config *cfg, const char *tid, unsigned uid,
    unsigned gid, const struct yx_egress_policy *p, char *dir, size_t dirlen,
    struct yx_errctx *err)
{
	struct yx_buf	b;
	char		ans[512], esc[600];
	int		s = -1, rc;

	yx_buf_init(&b, EGRESS_CTL_MAX);
	if (!yx_thread_id_valid(tid, strlen(tid)) || p->nallow == 0) {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "no allowlist to register");
		goto done;
	}
	if (yx_egress_dir(cfg, tid, dir, dirlen) != YX_OK) {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "egress directory path too long");
		goto done;
	}
	if ((rc = yx_buf_printf(&b, "ensure %s %u %u\n", tid, uid, gid)) != YX_OK ||
	    (rc = yx_egress_policy_text(p, &b)) != YX_OK ||
	    (rc = yx_buf_puts(&b, "end\n")) != YX_OK) {
		rc = yx_fail(err, rc, NULL);
		goto done;
	}
	if ((s = egress_ctl_connect(cfg)) == -1 ||
	    egress_exchange(s, &b, ans, sizeof(ans)) != YX_OK) {
		log_warnx("egress proxy: no answer on its control socket (%s)",
		    s == -1 ? strerror(errno) : "exchange failed");
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the egress proxy is unavailable (details in the server log)");
		goto done;
	}
	if (strcmp(ans, "ok") != 0) {
		log_warnx("egress proxy: thread %s: %s", tid,
		    log_escape(esc, sizeof(esc), ans, strlen(ans)));
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the egress proxy refused the sandbox (details in the server log)");
		goto done;
	}
	rc = YX_OK;
done:
	if (s != -1)
		close(s);
	yx_buf_fini(&b);
	return rc;
}
