/* SPDX-License-Identifier: MIT */
/*
 * priv_helper.c - the privileged helper's side of the protocol
 * (include/yuxi/priv.h): receive one request with its reply socket, check
 * everything it names, run it (priv_disk.c), answer, close. One request at
 * a time; a malformed request is answered YX_E_BAD_REQUEST (or dropped when
 * it brought no reply socket) and the helper goes on. It ends when every
 * client end of its socket is closed (recvmsg returns 0) or on a signal.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "priv/priv_int.h"

/* What requests act beneath; -1 = not configured. */
struct priv_fds {
	int	threads;	/* <saves>/threads */
	int	pool;		/* <saves>/pool (pool boxes) */
	int	skills;		/* the skills root */
};

/* ".tmp-<hex>" or ".trash-<hex>[-<digits>]" as yx_hidden_name() makes them. */
static bool
priv_hidden_valid(const char *name)
{
	const char	*p;
	size_t		 n;

	if (strncmp(name, ".tmp-", 5) == 0)
		p = name + 5;
	else if (strncmp(name, ".trash-", 7) == 0)
		p = name + 7;
	else
		return false;
	if ((n = strspn(p, "0123456789abcdef")) == 0)
		return false;
	p += n;
	if (*p == '\0')
		return true;
	return p[0] == '-' && p[1] != '\0' &&
	    strspn(p + 1, "0123456789") == strlen(p + 1) &&
	    strlen(p + 1) <= 10;
}

bool
priv_name_valid(const char *name)
{
	size_t n = strnlen(name, PRIV_NAME_MAX + 1);

	if (n == 0 || n > PRIV_NAME_MAX)
		return false;
	return yx_thread_id_valid(name, n) || priv_hidden_valid(name);
}

/* A pool request: names checked here, descriptors in priv_pool.c. */
static int
priv_handle_pool(const struct priv_fds *fds, const struct priv_req *rq,
    struct yx_errctx *e)
{
	if (memchr(rq->arg, '\0', sizeof(rq->arg)) == NULL ||
	    !priv_box_name_valid(rq->arg))
		return yx_fail(e, YX_E_BAD_REQUEST, "bad pool box name");
	switch (rq->op) {
	case PRIV_POOL_BIND:
		if (!yx_thread_id_valid(rq->name, strlen(rq->name)))
			return yx_fail(e, YX_E_BAD_REQUEST, "bad thread id");
		return priv_pool_bind(fds->threads, fds->pool, rq->name, rq->arg,
		    e);
	case PRIV_POOL_SKILL:
		if (!priv_skill_name_valid(rq->name))
			return yx_fail(e, YX_E_BAD_REQUEST, "bad skill name");
		return priv_pool_skill(fds->skills, fds->pool, rq->name, rq->arg,
		    e);
	case PRIV_POOL_UNBIND:
		return priv_pool_unbind(fds->pool, rq->arg, e);
	default:
		return priv_pool_clear(fds->pool, rq->arg, e);
	}
}

/* Check and run one request; the outcome goes into rep. */
static void
priv_handle(const struct priv_fds *fds, const struct priv_req *rq,
    struct priv_rep *rep)
{
	struct yx_errctx	e;
	int			tfd = -1, rc;

	yx_errctx_clear(&e);
	if (rq->magic == PRIV_MAGIC && memchr(rq->name, '\0', sizeof(rq->name)) &&
	    (rq->op == PRIV_POOL_BIND || rq->op == PRIV_POOL_SKILL ||
		rq->op == PRIV_POOL_CLEAR || rq->op == PRIV_POOL_UNBIND)) {
		rc = priv_handle_pool(fds, rq, &e);
		goto done;
	}
	if (rq->magic != PRIV_MAGIC ||
	    memchr(rq->name, '\0', sizeof(rq->name)) == NULL ||
	    !priv_name_valid(rq->name)) {
		rc = yx_fail(&e, YX_E_BAD_REQUEST, "bad request");
		goto done;
	}
	if (rq->op == PRIV_CREATE_IMAGE &&
	    (rq->size < (uint64_t)PRIV_IMAGE_MIN ||
		rq->size > (uint64_t)PRIV_IMAGE_MAX || rq->uid == 0 ||
		rq->gid == 0 || rq->uid > PRIV_UID_MAX ||
		rq->gid > PRIV_UID_MAX)) {
		rc = yx_fail(&e, YX_E_BAD_REQUEST, "bad image size or owner");
		goto done;
	}
	if ((tfd = priv_thread_dir(fds->threads, rq->name, &e)) == -1) {
		rc = e.code;
		goto done;
	}
	switch (rq->op) {
	case PRIV_CREATE_IMAGE:
		rc = priv_image_create(tfd, rq->size, rq->uid, rq->gid,
		    rq->fs == YX_DISK_FS_BTRFS, &e);
		break;
	case PRIV_MOUNT:
		rc = priv_image_mount(tfd, rq->name, &e);
		break;
	case PRIV_UNMOUNT:
		rc = priv_image_unmount(tfd, rq->name, &e);
		break;
	case PRIV_REMOVE:
		rc = priv_image_remove(tfd, rq->name, &e);
		break;
	case PRIV_USAGE:
		rc = priv_image_usage(tfd, &rep->usage, &e);
		break;
	case PRIV_SNAP_CREATE:
	case PRIV_SNAP_DELETE:
	case PRIV_SNAP_RESTORE:
	case PRIV_SNAP_INFO:
	case PRIV_SNAP_LIST:
		/* the id is checked there, before it names anything */
		if (memchr(rq->arg, '\0', sizeof(rq->arg)) == NULL)
			rc = yx_fail(&e, YX_E_BAD_REQUEST, "bad snapshot id");
		else
			rc = priv_snap_op(tfd, (int)rq->op, rq->arg, rep, &e);
		break;
	case PRIV_TX_BEGIN:
	case PRIV_TX_UNMOUNT:
	case PRIV_TX_CLEAN:
		rc = priv_tx_op(tfd, (int)rq->op, rep, &e);
		break;
	default:
		rc = yx_fail(&e, YX_E_BAD_REQUEST, "unknown request");
	}
done:
	if (tfd != -1)
		close(tfd);
	rep->magic = PRIV_MAGIC;
	rep->rc = rc;
	snprintf(rep->msg, sizeof(rep->msg), "%.*s", (int)sizeof(rep->msg) - 1,
	    rc == YX_OK ? "" : e.msg);
	if (rc != YX_OK)
		log_debug("request %u: %s", (unsigned)rq->op, e.msg);
}

/*
 * Receive one request. Returns 1 with *rq and the reply socket in *fdp (-1
 * when the message carried none), 0 at EOF, -1 on an error to stop on.
 */
static int
priv_recv(int sock, struct priv_req *rq, int *fdp, bool *okp)
{
	union {
		char		buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr	align;
	} cm;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*c;
	ssize_t		 n;
	size_t		 nfd, i;
	int		*fds;

	*fdp = -1;
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = rq;
	iov.iov_len = sizeof(*rq);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) == -1 && errno == EINTR)
		;
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		fds = (int *)(void *)CMSG_DATA(c);
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			if (*fdp == -1)
				*fdp = fds[i];
			else
				close(fds[i]);	/* one reply socket only */
		}
	}
	*okp = (size_t)n == sizeof(*rq) &&
	    (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
	return 1;
}

int
priv_helper_main(int sock, int threads_fd, int pool_fd, int skills_fd)
{
	struct priv_fds	fds = { threads_fd, pool_fd, skills_fd };
	struct priv_req	rq;
	struct priv_rep	rep;
	bool		ok = false;
	int		fd, r;

	log_info("privileged helper ready");
	while ((r = priv_recv(sock, &rq, &fd, &ok)) == 1) {
		if (fd == -1) {
			log_warnx("request without a reply socket dropped");
			continue;
		}
		memset(&rep, 0, sizeof(rep));
		if (ok)
			priv_handle(&fds, &rq, &rep);
		else {
			rep.magic = PRIV_MAGIC;
			rep.rc = YX_E_BAD_REQUEST;
			snprintf(rep.msg, sizeof(rep.msg), "bad request");
		}
		(void)send(fd, &rep, sizeof(rep), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
	}
	if (r == -1)
		log_warn("privileged helper: recvmsg");
	return r == 0 ? 0 : 1;
}
