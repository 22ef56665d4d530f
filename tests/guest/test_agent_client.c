/* SPDX-License-Identifier: MIT */
/*
 * test_agent_client.c - the host side of the agent protocol against hostile
 * peers, no engine needed. A run directory owned by the sandbox uid is made
 * in a temp dir; "agent.sock" in it is then a symlink to a trap socket that
 * records connections, a socket of the wrong owner, a regular file, a FIFO,
 * or a fake agent (a forked process) that lies about frame sizes, floods,
 * sends unknown frames or never answers. The host must refuse without
 * connecting, stay bounded in time and memory, and report whether the
 * command started (fallback allowed) or not. A well-behaved fake is the
 * positive control.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "guest/agent_proto.h"
#include "exec/agent_client.h"
#include "exec/outcap.h"
#include "../lib/tutil.h"

#define UID	1000
#define GID	1000

/*
 * Built twice: test_agent_client (protections on: no test may leak) and
 * test_agent_client_control (src/exec/agent_client.c compiled again with
 * -DYX_AGENT_CONTROL_UNSAFE, its checks off): there every protection test
 * must leak, proving that it can; the protocol-bounds tests (PROTOCOL) run
 * in the protected build only.
 */
#ifdef YX_AGENT_CONTROL_UNSAFE
#define CONTROL			1
#define EXPECT_LEAK(leak, what)	cr_assert((leak), "control build must leak: %s", (what))
#else
#define CONTROL			0
#define EXPECT_LEAK(leak, what)	cr_assert(!(leak), "protected build leaked: %s", (what))
#endif
#ifdef YX_AGENT_CONTROL_UNSAFE
#define PROTOCOL_TEST(n)	static void __attribute__((unused)) control_skips_##n(void)
#else
#define PROTOCOL_TEST(n)	Test(agent_client, n)
#endif

static char	tmp[128], rundir[512];
static int	rundir_fd = -1;
static pid_t	fake = -1;

static void
setup(void)
{
	struct yx_errctx	e;
	unsigned		u = UID;

	snprintf(tmp, sizeof(tmp), "/tmp/yxagtc-%d-XXXXXX", (int)getpid());
	cr_assert_not_null(mkdtemp(tmp));
	yx_errctx_clear(&e);
	cr_assert_eq(yx_agent_rundir_open(tmp, "t1", &u, GID, rundir,
			 sizeof(rundir), &rundir_fd, &e),
	    YX_OK, "%s", e.msg);
}

static void
teardown(void)
{
	if (fake > 0) {
		kill(-fake, SIGKILL);
		kill(fake, SIGKILL);
		waitpid(fake, NULL, 0);
	}
	fake = -1;
	if (rundir_fd != -1)
		close(rundir_fd);
	rundir_fd = -1;
	tutil_rmtree(tmp);
}

/* A listening socket at path, owned by uid; non-blocking. */
static int
listen_at(const char *path, uid_t uid)
{
	int fd;

	unlink(path);
	fd = tutil_unix_listen(path, SOCK_NONBLOCK);
	cr_assert_eq(chown(path, uid, GID), 0);
	return fd;
}

/* True when someone connected to the (non-blocking) listener. */
static bool
was_contacted(int lfd)
{
	int c = accept(lfd, NULL, NULL);

	if (c != -1)
		close(c);
	return c != -1 || errno != EAGAIN;
}

static void
frame(int fd, int type, uint32_t len, const void *p, size_t n)
{
	unsigned char h[5] = { (unsigned char)type, len >> 24, len >> 16,
		len >> 8, len };

	(void)!write(fd, h, 5);
	if (n > 0)
		(void)!write(fd, p, n);
}

/* In a fake: read the request up to the descriptor the host passes with
 * 'G' (the output pipe's write end). The descriptor, or -1. */
static int
fake_take_request(int c)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int) * 4)];
	}		 u;
	static char	 buf[8192];
	struct cmsghdr	*cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	int		 fd = -1, i;

	for (i = 0; i < 100 && fd == -1; i++) {
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		if (recvmsg(c, &mh, 0) <= 0)
			return -1;
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_type == SCM_RIGHTS)
				memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	}
	return fd;
}

/* A frame with descriptors attached to its first byte (SCM_RIGHTS). */
static void
frame_fds(int fd, int type, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int) * 4)];
	}		 u;
	unsigned char	 h[5] = { (unsigned char)type, 0, 0, 0, 0 };
	struct cmsghdr	*cm;
	struct msghdr	 mh;
	struct iovec	 iov = { h, sizeof(h) };

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	(void)!sendmsg(fd, &mh, 0);
}

enum fake_mode { F_GOOD,
	F_HUGE_FIRST,
	F_HUGE_AFTER,
	F_FLOOD,
	F_UNKNOWN,
	F_BAD_EXIT,
	F_SILENT,
	F_FAIL,
	F_EOF_AFTER,
	F_STALL,
	F_PIPE_GOOD,
	F_PIPE_FLOOD,
	F_PIPE_BLOCKING,
	F_FD_FILE,
	F_FD_TWO,
	F_FD_LATE };

static char	secret_path[600];	/* a host file the fake passes */

/* In the child: serve one connection as a fake agent. */
static void __attribute__((noreturn))
fake_serve(int lfd, enum fake_mode m)
{
	static char	big[YX_AGENT_OUT_MAX];
	unsigned char	x0[4] = { 0, 0, 0, 0 }, xbad[4] = { 0, 0, 3, 231 };
	int		c, p[2], two[2], f, out;

	(void)setpgid(0, 0);	/* teardown kills the fake and its helpers */
	signal(SIGPIPE, SIG_DFL);
	fcntl(lfd, F_SETFL, 0);
	if ((c = accept(lfd, NULL, NULL)) == -1)
		_exit(1);
	/* take the request first, with the output pipe's write end */
	out = fake_take_request(c);
	memset(big, 'A', sizeof(big));
	switch (m) {
	case F_GOOD:
		frame(c, 'S', 0, NULL, 0);
		frame(c, 'O', 3, "hi\n", 3);
		frame(c, 'X', 4, x0, 4);
		break;
	case F_HUGE_FIRST:
		frame(c, 'O', 0xFFFFFFFFu, big, sizeof(big));
		break;
	case F_HUGE_AFTER:
		frame(c, 'S', 0, NULL, 0);
		frame(c, 'O', 0xFFFFFFFFu, big, sizeof(big));
		break;
	case F_FLOOD:
		frame(c, 'S', 0, NULL, 0);
		for (;;)
			frame(c, 'O', sizeof(big), big, sizeof(big));
	case F_UNKNOWN:
		frame(c, 'Z', 4, "junk", 4);
		break;
	case F_BAD_EXIT:
		frame(c, 'S', 0, NULL, 0);
		frame(c, 'X', 4, xbad, 4);
		break;
	case F_SILENT:
		sleep(30);
		break;
	case F_FAIL:
		frame(c, 'F', 5, "nope\n", 5);
		break;
	case F_EOF_AFTER:
		frame(c, 'S', 0, NULL, 0);
		frame(c, 'O', 3, "pa\n", 3);
		_exit(0);
	case F_STALL:
		frame(c, 'S', 0, NULL, 0);
		frame(c, 'O', 3, "pa\n", 3);
		break;
	case F_PIPE_GOOD:	/* what the real agent does */
		frame(c, 'S', 0, NULL, 0);
		(void)!write(out, "hi\n", 3);
		close(out);
		frame(c, 'X', 4, x0, 4);
		break;
	case F_PIPE_FLOOD:	/* the pipe never ends, 'X' comes anyway */
		frame(c, 'S', 0, NULL, 0);
		if (fork() == 0)
			for (;;)
				(void)!write(out, big, sizeof(big));
		usleep(300 * 1000);
		frame(c, 'X', 4, x0, 4);
		break;
	case F_PIPE_BLOCKING:	/* turns the host's end blocking, stays open */
		(void)fcntl(out, F_SETFL, 0);
		frame(c, 'S', 0, NULL, 0);
		usleep(100 * 1000);
		frame(c, 'X', 4, x0, 4);
		break;
	case F_FD_FILE:		/* a host file, offered as the output */
		if ((f = open(secret_path, O_RDONLY)) == -1)
			_exit(1);
		frame_fds(c, 'S', &f, 1);
		frame(c, 'X', 4, x0, 4);
		break;
	case F_FD_TWO:
		if (pipe(two) == -1)
			_exit(1);
		frame_fds(c, 'S', two, 2);
		break;
	case F_FD_LATE:		/* a pipe full of bytes, with a later frame */
		if (pipe(p) == -1)
			_exit(1);
		(void)!write(p[1], "LEAK\n", 5);
		frame(c, 'S', 0, NULL, 0);
		frame_fds(c, 'O', &p[0], 1);
		frame(c, 'X', 4, x0, 4);
		break;
	}
	sleep(30);
	_exit(0);
}

static void
start_fake(enum fake_mode m)
{
	char	path[600];
	int	lfd;

	snprintf(path, sizeof(path), "%s/%s", rundir, YX_AGENT_SOCK_NAME);
	lfd = listen_at(path, UID);
	cr_assert_neq(fake = fork(), -1);
	if (fake == 0)
		fake_serve(lfd, m);
	close(lfd);
}

/* One request (echo hi, timeout_sec) against a fake agent. */
struct fake_run {
	struct yx_outcap	oc;	/* 4096 bytes; caller: yx_outcap_fini */
	struct yx_exec_result	res;
	struct yx_errctx	e;
	bool			started;	/* caller: the value it must change */
	int			rc;		/* yx_agent_run's */
	int64_t			ms;		/* fake start to answer */
};

/* Start a fake agent in mode m and run one request against it. */
static void
run_fake(enum fake_mode m, int timeout_sec, struct fake_run *r)
{
	const char		*argv[] = { "/bin/echo", "hi", NULL };
	struct yx_agent_opts	 o = { 500, 500, false };
	struct yx_exec_req	 xr;
	int64_t			 t0 = yx_mono_ms();

	start_fake(m);
	yx_outcap_init(&r->oc, 4096, 0, NULL, NULL);
	memset(&xr, 0, sizeof(xr));
	xr.argv = argv;
	xr.workdir = "/";
	xr.timeout_sec = timeout_sec;
	xr.on_output = yx_outcap_write;
	xr.arg = &r->oc;
	yx_errctx_clear(&r->e);
	r->rc = yx_agent_run(rundir_fd, UID, &o, &xr, &r->res, &r->started,
	    &r->e);
	r->ms = yx_mono_ms() - t0;
}

TestSuite(agent_client, .init = setup, .fini = teardown, .timeout = 60);

PROTOCOL_TEST(proc_fd_connect_reaches_the_opened_inode)
{
	struct sockaddr_un	sun;
	char			path[600], moved[600];
	int			lfd, lfd2, pfd, s;

	snprintf(path, sizeof(path), "%s/plain.sock", tmp);
	snprintf(moved, sizeof(moved), "%s/moved.sock", tmp);
	lfd = listen_at(path, 0);
	cr_assert_neq(pfd = open(path, O_PATH | O_CLOEXEC), -1);
	/* the name now points elsewhere: the fd must still reach the first */
	cr_assert_eq(rename(path, moved), 0);
	lfd2 = listen_at(path, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	cr_assert_neq(s = socket(AF_UNIX, SOCK_STREAM, 0), -1);
	cr_assert_eq(connect(s, (struct sockaddr *)&sun, sizeof(sun)), 0,
	    "connect through /proc/self/fd: %s", strerror(errno));
	cr_assert(was_contacted(lfd));
	cr_assert_not(was_contacted(lfd2));
	close(s);
	close(pfd);
	close(lfd);
	close(lfd2);
}

Test(agent_client, rundir_is_private_and_owned)
{
	struct stat	st, st2;
	char		p[600], hp[600];
	unsigned	u = UID;
	int		fd = -1;

	cr_assert_eq(stat(rundir, &st), 0);
	cr_assert_eq(st.st_uid, UID);
	cr_assert_eq(st.st_mode & 0777, 0700);
	/* a thread dir that is a symlink (here to t1's) is never followed:
	 * it is replaced by a fresh directory of the thread's own */
	snprintf(p, sizeof(p), "%s/run/t2", tmp);
	cr_assert_eq(symlink(rundir, p), 0);
	(void)yx_agent_rundir_open(tmp, "t2", &u, GID, hp, sizeof(hp), &fd,
	    NULL);
	EXPECT_LEAK(fd != -1 && fstat(fd, &st2) == 0 && st2.st_ino == st.st_ino,
	    "followed a symlinked run directory");
	if (!CONTROL) {
		cr_assert_neq(fd, -1);
		cr_assert_eq(lstat(p, &st2), 0);
		cr_assert(S_ISDIR(st2.st_mode) && st2.st_uid == UID);
	}
	if (fd != -1)
		close(fd);
	fd = -1;
	cr_assert_neq(yx_agent_rundir_open(tmp, "../x", &u, GID, hp, sizeof(hp),
			  &fd, NULL),
	    YX_OK);
}

/*
 * A run directory of another uid is what an earlier thread of the id left:
 * replaced. Only when that uid is the own uid of a pool box serving this
 * very thread (uids/<uid> names "<box>/<thread>") is it the thread's, and
 * the uid its agent's files belong to comes back.
 */
Test(agent_client, box_rundir_only_for_its_thread)
{
	struct stat	st;
	char		p[600], hp[600];
	unsigned	u;
	int		fd = -1;

	if (geteuid() != 0)
		cr_skip_test("needs root to chown");
	if (CONTROL)	/* with the checks off no owner is looked at at all */
		cr_skip_test("production rule only");
	snprintf(p, sizeof(p), "%s/uids", tmp);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/uids/%u", tmp, UID + 7);
	cr_assert_eq(symlink("pool-0123456789abcdef/t3", p), 0);
	snprintf(p, sizeof(p), "%s/run/t3", tmp);
	cr_assert_eq(mkdir(p, 0700), 0);
	cr_assert_eq(chown(p, UID + 7, UID + 7), 0);
	snprintf(p, sizeof(p), "%s/run/t4", tmp);
	cr_assert_eq(mkdir(p, 0700), 0);
	cr_assert_eq(chown(p, UID + 7, UID + 7), 0);
	u = UID;
	cr_assert_eq(yx_agent_rundir_open(tmp, "t3", &u, GID, hp, sizeof(hp),
			 &fd, NULL),
	    YX_OK);
	cr_assert_eq(u, UID + 7, "the box's uid comes back");
	close(fd);
	/* the same uid's directory under another thread is not the box's */
	u = UID;
	cr_assert_eq(yx_agent_rundir_open(tmp, "t4", &u, GID, hp, sizeof(hp),
			 &fd, NULL),
	    YX_OK);
	cr_assert_eq(u, UID);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_uid, UID, "replaced by the thread's own");
	close(fd);
}

Test(agent_client, symlinked_socket_is_not_followed)
{
	char			trap[600], link[600];
	struct yx_errctx	e;
	int			lfd, rc, s = -1;

	snprintf(trap, sizeof(trap), "%s/trap.sock", tmp);
	lfd = listen_at(trap, UID);	/* right owner, right type: only the link is wrong */
	snprintf(link, sizeof(link), "%s/%s", rundir, YX_AGENT_SOCK_NAME);
	cr_assert_eq(symlink(trap, link), 0);
	yx_errctx_clear(&e);
	rc = yx_agent_connect(rundir_fd, UID, &s, &e);
	EXPECT_LEAK(was_contacted(lfd), "the host followed an absolute symlink");
	if (!CONTROL) {
		cr_assert_eq(rc, YX_E_BACKEND_UNAVAILABLE);
		cr_assert_eq(s, -1);
		cr_assert(strstr(e.msg, "symbolic") != NULL ||
			strstr(e.msg, "not a socket") != NULL,
		    "%s", e.msg);
	}
	if (s != -1)
		close(s);
	s = -1;
	unlink(link);
	cr_assert_eq(symlink("../../trap.sock", link), 0);	/* relative too */
	rc = yx_agent_connect(rundir_fd, UID, &s, NULL);
	EXPECT_LEAK(was_contacted(lfd), "the host followed a relative symlink");
	if (!CONTROL)
		cr_assert_neq(rc, YX_OK);
	if (s != -1)
		close(s);
	close(lfd);
}

Test(agent_client, wrong_owner_file_and_fifo_refused)
{
	char	path[600];
	int	lfd, s = -1, fd;

	snprintf(path, sizeof(path), "%s/%s", rundir, YX_AGENT_SOCK_NAME);
	lfd = listen_at(path, 0);	/* owned by root, not the sandbox */
	(void)yx_agent_connect(rundir_fd, UID, &s, NULL);
	EXPECT_LEAK(was_contacted(lfd), "connected to a socket of another owner");
	if (s != -1)
		close(s);
	s = -1;
	close(lfd);
	if (CONTROL)
		return;
	unlink(path);
	cr_assert_neq(fd = open(path, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	cr_assert_eq(chown(path, UID, GID), 0);
	cr_assert_neq(yx_agent_connect(rundir_fd, UID, &s, NULL), YX_OK);
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(chown(path, UID, GID), 0);
	cr_assert_neq(yx_agent_connect(rundir_fd, UID, &s, NULL), YX_OK);
	cr_assert_eq(s, -1);
}

/* A fake that answers "hi\n" and exit 0 (in a frame, or written to the
 * output pipe the host passed, as the real agent does): accepted. */
static void
expect_good(enum fake_mode m)
{
	struct fake_run r = { .started = false };

	run_fake(m, 5, &r);
	cr_assert_eq(r.rc, YX_OK, "%s", r.e.msg);
	cr_assert(r.started);
	cr_assert_eq(r.res.exit_code, 0);
	cr_assert_eq(r.oc.mem.len, 3);
	cr_assert_eq(memcmp(r.oc.mem.data, "hi\n", 3), 0);
	yx_outcap_fini(&r.oc);
}

PROTOCOL_TEST(good_fake_is_accepted)
{
	expect_good(F_GOOD);
}

/* A fake that breaks the protocol before 'S': refused, nothing delivered. */
static void
expect_not_started(enum fake_mode m)
{
	struct fake_run r = { .started = true };

	run_fake(m, 5, &r);
	cr_assert_eq(r.rc, YX_E_BACKEND_UNAVAILABLE);
	cr_assert_not(r.started);
	cr_assert_eq(r.oc.total, 0, "output delivered from a refused agent");
	cr_assert_lt(r.ms, 3000);
	yx_outcap_fini(&r.oc);
}

PROTOCOL_TEST(huge_first_frame_refused)
{
	expect_not_started(F_HUGE_FIRST);
}

PROTOCOL_TEST(unknown_frame_refused)
{
	expect_not_started(F_UNKNOWN);
}

PROTOCOL_TEST(fail_frame_refused)
{
	expect_not_started(F_FAIL);
}

PROTOCOL_TEST(silent_agent_times_out_quickly)
{
	expect_not_started(F_SILENT);
}

/* A fake that breaks the protocol after 'S': clean failure, no fallback. */
static void
expect_started_failure(enum fake_mode m)
{
	struct fake_run r = { .started = false };

	run_fake(m, 5, &r);
	cr_assert_eq(r.rc, YX_E_BACKEND_UNAVAILABLE);
	cr_assert(r.started);
	cr_assert_leq(r.oc.mem.len, 4096);
	yx_outcap_fini(&r.oc);
}

PROTOCOL_TEST(huge_frame_after_start_fails_cleanly)
{
	expect_started_failure(F_HUGE_AFTER);
}

PROTOCOL_TEST(out_of_range_exit_fails_cleanly)
{
	expect_started_failure(F_BAD_EXIT);
}

PROTOCOL_TEST(hangup_mid_command_fails_cleanly)
{
	expect_started_failure(F_EOF_AFTER);
}

/* A fake that holds the command past a 1 s deadline: the host ends it
 * with exit 124. */
static void
expect_deadline(enum fake_mode m, struct fake_run *r)
{
	r->started = false;
	run_fake(m, 1, r);
	cr_assert_eq(r->rc, YX_OK, "%s", r->e.msg);
	cr_assert(r->started && r->res.timed_out);
	cr_assert_eq(r->res.exit_code, 124);
}

PROTOCOL_TEST(stall_mid_command_ends_at_the_deadline)
{
	struct fake_run r;

	/* the fake sleeps holding the socket: the host deadline ends it */
	expect_deadline(F_STALL, &r);
	kill(fake, SIGKILL);
	waitpid(fake, NULL, 0);
	fake = -1;
	yx_outcap_fini(&r.oc);
}

PROTOCOL_TEST(flood_is_bounded_by_cap_and_deadline)
{
	struct fake_run r;

	expect_deadline(F_FLOOD, &r);
	cr_assert(r.oc.truncated);
	cr_assert_eq(r.oc.mem.len, 4096, "memory kept %zu bytes", r.oc.mem.len);
	cr_assert_gt(r.oc.total, 1 << 20, "flood too small to prove anything");
	cr_assert_lt(r.ms, 4000);
	yx_outcap_fini(&r.oc);
}

/* The real agent's way: output written to the pipe the host passed. */
PROTOCOL_TEST(output_pipe_passed_with_request)
{
	expect_good(F_PIPE_GOOD);
}

/* A pipe that never ends: after 'X' the host drains a bounded amount. */
PROTOCOL_TEST(endless_pipe_after_exit_is_bounded)
{
	struct fake_run r = { .started = false };

	run_fake(F_PIPE_FLOOD, 5, &r);
	cr_assert_eq(r.rc, YX_OK, "%s", r.e.msg);
	cr_assert(r.started && !r.res.timed_out);
	cr_assert_eq(r.res.exit_code, 0);
	cr_assert(r.oc.truncated);
	cr_assert_eq(r.oc.mem.len, 4096);
	cr_assert_lt(r.ms, 3000);
	yx_outcap_fini(&r.oc);
}

/* The sandbox clears O_NONBLOCK on the write end's file: the host's read
 * end is its own open file, so the drain after 'X' still cannot block. */
PROTOCOL_TEST(pipe_flags_are_the_hosts_own)
{
	struct fake_run r = { .started = false };

	run_fake(F_PIPE_BLOCKING, 5, &r);
	cr_assert_eq(r.rc, YX_OK, "%s", r.e.msg);
	cr_assert_eq(r.res.exit_code, 0);
	cr_assert_lt(r.ms, 2000, "the drain blocked");
	yx_outcap_fini(&r.oc);
}

/* A descriptor from the sandbox is never read: here an open host file
 * offered as the output with 'S'. */
Test(agent_client, passed_file_is_never_read)
{
	struct fake_run	r = { .started = false };
	int		f;

	snprintf(secret_path, sizeof(secret_path), "%s/host-secret", tmp);
	cr_assert_neq(f = open(secret_path, O_CREAT | O_WRONLY, 0600), -1);
	cr_assert_eq(write(f, "SECRET\n", 7), 7);
	close(f);
	run_fake(F_FD_FILE, 5, &r);
	EXPECT_LEAK(r.oc.total > 0, "read bytes from a host file the agent passed");
	if (!CONTROL)
		cr_assert_neq(r.rc, YX_OK);
	yx_outcap_fini(&r.oc);
}

/* Two descriptors with 'S': refused (by the kernel, or closed unread). */
PROTOCOL_TEST(two_descriptors_refused)
{
	expect_not_started(F_FD_TWO);
}

/* A pipe passed with a later frame: never read. */
PROTOCOL_TEST(descriptor_with_a_later_frame_is_never_read)
{
	struct fake_run r = { .started = false };

	run_fake(F_FD_LATE, 5, &r);
	cr_assert_eq(r.oc.total, 0, "read %zu bytes from a passed pipe",
	    (size_t)r.oc.total);
	yx_outcap_fini(&r.oc);
}

/* End the fake of the last silent_keeper(). */
static void
teardown_fake(void)
{
	if (fake > 0) {
		kill(-fake, SIGKILL);
		kill(fake, SIGKILL);
		waitpid(fake, NULL, 0);
	}
	fake = -1;
}

/*
 * A keeper that died behind a socket that still takes connections (what
 * the host sees under gVisor: the name is a host socket the sandbox keeps
 * listening on, nobody answers): its proc.<id>.sock here is a listener
 * nobody accepts on, and agent.sock a fake agent that answers the 'L'
 * question with `answer` (after checking it asked exactly that). Runs one
 * 'Q' (within until: yx_mono_ms(), 0 none); its result and time in *rc
 * and *ms.
 */
static void
silent_keeper_until(const char *answer, int64_t until, int *rc, int64_t *ms)
{
	const char	*id = "p0123456789abcdef";
	unsigned char	 want[64], got[64];
	char		 path[600], st[YX_AGENT_STATUS_MAX + 1];
	size_t		 n = 0, i;
	int64_t		 t0;
	int		 klfd, alfd, c;

	snprintf(path, sizeof(path), "%s/" YX_AGENT_PROC_PREFIX "%s.sock", rundir, id);
	klfd = listen_at(path, UID);
	snprintf(path, sizeof(path), "%s/%s", rundir, YX_AGENT_SOCK_NAME);
	alfd = listen_at(path, UID);
	/* the question the host must ask: H YXA3, L <id> */
	memcpy(want, "H\0\0\0\4" YX_AGENT_MAGIC "L\0\0\0", 13);
	want[13] = (unsigned char)strlen(id);
	memcpy(want + 14, id, strlen(id));
	cr_assert_neq(fake = fork(), -1);
	if (fake == 0) {
		(void)setpgid(0, 0);
		fcntl(alfd, F_SETFL, 0);
		if ((c = accept(alfd, NULL, NULL)) == -1)
			_exit(1);
		for (i = 0; i < 14 + strlen(id); i += n)
			if ((n = (size_t)read(c, got + i, 14 + strlen(id) - i)) == 0 ||
			    n == (size_t)-1)
				_exit(1);
		if (memcmp(got, want, 14 + strlen(id)) == 0)
			frame(c, answer[0] == 'F' ? 'F' : 'Z', (uint32_t)strlen(answer),
			    answer, strlen(answer));
		sleep(30);
		_exit(0);
	}
	close(alfd);
	t0 = yx_mono_ms();
	*rc = yx_agent_keeper_op(rundir_fd, UID, id, YX_AGENT_T_STATUS, NULL, 0,
	    0, until, NULL, NULL, st, NULL);
	*ms = yx_mono_ms() - t0;
	close(klfd);
}

/* silent_keeper_until without a budget of the caller's. */
static void
silent_keeper(const char *answer, int *rc, int64_t *ms)
{
	silent_keeper_until(answer, 0, rc, ms);
}

PROTOCOL_TEST(silent_dead_keeper_is_gone_at_once)
{
	char	path[600];
	int64_t	ms;
	int	rc;

	silent_keeper("alive=0", &rc, &ms);
	printf("silent keeper, agent says dead: %s after %lld ms\n",
	    yx_strerror(rc), (long long)ms);
	cr_assert_eq(rc, YX_E_NOT_FOUND);
	/* well before the 2 s an unanswered operation is given (agent_client.h) */
	cr_assert_lt(ms, 2000);
	/* its name is gone: the next operation learns it without asking */
	snprintf(path, sizeof(path), "%s/" YX_AGENT_PROC_PREFIX "p0123456789abcdef.sock",
	    rundir);
	cr_assert_eq(access(path, F_OK), -1);
}

PROTOCOL_TEST(silent_live_keeper_is_waited_for)
{
	const char	*answers[] = { "alive=1", "Fcannot tell", "alive=0 " };
	int64_t		 ms;
	size_t		 i;
	int		 rc;

	for (i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		silent_keeper(answers[i], &rc, &ms);
		printf("silent keeper, agent says \"%s\": %s after %lld ms\n",
		    answers[i], yx_strerror(rc), (long long)ms);
		/* alive, unsure or garbage: the keeper's own deadline, and
		 * then "no answer in time" (not "gone") */
		cr_assert_eq(rc, YX_E_TIMEOUT, "%s", answers[i]);
		cr_assert_geq(ms, 2000, "%s", answers[i]);
		teardown_fake();
	}
}

PROTOCOL_TEST(silent_keeper_within_the_callers_budget)
{
	int64_t	ms;
	int	rc;

	/* the caller's whole budget ends first: no operation outlives it */
	silent_keeper_until("alive=1", yx_mono_ms() + 500, &rc, &ms);
	printf("silent keeper, a 500 ms budget: %s after %lld ms\n", yx_strerror(rc),
	    (long long)ms);
	cr_assert_eq(rc, YX_E_TIMEOUT);
	cr_assert_geq(ms, 450);
	cr_assert_lt(ms, 1500);
	teardown_fake();
}
