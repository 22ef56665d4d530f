/* SPDX-License-Identifier: MIT */
/*
 * client.c - the workers' and the reaper's calls to the preview ingress
 * (include/yuxi/preview.h; the protocol: preview_int.h). One connection
 * per call to <saves>/preview/ctl.sock, bounded in time: the ingress
 * answers within ING_CTL_WAIT_MS or the call fails.
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
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/sock.h"
#include "preview/preview_int.h"

/*
 * Send req (with fd attached when fd != -1) and read the one-line answer
 * into ans (ING_CTL_MAX bytes). 0 when it starts with "ok", else -1 (the
 * reason in ans, or "" when the ingress did not answer).
 */
static int
ing_call(const struct yx_config *cfg, const char *req, int fd, char *ans)
{
	struct sockaddr_un	sun;
	struct pollfd		pfd;
	int64_t			deadline = yx_mono_ms() + ING_CTL_WAIT_MS;
	size_t			len = 0;
	ssize_t			n;
	int			s = -1, rc = -1, dfd = -1;
	char			dir[YX_CFG_PATH + 16];

	ans[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/" YX_PREVIEW_DIR, cfg->saves_dir);
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		goto done;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/" ING_CTL, dfd);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		goto done;
	if ((fd != -1 ? yx_sock_send_fd(s, req, strlen(req), fd, MSG_NOSIGNAL) :
			send(s, req, strlen(req), MSG_NOSIGNAL)) != (ssize_t)strlen(req))
		goto done;
	while (len < ING_CTL_MAX - 1) {
		pfd.fd = s;
		pfd.events = POLLIN;
		if (yx_mono_ms() >= deadline ||
		    poll(&pfd, 1, (int)(deadline - yx_mono_ms())) != 1)
			break;
		if ((n = recv(s, ans + len, ING_CTL_MAX - 1 - len, MSG_DONTWAIT)) <= 0) {
			if (n == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			break;
		}
		len += (size_t)n;
		if (ans[len - 1] == '\n')
			break;
	}
	ans[len] = '\0';
	if (len > 0 && ans[len - 1] == '\n')
		ans[len - 1] = '\0';
	rc = strncmp(ans, "ok", 2) == 0 ? 0 : -1;
done:
	if (s != -1)
		close(s);
	if (dfd != -1)
		close(dfd);
	return rc;
}

int
yx_preview_ensure(const struct yx_config *cfg, const char *tid, int port,
    unsigned uid, int rundir, int64_t expires_ms, struct yx_ingress_state *st,
    struct yx_errctx *err)
{
	char	req[ING_CTL_MAX], ans[ING_CTL_MAX], name[YX_PREVIEW_NAME_MAX + 1], tail;
	int	linked;

	memset(st, 0, sizeof(*st));
	snprintf(req, sizeof(req), "ensure %s %d %u %lld\n", tid, port, uid,
	    (long long)expires_ms);
	if (ing_call(cfg, req, rundir, ans) == -1 ||
	    sscanf(ans, "ok %40s %d%c", name, &linked, &tail) != 2 ||
	    strlen(name) >= sizeof(st->name)) {
		log_warnx("preview ingress: ensure of thread %s: %s", tid,
		    ans[0] != '\0' ? ans : "no answer");
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the preview ingress does not answer");
	}
	memcpy(st->name, name, strlen(name) + 1);
	st->linked = linked == 1;
	return YX_OK;
}

int
yx_preview_revoke(const struct yx_config *cfg, const char *tid, int port)
{
	char req[ING_CTL_MAX], ans[ING_CTL_MAX];

	if (cfg->preview_domain[0] == '\0')
		return YX_OK;
	snprintf(req, sizeof(req), "revoke %s %d\n", tid, port);
	return ing_call(cfg, req, -1, ans) == 0 ? YX_OK : YX_E_BACKEND_UNAVAILABLE;
}

int
yx_preview_open_conns(const struct yx_config *cfg, const char *tid)
{
	char	req[ING_CTL_MAX], ans[ING_CTL_MAX];
	int	n;

	if (cfg->preview_domain[0] == '\0')
		return 0;
	snprintf(req, sizeof(req), "conns %s\n", tid);
	if (ing_call(cfg, req, -1, ans) == -1 || sscanf(ans, "ok %d", &n) != 1)
		return 0;
	return n;
}

int
yx_preview_stats(const struct yx_config *cfg, struct yx_ingress_stats *s)
{
	char			ans[ING_CTL_MAX];
	unsigned long long	v[8];

	memset(s, 0, sizeof(*s));
	if (cfg->preview_domain[0] == '\0' ||
	    ing_call(cfg, "stats\n", -1, ans) == -1 ||
	    sscanf(ans, "ok %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		&v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		return YX_E_BACKEND_UNAVAILABLE;
	s->sockets = v[0];
	s->sandboxes = v[1];
	s->open = v[2];
	s->accepted = v[3];
	s->refused = v[4];
	s->closed = v[5];
	s->bytes_in = v[6];
	s->bytes_out = v[7];
	return YX_OK;
}

/* ---- GET /metrics ------------------------------------------------------- */

int
yx_preview_metrics(const struct yx_config *cfg, struct yx_buf *b)
{
	struct yx_ingress_stats st;

	if (cfg->preview_domain[0] == '\0' || cfg->mode == YX_MODE_FRONT ||
	    yx_preview_stats(cfg, &st) != YX_OK)
		return YX_OK;
	return yx_buf_printf(b,
	    "# HELP yuxi_previews_open Previews the ingress serves (a socket each).\n"
	    "# TYPE yuxi_previews_open gauge\n"
	    "yuxi_previews_open %llu\n"
	    "# HELP yuxi_preview_sandboxes Sandboxes the ingress has a relay connection to.\n"
	    "# TYPE yuxi_preview_sandboxes gauge\n"
	    "yuxi_preview_sandboxes %llu\n"
	    "# HELP yuxi_preview_connections_open Preview connections open now.\n"
	    "# TYPE yuxi_preview_connections_open gauge\n"
	    "yuxi_preview_connections_open %llu\n"
	    "# HELP yuxi_preview_connections_total Preview connections by outcome since the ingress started.\n"
	    "# TYPE yuxi_preview_connections_total counter\n"
	    "yuxi_preview_connections_total{outcome=\"handed\"} %llu\n"
	    "yuxi_preview_connections_total{outcome=\"refused\"} %llu\n"
	    "yuxi_preview_connections_total{outcome=\"revoked\"} %llu\n"
	    "# HELP yuxi_preview_bytes_total Bytes of ended preview connections, as the sandboxes' relays report them.\n"
	    "# TYPE yuxi_preview_bytes_total counter\n"
	    "yuxi_preview_bytes_total{direction=\"in\"} %llu\n"
	    "yuxi_preview_bytes_total{direction=\"out\"} %llu\n",
	    (unsigned long long)st.sockets, (unsigned long long)st.sandboxes,
	    (unsigned long long)st.open, (unsigned long long)st.accepted,
	    (unsigned long long)st.refused, (unsigned long long)st.closed,
	    (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_out);
}
