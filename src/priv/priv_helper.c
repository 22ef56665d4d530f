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

/*
 * Open thread directory `name` beneath threads_fd (O_PATH), and require a
 * directory of this user that nobody else may write. fd, or -1 with the
 * error in e.
 */
static int
priv_thread_dir(int threads_fd, const char *name, struct yx_errctx *e)
{
	struct stat	st;
	int		fd;

	if ((fd = priv_openat(threads_fd, name, O_PATH | O_DIRECTORY, 0,
		 false)) == -1) {
		(void)yx_fail(e, errno == ENOENT ? YX_E_NOT_FOUND : YX_E_BAD_REQUEST,
		    "no such thread directory");
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		close(fd);
		(void)yx_fail(e, YX_E_BAD_REQUEST,
		    "thread directory not the service's own");
		return -1;
	}
	return fd;
}

/* Check and run one request; the outcome goes into rep. */
static void
priv_handle(int threads_fd, const struct priv_req *rq, struct priv_rep *rep)
{
	struct yx_errctx	e;
	int			tfd = -1, rc;

	yx_errctx_clear(&e);
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
	if ((tfd = priv_thread_dir(threads_fd, rq->name, &e)) == -1) {
		rc = e.code;
		goto done;
	}
	switch (rq->op) {
	case PRIV_CREATE_IMAGE:
		rc = priv_image_create(tfd, rq->size, rq->uid, rq->gid, &e);
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
priv_helper_main(int sock, int threads_fd)
{
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
			priv_handle(threads_fd, &rq, &rep);
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
