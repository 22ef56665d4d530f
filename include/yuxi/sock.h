/* SPDX-License-Identifier: MIT */
/*
 * yuxi/sock.h - the socket primitives written once for the service and
 * the programs inside the sandbox: descriptors passed over a unix socket
 * (SCM_RIGHTS) and a send of a whole buffer. Static inline and libc only:
 * src/guest's programs are static binaries that link nothing but libc.
 *
 * Who passes what is each caller's policy: the host passes the agent one
 * descriptor, the output pipe's write end, with the first byte of 'G'
 * (src/guest/agent_proto.h), and takes none back; a worker passes the
 * privileged helper the reply socket with each request (src/priv/priv.c).
 */
#ifndef YUXI_SOCK_H
#define YUXI_SOCK_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define YX_SOCK_FDS_MAX	4	/* room to see (and close) a few extras */

/* sendmsg() of n bytes with fd attached to the first. sendmsg's result. */
static inline ssize_t
yx_sock_send_fd(int sock, const void *p, size_t n, int fd, int flags)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int))];
	}		 u;
	struct cmsghdr	*cm;
	struct msghdr	 mh;
	struct iovec	 iov;

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	iov.iov_base = (void *)(uintptr_t)p;
	iov.iov_len = n;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = sizeof(u.b);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, flags);
}

/*
 * recvmsg() of up to n bytes (MSG_CMSG_CLOEXEC added to flags). The
 * descriptors that came with them are stored in fds, *nfds of them (the
 * caller owns them); *odd is set when the control data held anything else
 * or was cut (the kernel closes what did not fit). recvmsg's result; on -1
 * no descriptor is returned.
 */
static inline ssize_t
yx_sock_recv_fds(int sock, void *p, size_t n, int flags,
    int fds[YX_SOCK_FDS_MAX], size_t *nfds, int *odd)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int) * YX_SOCK_FDS_MAX)];
	}		 u;
	struct cmsghdr	*cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	ssize_t		 r;
	size_t		 k;

	*nfds = 0;
	*odd = 0;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = p;
	iov.iov_len = n;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = sizeof(u.b);
	if ((r = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC)) == -1)
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
			*odd = 1;
			continue;
		}
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (k > YX_SOCK_FDS_MAX - *nfds)
			k = YX_SOCK_FDS_MAX - *nfds;	/* cannot happen: buffer size */
		memcpy(fds + *nfds, CMSG_DATA(cm), k * sizeof(int));
		*nfds += k;
	}
	if ((mh.msg_flags & MSG_CTRUNC) != 0)
		*odd = 1;
	return r;
}

/*
 * After yx_sock_recv_fds(): the first descriptor goes to *keep when keep is
 * not NULL and *keep is -1; every other one is closed. 0, or -1 with errno
 * EPROTO when one was closed unwanted or odd control data came (a taken
 * descriptor stays in *keep for the caller either way).
 */
static inline int
yx_sock_settle_fds(int fds[YX_SOCK_FDS_MAX], size_t nfds, int odd, int *keep)
{
	size_t	i;
	int	bad = odd;

	for (i = 0; i < nfds; i++) {
		if (keep != NULL && *keep == -1) {
			*keep = fds[i];
			continue;
		}
		close(fds[i]);
		bad = 1;
	}
	if (bad) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

/*
 * send() of all n bytes (MSG_NOSIGNAL), as far as the peer takes them. 0,
 * or -1 with errno when a send failed (what was sent before stays sent).
 */
static inline int
yx_sock_send_all(int fd, const void *p, size_t n)
{
	const char	*c = p;
	ssize_t		 w;

	while (n > 0 && (w = send(fd, c, n, MSG_NOSIGNAL)) > 0) {
		c += w;
		n -= (size_t)w;
	}
	return n == 0 ? 0 : -1;
}

#endif /* YUXI_SOCK_H */
