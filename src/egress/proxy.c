/* SPDX-License-Identifier: MIT */
/*
 * proxy.c - the host's egress proxy process (include/yuxi/egress.h): a
 * supervisor forked by the master that restarts the proxy with a backoff
 * (common/supervise.c), and the proxy itself.
 *
 * The proxy is one single-threaded poll loop over its control socket
 * (egress_int.h) and one listening socket per registered sandbox. A
 * registration binds a thread's allowlist to the socket the proxy made for
 * it in <saves>/egress/sb/<thread>/: a connection accepted there is served
 * under that allowlist and nothing else, whatever the sandbox sends. Each
 * accepted connection is served by a forked child (conn.c: parse, decide,
 * resolve, connect, then copy bytes), so a slow name lookup or upstream
 * never holds the loop; children are bounded in total and per sandbox, and
 * die with the proxy (PR_SET_PDEATHSIG), as the proxy dies with its
 * supervisor and the supervisor with the master.
 *
 * Registrations live in memory: EGRESS_REGS_MIN..4096 of them (twice
 * YUXI_SANDBOX_MAX_REPLICAS), the least recently used one closed when a
 * new thread needs room. Each registration's request is also kept in
 * <saves>/egress/reg/<thread> (0600, the proxy's), so that a proxy started
 * again (it was killed, it crashed, the master restarted its supervisor)
 * serves every registered sandbox at once, a background process's
 * connections included; the executor registers again before every
 * command as well. At start the proxy removes the sockets a previous one
 * left (nobody listens on them), then makes them again from the kept
 * requests, and removes the directories and requests of threads that no
 * longer exist.
 */
#include "config.h"

#include <sys/prctl.h>
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

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/egress.h"
#include "yuxi/hash.h"
#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/replace.h"
#include "yuxi/supervise.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "egress/egress_int.h"
#include "common/control_int.h"

#define EGRESS_REGS_MIN		64
#define EGRESS_REGS_MAX		4096
#define EGRESS_KIDS_MAX		256	/* connections at once, all sandboxes */
#define EGRESS_KIDS_PER		32	/* ... of one sandbox */
#define EGRESS_BACKLOG		128	/* each listening socket's */

struct egress_reg {
	char			 tid[YX_THREAD_ID_SIZE];	/* "" = free */
	unsigned		 uid, gid;
	char			 hash[YX_SHA256_HEX];	/* of the policy text */
	struct yx_egress_policy	*pol;		/* heap */
	int			 lfd;		/* listening; -1 */
	ino_t			 ino;		/* of proxy.sock as made */
	int64_t			 used_ms;
	unsigned		 gen;		/* bumped at each (re)bind */
	int			 nconns;
};

struct egress_kid {
	pid_t		pid;		/* 0 = free */
	size_t		reg;
	unsigned	gen;
};

struct egress_proxy {
	const struct yx_config	*cfg;
	int			 dirfd;		/* <saves>/egress */
	int			 sbfd;		/* <saves>/egress/sb */
	int			 regfd;		/* <saves>/egress/reg */
	int			 ctlfd;
	int			 sigfd;
	struct egress_reg	*regs;
	size_t			 nregs;
	struct egress_kid	 kids[EGRESS_KIDS_MAX];
	size_t			 nkids;
	bool			 stop;
};

static void	egress_restore(struct egress_proxy *px);

/* ---- start-up ------------------------------------------------------- */

/*
 * Open (making it 0711) directory `name` beneath dirfd, which must be a
 * directory of ours that no one else may write. fd or -1 (logged).
 */
static int
egress_dir_open(int dirfd, const char *name, mode_t mode)
{
	struct stat	st;
	int		fd;

	if (mkdirat(dirfd, name, mode) == -1 && errno != EEXIST) {
		log_warn("egress: mkdir %s", name);
		return -1;
	}
	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		log_warn("egress: open %s", name);
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		log_warnx("egress: %s is not a directory of ours, closed to others", name);
		close(fd);
		return -1;
	}
	return fd;
}

/* Old sockets go (nobody serves them); so do directories of gone threads. */
static void
egress_sweep(struct egress_proxy *px)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		 ud[YX_CFG_PATH + 300];
	int		 fd, n = 0;

	if ((fd = dup(px->sbfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!yx_thread_id_valid(de->d_name, strlen(de->d_name)))
			continue;
		if (yx_thread_path(px->cfg->saves_dir, de->d_name, YX_TP_USER_DATA,
			ud, sizeof(ud)) == YX_OK &&
		    lstat(ud, &st) == -1 && errno == ENOENT) {
			if (yx_tree_remove(dirfd(d), de->d_name) == YX_OK)
				n++;
			continue;
		}
		if ((fd = openat(dirfd(d), de->d_name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			(void)unlinkat(fd, YX_EGRESS_SOCK_NAME, 0);
			close(fd);
		}
	}
	closedir(d);
	if (n > 0)
		log_info("egress: removed %d director(ies) of deleted threads", n);
}

static int
egress_setup(struct egress_proxy *px)
{
	char		 path[YX_CFG_PATH + 32];
	sigset_t	 set;
	ino_t		 ino;
	int		 sfd, cap;

	umask(077);
	if ((sfd = open(px->cfg->saves_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		log_warn("egress: %s", px->cfg->saves_dir);
		return -1;
	}
	px->dirfd = egress_dir_open(sfd, EGRESS_DIR, 0711);
	close(sfd);
	if (px->dirfd == -1 || fchmod(px->dirfd, 0711) == -1 ||
	    (px->sbfd = egress_dir_open(px->dirfd, EGRESS_SB, 0711)) == -1 ||
	    fchmod(px->sbfd, 0711) == -1 ||
	    (px->regfd = egress_dir_open(px->dirfd, EGRESS_REG, 0700)) == -1 ||
	    fchmod(px->regfd, 0700) == -1)
		return -1;
	egress_sweep(px);
	if ((px->ctlfd = yx_replace_listen(px->dirfd, EGRESS_CTL, geteuid(), getegid(),
		 0600, EGRESS_BACKLOG, &ino)) == -1) {
		snprintf(path, sizeof(path), "%s/%s/%s", px->cfg->saves_dir,
		    EGRESS_DIR, EGRESS_CTL);
		log_warn("egress: listen on %s", path);
		return -1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (px->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("egress: signalfd");
		return -1;
	}
	cap = px->cfg->max_replicas * 2;
	px->nregs = cap < EGRESS_REGS_MIN ? EGRESS_REGS_MIN :
	    cap > EGRESS_REGS_MAX	  ? EGRESS_REGS_MAX :
					    (size_t)cap;
	if ((px->regs = calloc(px->nregs, sizeof(*px->regs))) == NULL) {
		log_warnx("egress: out of memory");
		return -1;
	}
	for (size_t i = 0; i < px->nregs; i++)
		px->regs[i].lfd = -1;
	if (YX_CONTROL_OFF("egresskeep"))	/* how it was: next command */
		return 0;
	egress_restore(px);
	return 0;
}

/* ---- registrations ---------------------------------------------------- */

static void
egress_reg_close(struct egress_proxy *px, struct egress_reg *r, bool unlink_sock)
{
	int fd;

	if (r->lfd != -1)
		close(r->lfd);
	r->lfd = -1;
	if (unlink_sock &&
	    (fd = openat(px->sbfd, r->tid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		(void)unlinkat(fd, YX_EGRESS_SOCK_NAME, 0);
		close(fd);
	}
	free(r->pol);
	r->pol = NULL;
	r->tid[0] = '\0';
}

/* The registration of tid, else a free one, else the least recently used
 * (closed). Never NULL. */
static struct egress_reg *
egress_reg_slot(struct egress_proxy *px, const char *tid)
{
	struct egress_reg	*free_r = NULL, *lru = NULL;
	size_t			 i;

	for (i = 0; i < px->nregs; i++) {
		struct egress_reg *r = &px->regs[i];

		if (r->tid[0] != '\0' && strcmp(r->tid, tid) == 0)
			return r;
		if (r->tid[0] == '\0' && free_r == NULL)
			free_r = r;
		if (r->tid[0] != '\0' && (lru == NULL || r->used_ms < lru->used_ms))
			lru = r;
	}
	if (free_r != NULL)
		return free_r;
	log_info("egress: %zu sandboxes registered: closing thread %s's socket",
	    px->nregs, lru->tid);
	egress_reg_close(px, lru, true);
	return lru;
}

/* Is r's socket still the file it made (not unlinked nor replaced)? */
static bool
egress_reg_intact(const struct egress_proxy *px, const struct egress_reg *r)
{
	struct stat	st;
	int		fd;
	bool		ok = false;

	if (r->lfd == -1 ||
	    (fd = openat(px->sbfd, r->tid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return false;
	if (fstatat(fd, YX_EGRESS_SOCK_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ok = S_ISSOCK(st.st_mode) && st.st_ino == r->ino;
	close(fd);
	return ok;
}

/*
 * Serve tid under pol: reuse its registration when nothing changed, else
 * make its directory and socket anew. NULL on success, else the reason.
 */
static const char *
egress_ensure(struct egress_proxy *px, const char *tid, unsigned uid,
    unsigned gid, struct yx_egress_policy *pol, const char *hash)
{
	struct egress_reg	*r = egress_reg_slot(px, tid);
	int			 dfd, lfd;
	ino_t			 ino;

	if (r->tid[0] != '\0' && r->uid == uid && r->gid == gid &&
	    strcmp(r->hash, hash) == 0 && egress_reg_intact(px, r)) {
		r->used_ms = yx_mono_ms();
		free(pol);
		return NULL;
	}
	if ((dfd = egress_dir_open(px->sbfd, tid, 0755)) == -1 ||
	    fchmod(dfd, 0755) == -1) {
		if (dfd != -1)
			close(dfd);
		free(pol);
		return "cannot make the sandbox's directory";
	}
	lfd = yx_replace_listen(dfd, YX_EGRESS_SOCK_NAME, (uid_t)uid, (gid_t)gid,
	    0600, EGRESS_BACKLOG, &ino);
	close(dfd);
	if (lfd == -1) {
		log_warn("egress: thread %s: socket", tid);
		free(pol);
		return "cannot make the sandbox's socket";
	}
	if (r->tid[0] != '\0')
		egress_reg_close(px, r, false);	/* replaced by the rename */
	snprintf(r->tid, sizeof(r->tid), "%s", tid);
	snprintf(r->hash, sizeof(r->hash), "%s", hash);
	r->uid = uid;
	r->gid = gid;
	r->pol = pol;
	r->lfd = lfd;
	r->ino = ino;
	r->gen++;
	r->used_ms = yx_mono_ms();
	log_info("egress: thread %s: serving %zu allow rule(s)", tid, pol->nallow);
	return NULL;
}

/*
 * Parse a control request (NUL-terminated text) into its parts; the
 * policy into *polp (heap, caller frees). NULL or the reason.
 */
static const char *
egress_ctl_parse(char *text, char *tid, unsigned *uid, unsigned *gid,
    struct yx_egress_policy **polp, char *hash)
{
	struct yx_egress_policy	*pol;
	char			*line, *save = NULL, why[128];
	char			 t[YX_THREAD_ID_SIZE + 1];
	bool			 end = false;
	const char		*body;

	*polp = NULL;
	if (sscanf(text, "ensure %129s %u %u\n", t, uid, gid) != 3 ||
	    !yx_thread_id_valid(t, strlen(t)) || *uid == 0)
		return "bad ensure line";
	memcpy(tid, t, strlen(t) + 1);
	if ((body = strchr(text, '\n')) == NULL ||
	    yx_sha256_hex(body + 1, strlen(body + 1), hash) != YX_OK)
		return "bad request";
	if ((pol = calloc(1, sizeof(*pol))) == NULL)
		return "out of memory";
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "ensure ", 7) == 0)
			continue;
		if (strcmp(line, "end") == 0) {
			end = true;
			break;
		}
		if (strncmp(line, "allow ", 6) == 0 && pol->nallow < YX_EGRESS_RULES_MAX &&
		    yx_egress_rule_parse(line + 6, true, &pol->allow[pol->nallow],
			why, sizeof(why)) == YX_OK)
			pol->nallow++;
		else if (strncmp(line, "private ", 8) == 0 &&
		    pol->nprivate < YX_EGRESS_RULES_MAX &&
		    yx_egress_rule_parse(line + 8, false, &pol->priv[pol->nprivate],
			why, sizeof(why)) == YX_OK)
			pol->nprivate++;
		else {
			free(pol);
			return "bad rule line";
		}
	}
	if (!end || pol->nallow == 0) {
		free(pol);
		return "incomplete request";
	}
	*polp = pol;
	return NULL;
}

/* Keep the request text of tid's registration (temporary file, rename). */
static void
egress_keep(struct egress_proxy *px, const char *tid, const char *text)
{
	char	tmp[YX_THREAD_ID_SIZE + 8];
	size_t	len = strlen(text);
	int	fd;

	snprintf(tmp, sizeof(tmp), ".%s", tid);
	if ((fd = openat(px->regfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		 0600)) == -1)
		return;
	if (write(fd, text, len) != (ssize_t)len || close(fd) == -1 ||
	    renameat(px->regfd, tmp, px->regfd, tid) == -1) {
		log_warn("egress: thread %s: keeping its registration", tid);
		(void)unlinkat(px->regfd, tmp, 0);
	}
}

/*
 * At start: serve every kept registration whose thread still exists;
 * forget the others. A request that no longer parses is dropped.
 */
static void
egress_restore(struct egress_proxy *px)
{
	struct yx_egress_policy	*pol;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	char			 ud[YX_CFG_PATH + 300], tid[YX_THREAD_ID_SIZE], hash[YX_SHA256_HEX];
	char			*buf;
	unsigned		 uid, gid, n = 0;
	ssize_t			 len;
	int			 fd;

	if ((buf = malloc(EGRESS_CTL_MAX + 1)) == NULL)
		return;
	if ((fd = dup(px->regfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		free(buf);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && de->d_name[1] != '\0' && de->d_name[1] != '.')
			(void)unlinkat(px->regfd, de->d_name, 0);	/* a torn keep */
		if (!yx_thread_id_valid(de->d_name, strlen(de->d_name)))
			continue;
		len = -1;
		if (yx_thread_path(px->cfg->saves_dir, de->d_name, YX_TP_USER_DATA, ud,
			sizeof(ud)) == YX_OK &&
		    lstat(ud, &st) == 0 &&
		    (fd = openat(px->regfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			len = read(fd, buf, EGRESS_CTL_MAX);
			close(fd);
		}
		if (len <= 0) {
			(void)unlinkat(px->regfd, de->d_name, 0);
			continue;
		}
		buf[len] = '\0';
		if (egress_ctl_parse(buf, tid, &uid, &gid, &pol, hash) == NULL &&
		    strcmp(tid, de->d_name) == 0 &&
		    egress_ensure(px, tid, uid, gid, pol, hash) == NULL)
			n++;
		else if (pol != NULL && strcmp(tid, de->d_name) != 0)
			free(pol);
	}
	closedir(d);
	free(buf);
	if (n > 0)
		log_info("egress: %u registration(s) served again", n);
}

/* One control connection: read, act, answer (bounded in size and time). */
static void
egress_ctl(struct egress_proxy *px)
{
	struct yx_egress_policy	*pol = NULL;
	struct pollfd		 pfd;
	char			*buf = NULL, *text = NULL, tid[YX_THREAD_ID_SIZE], hash[YX_SHA256_HEX];
	char			 ans[256];
	const char		*why = "request too large or too slow";
	unsigned		 uid, gid;
	int64_t			 deadline = yx_mono_ms() + EGRESS_CTL_WAIT_MS;
	size_t			 len = 0;
	ssize_t			 n;
	int			 c;

	if ((c = accept4(px->ctlfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1)
		return;
	if ((buf = malloc(EGRESS_CTL_MAX + 1)) == NULL) {
		why = "out of memory";
		goto answer;
	}
	while (len < EGRESS_CTL_MAX && yx_mono_ms() < deadline) {
		buf[len] = '\0';
		if (len >= 4 && strstr(buf, "\nend\n") != NULL)
			break;
		pfd.fd = c;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - yx_mono_ms())) != 1)
			break;
		if ((n = recv(c, buf + len, EGRESS_CTL_MAX - len, 0)) <= 0) {
			if (n == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	if ((text = strdup(buf)) == NULL)
		why = "out of memory";
	else if (strstr(buf, "\nend\n") != NULL &&
	    (why = egress_ctl_parse(buf, tid, &uid, &gid, &pol, hash)) == NULL &&
	    (why = egress_ensure(px, tid, uid, gid, pol, hash)) == NULL)	/* takes pol */
		egress_keep(px, tid, text);
answer:
	if (why == NULL)
		snprintf(ans, sizeof(ans), "ok\n");
	else {
		snprintf(ans, sizeof(ans), "err %s\n", why);
		log_warnx("egress: control request refused: %s", why);
	}
	(void)!send(c, ans, strlen(ans), MSG_NOSIGNAL | MSG_DONTWAIT);
	close(c);
	free(buf);
	free(text);
}

/* ---- connections ------------------------------------------------------ */

/* Refuse a connection we cannot serve now, without blocking. */
static void
egress_busy(int c)
{
	static const char msg[] = "HTTP/1.1 503 yuxi egress proxy: too many "
				  "connections\r\nContent-Length: 0\r\n"
				  "Connection: close\r\n\r\n";

	(void)!send(c, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(c);
}

/* Accept on registration i and fork its child. */
static void
egress_accept(struct egress_proxy *px, size_t i)
{
	struct egress_reg	*r = &px->regs[i];
	size_t			 k, j;
	pid_t			 pid;
	int			 c;

	if ((c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return;
	if (px->nkids >= EGRESS_KIDS_MAX || r->nconns >= EGRESS_KIDS_PER) {
		log_warnx("egress: thread %s: connection refused: %d open", r->tid,
		    r->nconns);
		egress_busy(c);
		return;
	}
	for (k = 0; k < EGRESS_KIDS_MAX && px->kids[k].pid != 0; k++)
		;
	if ((pid = fork()) == -1) {
		log_warn("egress: fork");
		egress_busy(c);
		return;
	}
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		close(px->ctlfd);
		close(px->sigfd);
		close(px->sbfd);
		close(px->dirfd);
		for (j = 0; j < px->nregs; j++)
			if (px->regs[j].lfd != -1)
				close(px->regs[j].lfd);
		egress_conn_serve(px->cfg, c, r->tid, r->pol);
	}
	close(c);
	px->kids[k] = (struct egress_kid){ pid, i, r->gen };
	px->nkids++;
	r->nconns++;
	r->used_ms = yx_mono_ms();
}

static void
egress_reap(struct egress_proxy *px)
{
	size_t	k;
	pid_t	pid;
	int	st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		for (k = 0; k < EGRESS_KIDS_MAX; k++) {
			struct egress_kid *kid = &px->kids[k];

			if (kid->pid != pid)
				continue;
			if (px->regs[kid->reg].gen == kid->gen &&
			    px->regs[kid->reg].nconns > 0)
				px->regs[kid->reg].nconns--;
			kid->pid = 0;
			px->nkids--;
			break;
		}
}

static void
egress_signals(struct egress_proxy *px)
{
	struct signalfd_siginfo si;

	while (read(px->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			px->stop = true;
	egress_reap(px);
}

/* The proxy's loop; returns its exit status when told to stop. */
static int
egress_proxy_main(const struct yx_config *cfg)
{
	struct egress_proxy	 px;
	struct pollfd		*pfd = NULL;
	size_t			*map = NULL, n, i;
	int			 status = 1;

	memset(&px, 0, sizeof(px));
	px.cfg = cfg;
	px.dirfd = px.sbfd = px.regfd = px.ctlfd = px.sigfd = -1;
	if (egress_setup(&px) == -1)
		goto done;
	if ((pfd = calloc(px.nregs + 2, sizeof(*pfd))) == NULL ||
	    (map = calloc(px.nregs + 2, sizeof(*map))) == NULL)
		goto done;
	log_info("egress proxy ready (%zu sandboxes at most)", px.nregs);
	while (!px.stop) {
		pfd[0] = (struct pollfd){ px.sigfd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ px.ctlfd, POLLIN, 0 };
		for (n = 2, i = 0; i < px.nregs; i++)
			if (px.regs[i].lfd != -1) {
				map[n] = i;
				pfd[n++] = (struct pollfd){ px.regs[i].lfd, POLLIN, 0 };
			}
		if (poll(pfd, (nfds_t)n, -1) == -1) {
			if (errno != EINTR)
				usleep(10000);
			continue;
		}
		if (pfd[0].revents != 0)
			egress_signals(&px);
		if (pfd[1].revents != 0)
			egress_ctl(&px);
		for (i = 2; i < n; i++)
			if (pfd[i].revents != 0 && px.regs[map[i]].lfd == pfd[i].fd)
				egress_accept(&px, map[i]);
	}
	status = 0;
done:
	for (i = 0; px.regs != NULL && i < px.nregs; i++)
		if (px.regs[i].tid[0] != '\0')
			egress_reg_close(&px, &px.regs[i], false);
	free(px.regs);
	free(pfd);
	free(map);
	return status;
}

/* ---- supervisor (common/supervise.c) ------------------------------ */

/* The supervisor severs itself from the privileged helper first: the
 * proxy parses what sandboxes send; and keeps no CAP_SYS_ADMIN, not even
 * permitted (the master keeps it permitted to start a new helper). */
static const struct yx_supervise sup = {
	.name = "yuxi-egress",
	.what = "egress proxy",
	.tag = "egress",
	.enter = yx_priv_child_sever,
	.main = egress_proxy_main,
};

int
yx_egress_start(const struct yx_config *cfg, pid_t *pidp)
{
	return yx_supervise_start(&sup, cfg, pidp);
}

void
yx_egress_stop(pid_t pid)
{
	yx_supervise_stop(&sup, pid);
}
