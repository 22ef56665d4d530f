/* SPDX-License-Identifier: MIT */
/*
 * ingress.c - the preview ingress (include/yuxi/preview.h): a supervisor
 * forked by the master that restarts it with a backoff
 * (common/supervise.c), and the ingress itself, one single-threaded epoll
 * loop.
 *
 * What it serves, all registered by workers over its control socket
 * (preview_int.h): for each preview, a listening socket it makes itself in
 * <saves>/preview/s/ (a directory of the service's, 0711, that no sandbox
 * has mounted), named after the thread and port, with the FastCGI socket's
 * group and mode: the only place nginx proxies a preview to. For each
 * sandbox with a preview, its run directory (an O_PATH descriptor a worker
 * opened and passed) and a connection to its relay (ingress_link.c).
 *
 * A connection nginx makes is accepted and its descriptor handed to the
 * relay; the ingress keeps its own copy, registered for hang-ups only (it
 * never reads it): when either end is done the copy says so and is closed;
 * a revoke, an expiry or the thread's deletion shuts every such connection
 * down at once, which ends it for nginx and for the box alike (shutdown
 * acts on the connection, not on one descriptor). Connections are bounded
 * per sandbox (YUXI_PREVIEW_CONNECTIONS) and in all; a connection over a
 * bound, or one that no relay takes, is closed at once (nginx answers 502).
 *
 * Nothing is kept on disk: after a restart every socket is made again on
 * the next request's ensure (the worker asks before each). The sockets a
 * previous ingress left are removed at start (nobody listens on them).
 */
#include "config.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/priv.h"
#include "yuxi/replace.h"
#include "yuxi/supervise.h"
#include "yuxi/sock.h"
#include "preview/preview_int.h"

#define ING_LIS_MAX		4096	/* previews served at once */
#define ING_CONNS_MAX		8192	/* connections open, all sandboxes */
#define ING_ACCEPTS		64	/* per listener and wake-up */
#define ING_EVENTS		256
#define ING_BACKLOG		512	/* each listening socket's */

enum { ING_K_SIG = 1,
	ING_K_CTL,
	ING_K_LIS,
	ING_K_LINK,
	ING_K_CONN };
#define ING_KEY(k, i)	(((uint64_t)(k) << 32) | (uint32_t)(i))

struct ing_lis {
	char		tid[YX_THREAD_ID_SIZE];	/* "" = free */
	int		port;
	int		lfd;
	ino_t		ino;
	char		name[YX_PREVIEW_NAME_MAX];
	size_t		box;
	int64_t		expires_ms;	/* unix ms */
	int64_t		used_ms;	/* monotonic */
};

struct ing_conn {
	int	fd;	/* -1 = free */
	size_t	lis;
	size_t	box;
};

struct ing {
	const struct yx_config	*cfg;
	int			 dirfd;		/* <saves>/preview */
	int			 sfd;		/* <saves>/preview/s */
	int			 ctlfd, sigfd, ep;
	struct ing_box		*boxes;
	size_t			 nboxes;
	struct ing_lis		*lis;
	size_t			 nlis;
	struct ing_conn		*conns;
	size_t			 nconns, conns_max, open;
	struct ing_counts	 c;
	bool			 stop;
};

/* ---- start-up ------------------------------------------------------- */

/* Open dirfd/name as a directory of ours, closed to others' writes. */
static int
ing_dir_open(int dirfd, const char *name, mode_t mode)
{
	struct stat	st;
	int		fd;

	if (mkdirat(dirfd, name, mode) == -1 && errno != EEXIST)
		return -1;
	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() || (st.st_mode & 022) != 0 ||
	    fchmod(fd, mode) == -1) {
		log_warnx("ingress: %s is not a directory of ours, closed to others", name);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Sockets a previous ingress left: nobody listens on them. */
static void
ing_sweep(struct ing *g)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((fd = dup(g->sfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || strstr(de->d_name, ".tmp") != NULL)
			(void)unlinkat(g->sfd, de->d_name, 0);
	closedir(d);
}

static int
ing_ep_add(struct ing *g, int fd, uint32_t events, uint64_t key)
{
	struct epoll_event ev = { .events = events, .data.u64 = key };

	return epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Room for descriptors: the soft limit up to the hard one; the bound on
 * connections follows from what we got. */
static void
ing_limits(struct ing *g)
{
	struct rlimit	rl;
	size_t		room;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	room = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ?
	    (size_t)rl.rlim_cur :
	    ING_CONNS_MAX * 2;
	room = room > g->nlis + 2 * g->nboxes + 64 ? room - g->nlis - 2 * g->nboxes - 64 : 16;
	g->conns_max = room < ING_CONNS_MAX ? room : ING_CONNS_MAX;
}

static int
ing_setup(struct ing *g)
{
	sigset_t	set;
	ino_t		ino;
	size_t		i;
	int		sfd;

	umask(077);
	if ((sfd = open(g->cfg->saves_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		log_warn("ingress: %s", g->cfg->saves_dir);
		return -1;
	}
	g->dirfd = ing_dir_open(sfd, YX_PREVIEW_DIR, 0711);
	close(sfd);
	if (g->dirfd == -1 || (g->sfd = ing_dir_open(g->dirfd, YX_PREVIEW_SOCK_DIR, 0711)) == -1) {
		log_warn("ingress: %s/" YX_PREVIEW_DIR, g->cfg->saves_dir);
		return -1;
	}
	ing_sweep(g);
	if ((g->ctlfd = yx_replace_listen(g->dirfd, ING_CTL, (uid_t)-1, (gid_t)-1, 0600,
		 ING_BACKLOG, &ino)) == -1) {
		log_warn("ingress: listen on %s/" YX_PREVIEW_DIR "/" ING_CTL,
		    g->cfg->saves_dir);
		return -1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (g->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1 ||
	    (g->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		log_warn("ingress: signals");
		return -1;
	}
	g->nboxes = (size_t)g->cfg->max_replicas * 2;
	g->nlis = ING_LIS_MAX;
	ing_limits(g);
	if ((g->boxes = calloc(g->nboxes, sizeof(*g->boxes))) == NULL ||
	    (g->lis = calloc(g->nlis, sizeof(*g->lis))) == NULL ||
	    (g->conns = calloc(g->conns_max, sizeof(*g->conns))) == NULL) {
		log_warnx("ingress: out of memory");
		return -1;
	}
	for (i = 0; i < g->nboxes; i++)
		g->boxes[i].rundir = g->boxes[i].link = -1;
	for (i = 0; i < g->nlis; i++)
		g->lis[i].lfd = -1;
	for (i = 0; i < g->conns_max; i++)
		g->conns[i].fd = -1;
	if (ing_ep_add(g, g->sigfd, EPOLLIN, ING_KEY(ING_K_SIG, 0)) == -1 ||
	    ing_ep_add(g, g->ctlfd, EPOLLIN, ING_KEY(ING_K_CTL, 0)) == -1) {
		log_warn("ingress: epoll");
		return -1;
	}
	return 0;
}

/* ---- connections, listeners, boxes ------------------------------------- */

/* Close connection k (shut down first: the box's copy ends too). */
static void
ing_conn_close(struct ing *g, size_t k, bool shut)
{
	struct ing_conn *c = &g->conns[k];

	if (c->fd == -1)
		return;
	if (shut) {
		(void)shutdown(c->fd, SHUT_RDWR);
		g->c.closed++;
	}
	close(c->fd);	/* also leaves the epoll set */
	c->fd = -1;
	if (g->boxes[c->box].nconns > 0)
		g->boxes[c->box].nconns--;
	g->open--;
}

static void
ing_box_free(struct ing *g, struct ing_box *b)
{
	ing_link_close(b);
	if (b->rundir != -1)
		close(b->rundir);
	b->rundir = -1;
	b->tid[0] = '\0';
	b->nlis = 0;
}

/* Stop serving listener i: its socket goes, and every connection made
 * through it is shut down (shut); a box left without one goes too. */
static void
ing_lis_close(struct ing *g, size_t i, bool shut)
{
	struct ing_lis	*l = &g->lis[i];
	struct ing_box	*b = &g->boxes[l->box];
	struct stat	 st;
	size_t		 k;

	if (l->tid[0] == '\0')
		return;
	for (k = 0; k < g->conns_max; k++)
		if (g->conns[k].fd != -1 && g->conns[k].lis == i)
			ing_conn_close(g, k, shut);
	if (fstatat(g->sfd, l->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == l->ino)
		(void)unlinkat(g->sfd, l->name, 0);
	close(l->lfd);
	l->lfd = -1;
	l->tid[0] = '\0';
	if (b->nlis > 0 && --b->nlis == 0)
		ing_box_free(g, b);
}

/* The box of tid, else a free one, else NULL. */
static struct ing_box *
ing_box_slot(struct ing *g, const char *tid, bool create)
{
	struct ing_box	*fr = NULL;
	size_t		 i;

	for (i = 0; i < g->nboxes; i++) {
		if (g->boxes[i].tid[0] != '\0' && strcmp(g->boxes[i].tid, tid) == 0)
			return &g->boxes[i];
		if (g->boxes[i].tid[0] == '\0' && fr == NULL)
			fr = &g->boxes[i];
	}
	if (fr != NULL && create)
		snprintf(fr->tid, sizeof(fr->tid), "%s", tid);
	return create ? fr : NULL;
}

/* The listener of (tid, port), else a free one, else the least recently
 * used (closed). */
static size_t
ing_lis_slot(struct ing *g, const char *tid, int port)
{
	size_t	i, fr = g->nlis, lru = g->nlis;

	for (i = 0; i < g->nlis; i++) {
		struct ing_lis *l = &g->lis[i];

		if (l->tid[0] != '\0' && l->port == port && strcmp(l->tid, tid) == 0)
			return i;
		if (l->tid[0] == '\0' && fr == g->nlis)
			fr = i;
		if (l->tid[0] != '\0' && (lru == g->nlis || l->used_ms < g->lis[lru].used_ms))
			lru = i;
	}
	if (fr != g->nlis)
		return fr;
	log_info("ingress: %zu previews served: closing the least used", g->nlis);
	ing_lis_close(g, lru, true);
	return lru;
}

/* Take rundir (ours now) as b's run directory; a different directory
 * (the box was replaced, a pool box adopted) closes the link. */
static void
ing_box_rundir(struct ing_box *b, int rundir, unsigned uid)
{
	struct stat st;

	if (fstat(rundir, &st) == -1) {
		close(rundir);
		return;
	}
	if (b->rundir != -1 && b->dev == st.st_dev && b->ino == st.st_ino &&
	    b->uid == uid) {
		close(rundir);
		return;
	}
	ing_link_close(b);
	if (b->rundir != -1)
		close(b->rundir);
	b->rundir = rundir;
	b->uid = uid;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
}

/*
 * ensure: serve (tid, port) with rundir (taken). The answer's text into
 * ans, or the reason. NULL on success.
 */
static const char *
ing_ensure(struct ing *g, const char *tid, int port, unsigned uid, int64_t exp,
    int rundir, char *ans, size_t anslen)
{
	struct ing_box	*b;
	struct ing_lis	*l;
	struct stat	 st;
	size_t		 i;
	gid_t		 gid = g->cfg->fcgi_socket_gid >= 0 ? (gid_t)g->cfg->fcgi_socket_gid :
							     (gid_t)-1;

	i = ing_lis_slot(g, tid, port);	/* first: it may free a box */
	l = &g->lis[i];
	if ((b = ing_box_slot(g, tid, true)) == NULL) {
		close(rundir);
		return "too many sandboxes with previews";
	}
	ing_box_rundir(b, rundir, uid);
	if (l->tid[0] != '\0' &&
	    (fstatat(g->sfd, l->name, &st, AT_SYMLINK_NOFOLLOW) == -1 || st.st_ino != l->ino))
		ing_lis_close(g, i, true);	/* removed behind our back */
	if (l->tid[0] == '\0') {
		yx_preview_sock_name(tid, port, l->name);
		if ((l->lfd = yx_replace_listen(g->sfd, l->name, (uid_t)-1, gid,
			 (mode_t)g->cfg->fcgi_socket_mode, ING_BACKLOG, &l->ino)) == -1 ||
		    ing_ep_add(g, l->lfd, EPOLLIN, ING_KEY(ING_K_LIS, i)) == -1) {
			log_warn("ingress: thread %s: socket %s", tid, l->name);
			if (l->lfd != -1)
				close(l->lfd);
			l->lfd = -1;
			if (b->nlis == 0)
				ing_box_free(g, b);
			return "cannot make the preview's socket";
		}
		snprintf(l->tid, sizeof(l->tid), "%s", tid);
		l->port = port;
		l->box = (size_t)(b - g->boxes);
		b->nlis++;
		log_info("ingress: thread %s port %d: serving", tid, port);
	}
	l->expires_ms = exp;
	l->used_ms = yx_mono_ms();
	(void)ing_link_check(b, &g->c);	/* a dead relay's link is not "linked" */
	if (b->link == -1 && ing_link_open(b) == 0 &&
	    ing_ep_add(g, b->link, EPOLLIN, ING_KEY(ING_K_LINK, l->box)) == -1)
		ing_link_close(b);
	snprintf(ans, anslen, "ok %s %d\n", l->name, b->link != -1);
	return NULL;
}

/* Accept on listener i and hand each connection to its box's relay. */
static void
ing_accept(struct ing *g, size_t i)
{
	struct ing_lis	*l = &g->lis[i];
	struct ing_box	*b;
	size_t		 k, n;
	int		 c;

	for (n = 0; n < ING_ACCEPTS && l->tid[0] != '\0'; n++) {
		if ((c = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1)
			return;
		b = &g->boxes[l->box];
		l->used_ms = yx_mono_ms();
		if (b->nconns >= g->cfg->preview_connections || g->open >= g->conns_max) {
			log_warnx("ingress: thread %s: connection refused: %d open", b->tid,
			    b->nconns);
			goto refuse;
		}
		(void)ing_link_check(b, &g->c);
		if (b->link == -1) {
			if (ing_link_open(b) == -1)
				goto refuse;
			if (ing_ep_add(g, b->link, EPOLLIN, ING_KEY(ING_K_LINK, l->box)) == -1) {
				ing_link_close(b);
				goto refuse;
			}
		}
		if (ing_link_pass(b, c, l->port) == -1)
			goto refuse;
		for (k = 0; k < g->conns_max && g->conns[k].fd != -1; k++)
			;
		/* hang-ups only: the box reads it, never us */
		if (k == g->conns_max || ing_ep_add(g, c, 0, ING_KEY(ING_K_CONN, k)) == -1) {
			close(c);	/* handed: the box has it; we cannot revoke it */
			continue;
		}
		g->conns[k] = (struct ing_conn){ c, i, l->box };
		b->nconns++;
		g->open++;
		g->c.accepted++;
		continue;
refuse:
		g->c.refused++;
		close(c);
	}
}

/* ---- control -------------------------------------------------------- */

/* revoke TID PORT (0: all of tid's) */
static void
ing_revoke(struct ing *g, const char *tid, int port)
{
	struct ing_box	*b;
	size_t		 i;

	for (i = 0; i < g->nlis; i++)
		if (g->lis[i].tid[0] != '\0' && strcmp(g->lis[i].tid, tid) == 0 &&
		    (port == 0 || g->lis[i].port == port)) {
			log_info("ingress: thread %s port %d: revoked", tid, g->lis[i].port);
			ing_lis_close(g, i, true);
		}
	if (port == 0 && (b = ing_box_slot(g, tid, false)) != NULL)
		ing_box_free(g, b);
}

/* Act on one request (NUL-terminated text, maybe a descriptor, taken). */
static const char *
ing_request(struct ing *g, char *req, int fd, char *ans, size_t anslen)
{
	struct ing_box		*b;
	char			 tid[YX_THREAD_ID_SIZE + 1], tail;
	unsigned		 uid;
	long long		 exp;
	int			 port;

	ans[0] = '\0';
	if (sscanf(req, "ensure %129s %d %u %lld%c", tid, &port, &uid, &exp, &tail) == 5 &&
	    tail == '\n' && yx_thread_id_valid(tid, strlen(tid)) && port >= 1 &&
	    port <= 65535 && uid != 0 && fd != -1)
		return ing_ensure(g, tid, port, uid, exp, fd, ans, anslen);
	if (fd != -1)
		close(fd);
	if (sscanf(req, "revoke %129s %d%c", tid, &port, &tail) == 3 && tail == '\n' &&
	    yx_thread_id_valid(tid, strlen(tid)) && port >= 0 && port <= 65535) {
		ing_revoke(g, tid, port);
		snprintf(ans, anslen, "ok\n");
		return NULL;
	}
	if (sscanf(req, "conns %129s%c", tid, &tail) == 2 && tail == '\n' &&
	    yx_thread_id_valid(tid, strlen(tid))) {
		b = ing_box_slot(g, tid, false);
		snprintf(ans, anslen, "ok %d\n", b != NULL ? b->nconns : 0);
		return NULL;
	}
	if (strcmp(req, "stats\n") == 0) {
		size_t i, nl = 0, nb = 0;

		for (i = 0; i < g->nlis; i++)
			nl += g->lis[i].tid[0] != '\0';
		for (i = 0; i < g->nboxes; i++)
			nb += g->boxes[i].link != -1;
		snprintf(ans, anslen, "ok %zu %zu %zu %llu %llu %llu %llu %llu\n", nl, nb,
		    g->open, (unsigned long long)g->c.accepted,
		    (unsigned long long)g->c.refused, (unsigned long long)g->c.closed,
		    (unsigned long long)g->c.bytes_in, (unsigned long long)g->c.bytes_out);
		return NULL;
	}
	return "bad request";
}

/* One control connection: read (bounded in size and time), act, answer. */
static void
ing_ctl(struct ing *g)
{
	struct pollfd	 pfd;
	char		 buf[ING_CTL_MAX + 1], ans[ING_CTL_MAX];
	const char	*why = "request too large or too slow";
	int64_t		 deadline = yx_mono_ms() + ING_CTL_WAIT_MS;
	size_t		 len = 0, nfd;
	ssize_t		 n;
	int		 c, fds[YX_SOCK_FDS_MAX], odd, fd = -1;

	if ((c = accept4(g->ctlfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1)
		return;
	while (len < ING_CTL_MAX && yx_mono_ms() < deadline) {
		n = yx_sock_recv_fds(c, buf + len, ING_CTL_MAX - len, 0, fds, &nfd, &odd);
		if (n > 0) {
			(void)yx_sock_settle_fds(fds, nfd, 0, &fd);
			len += (size_t)n;
			if (buf[len - 1] == '\n')
				break;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			break;
		pfd.fd = c;
		pfd.events = POLLIN;
		(void)poll(&pfd, 1, (int)(deadline - yx_mono_ms()));
	}
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n' && memchr(buf, '\0', len) == NULL)
		why = ing_request(g, buf, fd, ans, sizeof(ans));
	else if (fd != -1)
		close(fd);
	if (why != NULL) {
		snprintf(ans, sizeof(ans), "err %s\n", why);
		log_warnx("ingress: control request refused: %s", why);
	}
	(void)!send(c, ans, strlen(ans), MSG_NOSIGNAL | MSG_DONTWAIT);
	close(c);
}

/* Previews past their expiry stop, their connections with them. */
static void
ing_expire(struct ing *g)
{
	int64_t	now = yx_now_ms();
	size_t	i;

	for (i = 0; i < g->nlis; i++)
		if (g->lis[i].tid[0] != '\0' && g->lis[i].expires_ms <= now) {
			log_info("ingress: thread %s port %d: expired", g->lis[i].tid,
			    g->lis[i].port);
			ing_lis_close(g, i, true);
		}
}

static void
ing_event(struct ing *g, const struct epoll_event *ev)
{
	unsigned	k = (unsigned)(ev->data.u64 >> 32);
	size_t		i = (size_t)(uint32_t)ev->data.u64;
	struct signalfd_siginfo si;

	switch (k) {
	case ING_K_SIG:
		while (read(g->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
				g->stop = true;
		break;
	case ING_K_CTL:
		ing_ctl(g);
		break;
	case ING_K_LIS:
		if (i < g->nlis && g->lis[i].tid[0] != '\0')
			ing_accept(g, i);
		break;
	case ING_K_LINK:
		if (i < g->nboxes && g->boxes[i].link != -1)
			(void)ing_link_read(&g->boxes[i], &g->c);
		break;
	case ING_K_CONN:	/* a hang-up: the connection is over */
		if (i < g->conns_max && g->conns[i].fd != -1)
			ing_conn_close(g, i, false);
		break;
	default:
		break;
	}
}

static int
ing_main(const struct yx_config *cfg)
{
	struct epoll_event	 ev[ING_EVENTS];
	struct ing		 g;
	int64_t			 next = 0;
	size_t			 i;
	int			 n, j, status = 1;

	memset(&g, 0, sizeof(g));
	g.cfg = cfg;
	g.dirfd = g.sfd = g.ctlfd = g.sigfd = g.ep = -1;
	if (ing_setup(&g) == -1)
		goto done;
	log_info("preview ingress ready (%zu connections at most)", g.conns_max);
	while (!g.stop) {
		if ((n = epoll_wait(g.ep, ev, ING_EVENTS, 1000)) == -1 && errno != EINTR)
			usleep(10000);
		for (j = 0; j < n; j++)
			ing_event(&g, &ev[j]);
		if (yx_mono_ms() >= next) {
			ing_expire(&g);
			next = yx_mono_ms() + 1000;
		}
	}
	status = 0;
done:
	for (i = 0; g.lis != NULL && i < g.nlis; i++)
		ing_lis_close(&g, i, false);
	for (i = 0; g.boxes != NULL && i < g.nboxes; i++)
		ing_box_free(&g, &g.boxes[i]);
	free(g.conns);
	free(g.lis);
	free(g.boxes);
	return status;
}

/* ---- supervisor (common/supervise.c) ------------------------------ */

/* The supervisor severs itself from the privileged helper first, and keeps
 * no CAP_SYS_ADMIN: the ingress reads what relays in sandboxes send. */
static const struct yx_supervise sup = {
	.name = "yuxi-ingress",
	.what = "preview ingress",
	.tag = "ingress",
	.enter = yx_priv_child_sever,
	.main = ing_main,
};

int
yx_preview_ingress_start(const struct yx_config *cfg, pid_t *pidp)
{
	*pidp = -1;
	if (cfg->preview_domain[0] == '\0' || cfg->mode == YX_MODE_FRONT)
		return YX_OK;
	return yx_supervise_start(&sup, cfg, pidp);
}

void
yx_preview_ingress_stop(pid_t pid)
{
	yx_supervise_stop(&sup, pid);
}
