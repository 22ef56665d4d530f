/* SPDX-License-Identifier: MIT */
/*
 * priv.c - starting the privileged helper, dropping CAP_SYS_ADMIN from
 * everyone else, and the client side of its protocol; see
 * include/yuxi/priv.h and docs/design.md §8.
 *
 * The client state is process-wide: the master (or the CLI) starts the
 * helper, and the workers and the reaper it forks afterwards inherit the
 * client end of the socket. A request is one sendmsg() of a struct
 * priv_req carrying the far end of a fresh socketpair; the reply is read
 * from the near end, bounded by YX_PRIV_TIMEOUT_MS. No lock is needed: a
 * SOCK_SEQPACKET message is delivered whole, and each reply has a socket of
 * its own.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/ident.h"
#include "yuxi/sig.h"
#include "yuxi/sock.h"
#include "priv/priv_int.h"
#include "common/control_int.h"

#define PRIV_STOP_MS	5000	/* SIGTERM to SIGKILL at stop */
#define PRIV_DOWN_MS	3000	/* a caller waits this long for a helper that died */
#define PRIV_TICK_MS	200	/* ... looking every this often */

/*
 * Whether a helper runs, for every process (MAP_SHARED, made before the
 * workers are forked): the master writes it when it starts one and when
 * one died. A request waits for its answer only while a helper runs, or
 * for PRIV_DOWN_MS after one died (the master starts another sooner):
 * the master keeps the helper's end of the socket, so a request to a dead
 * helper would otherwise wait in the queue for YX_PRIV_TIMEOUT_MS.
 */
struct priv_live {
	_Atomic int32_t	pid;		/* the helper's; 0: none runs */
	_Atomic int64_t	down_ms;	/* yx_mono_ms() when it died */
};

/*
 * The process-wide state. The starter (the master) keeps the helper's end
 * of the socket and the directories it is handed, so that it can start
 * another helper on the same socket when one dies (yx_priv_respawn): the
 * workers' client ends never change. Children that are not the helper
 * close them (yx_priv_child_drop).
 */
static struct {
	int			 fd;	/* client end; -1: no helper */
	pid_t			 pid;	/* the helper, in the process that forked it */
	pid_t			 owner;	/* that process */
	int			 srv;	/* the helper's end, kept by the owner; -1 */
	int			 tfd, pfd, sfd;	/* threads/, pool root, skills; -1 */
	const struct yx_config	*cfg;	/* the owner's, borrowed */
	struct priv_live	*live;	/* shared; NULL: not known */
} priv = { -1, 0, 0, -1, -1, -1, -1, NULL, NULL };

/* capget of this process; false when it fails. */
static bool
priv_capget(struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3])
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };

	memset(data, 0, sizeof(*data) * _LINUX_CAPABILITY_U32S_3);
	return syscall(SYS_capget, &hdr, data) == 0;
}

/* See priv_int.h. */
bool
priv_capable(void)
{
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	return priv_capget(d) &&
	    (d[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32))) != 0;
}

/*
 * Take CAP_SYS_ADMIN out of this process: out of the bounding set (no exec
 * gets it back, not even as root), the ambient, inheritable and effective
 * sets, and with keep false out of the permitted set too, for good. The
 * master keeps it permitted (never effective) so that it can start a new
 * helper when one dies; every other child it forks drops it from the
 * permitted set at once (yx_priv_child_drop). YX_OK, or YX_E_IO when it is
 * still effective afterwards.
 */
static int
priv_drop_sys_admin(bool keep)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[_LINUX_CAPABILITY_U32S_3];
	const unsigned			w = CAP_SYS_ADMIN / 32;
	const uint32_t			bit = 1U << (CAP_SYS_ADMIN % 32);

	if (YX_CONTROL_OFF("privdrop"))	/* how it was: everyone keeps it */
		return YX_OK;
	/* needs CAP_SETPCAP; without it only what a non-root exec gets */
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) == -1)
		log_warn("PR_CAPBSET_DROP CAP_SYS_ADMIN");
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_ADMIN, 0, 0);
	if (!priv_capget(d))
		return YX_E_IO;
	d[w].effective &= ~bit;
	if (!keep)
		d[w].permitted &= ~bit;
	d[w].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, d) == -1) {
		log_warn("capset");
		return YX_E_IO;
	}
	return priv_capable() ? YX_E_IO : YX_OK;
}

/* Raise CAP_SYS_ADMIN into the effective set (the helper, from the
 * permitted set it inherited). YX_OK or YX_E_IO. */
static int
priv_raise(void)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[_LINUX_CAPABILITY_U32S_3];
	const unsigned			w = CAP_SYS_ADMIN / 32;
	const uint32_t			bit = 1U << (CAP_SYS_ADMIN % 32);

	if (!priv_capget(d))
		return YX_E_IO;
	if ((d[w].effective & bit) != 0)
		return YX_OK;
	d[w].effective |= bit;
	return syscall(SYS_capset, &hdr, d) == 0 ? YX_OK : YX_E_IO;
}

/* In the helper after fork: signals, descriptors, name; never returns. */
static void __attribute__((noreturn))
priv_child(const struct yx_config *cfg, int sock, int threads_fd, int pool_fd,
    int skills_fd, pid_t parent)
{
	/* die with the master; a master already gone is caught just after */
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent || priv_raise() != YX_OK)
		_exit(1);
	yx_signals_default();
	(void)signal(SIGPIPE, SIG_IGN);	/* replies to callers that left */
	/* keep 0-2 (the log), the socket as 3, threads/ as 4, the pool
	 * root as 5 and the skills root as 6 (when there are); no other */
	if ((sock = fcntl(sock, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    (threads_fd = fcntl(threads_fd, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    (pool_fd != -1 &&
		(pool_fd = fcntl(pool_fd, F_DUPFD_CLOEXEC, 10)) == -1) ||
	    (skills_fd != -1 &&
		(skills_fd = fcntl(skills_fd, F_DUPFD_CLOEXEC, 10)) == -1) ||
	    dup3(sock, 3, O_CLOEXEC) == -1 ||
	    dup3(threads_fd, 4, O_CLOEXEC) == -1 ||
	    (pool_fd != -1 && dup3(pool_fd, 5, O_CLOEXEC) == -1) ||
	    (skills_fd != -1 && dup3(skills_fd, 6, O_CLOEXEC) == -1) ||
	    close_range(7, ~0U, 0) == -1)
		_exit(1);
	(void)prctl(PR_SET_NAME, "yuxi-priv", 0, 0, 0);
	log_init("yuxi-priv", cfg->verbose);
	_exit(priv_helper_main(3, 4, pool_fd != -1 ? 5 : -1,
	    skills_fd != -1 ? 6 : -1));
}

/* Fork a helper on the kept socket end and directories. YX_OK or YX_E_IO. */
static int
priv_spawn(void)
{
	pid_t pid, self = getpid();

	if ((pid = fork()) == -1)
		return YX_E_IO;
	if (pid == 0) {
		close(priv.fd);
		priv_child(priv.cfg, priv.srv, priv.tfd, priv.pfd, priv.sfd, self);
	}
	priv.pid = pid;
	priv.owner = self;
	if (priv.live != NULL)
		atomic_store(&priv.live->pid, (int32_t)pid);
	log_info("started privileged helper pid %ld", (long)pid);
	return YX_OK;
}

int
yx_priv_start(const struct yx_config *cfg, struct yx_errctx *err)
{
	return priv_start(cfg, true, err);
}

/* Close the kept descriptors (the helper's end, its directories). */
static void
priv_close_kept(void)
{
	int *fds[] = { &priv.srv, &priv.tfd, &priv.pfd, &priv.sfd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] != -1)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int
priv_start(const struct yx_config *cfg, bool drop, struct yx_errctx *err)
{
	char	path[PATH_MAX];
	int	sv[2] = { -1, -1 }, rc = YX_OK;

	if (priv.fd != -1)
		return YX_OK;
	if (!priv_capable()) {
		if (cfg->thread_disk_quota > 0)
			rc = yx_fail(err, YX_E_FORBIDDEN, "%s",
			    "YUXI_THREAD_DISK_QUOTA needs CAP_SYS_ADMIN (root, "
			    "or granted to the service)");
		else if (cfg->pool_size > 0)
			rc = yx_fail(err, YX_E_FORBIDDEN, "%s",
			    "YUXI_POOL_SIZE needs CAP_SYS_ADMIN (root, or "
			    "granted to the service)");
		return rc;
	}
	if (cfg->thread_disk_quota > 0 && cfg->disk_fs == YX_DISK_FS_BTRFS &&
	    access(YX_MKFS_BTRFS, X_OK) == -1)
		return yx_fail(err, YX_E_FORBIDDEN,
		    "YUXI_THREAD_DISK_FS=btrfs needs %s (btrfs-progs)", YX_MKFS_BTRFS);
	priv.cfg = cfg;
	if (cfg->pool_size > 0) {
		/* the pool root: a shared mount, so that binds made below it
		 * later reach the running boxes (docs/design.md §2 "Pool") */
		if (snprintf(path, sizeof(path), "%s/%s", cfg->saves_dir,
			YX_PRIV_POOL_DIR) >= (int)sizeof(path)) {
			rc = yx_fail(err, YX_E_IO, "pool directory name too long");
			goto done;
		}
		if ((rc = priv_pool_prepare(path, &priv.pfd, err)) != YX_OK)
			goto done;
		if (cfg->skills_dir[0] != '\0')
			priv.sfd = open(cfg->skills_dir,
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (snprintf(path, sizeof(path), "%s/threads", cfg->saves_dir) >=
		(int)sizeof(path) ||
	    (priv.tfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
		-1) {
		rc = yx_fail(err, YX_E_IO, "privileged helper: cannot open %s",
		    path);
		goto done;
	}
	if (priv.live == NULL &&
	    (priv.live = mmap(NULL, sizeof(*priv.live), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		priv.live = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		rc = yx_fail(err, YX_E_IO, "privileged helper: %s", strerror(errno));
		goto done;
	}
	priv.fd = sv[0];
	priv.srv = sv[1];
	sv[0] = sv[1] = -1;
	if (priv_spawn() != YX_OK) {
		rc = yx_fail(err, YX_E_IO, "privileged helper: %s", strerror(errno));
		goto done;
	}
	if (drop && priv_drop_sys_admin(true) != YX_OK) {
		yx_priv_stop();
		rc = yx_fail(err, YX_E_IO, "cannot drop CAP_SYS_ADMIN");
	}
done:
	if (rc != YX_OK && priv.pid <= 0) {
		if (priv.fd != -1)
			close(priv.fd);
		priv.fd = -1;
		priv_close_kept();
	}
	return rc;
}

pid_t
yx_priv_pid(void)
{
	return priv.owner == getpid() ? priv.pid : 0;
}

int
yx_priv_respawn(void)
{
	if (priv.owner != getpid() || priv.srv == -1 || priv.pid > 0)
		return YX_E_BACKEND_UNAVAILABLE;
	return priv_spawn();
}

void
yx_priv_exited(pid_t pid)
{
	if (priv.owner != getpid() || pid != priv.pid || pid <= 0)
		return;
	priv.pid = 0;
	if (priv.live != NULL) {
		atomic_store(&priv.live->down_ms, yx_mono_ms());
		atomic_store(&priv.live->pid, 0);
	}
}

/* Is there no helper, and none for PRIV_DOWN_MS already? */
static bool
priv_gone(void)
{
	return priv.live != NULL && atomic_load(&priv.live->pid) == 0 &&
	    yx_mono_ms() - atomic_load(&priv.live->down_ms) >= PRIV_DOWN_MS;
}

void
yx_priv_child_drop(void)
{
	priv_close_kept();
	priv.pid = 0;
	priv.owner = 0;
	(void)priv_drop_sys_admin(false);
}

void
yx_priv_stop(void)
{
	int64_t	deadline;
	pid_t	r;

	if (priv.fd != -1)
		close(priv.fd);
	priv.fd = -1;
	if (priv.owner == getpid())
		priv_close_kept();
	if (priv.pid <= 0 || priv.owner != getpid())
		return;
	/* EOF ends it unless workers still hold the socket: signal too */
	kill(priv.pid, SIGTERM);
	deadline = yx_mono_ms() + PRIV_STOP_MS;
	while ((r = waitpid(priv.pid, NULL, WNOHANG)) == 0 &&
	    yx_mono_ms() < deadline)
		(void)poll(NULL, 0, 10);
	if (r == 0) {
		kill(priv.pid, SIGKILL);
		(void)waitpid(priv.pid, NULL, 0);
	}
	/* r == -1 (ECHILD): the master's own reap loop got it first */
	priv.pid = 0;
}

void
yx_priv_child_sever(void)
{
	yx_priv_child_drop();
	yx_priv_stop();
}

bool
yx_priv_running(void)
{
	return priv.fd != -1;
}

/* Wait until fd is ready for `events`, at most until deadline. */
static bool
priv_poll(int fd, short events, int64_t deadline)
{
	struct pollfd	pfd;
	int64_t		left;
	int		n;

	for (;;) {
		if ((left = deadline - yx_mono_ms()) <= 0 || priv_gone())
			return false;
		if (left > PRIV_TICK_MS)
			left = PRIV_TICK_MS;	/* to look whether a helper runs */
		pfd.fd = fd;
		pfd.events = events;
		pfd.revents = 0;
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			return true;
		if (n == -1 && errno != EINTR)
			return false;
	}
}

/* Send rq with the reply socket rfd over the shared socket. 0 or errno. */
static int
priv_send(const struct priv_req *rq, int rfd, int64_t deadline)
{
	for (;;) {
		if (yx_sock_send_fd(priv.fd, rq, sizeof(*rq), rfd,
			MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(*rq))
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return errno;
		if (!priv_poll(priv.fd, POLLOUT, deadline))
			return ETIMEDOUT;
	}
}

/* See priv_int.h. */
int
priv_call(struct priv_req *rq, struct priv_rep *rep, struct yx_errctx *err)
{
	int64_t	deadline = yx_mono_ms() + YX_PRIV_TIMEOUT_MS;
	ssize_t	n;
	int	sp[2] = { -1, -1 }, en, rc;

	memset(rep, 0, sizeof(*rep));
	if (priv.fd == -1 || priv_gone())
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the privileged helper is not running");
	rq->magic = PRIV_MAGIC;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1) {
		rc = yx_fail(err, yx_err_from_errno(errno), "socketpair");
		goto done;
	}
	if ((en = priv_send(rq, sp[1], deadline)) != 0) {
		log_warnx("privileged helper: send: %s", strerror(en));
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the privileged helper does not answer");
		goto done;
	}
	close(sp[1]);	/* the helper holds the other end now */
	sp[1] = -1;
	n = -1;
	if (priv_poll(sp[0], POLLIN, deadline))
		n = recv(sp[0], rep, sizeof(*rep), MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(*rep) || rep->magic != PRIV_MAGIC ||
	    rep->rc < 0 || rep->rc >= YX_E__COUNT) {
		log_warnx("privileged helper: no answer to request %u",
		    (unsigned)rq->op);
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the privileged helper does not answer");
		goto done;
	}
	rep->msg[sizeof(rep->msg) - 1] = '\0';
	rc = rep->rc;
	if (rc != YX_OK)
		(void)yx_fail(err, rc, "%s",
		    rep->msg[0] != '\0' ? rep->msg : yx_strerror(rc));
done:
	if (sp[0] != -1)
		close(sp[0]);
	if (sp[1] != -1)
		close(sp[1]);
	return rc;
}

/* A request for `name`; YX_E_BAD_REQUEST when it cannot be one. */
static int
priv_req_init(struct priv_req *rq, enum priv_op op, const char *name,
    struct yx_errctx *err)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = op;
	if (!priv_name_valid(name))
		return yx_fail(err, YX_E_BAD_REQUEST, "invalid thread directory name");
	memcpy(rq->name, name, strlen(name) + 1);
	return YX_OK;
}

int
yx_priv_create_image(const char *name, int64_t size, unsigned uid,
    unsigned gid, struct yx_errctx *err)
{
	return yx_priv_create_image_fs(name, size, uid, gid, YX_DISK_FS_EXT4, err);
}

int
yx_priv_create_image_fs(const char *name, int64_t size, unsigned uid,
    unsigned gid, enum yx_disk_fs fs, struct yx_errctx *err)
{
	struct priv_req	rq;
	struct priv_rep	rep;
	int		rc;

	if ((rc = priv_req_init(&rq, PRIV_CREATE_IMAGE, name, err)) != YX_OK)
		return rc;
	rq.size = size > 0 ? (uint64_t)size : 0;
	rq.uid = uid;
	rq.gid = gid;
	rq.fs = (uint32_t)fs;
	return priv_call(&rq, &rep, err);
}

/* A request that names only a directory. */
static int
priv_simple(enum priv_op op, const char *name, struct priv_rep *rep,
    struct yx_errctx *err)
{
	struct priv_req	rq;
	int		rc;

	if ((rc = priv_req_init(&rq, op, name, err)) != YX_OK)
		return rc;
	return priv_call(&rq, rep, err);
}

int
yx_priv_mount(const char *name, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_simple(PRIV_MOUNT, name, &rep, err);
}

int
yx_priv_unmount(const char *name, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_simple(PRIV_UNMOUNT, name, &rep, err);
}

int
yx_priv_remove(const char *name, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_simple(PRIV_REMOVE, name, &rep, err);
}

int
yx_priv_usage(const char *name, struct yx_priv_usage *u, struct yx_errctx *err)
{
	struct priv_rep	rep;
	int		rc;

	memset(u, 0, sizeof(*u));
	if ((rc = priv_simple(PRIV_USAGE, name, &rep, err)) == YX_OK)
		*u = rep.usage;
	return rc;
}

/* A pool request: `name` (thread id, skill or NULL) for box `box`. */
static int
priv_pool_call(enum priv_op op, const char *name, const char *box,
    struct yx_errctx *err)
{
	struct priv_req	rq;
	struct priv_rep	rep;

	memset(&rq, 0, sizeof(rq));
	rq.op = op;
	if (box == NULL || !priv_box_name_valid(box))
		return yx_fail(err, YX_E_BAD_REQUEST, "invalid pool box name");
	if (name != NULL && strlen(name) > PRIV_NAME_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST, "name too long");
	if (name != NULL)
		memcpy(rq.name, name, strlen(name) + 1);
	memcpy(rq.arg, box, strlen(box) + 1);
	return priv_call(&rq, &rep, err);
}

int
yx_priv_pool_bind(const char *thread_id, const char *box,
    struct yx_errctx *err)
{
	if (thread_id == NULL ||
	    !yx_thread_id_valid(thread_id, strlen(thread_id)))
		return yx_fail(err, YX_E_BAD_REQUEST, "invalid thread id");
	return priv_pool_call(PRIV_POOL_BIND, thread_id, box, err);
}

int
yx_priv_pool_skill(const char *skill, const char *box, struct yx_errctx *err)
{
	if (skill == NULL || !priv_skill_name_valid(skill))
		return yx_fail(err, YX_E_BAD_REQUEST, "invalid skill name");
	return priv_pool_call(PRIV_POOL_SKILL, skill, box, err);
}

int
yx_priv_pool_clear(const char *box, struct yx_errctx *err)
{
	return priv_pool_call(PRIV_POOL_CLEAR, NULL, box, err);
}

int
yx_priv_pool_unbind(const char *box, struct yx_errctx *err)
{
	return priv_pool_call(PRIV_POOL_UNBIND, NULL, box, err);
}

bool
yx_priv_snap_id_valid(const char *sid)
{
	return priv_snap_id_valid(sid);
}

/* A snapshot request: thread directory `name`, snapshot `sid` (NULL: none). */
static int
priv_snap_call(enum priv_op op, const char *name, const char *sid,
    struct priv_rep *rep, struct yx_errctx *err)
{
	struct priv_req	rq;
	int		rc;

	if ((rc = priv_req_init(&rq, op, name, err)) != YX_OK)
		return rc;
	if (sid != NULL) {
		if (!priv_snap_id_valid(sid))
			return yx_fail(err, YX_E_BAD_REQUEST, "invalid snapshot id");
		memcpy(rq.arg, sid, strlen(sid) + 1);
	}
	return priv_call(&rq, rep, err);
}

int
yx_priv_snap_create(const char *name, const char *sid, struct yx_priv_snap *out,
    struct yx_errctx *err)
{
	struct priv_rep	rep;
	int		rc;

	if ((rc = priv_snap_call(PRIV_SNAP_CREATE, name, sid, &rep, err)) == YX_OK &&
	    out != NULL)
		*out = rep.snap;
	return rc;
}

int
yx_priv_snap_delete(const char *name, const char *sid, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_snap_call(PRIV_SNAP_DELETE, name, sid, &rep, err);
}

int
yx_priv_snap_restore(const char *name, const char *sid, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_snap_call(PRIV_SNAP_RESTORE, name, sid, &rep, err);
}

int
yx_priv_snap_info(const char *name, const char *sid, struct yx_priv_snap *out,
    struct yx_errctx *err)
{
	struct priv_rep	rep;
	int		rc;

	memset(out, 0, sizeof(*out));
	if ((rc = priv_snap_call(PRIV_SNAP_INFO, name, sid, &rep, err)) == YX_OK)
		*out = rep.snap;
	return rc;
}

int
yx_priv_snap_list(const char *name, char *buf, size_t len, struct yx_errctx *err)
{
	struct priv_rep	rep;
	int		rc;

	if (len > 0)
		buf[0] = '\0';
	if ((rc = priv_snap_call(PRIV_SNAP_LIST, name, NULL, &rep, err)) == YX_OK) {
		rep.list[sizeof(rep.list) - 1] = '\0';
		if (strlen(rep.list) >= len)
			return yx_fail(err, YX_E_INTERNAL, "snapshot list too long");
		memcpy(buf, rep.list, strlen(rep.list) + 1);
	}
	return rc;
}

int
yx_priv_tx_begin(const char *name, enum yx_priv_kind *kind, struct yx_errctx *err)
{
	struct priv_rep	rep;
	int		rc;

	if ((rc = priv_snap_call(PRIV_TX_BEGIN, name, NULL, &rep, err)) == YX_OK)
		*kind = (enum yx_priv_kind)rep.snap.kind;
	return rc;
}

int
yx_priv_tx_unmount(const char *name, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_snap_call(PRIV_TX_UNMOUNT, name, NULL, &rep, err);
}

int
yx_priv_tx_clean(const char *name, struct yx_errctx *err)
{
	struct priv_rep rep;

	return priv_snap_call(PRIV_TX_CLEAN, name, NULL, &rep, err);
}
