/* SPDX-License-Identifier: MIT */
/*
 * yuxi/priv.h - the privileged helper (docs/design.md §8 "Privileges").
 *
 * One small process keeps CAP_SYS_ADMIN. The master forks it before any
 * worker (yx_priv_start); from then on the master and everything it forks
 * later (workers, reaper) run without CAP_SYS_ADMIN in their effective,
 * permitted, inheritable, ambient and bounding sets: they cannot mount,
 * and no program they exec gets it back. What needs the capability - a
 * thread's disk image (YUXI_THREAD_DISK_QUOTA) made, loop-mounted on its
 * user-data, unmounted and removed - they ask the helper for, over a
 * SOCK_SEQPACKET socketpair inherited across fork.
 *
 * Protocol (src/priv/priv_int.h): one fixed-size request per message, each
 * carrying a fresh socket (SCM_RIGHTS) on which the helper writes its one
 * reply. Callers in different processes share the helper's socket but
 * never see each other's replies, and a caller that dies mid-request
 * leaves nothing in it. The helper serves one request at a time.
 *
 * Names: a request names one directory of <saves>/threads, never a path:
 * a thread id (yx_thread_id_valid) or one of the store's hidden
 * temporaries and tombstones (".tmp-<hex>", ".trash-<hex>[-<uid>]"). The
 * helper checks the name, opens it beneath <saves>/threads with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV), requires a directory of its own user, and acts only on
 * YX_PRIV_IMAGE (a regular file of its own user, one link) and user-data/
 * beneath it, both reached the same way; mount(2) and umount2(2) get the
 * opened directory as /proc/self/fd/N, so no path is resolved twice.
 *
 * The image is a sparse file formatted ext4 by mke2fs (fixed argv, clean
 * environment), no reserved blocks, its root owned by the thread's uid;
 * attached to a loop device (LOOP_CTL_GET_FREE, LOOP_CONFIGURE with
 * autoclear: the device goes with the last user of the filesystem) and
 * mounted nosuid,nodev (not noexec: commands run scripts and programs from
 * the workspace, as without a quota) with discard, so space freed inside
 * goes back to the host. An image is never attached twice: a mount first
 * tries the loop device the helper last attached it to (named in the
 * image's trusted.yuxi.loop xattr, checked with LOOP_GET_STATUS64), which
 * may still be held by a sandbox after the host mount went.
 *
 * The helper dies with the master (PR_SET_PDEATHSIG) and when every
 * client end of its socket is closed. When it dies otherwise (killed, a
 * crash), the master starts another on the same socket (yx_priv_respawn,
 * with a backoff): the master keeps CAP_SYS_ADMIN in its permitted set
 * for that, never effective and out of the bounding set, and every other
 * child drops it from the permitted set at once (yx_priv_child_drop).
 * Meanwhile the requests answer YX_E_BACKEND_UNAVAILABLE.
 *
 * Ownership: the client state is process-wide (the inherited socket);
 * nothing is allocated. Messages put in errctx are safe for API callers
 * (no host paths).
 */
#ifndef YUXI_PRIV_H
#define YUXI_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/error.h"

/* The image's name in the thread's directory, beside user-data/. */
#define YX_PRIV_IMAGE	"user-data.img"

/* A mounted image's filesystem figures (statfs). */
struct yx_priv_usage {
	uint64_t	size;		/* bytes of the filesystem */
	uint64_t	used;		/* bytes in use */
	uint64_t	avail;		/* bytes a sandbox can still write */
	uint64_t	files;		/* inodes */
	uint64_t	files_free;
};

/*
 * Snapshots and transaction layers (docs/design.md §10). A thread whose
 * image is btrfs (YUXI_THREAD_DISK_FS=btrfs) has the image's top level
 * mounted at <thread>/YX_PRIV_VOL (the service's, 0700, never in a
 * container) holding the subvolume live/ (bound on user-data), read-only
 * snapshots snap/<sid> and a transaction's layer tx/ (base: a read-only
 * snapshot of live at its start, upper/ and work/ of an overlay). A
 * thread without an image keeps its transaction's layer in <thread>/tx
 * (upper over the live user-data). Either way the overlay is mounted on
 * <thread>/YX_PRIV_TXM, which the transaction's container binds.
 */
#define YX_PRIV_VOL		"vol"
#define YX_PRIV_TXM		"txm"
#define YX_PRIV_TXDIR		"tx"
#define YX_PRIV_SNAP_ID_LEN	17	/* "s" + 16 lowercase hex */
#define YX_PRIV_SNAP_ID_SIZE	(YX_PRIV_SNAP_ID_LEN + 1)
#define YX_PRIV_SNAP_LIST	(1100 * (YX_PRIV_SNAP_ID_LEN + 1))

/* The kind of a thread's storage (yx_priv_tx_begin). */
enum yx_priv_kind {
	YX_PRIV_PLAIN = 1,	/* a directory on the saves filesystem */
	YX_PRIV_BTRFS,		/* a btrfs image: snapshots */
};

struct yx_priv_snap {
	uint64_t	excl;		/* bytes only this snapshot holds
					 * (qgroup, as of the last commit) */
	int64_t		otime;		/* created, unix seconds */
	uint32_t	kind;		/* enum yx_priv_kind */
};

/* Is sid a snapshot id ("s" + 16 lowercase hex)? */
bool	yx_priv_snap_id_valid(const char *sid);
/* A read-only snapshot snap/<sid> of live (YX_E_UNSUPPORTED: the thread
 * has no btrfs image; YX_E_FILE_EXISTS). */
int	yx_priv_snap_create(const char *name, const char *sid,
    struct yx_priv_snap *out, struct yx_errctx *err);
/* Delete it (YX_E_NOT_FOUND when absent). */
int	yx_priv_snap_delete(const char *name, const char *sid,
    struct yx_errctx *err);
/* Make live a writable snapshot of snap/<sid> and bind it on user-data in
 * place of the old (one mount step: the new one beneath, the old taken
 * off); the old live is deleted. No sandbox may use the thread meanwhile
 * (the caller destroyed it). */
int	yx_priv_snap_restore(const char *name, const char *sid,
    struct yx_errctx *err);
/* Does snap/<sid> exist; its figures. YX_E_NOT_FOUND. */
int	yx_priv_snap_info(const char *name, const char *sid,
    struct yx_priv_snap *out, struct yx_errctx *err);
/* The snapshot ids, each followed by '\n', into buf. */
int	yx_priv_snap_list(const char *name, char *buf, size_t len,
    struct yx_errctx *err);
/* A transaction's layer: made and its overlay mounted on YX_PRIV_TXM
 * (YX_E_BUSY: one is there already; YX_E_UNSUPPORTED: an ext4 image). *kind
 * says where its directory is. */
int	yx_priv_tx_begin(const char *name, enum yx_priv_kind *kind,
    struct yx_errctx *err);
/* Unmount its overlay (YX_OK when none). */
int	yx_priv_tx_unmount(const char *name, struct yx_errctx *err);
/* Unmount and remove the layer (base, upper, work; the journal stays). */
int	yx_priv_tx_clean(const char *name, struct yx_errctx *err);

/*
 * Fork the helper for cfg->saves_dir (its threads/ must exist), then drop
 * CAP_SYS_ADMIN from this process. Without CAP_SYS_ADMIN (neither root
 * nor granted it) no helper starts: YX_OK when cfg->thread_disk_quota is
 * 0, else YX_E_FORBIDDEN naming YUXI_THREAD_DISK_QUOTA. YX_E_IO when the
 * helper cannot be started or the capability not dropped.
 */
int	yx_priv_start(const struct yx_config *cfg, struct yx_errctx *err);
/* Stop the helper this process started (bounded wait) and close the
 * client end; in other processes only close it. Idempotent. */
void	yx_priv_stop(void);
/* The master: the helper's pid (0: none, or not ours); yx_priv_exited
 * after waitpid() reaped pid; yx_priv_respawn starts another helper on the
 * same socket (YX_OK, YX_E_IO, or YX_E_BACKEND_UNAVAILABLE when this
 * process started none or one still runs). */
pid_t	yx_priv_pid(void);
void	yx_priv_exited(pid_t pid);
int	yx_priv_respawn(void);
/* In every child the master forks besides the helper, first thing: close
 * the helper's end and directories, drop CAP_SYS_ADMIN from the permitted
 * set for good (the client end stays: the child may ask the helper). */
void	yx_priv_child_drop(void);
/* Instead, in a child that must never reach the helper (one that parses
 * what sandboxes send: the egress proxy, the preview ingress; their
 * supervisors' yx_supervise enter()): yx_priv_child_drop(), then the
 * client end closed too (yx_priv_stop). */
void	yx_priv_child_sever(void);
/* Is there a helper to ask (started here, or inherited)? */
bool	yx_priv_running(void);
/*
 * What this process could mount, asked before yx_priv_start (priv_probe.c):
 * the YX_PROTECT_* bits (yuxi/config.h) this host can give - the pool with
 * CAP_SYS_ADMIN in init's mount namespace, the disk quota when loop
 * devices and the mkfs of fs (YUXI_THREAD_DISK_FS: mke2fs, mkfs.btrfs) are
 * there too - for yx_config_settle. What is missing goes into why (whylen
 * bytes, operator text; "" when nothing is).
 */
unsigned yx_priv_probe(enum yx_disk_fs fs, char *why, size_t whylen);

/*
 * The requests. `name` as above. Each returns YX_OK; YX_E_BACKEND_UNAVAILABLE
 * (no helper, or it did not answer within YX_PRIV_TIMEOUT_MS);
 * YX_E_BAD_REQUEST (a name, size or uid the helper refuses);
 * YX_E_NOT_FOUND (no such directory or image); YX_E_BUSY (something else
 * is mounted on user-data); YX_E_IO and errno-mapped errors otherwise.
 */
#define YX_PRIV_TIMEOUT_MS	120000

/* Create YX_PRIV_IMAGE (size bytes, rounded up to 4 KiB) in `name`, an
 * empty ext4 whose root belongs to uid:gid (both > 0). Never replaces. */
int	yx_priv_create_image(const char *name, int64_t size, unsigned uid,
    unsigned gid, struct yx_errctx *err);
/* The same with the filesystem of the image: ext4, or btrfs (snapshots). */
int	yx_priv_create_image_fs(const char *name, int64_t size, unsigned uid,
    unsigned gid, enum yx_disk_fs fs, struct yx_errctx *err);
/* Mount the image of `name` on its user-data/ (YX_OK when it already is). */
int	yx_priv_mount(const char *name, struct yx_errctx *err);
/* Unmount it (YX_OK when nothing is mounted there). */
int	yx_priv_unmount(const char *name, struct yx_errctx *err);
/* Unmount it and delete the image (YX_OK when there is none). */
int	yx_priv_remove(const char *name, struct yx_errctx *err);
/* Figures of the mounted image of `name`; YX_E_NOT_FOUND when not mounted. */
int	yx_priv_usage(const char *name, struct yx_priv_usage *u,
    struct yx_errctx *err);

/*
 * Pool (YUXI_POOL_SIZE; docs/design.md §2 "Pool"). With a pool configured,
 * yx_priv_start() first makes <saves>/pool a shared mount of its own. A
 * box is named YX_PRIV_BOX_PREFIX + YX_PRIV_BOX_HEX lowercase hex digits;
 * its directory <saves>/pool/<box>/ (the service's own, made by the
 * caller) holds user-data/ and skills/, which its container mounts with
 * rslave propagation. The helper opens the box beneath the pool root, the
 * thread beneath threads/ and a skill beneath the skills root, as above,
 * and makes each mount detached with its flags (nosuid, nodev; read-only
 * for skills) before attaching it, so the copies that propagate into the
 * container carry them.
 */
#define YX_PRIV_POOL_DIR	"pool"
#define YX_PRIV_BOX_PREFIX	"pool-"
#define YX_PRIV_BOX_HEX		16
#define YX_PRIV_BOX_UID		"uid"	/* <box>/uid: the box's own uid */
#define YX_PRIV_UID_MAX		((1u << 31) - 1)

/* Are the n bytes at s a box name? */
bool	yx_priv_box_name(const char *s, size_t n);
/*
 * A box's uid file, open as fd: "<uid>\n" (the newline optional), uid in
 * 1..YX_PRIV_UID_MAX. YX_OK with *uid; YX_E_BAD_REQUEST for anything else;
 * errno-mapped when it cannot be read. Written by yx_priv_uid_write.
 */
int	yx_priv_uid_read(int fd, unsigned *uid);
/* Create <dirfd>/uid for uid (0644, O_EXCL, not following a symlink). */
int	yx_priv_uid_write(int dirfd, unsigned uid);

/* Bind thread_id's user-data on <box>/user-data (YX_E_BUSY when something
 * is mounted there already). */
int	yx_priv_pool_bind(const char *thread_id, const char *box,
    struct yx_errctx *err);
/* Bind skill `skill` of the skills root, read-only, on <box>/skills/<skill>. */
int	yx_priv_pool_skill(const char *skill, const char *box,
    struct yx_errctx *err);
/* Unmount everything below <box> and remove its directory (YX_OK when
 * there is none). */
int	yx_priv_pool_clear(const char *box, struct yx_errctx *err);
/* Only unmount what is below <box>, keeping its directories: used by the
 * control of single use alone (YX_CONTROL_OFF=poolsingle). */
int	yx_priv_pool_unbind(const char *box, struct yx_errctx *err);

#endif /* YUXI_PRIV_H */
