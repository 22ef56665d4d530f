/* SPDX-License-Identifier: MIT */
/*
 * priv_int.h - private interfaces of the privileged helper (src/priv; the
 * contract is include/yuxi/priv.h): the wire format between the client
 * (priv.c) and the helper (priv_helper.c), and the disk-image primitives
 * the helper runs (priv_disk.c).
 *
 * Wire format: both messages are fixed-size structs in host byte order
 * (both ends are the same binary, forked). A request travels on the
 * shared SOCK_SEQPACKET socket with exactly one descriptor (SCM_RIGHTS):
 * the caller's end of a fresh socketpair, on which the reply comes back.
 */
#ifndef YUXI_PRIV_INT_H
#define YUXI_PRIV_INT_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

#include "yuxi/error.h"
#include "yuxi/priv.h"

#define PRIV_MAGIC	0x79787076u	/* "yxpv" */
#ifndef YX_MKFS_BTRFS			/* configure's, else Debian's */
#define YX_MKFS_BTRFS	"/sbin/mkfs.btrfs"
#endif
#define PRIV_NAME_MAX	160		/* bytes of a name, NUL excluded */
#define PRIV_MSG_MAX	200		/* bytes of a reply's message */

/* Bounds the helper enforces (the configuration's, checked again). */
#define PRIV_IMAGE_MIN	YX_DISK_QUOTA_MIN
#define PRIV_IMAGE_MAX	YX_DISK_QUOTA_MAX
#define PRIV_UID_MAX	YX_PRIV_UID_MAX

enum priv_op {
	PRIV_CREATE_IMAGE = 1,
	PRIV_MOUNT,
	PRIV_UNMOUNT,
	PRIV_REMOVE,
	PRIV_USAGE,
	PRIV_POOL_BIND,		/* name: thread id, arg: box */
	PRIV_POOL_SKILL,	/* name: skill, arg: box */
	PRIV_POOL_CLEAR,	/* arg: box */
	PRIV_POOL_UNBIND,	/* arg: box (control builds: mounts only) */
	PRIV_SNAP_CREATE,	/* name: thread dir, arg: snapshot id */
	PRIV_SNAP_DELETE,	/* ... */
	PRIV_SNAP_RESTORE,	/* ... */
	PRIV_SNAP_INFO,		/* ... */
	PRIV_SNAP_LIST,		/* name: thread dir; the ids in msg */
	PRIV_TX_BEGIN,		/* name: thread dir */
	PRIV_TX_UNMOUNT,	/* ... */
	PRIV_TX_CLEAN,		/* ... */
};

struct priv_req {
	uint32_t	magic;
	uint32_t	op;		/* enum priv_op */
	uint64_t	size;		/* CREATE_IMAGE: bytes */
	uint32_t	uid, gid;	/* CREATE_IMAGE: owner of the root */
	uint32_t	fs;		/* CREATE_IMAGE: enum yx_disk_fs */
	char		name[PRIV_NAME_MAX + 1];
	char		arg[PRIV_NAME_MAX + 1];	/* POOL_*: the box */
};

struct priv_rep {
	uint32_t		magic;
	int32_t			rc;		/* enum yx_err */
	struct yx_priv_usage	usage;		/* USAGE */
	struct yx_priv_snap	snap;		/* SNAP_INFO, SNAP_CREATE; TX_BEGIN:
						 * its kind */
	char			msg[PRIV_MSG_MAX];	/* caller-safe; "" = none */
	char			list[YX_PRIV_SNAP_LIST];	/* SNAP_LIST */
};

/* ---- priv.c -------------------------------------------------------------- */

/* yx_priv_start(), with drop false: this process keeps CAP_SYS_ADMIN
 * (the unit tests, which mount and clean up themselves). */
int	priv_start(const struct yx_config *cfg, bool drop,
    struct yx_errctx *err);
/*
 * One round trip of rq (magic set here, nothing else checked: the tests
 * send what the client never would). YX_OK or the helper's error, its
 * message in err; YX_E_BACKEND_UNAVAILABLE when there is no helper or it
 * did not answer within YX_PRIV_TIMEOUT_MS.
 */
int	priv_call(struct priv_req *rq, struct priv_rep *rep,
    struct yx_errctx *err);

/* ---- priv_helper.c ------------------------------------------------------- */

/*
 * The helper's life after fork: serve requests arriving on `sock` for the
 * thread directories beneath `threads_fd` (<saves>/threads) until every
 * client end is closed or a signal ends it. Returns the exit status.
 */
int	priv_helper_main(int sock, int threads_fd, int pool_fd, int skills_fd);
/* Is `name` a thread id or one of the store's hidden directory names? */
bool	priv_name_valid(const char *name);
/* Thread directory `name` beneath threads_fd (O_PATH), the service's own
 * and written by nobody else; fd, or -1 with the error in e. */
int	priv_thread_dir(int threads_fd, const char *name, struct yx_errctx *e);

/* ---- priv_pool.c: pool boxes' mounts (the box directory beneath pool_fd) */

bool	priv_box_name_valid(const char *name);
bool	priv_skill_name_valid(const char *name);
/* Make `path` (created when absent) a shared mount of its own; *fdp its
 * O_PATH descriptor. Run by the master at start, before the helper forks. */
int	priv_pool_prepare(const char *path, int *fdp, struct yx_errctx *e);
int	priv_pool_bind(int threads_fd, int pool_fd, const char *tid,
    const char *box, struct yx_errctx *e);
int	priv_pool_skill(int skills_fd, int pool_fd, const char *skill,
    const char *box, struct yx_errctx *e);
/* Unmount everything below the box and remove its directory (YX_OK also
 * when there is none). */
int	priv_pool_clear(int pool_fd, const char *box, struct yx_errctx *e);
/* Only unmount (the directories stay): the control of single use. */
int	priv_pool_unbind(int pool_fd, const char *box, struct yx_errctx *e);

/* ---- priv_disk.c: each takes the thread directory (O_PATH, checked) --- */

int	priv_image_create(int tfd, uint64_t size, unsigned uid, unsigned gid,
    bool btrfs, struct yx_errctx *e);
int	priv_image_mount(int tfd, const char *name, struct yx_errctx *e);
int	priv_image_unmount(int tfd, const char *name, struct yx_errctx *e);
int	priv_image_remove(int tfd, const char *name, struct yx_errctx *e);
int	priv_image_usage(int tfd, struct yx_priv_usage *u, struct yx_errctx *e);
/* Does the loop device open as fd have img as its backing file? */
bool	priv_loop_backs_fd(int fd, const struct stat *img);
/* Run the program at path (argv, a clean environment) with fd as its
 * descriptor 3, bounded in time; YX_OK when it exits 0, else YX_E_IO. */
int	priv_exec_on(const char *path, char *const argv[], int fd,
    struct yx_errctx *e);

/* ---- priv_snap.c: btrfs images, snapshots, transaction layers --------- */

/* Is the image open as fd formatted btrfs (its superblock's magic)? */
bool	priv_image_is_btrfs(int imgfd);
/* mkfs.btrfs on the loop device open as lfd, then the layout (live/ of
 * uid:gid, snap/, tx/) made on a mount of it at <tfd>/vol. */
int	priv_btrfs_format(int tfd, int lfd, const char *dev, unsigned uid,
    unsigned gid, struct yx_errctx *e);
/* Is the filesystem of fd (any descriptor of a mount's directory) a btrfs
 * on a loop device backed by img? */
bool	priv_btrfs_backed_by(int fd, const struct stat *img);
/* Mount the btrfs image (loop device dev) at vol/ and bind vol/live on
 * user-data (ufd, nothing mounted on it). */
int	priv_btrfs_mount(int tfd, int ufd, const char *dev, const char *name,
    const struct stat *img, struct yx_errctx *e);
/* Unmount user-data and vol/ when they are the image's (YX_OK when not
 * mounted). */
int	priv_btrfs_unmount(int tfd, const struct stat *img, const char *name,
     struct yx_errctx *e);
bool	priv_snap_id_valid(const char *sid);
int	priv_snap_op(int tfd, int op, const char *sid, struct priv_rep *rep,
     struct yx_errctx *e);
int	priv_tx_op(int tfd, int op, struct priv_rep *rep, struct yx_errctx *e);

/* Does this process hold CAP_SYS_ADMIN (effective)? (priv.c) */
bool	priv_capable(void);

#endif /* YUXI_PRIV_INT_H */
