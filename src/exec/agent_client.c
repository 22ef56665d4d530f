/* SPDX-License-Identifier: MIT */
/*
 * agent_client.c - host side of the in-sandbox exec agent; see
 * agent_client.h for the contract and src/guest/agent_proto.h for the wire
 * format.
 *
 * One connection per command. The host makes the command's output pipe
 * and passes its write end with the request ('G', SCM_RIGHTS); it takes no
 * descriptor back (SO_PASSRIGHTS off; any that arrive are closed and fail
 * the request). The request is written with a deadline; then the pipe is
 * read into the caller's sink (which enforces the output cap while
 * reading) while frames are read one at a time: the 5-byte header first,
 * its length checked against the cap of its type before a single payload
 * byte is read into a fixed 64 KiB buffer. Memory stays bounded whatever
 * the agent sends. Deadlines: start_wait_ms until the agent says 'S', then
 * the command's timeout plus grace_ms overall; after 'X' at most
 * AGENT_DRAIN_READS more reads of the pipe.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/buf.h"
#include "yuxi/log.h"
#include "yuxi/sock.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "guest/agent_proto.h"
#include "exec/agent_client.h"

/*
 * YX_AGENT_CONTROL_UNSAFE (tests/guest/test_agent_client_control only,
 * never a shipped binary): the checks on what the sandbox controls - the
 * socket's name, owner and type, the output descriptor's type - are off,
 * so that the adversarial tests can show that they catch the leak.
 */
#ifdef YX_AGENT_CONTROL_UNSAFE
#define AGENT_CHECKS		0
#else
#define AGENT_CHECKS		1
#endif

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS		83	/* Linux 6.16; older kernels refuse it */
#endif
#define AGENT_PIPE_SIZE		(256 * 1024)	/* see agent_pipe_open */

#define AGENT_DEFAULT_START_MS	3000
#define AGENT_SESSION_START_MS	8000	/* > the keeper's SESS_READY_MS */
#define AGENT_SESSION_GRACE_MS	5000	/* > the keeper's recovery of a shell */

_Static_assert(sizeof(((struct yx_spawn *)0)->started) > YX_AGENT_STARTED_MAX,
    "yx_spawn.started too small");
#define AGENT_DEFAULT_GRACE_MS	5000
#define AGENT_MAX_SEC		600

#define AGENT_DRAIN_READS	32	/* after 'X': 2 MiB > any pipe */

#define AGENT_KEEPER_MS		2000	/* a keeper operation, past its wait */
#define AGENT_PROBE_MS		300	/* a keeper silent that long: ask the agent */
#define AGENT_ALIVE_MS		2000	/* the agent's answer to 'L' */

/* One connection's state. */
struct agent_conn {
	int		 fd;
	int		 pipefd;	/* the output pipe's read end (ours); -1 */
	bool		 want_fd;	/* control build: reading the first frame */
	char		*buf;		/* YX_AGENT_OUT_MAX bytes */
	int64_t		 deadline;
	int64_t		 tick_at;	/* next xr->on_tick */
	bool		 reopen;	/* others may open the pipe (own uid) */
};

/* Close what c holds (a command still running when its connection goes is
 * killed by the agent) and free its buffer. */
static void
agent_conn_fini(struct agent_conn *c)
{
	if (c->pipefd != -1)
		close(c->pipefd);
	if (c->fd != -1)
		close(c->fd);
	free(c->buf);
	c->buf = NULL;
	c->fd = c->pipefd = -1;
}

/*
 * Make run/<thread_id> for *uid when absent. One of another uid is what an
 * earlier thread of that id left (its owner is gone): it is replaced, never
 * handed to this one; unless that uid is a pool box's serving this thread
 * (the box's agent directory, swapped in at its assignment): *uid is then
 * the box's. YX_OK or YX_E_IO.
 */
static int
agent_rundir_make(const char *saves_dir, int rfd, const char *thread_id,
    unsigned *uid, unsigned gid, bool box_ok, const char *host_path,
    struct yx_errctx *err)
{
	struct stat st;

	if (AGENT_CHECKS && box_ok &&
	    fstatat(rfd, thread_id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid != *uid && st.st_uid != 0 &&
	    yx_uid_serves(saves_dir, st.st_uid, thread_id)) {
		*uid = st.st_uid;
		return YX_OK;
	}
	if (AGENT_CHECKS && fstatat(rfd, thread_id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (!S_ISDIR(st.st_mode) || st.st_uid != *uid)) {
		log_info("%s: left by an earlier owner; replacing it", host_path);
		if (yx_tree_remove(rfd, thread_id) != YX_OK)
			return yx_fail(err, YX_E_IO, "%s: cannot replace", host_path);
	}
	if (mkdirat(rfd, thread_id, 0700) == 0 &&
	    fchownat(rfd, thread_id, *uid, gid, AT_SYMLINK_NOFOLLOW) == -1)
		return yx_fail(err, YX_E_IO, "chown %s: %s", host_path,
		    strerror(errno));
	return YX_OK;
}

/* yx_agent_rundir_open and yx_agent_rundir_own: box_ok, may it be a
 * serving pool box's? */
static int
agent_rundir_open(const char *saves_dir, const char *thread_id,
    unsigned *uid, unsigned gid, bool box_ok, char *host_path, size_t hlen,
    int *fdp, struct yx_errctx *err)
{
	struct stat	st;
	int		sfd = -1, rfd = -1, dfd = -1, rc;

	*fdp = -1;
	if (yx_thread_path(saves_dir, thread_id, YX_TP_RUN, host_path, hlen) !=
	    YX_OK)
		return yx_fail(err, YX_E_BAD_REQUEST, "run directory name");
	rc = YX_E_IO;
	if ((sfd = open(saves_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (mkdirat(sfd, "run", 0711) == -1 && errno != EEXIST) ||
	    (rfd = openat(sfd, "run", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(rfd, &st) == -1) {
		yx_fail(err, rc, "run directory under %s: %s", saves_dir,
		    strerror(errno));
		goto done;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		rc = yx_fail(err, YX_E_FORBIDDEN, "%s/run: wrong owner or mode",
		    saves_dir);
		goto done;
	}
	if ((rc = agent_rundir_make(saves_dir, rfd, thread_id, uid, gid, box_ok,
		 host_path, err)) != YX_OK)
		goto done;
	rc = YX_E_IO;
	if ((dfd = openat(rfd, thread_id, O_PATH | O_DIRECTORY | O_CLOEXEC | (AGENT_CHECKS ? O_NOFOLLOW : 0))) == -1 ||
	    fstat(dfd, &st) == -1) {
		yx_fail(err, rc, "%s: %s", host_path, strerror(errno));
		goto done;
	}
	if (st.st_uid != *uid) {
		rc = yx_fail(err, YX_E_FORBIDDEN, "%s: not owned by uid %u",
		    host_path, *uid);
		goto done;
	}
	*fdp = dfd;
	dfd = -1;
	rc = YX_OK;
done:
	if (dfd != -1)
		close(dfd);
	if (rfd != -1)
		close(rfd);
	if (sfd != -1)
		close(sfd);
	return rc;
}

int
yx_agent_rundir_open(const char *saves_dir, const char *thread_id,
    unsigned *uid, unsigned gid, char *host_path, size_t hlen, int *fdp,
    struct yx_errctx *err)
{
	return agent_rundir_open(saves_dir, thread_id, uid, gid, true,
	    host_path, hlen, fdp, err);
}

int
yx_agent_rundir_own(const char *saves_dir, const char *thread_id,
    unsigned uid, unsigned gid, char *host_path, size_t hlen, int *fdp,
    struct yx_errctx *err)
{
	return agent_rundir_open(saves_dir, thread_id, &uid, gid, false,
	    host_path, hlen, fdp, err);
}

/* `name` beneath dirfd (flags: O_PATH or O_RDONLY | O_NONBLOCK) without
 * following anything; the fd or -1. */
static int
agent_open_beneath(int dirfd, const char *name, int flags)
{
	struct open_how	how;
	int		fd;

	if (!AGENT_CHECKS)
		return openat(dirfd, name, flags | O_CLOEXEC);
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
	fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd == -1 && errno == ENOSYS)	/* one component: same effect */
		fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

/* O_PATH fd of `name` beneath dirfd without following anything; -1. */
static int
agent_sock_open(int dirfd, const char *name)
{
	return agent_open_beneath(dirfd, name, O_PATH);
}

ssize_t
yx_agent_read_small(int rundir_fd, const char *name, unsigned uid, char *buf,
    size_t len)
{
	struct stat	st;
	ssize_t		n = -1;
	int		fd;

	if ((fd = agent_open_beneath(rundir_fd, name, O_RDONLY | O_NONBLOCK)) == -1)
		return -1;
	/* a FIFO or a device could block or be endless: regular files only */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (!AGENT_CHECKS || st.st_uid == uid) && st.st_size < (off_t)len)
		n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

int
yx_agent_connect(int rundir_fd, unsigned uid, int *sockp,
    struct yx_errctx *err)
{
	return yx_agent_connect_to(rundir_fd, YX_AGENT_SOCK_NAME, uid, sockp,
	    err);
}

int
yx_agent_connect_to(int rundir_fd, const char *name, unsigned uid,
    int *sockp, struct yx_errctx *err)
{
	struct sockaddr_un	sun;
	struct stat		st;
	int			pfd = -1, s = -1, rc = YX_E_BACKEND_UNAVAILABLE;

	*sockp = -1;
	if ((pfd = agent_sock_open(rundir_fd, name)) == -1) {
		yx_fail(err, rc, "agent socket: %s", strerror(errno));
		goto done;
	}
	if (AGENT_CHECKS && (fstat(pfd, &st) == -1 || !S_ISSOCK(st.st_mode) || st.st_uid != uid)) {
		yx_fail(err, rc, "agent socket is not a socket owned by uid %u",
		    uid);
		goto done;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1) {
		yx_fail(err, rc, "agent socket: %s", strerror(errno));
		goto done;
	}
	/* refuse descriptors from the sandbox in the kernel (Linux >= 6.16):
	 * a received one could even block us in close() (agent_recv) */
	if (AGENT_CHECKS)
		(void)setsockopt(s, SOL_SOCKET, SO_PASSRIGHTS, &(int){ 0 },
		    sizeof(int));
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		yx_fail(err, rc, "agent connect: %s", strerror(errno));
		goto done;
	}
	*sockp = s;
	s = -1;
	rc = YX_OK;
done:
	if (s != -1)
		close(s);
	if (pfd != -1)
		close(pfd);
	return rc;
}

/* Append one frame to b. YX_OK, YX_E_PAYLOAD_TOO_LARGE, YX_E_NOMEM. */
static int
agent_frame_put(struct yx_buf *b, int type, const char *s)
{
	size_t		n = s ? strlen(s) : 0;
	unsigned char	h[YX_AGENT_HDR];
	int		rc;

	if (n > YX_AGENT_STR_MAX)
		return YX_E_PAYLOAD_TOO_LARGE;
	h[0] = (unsigned char)type;
	h[1] = (unsigned char)(n >> 24);
	h[2] = (unsigned char)(n >> 16);
	h[3] = (unsigned char)(n >> 8);
	h[4] = (unsigned char)n;
	if ((rc = yx_buf_append(b, h, sizeof(h))) == YX_OK && n > 0)
		rc = yx_buf_append(b, s, n);
	return rc;
}

/* Encode xr as a request, all but its 'G'. YX_OK or an error (b then
 * partly filled). */
static int
agent_req_encode(struct yx_buf *b, const struct yx_exec_req *xr)
{
	char	t[16];
	size_t	i, na = 0, ne = 0;
	int	rc;

	for (na = 0; xr->argv[na] != NULL; na++)
		;
	for (ne = 0; xr->env != NULL && xr->env[ne] != NULL; ne++)
		;
	if (na == 0 || na > YX_AGENT_ARGS_MAX || ne > YX_AGENT_ENVS_MAX)
		return YX_E_PAYLOAD_TOO_LARGE;
	snprintf(t, sizeof(t), "%d", xr->timeout_sec > 0 ? xr->timeout_sec : 0);
	rc = agent_frame_put(b, YX_AGENT_T_HELLO, YX_AGENT_MAGIC);
	if (rc == YX_OK && xr->workdir != NULL)
		rc = agent_frame_put(b, YX_AGENT_T_CWD, xr->workdir);
	if (rc == YX_OK)
		rc = agent_frame_put(b, YX_AGENT_T_TIMEOUT, t);
	for (i = 0; rc == YX_OK && i < ne; i++)
		rc = agent_frame_put(b, YX_AGENT_T_ENV, xr->env[i]);
	for (i = 0; rc == YX_OK && i < na; i++)
		rc = agent_frame_put(b, YX_AGENT_T_ARG, xr->argv[i]);
	return rc;	/* 'G' goes alone, with the pipe (agent_send_go) */
}

/* Wait for ev on the connection. YX_OK, YX_E_TIMEOUT or YX_E_IO. */
static int
agent_wait(struct agent_conn *c, short ev)
{
	struct pollfd	pfd;
	int64_t		left;
	int		n;

	for (;;) {
		if ((left = c->deadline - yx_mono_ms()) <= 0)
			return YX_E_TIMEOUT;
		pfd.fd = c->fd;
		pfd.events = ev;
		pfd.revents = 0;
		n = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n == -1 && errno != EINTR)
			return YX_E_IO;
		if (n == 1)
			return YX_OK;
	}
}

/* Write all of p. YX_OK, YX_E_TIMEOUT or YX_E_IO. */
static int
agent_write_all(struct agent_conn *c, const char *p, size_t n)
{
	ssize_t	w;
	int	rc;

	while (n > 0) {
		w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w == -1 && errno != EAGAIN && errno != EINTR)
			return YX_E_IO;
		if ((rc = agent_wait(c, POLLOUT)) != YX_OK)
			return rc;
	}
	return YX_OK;
}

/*
 * recv() that refuses descriptors: the host takes none from the sandbox
 * (SO_PASSRIGHTS off already refuses them in the kernel where it exists);
 * any that arrive anyway are closed and the read fails (YX_E_IO, EPROTO).
 */
static ssize_t
agent_recv(struct agent_conn *c, char *p, size_t n)
{
	ssize_t	r;
	size_t	nfd;
	int	fds[YX_SOCK_FDS_MAX], bad, taken = -1, rc;

	if ((r = yx_sock_recv_fds(c->fd, p, n, 0, fds, &nfd, &bad)) == -1)
		return -1;
	/* control build only: read what the sandbox gives */
	rc = yx_sock_settle_fds(fds, nfd, bad, !AGENT_CHECKS && c->want_fd ? &taken : NULL);
	if (taken != -1) {
		if (c->pipefd != -1)
			close(c->pipefd);
		c->pipefd = taken;
		(void)fcntl(c->pipefd, F_SETFL, O_NONBLOCK);
	}
	return rc == -1 ? -1 : r;
}

/* Read exactly n bytes. YX_OK, YX_E_TIMEOUT or YX_E_IO (EOF too). */
static int
agent_read_all(struct agent_conn *c, char *p, size_t n)
{
	ssize_t	r;
	int	rc;

	while (n > 0) {
		r = agent_recv(c, p, n);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return YX_E_IO;
		if ((rc = agent_wait(c, POLLIN)) != YX_OK)
			return rc;
	}
	return YX_OK;
}

/*
 * Read one frame into c->buf. YX_OK with *type and *len; YX_E_TIMEOUT;
 * YX_E_IO for EOF, an unknown type or a length over its type's cap.
 */
static int
agent_frame_get(struct agent_conn *c, int *type, uint32_t *len)
{
	unsigned char	h[YX_AGENT_HDR];
	uint32_t	n, lo = 0, hi;
	int		rc;

	if ((rc = agent_read_all(c, (char *)h, sizeof(h))) != YX_OK)
		return rc;
	n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 |
	    h[4];
	switch (h[0]) {
	case YX_AGENT_T_STARTED:
		hi = YX_AGENT_STARTED_MAX;
		break;
	case YX_AGENT_T_OUTPUT:
		lo = 1;
		hi = YX_AGENT_OUT_MAX;
		break;
	case YX_AGENT_T_EXIT:
		lo = hi = 4;
		break;
	case YX_AGENT_T_FAIL:
		hi = YX_AGENT_FAIL_MAX;
		break;
	case YX_AGENT_T_DATA:	/* a keeper's (yx_agent_keeper_op) */
		lo = 1;
		hi = YX_AGENT_OUT_MAX;
		break;
	case YX_AGENT_T_STATE:
		hi = YX_AGENT_STATUS_MAX;
		break;
	default:
		return YX_E_IO;
	}
	if (n < lo || n > hi)
		return YX_E_IO;
	*type = h[0];
	*len = n;
	return n > 0 ? agent_read_all(c, c->buf, n) : YX_OK;
}

/*
 * The command's output pipe. The host makes it and passes the write end:
 * the read end is then an open file of ours alone, non-blocking for good
 * (a descriptor received from the sandbox would share its flags with the
 * sandbox, which could make our reads block). 256 KiB (F_SETPIPE_SZ), so
 * that a command writing a burst does not stop every 64 KiB for us; pipe
 * memory is charged to the worker's user. YX_OK or YX_E_IO (errno set).
 */
static int
agent_pipe_open(struct agent_conn *c, int *w)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return YX_E_IO;
	/* only our end: the command's writes must block when the pipe is
	 * full, not fail with EAGAIN */
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) == -1) {
		close(p[0]);
		close(p[1]);
		return YX_E_IO;
	}
	(void)fcntl(p[0], F_SETPIPE_SZ, AGENT_PIPE_SIZE);
	/*
	 * A primed shell in the sandbox opens the write end anew, through
	 * /proc/<handler>/fd/N (docs/agent.md "Primed shells"), and a pipe is
	 * 0600 and the worker's: let others write, when the sandbox has a uid
	 * of its own. Only a process that holds an end, and whose /proc entry
	 * the opener may trace, offers that path: the sandbox's own processes
	 * (which hold the write end anyway), and on the host, the worker
	 * (only the service's uid may trace it). A sandbox of the shared user
	 * (no uid range) keeps 0600: that uid may be a host account's, which
	 * could then write into any such sandbox's output.
	 */
	if (c->reopen)
		(void)fchmod(p[1], S_IRUSR | S_IWUSR | S_IWOTH);
	c->pipefd = p[0];
	*w = p[1];
	return YX_OK;
}

/* The 'G' frame, with the pipe's write end attached. YX_OK, YX_E_TIMEOUT
 * or YX_E_IO. */
static int
agent_send_go(struct agent_conn *c, int w)
{
	const char	h[YX_AGENT_HDR] = { YX_AGENT_T_GO, 0, 0, 0, 0 };
	ssize_t		n;
	int		rc;

	while ((n = yx_sock_send_fd(c->fd, h, sizeof(h), w, MSG_NOSIGNAL)) <= 0) {
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			return YX_E_IO;
		if ((rc = agent_wait(c, POLLOUT)) != YX_OK)
			return rc;
	}
	/* the descriptor went with the first byte; the rest alone */
	return agent_write_all(c, h + n, sizeof(h) - (size_t)n);
}

/* A background request's end: its id, its ring, its mode, 'B'. */
static int
agent_req_bg(struct yx_buf *b, const struct yx_spawn *bg)
{
	char	n[32];
	int	rc;

	snprintf(n, sizeof(n), "%zu", bg->ring);
	if ((rc = agent_frame_put(b, YX_AGENT_T_PROCID, bg->id)) == YX_OK &&
	    (rc = agent_frame_put(b, YX_AGENT_T_RING, n)) == YX_OK &&
	    (bg->mode == NULL ||
		(rc = agent_frame_put(b, YX_AGENT_T_MODE, bg->mode)) == YX_OK))
		rc = agent_frame_put(b, YX_AGENT_T_BACKGROUND, NULL);
	return rc;
}

/*
 * Connect, send the request, wait for 'S'. YX_OK or UNAVAILABLE. With bg,
 * a background process's request: no output pipe, ended by 'B'.
 */
static int
agent_begin(struct agent_conn *c, int rundir_fd, unsigned uid,
    const struct yx_exec_req *xr, struct yx_spawn *bg, int start_ms,
    struct yx_errctx *err)
{
	struct yx_buf	req;
	char		why[128];
	uint32_t	len;
	int		type, rc, w = -1;

	yx_buf_init(&req, YX_AGENT_REQ_MAX);
	if ((rc = yx_agent_connect(rundir_fd, uid, &c->fd, err)) != YX_OK)
		goto done;
	if (bg == NULL && (rc = agent_pipe_open(c, &w)) != YX_OK) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "output pipe: %s",
		    strerror(errno));
		goto done;
	}
	c->deadline = yx_mono_ms() + start_ms;
	c->want_fd = true;
	if ((rc = agent_req_encode(&req, xr)) != YX_OK ||
	    (bg != NULL && (rc = agent_req_bg(&req, bg)) != YX_OK) ||
	    (rc = agent_write_all(c, req.data, req.len)) != YX_OK ||
	    (bg == NULL && (rc = agent_send_go(c, w)) != YX_OK) ||
	    (rc = agent_frame_get(c, &type, &len)) != YX_OK) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "agent did not start the command: %s", yx_strerror(rc));
		goto done;
	}
	if (type == YX_AGENT_T_STARTED && bg != NULL) {
		memcpy(bg->started, c->buf, len);	/* "shell=bash" */
		bg->started[len] = '\0';
		if (memchr(bg->started, '\0', len) != NULL)
			rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
			    "agent: broken start");
	} else if (type != YX_AGENT_T_STARTED) {
		if (type == YX_AGENT_T_FAIL)
			log_escape(why, sizeof(why), c->buf, len);
		else
			snprintf(why, sizeof(why), "frame out of order");
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "agent refused: %s",
		    why);
	}
	c->want_fd = false;
done:
	if (w != -1)
		close(w);	/* the agent has its own copy now */
	yx_buf_fini(&req);
	return rc;
}

/*
 * One read of the output pipe into the sink: YX_OK (*more: bytes came),
 * YX_E_IO once it is done (EOF or error: the pipe is closed), or the
 * sink's error.
 */
static int
agent_pipe_read(struct agent_conn *c, const struct yx_exec_req *xr, bool *more)
{
	ssize_t r;

	*more = false;
	r = read(c->pipefd, c->buf, YX_AGENT_OUT_MAX);
	if (r > 0) {
		*more = true;
		return xr->on_output != NULL ? xr->on_output(xr->arg, c->buf,
						   (size_t)r) :
					       YX_OK;
	}
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return YX_OK;
	close(c->pipefd);
	c->pipefd = -1;
	return YX_E_IO;
}

/* After 'X': what the pipe still holds, bounded (a process that left the
 * group may keep writing). YX_OK or the sink's error. */
static int
agent_pipe_drain(struct agent_conn *c, const struct yx_exec_req *xr)
{
	bool	more = true;
	int	i, rc;

	for (i = 0; i < AGENT_DRAIN_READS && c->pipefd != -1 && more; i++)
		if ((rc = agent_pipe_read(c, xr, &more)) != YX_OK)
			return rc == YX_E_IO ? YX_OK : rc;
	return YX_OK;
}

/*
 * Wait for the socket (a frame) or the output pipe, relaying the pipe and
 * calling xr->on_tick on its period. YX_OK when a frame can be read,
 * YX_E_TIMEOUT, YX_E_IO, or the sink's or tick's error.
 */
static int
agent_wait_frame(struct agent_conn *c, const struct yx_exec_req *xr)
{
	struct pollfd	pfd[2];
	int64_t		left, now;
	bool		more;
	int		n, rc;

	for (;;) {
		now = yx_mono_ms();
		if ((left = c->deadline - now) <= 0)
			return YX_E_TIMEOUT;
		if (xr->on_tick != NULL) {
			if (now >= c->tick_at) {
				if ((rc = xr->on_tick(xr->arg)) != YX_OK)
					return rc;
				c->tick_at = now + YX_EXEC_TICK_MS;
			}
			if (left > c->tick_at - now)
				left = c->tick_at - now;
		}
		pfd[0].fd = c->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = c->pipefd;
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		n = poll(pfd, 2, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n == -1 && errno != EINTR)
			return YX_E_IO;
		if (pfd[1].revents != 0 && c->pipefd != -1 &&
		    (rc = agent_pipe_read(c, xr, &more)) != YX_OK && rc != YX_E_IO)
			return rc;
		if (pfd[0].revents != 0)
			return YX_OK;
	}
}

/*
 * Relay the output (pipe or 'O' frames) until 'X'. YX_OK with *code,
 * YX_E_TIMEOUT at the deadline, YX_E_IO on a protocol error, or the sink's
 * error.
 */
static int
agent_relay(struct agent_conn *c, const struct yx_exec_req *xr, int *code)
{
	const unsigned char	*u = (const unsigned char *)c->buf;
	uint32_t		 len, v;
	int			 type, rc;

	for (;;) {
		if ((rc = agent_wait_frame(c, xr)) != YX_OK ||
		    (rc = agent_frame_get(c, &type, &len)) != YX_OK)
			return rc;
		if (type == YX_AGENT_T_OUTPUT) {
			if (xr->on_output != NULL &&
			    (rc = xr->on_output(xr->arg, c->buf, len)) != YX_OK)
				return rc;
			continue;
		}
		if (type != YX_AGENT_T_EXIT)
			return YX_E_IO;
		v = (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 |
		    (uint32_t)u[2] << 8 | u[3];
		if (v > 255)
			return YX_E_IO;
		*code = (int)v;
		return agent_pipe_drain(c, xr);
	}
}

int
yx_agent_run(int rundir_fd, unsigned uid, const struct yx_agent_opts *o,
    const struct yx_exec_req *xr, struct yx_exec_result *res,
    bool *started, struct yx_errctx *err)
{
	struct agent_conn	c = { -1, -1, false, NULL, 0, 0, false };
	int64_t			t0 = yx_mono_ms();
	int			limit, start_ms, grace_ms, code = -1, rc;

	c.reopen = o != NULL && o->own_uid;
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	*started = false;
	start_ms = o && o->start_wait_ms > 0 ? o->start_wait_ms :
					       AGENT_DEFAULT_START_MS;
	grace_ms = o && o->grace_ms > 0 ? o->grace_ms : AGENT_DEFAULT_GRACE_MS;
	limit = xr->timeout_sec > 0 ? xr->timeout_sec : AGENT_MAX_SEC;
	if ((c.buf = malloc(YX_AGENT_OUT_MAX)) == NULL) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "agent: no memory");
		goto done;
	}
	if ((rc = agent_begin(&c, rundir_fd, uid, xr, NULL, start_ms,
		 err)) != YX_OK)
		goto done;
	*started = true;
	c.tick_at = yx_mono_ms();	/* the first tick: right after 'S' */
	c.deadline = t0 + (int64_t)limit * 1000 + grace_ms;
	rc = agent_relay(&c, xr, &code);
	if (rc == YX_E_TIMEOUT) {
		res->exit_code = 124;
		res->timed_out = true;
		rc = YX_OK;
	} else if (rc == YX_E_IO) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "agent connection broke during the command");
	} else if (rc == YX_OK) {
		res->exit_code = code;
		res->timed_out = code == 124 && xr->timeout_sec > 0 &&
		    yx_mono_ms() - t0 >= xr->timeout_sec * 1000L - 50;
	}
done:
	agent_conn_fini(&c);	/* the agent kills the command if still running */
	res->duration_ms = yx_mono_ms() - t0;
	return rc;
}

int
yx_agent_spawn(int rundir_fd, unsigned uid, const struct yx_agent_opts *o,
    const struct yx_exec_req *xr, struct yx_spawn *bg, bool *started,
    struct yx_errctx *err)
{
	struct agent_conn	c = { -1, -1, false, NULL, 0, 0, false };
	int			rc, wait;

	*started = false;
	bg->started[0] = '\0';
	if ((c.buf = malloc(YX_AGENT_OUT_MAX)) == NULL) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "agent: no memory");
		goto done;
	}
	wait = o && o->start_wait_ms > 0 ? o->start_wait_ms : AGENT_DEFAULT_START_MS;
	if (bg->mode != NULL && strncmp(bg->mode, "session", 7) == 0 &&
	    wait < AGENT_SESSION_START_MS)
		wait = AGENT_SESSION_START_MS;	/* the shell reports ready first */
	rc = agent_begin(&c, rundir_fd, uid, xr, bg, wait, err);
	*started = rc == YX_OK;
done:
	agent_conn_fini(&c);
	return rc;
}

/* Read the keeper's reply: 'D' frames into sink, then 'Z' into status. */
static int
agent_keeper_reply(struct agent_conn *c, yx_output_fn sink, void *arg,
    char *status, struct yx_errctx *err)
{
	char		why[128];
	uint32_t	len;
	int		type, rc;

	for (;;) {
		if ((rc = agent_frame_get(c, &type, &len)) != YX_OK)
			return rc == YX_E_TIMEOUT ?
			    yx_fail(err, YX_E_TIMEOUT, "process keeper: no answer in time") :
			    yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
				"process keeper: broken reply");
		if (type == YX_AGENT_T_DATA) {
			if (sink != NULL && (rc = sink(arg, c->buf, len)) != YX_OK)
				return rc;
			continue;
		}
		if (type == YX_AGENT_T_STATE) {
			memcpy(status, c->buf, len);
			status[len] = '\0';
			return memchr(status, '\0', len) == NULL ? YX_OK :
								   yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
								       "process keeper: broken status");
		}
		if (type == YX_AGENT_T_FAIL)
			log_escape(why, sizeof(why), c->buf, len);
		else
			snprintf(why, sizeof(why), "frame out of order");
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "process keeper refused: %s", why);
	}
}

/*
 * Ask the agent whether process id's keeper died ('L', agent_proto.h).
 * True only when the agent says so ("alive=0"); false when it lives, or
 * the agent cannot tell, does not answer in time or answers anything else.
 */
static bool
agent_keeper_dead(int rundir_fd, unsigned uid, const char *id)
{
	struct agent_conn	c = { -1, -1, false, NULL, 0, 0, false };
	struct yx_buf		req;
	uint32_t		len;
	bool			dead = false;
	int			type;

	yx_buf_init(&req, YX_AGENT_REQ_MAX);
	if (yx_agent_connect(rundir_fd, uid, &c.fd, NULL) != YX_OK ||
	    (c.buf = malloc(YX_AGENT_OUT_MAX)) == NULL)
		goto done;
	c.deadline = yx_mono_ms() + AGENT_ALIVE_MS;
	if (agent_frame_put(&req, YX_AGENT_T_HELLO, YX_AGENT_MAGIC) == YX_OK &&
	    agent_frame_put(&req, YX_AGENT_T_ALIVE, id) == YX_OK &&
	    agent_write_all(&c, req.data, req.len) == YX_OK &&
	    agent_frame_get(&c, &type, &len) == YX_OK)
		dead = type == YX_AGENT_T_STATE && len == 7 &&
		    memcmp(c.buf, "alive=0", 7) == 0;
done:
	agent_conn_fini(&c);
	yx_buf_fini(&req);
	return dead;
}

/*
 * Wait for the keeper's first reply byte. A keeper that stays silent for
 * AGENT_PROBE_MS may be dead behind a socket that still takes connections
 * (gVisor: the name is a host socket the sandbox keeps, docs/agent.md
 * "Is the keeper alive?"): ask the agent. YX_E_NOT_FOUND when it says the
 * keeper died (its name is removed then, so that the next operation learns
 * it at once); else YX_OK, the full deadline kept.
 */
static int
agent_keeper_probe(struct agent_conn *c, int rundir_fd, unsigned uid,
    const char *id)
{
	char	name[YX_AGENT_PROCID_MAX + 16];
	int64_t	deadline = c->deadline;

	if (c->deadline > yx_mono_ms() + AGENT_PROBE_MS)
		c->deadline = yx_mono_ms() + AGENT_PROBE_MS;
	if (agent_wait(c, POLLIN) == YX_E_TIMEOUT && c->deadline < deadline &&
	    agent_keeper_dead(rundir_fd, uid, id)) {
		snprintf(name, sizeof(name), YX_AGENT_PROC_PREFIX "%s.sock", id);
		(void)unlinkat(rundir_fd, name, 0);	/* a name in it, nothing followed */
		return YX_E_NOT_FOUND;
	}
	c->deadline = deadline;
	return YX_OK;
}

/*
 * Connect to process id's keeper and send the hello and one operation op
 * whose payload is pre then body (either may be empty), then wait for it
 * to answer (agent_keeper_probe). YX_OK; YX_E_NOT_FOUND when it is gone.
 * c->deadline must be set.
 */
static int
agent_keeper_send(struct agent_conn *c, int rundir_fd, unsigned uid,
    const char *id, int op, const char *pre, size_t plen, const char *body,
    size_t blen, struct yx_errctx *err)
{
	unsigned char	h[2 * YX_AGENT_HDR + 4];
	char		name[YX_AGENT_PROCID_MAX + 16];
	size_t		len = plen + blen;

	snprintf(name, sizeof(name), YX_AGENT_PROC_PREFIX "%s.sock", id);
	if (yx_agent_connect_to(rundir_fd, name, uid, &c->fd, NULL) != YX_OK)
		return yx_fail(err, YX_E_NOT_FOUND, "the process keeper is gone");
	h[0] = YX_AGENT_T_HELLO;
	h[1] = h[2] = h[3] = 0;
	h[4] = 4;
	memcpy(h + YX_AGENT_HDR, YX_AGENT_MAGIC, 4);
	h[YX_AGENT_HDR + 4] = (unsigned char)op;
	h[YX_AGENT_HDR + 5] = (unsigned char)(len >> 24);
	h[YX_AGENT_HDR + 6] = (unsigned char)(len >> 16);
	h[YX_AGENT_HDR + 7] = (unsigned char)(len >> 8);
	h[YX_AGENT_HDR + 8] = (unsigned char)len;
	if (agent_write_all(c, (const char *)h, sizeof(h)) != YX_OK ||
	    (plen > 0 && agent_write_all(c, pre, plen) != YX_OK) ||
	    (blen > 0 && agent_write_all(c, body, blen) != YX_OK))
		/* a keeper that left between connect and write: gone */
		return yx_fail(err, YX_E_NOT_FOUND, "the process keeper is gone");
	if (agent_keeper_probe(c, rundir_fd, uid, id) == YX_E_NOT_FOUND)
		return yx_fail(err, YX_E_NOT_FOUND, "the process keeper died");
	return YX_OK;
}

int
yx_agent_keeper_op(int rundir_fd, unsigned uid, const char *id, int op,
    const char *payload, size_t len, int wait_ms, int64_t until,
    yx_output_fn sink, void *arg, char *status, struct yx_errctx *err)
{
	struct agent_conn	c = { -1, -1, false, NULL, 0, 0, false };
	int			rc;

	status[0] = '\0';
	if (len > YX_AGENT_OUT_MAX || strlen(id) > YX_AGENT_PROCID_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST, "process operation too large");
	if ((c.buf = malloc(YX_AGENT_OUT_MAX)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	c.deadline = yx_mono_ms() + AGENT_KEEPER_MS + (wait_ms > 0 ? wait_ms : 0);
	if (until > 0 && c.deadline > until)
		c.deadline = until;	/* the caller's whole budget */
	if ((rc = agent_keeper_send(&c, rundir_fd, uid, id, op, payload, len, NULL,
		 0, err)) != YX_OK)
		goto done;
	rc = agent_keeper_reply(&c, sink, arg, status, err);
done:
	agent_conn_fini(&c);
	return rc;
}

/* A session command's 'Z' (agent_proto.h 'U'). YX_OK or YX_E_IO. */
static int
agent_sess_status(const char *s, struct yx_agent_sess_res *r)
{
	static const char *const keys[] = { "code=", "timedout=", "run=",
		"busy=" };
	long		 v[4] = { -1, 0, 1, 0 }, val;
	const char	*p = s, *cwd, *eq;
	char		*end;
	size_t		 k;

	if ((cwd = strstr(s, "cwd=")) != NULL && cwd != s && cwd[-1] != ' ')
		cwd = NULL;
	while (*p != '\0' && p != cwd) {
		if ((eq = strchr(p, '=')) == NULL)
			return YX_E_IO;
		for (k = 0; k < 4 && strncmp(p, keys[k], strlen(keys[k])) != 0; k++)
			;	/* k == 4: a newer keeper's word */
		errno = 0;
		val = strtol(eq + 1, &end, 10);
		if (errno != 0 || end == eq + 1 || (*end != ' ' && *end != '\0'))
			return YX_E_IO;
		if (k < 4)
			v[k] = val;
		p = *end == ' ' ? end + 1 : end;
	}
	memset(r, 0, sizeof(*r));
	r->s.busy = v[3] != 0;
	r->s.ended = v[2] == 0;
	if (r->s.busy || (r->s.ended && cwd == NULL))
		return YX_OK;	/* answered at once, nothing ran */
	if (cwd == NULL || v[0] < 0 || v[0] > 255 ||
	    strlen(cwd + 4) >= sizeof(r->s.cwd))
		return YX_E_IO;
	r->s.ran = true;
	r->code = (int)v[0];
	r->timed_out = v[1] != 0;
	snprintf(r->s.cwd, sizeof(r->s.cwd), "%s", cwd + 4);
	return YX_OK;
}

int
yx_agent_session_run(int rundir_fd, unsigned uid, const char *id,
    const char *cmd, int timeout, const struct yx_exec_req *xr,
    struct yx_agent_sess_res *res, struct yx_errctx *err)
{
	struct agent_conn	c = { -1, -1, false, NULL, 0, 0, false };
	char			head[24], st[YX_AGENT_STATUS_MAX + 1], why[128];
	size_t			len = strlen(cmd);
	uint32_t		flen;
	int			n, type, rc;

	memset(res, 0, sizeof(*res));
	n = snprintf(head, sizeof(head), "%d\n", timeout > 0 ? timeout : 0);
	if (len + (size_t)n >= YX_AGENT_OUT_MAX)
		return yx_fail(err, YX_E_PAYLOAD_TOO_LARGE,
		    "a session's command is at most %d bytes",
		    YX_AGENT_OUT_MAX - 16);
	if ((c.buf = malloc(YX_AGENT_OUT_MAX)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	/* the keeper's own timeout, its recovery, then ours */
	c.deadline = yx_mono_ms() + AGENT_KEEPER_MS + AGENT_SESSION_GRACE_MS +
	    (timeout > 0 ? timeout * 1000LL : AGENT_MAX_SEC * 1000LL);
	if ((rc = agent_keeper_send(&c, rundir_fd, uid, id, YX_AGENT_T_COMMAND,
		 head, (size_t)n, cmd, len, err)) != YX_OK)
		goto done;
	/* a busy session answers at once: before the first tick, which
	 * starts a stream */
	c.tick_at = yx_mono_ms() + 100;
	for (;;) {
		if ((rc = agent_wait_frame(&c, xr)) != YX_OK ||
		    (rc = agent_frame_get(&c, &type, &flen)) != YX_OK) {
			if (rc == YX_E_TIMEOUT)
				rc = yx_fail(err, YX_E_TIMEOUT,
				    "session: no answer in time");
			else if (rc == YX_E_IO)
				rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
				    "session: broken reply");
			break;
		}
		if (type == YX_AGENT_T_DATA) {
			if ((rc = xr->on_output(xr->arg, c.buf, flen)) != YX_OK)
				break;
			continue;
		}
		if (type == YX_AGENT_T_STATE) {
			memcpy(st, c.buf, flen);
			st[flen] = '\0';
			if (memchr(st, '\0', flen) != NULL ||
			    agent_sess_status(st, res) != YX_OK)
				rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
				    "session: broken status");
			break;
		}
		if (type == YX_AGENT_T_FAIL)
			log_escape(why, sizeof(why), c.buf, flen);
		else
			snprintf(why, sizeof(why), "frame out of order");
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "session refused: %s",
		    why);
		break;
	}
done:
	agent_conn_fini(&c);
	return rc;
}
