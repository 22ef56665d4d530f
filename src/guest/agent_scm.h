/* SPDX-License-Identifier: MIT */
/*
 * agent_scm.h - descriptors over the agent's unix socket (SCM_RIGHTS),
 * shared by src/guest/yuxi-agent.c and src/exec/agent_client.c. Static
 * inline: the agent is a static binary that links nothing but libc.
 *
 * The host passes one descriptor, the output pipe's write end, with the
 * first byte of 'G' (agent_proto.h); what each side accepts is its own
 * policy: the agent takes that one, the host takes none.
 */
#ifndef YUXI_AGENT_SCM_H
#define YUXI_AGENT_SCM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AGENT_SCM_MAX	4	/* room to see (and close) a few extras */

/* sendmsg() of n bytes with fd attached to the first. sendmsg's result. */
static inline ssize_t
agent_scm_send(int sock, const void *p, size_t n, int fd, int flags)
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
agent_scm_recv(int sock, void *p, size_t n, int flags,
    int fds[AGENT_SCM_MAX], size_t *nfds, int *odd)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int) * AGENT_SCM_MAX)];
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
		if (k > AGENT_SCM_MAX - *nfds)
			k = AGENT_SCM_MAX - *nfds;	/* cannot happen: buffer size */
		memcpy(fds + *nfds, CMSG_DATA(cm), k * sizeof(int));
		*nfds += k;
	}
	if ((mh.msg_flags & MSG_CTRUNC) != 0)
		*odd = 1;
	return r;
}

/*
 * After agent_scm_recv(): the first descriptor goes to *keep when keep is
 * not NULL and *keep is -1; every other one is closed. 0, or -1 with errno
 * EPROTO when one was closed unwanted or odd control data came (a taken
 * descriptor stays in *keep for the caller either way).
 */
static inline int
agent_scm_settle(int fds[AGENT_SCM_MAX], size_t nfds, int odd, int *keep)
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

#endif /* YUXI_AGENT_SCM_H */
