/* SPDX-License-Identifier: MIT */
/*
 * exec_tx.c - a transactional command (docs/api.md "Transactions",
 * docs/design.md §10): its writes go to a private copy-on-write layer, and
 * they reach the thread's files only when it succeeded (commit_on_success)
 * and nothing it changed was changed live meanwhile; discard never applies
 * them. The caller holds the thread's transaction lock
 * (yx_thread_txlock).
 *
 * Steps: recover what a crash left (the journal, a layer, a container);
 * the privileged helper makes the layer (an overlay over a read-only
 * snapshot of live on a btrfs image, over the live directory otherwise)
 * and mounts it on <thread>/txm; a container of the thread's own settings
 * binds it at /home/yuxi/user-data (provider_tx.c: the thread's sandbox
 * keeps serving its other commands on the live files) and runs the
 * command through the runner (an engine exec); a second exec counts the
 * processes left in it (a background process: the layer is not applied);
 * the container goes, the overlay is unmounted, and the upper directory is
 * read: each entry is a change (a whiteout: deleted; an entry the lower
 * has: modified; else added; an opaque directory hides the lower's
 * children). Conflicts: a changed path whose live entry's ctime is at or
 * after the start (the ctime of a file touched then: the same clock and
 * granularity, so a change in the very tick before the start counts as
 * one too, never one after as none), a modified or deleted path gone
 * live, an added one made live.
 *
 * Commit, crash-safe with a journal <txdir>/journal (fsynced at each
 * step): every new file, link or directory tree is first written beside
 * its target in the live tree under a hidden temporary name and recorded
 * (P), every deletion recorded (D, with the type it must find); then the
 * line C marks the commit point; then the deletions and renames are done
 * in order and the journal removed. Recovery (yx_exec_tx_recover: before
 * the thread's next transaction, at start, by the reaper) finishes a
 * journal with C (each step is idempotent: a rename whose temporary is
 * gone is done, a deletion only removes the type recorded) and undoes one
 * without (the temporaries removed). So each file is old or new, never
 * mixed, and after recovery the whole commit is applied or not at all.
 * The control build's YX_TX_KILL_AT=N SIGKILLs the worker at step N (the
 * kill tests).
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <linux/fs.h>
#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/priv.h"
#include "yuxi/provider.h"
#include "yuxi/text.h"
#include "yuxi/tree.h"
#include "exec/exec_int.h"
#include "common/control_int.h"

#define TX_OPS_MAX	100000	/* changes one commit applies */
#define TX_DEPTH_MAX	256	/* directories deep the upper is read */
#define TX_JOURNAL	"journal"
#define TX_TMP		".yxtx-"
#define TX_PROCS_IDLE	3	/* init, the container's sleep, the counting sh */

/* One change. */
enum tx_kind { TX_ADDED,
	TX_MODIFIED,
	TX_DELETED };

struct tx_op {
	char		*rel;		/* beneath user-data; heap */
	enum tx_kind	 kind;
	char		 type;		/* 'f' file, 'd' dir, 'l' symlink, 'p' fifo */
	char		 was;		/* the lower's type ('\0': none) */
};

struct tx_ctx {
	struct yx_executor	*ex;
	struct exec_run		*run;
	const char		*tid;
	int			 tfd;		/* <saves>/threads/<tid>, O_PATH */
	int			 txd;		/* the layer's directory, readable */
	int			 up, lo;	/* upper, lower (readable) */
	int			 live;		/* user-data (readable) */
	enum yx_priv_kind	 kind;
	struct timespec		 t0;
	struct tx_op		*ops;
	size_t			 nops, cap;
	bool			 overflow;
	int			 step;		/* the kill tests' step counter */
};

/* openat2 beneath dirfd without symlinks; xdev: may cross a mount. */
static int
tx_openat(int dirfd, const char *name, int flags, mode_t mode, bool xdev)
{
	/* control: the naive open, symlinks on the way followed */
	if (YX_CONTROL_OFF("txresolve"))
		return openat(dirfd, name, flags | O_CLOEXEC, mode);
	return yx_openat_beneath(dirfd, name, flags, mode, xdev);
}

/* The kill tests (control build only): SIGKILL this process at step n. */
static void
tx_step(struct tx_ctx *c)
{
	c->step++;
#ifdef YX_CONTROL_UNSAFE
	{
		const char *s = getenv("YX_TX_KILL_AT");

		if (s != NULL && atoi(s) == c->step) {
			log_warnx("YX_TX_KILL_AT=%d: killed", c->step);
			(void)kill(getpid(), SIGKILL);
		}
	}
#endif
}

static char
tx_type(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' :
	    S_ISFIFO(m)			     ? 'p' :
	    S_ISREG(m)			     ? 'f' :
					       '?';
}

static const char *
tx_type_name(char t)
{
	return t == 'd' ? "dir" : t == 'l' ? "symlink" :
	    t == 'f'			   ? "file" :
	    t == 'p'			   ? "fifo" :
					     "other";
}

static int
tx_add(struct tx_ctx *c, const char *rel, enum tx_kind k, char type, char was)
{
	struct tx_op *n;

	if (c->nops == TX_OPS_MAX) {
		c->overflow = true;
		return YX_OK;
	}
	if (c->nops == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		if ((n = realloc(c->ops, c->cap * sizeof(*n))) == NULL)
			return YX_E_NOMEM;
		c->ops = n;
	}
	if ((c->ops[c->nops].rel = strdup(rel)) == NULL)
		return YX_E_NOMEM;
	c->ops[c->nops].kind = k;
	c->ops[c->nops].type = type;
	c->ops[c->nops].was = was;
	c->nops++;
	return YX_OK;
}

/* Is the upper directory ufd (readable) opaque (it hides the lower's)? */
static bool
tx_opaque(int ufd)
{
	char v[4];

	return fgetxattr(ufd, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

static void
tx_join(char *buf, size_t len, const char *rel, const char *name)
{
	snprintf(buf, len, "%s%s%s", rel, rel[0] != '\0' ? "/" : "", name);
}

/* A stream over a copy of directory fd (fd stays open); NULL (errno set). */
static DIR *
tx_opendir(int fd)
{
	DIR	*d;
	int	 cp;

	if ((cp = dup(fd)) == -1)
		return NULL;
	if ((d = fdopendir(cp)) == NULL)
		close(cp);
	return d;
}

/* The lower's entries an opaque upper directory hides: deleted. */
static int
tx_walk_hidden(struct tx_ctx *c, int ud, int ld, const char *rel)
{
	struct dirent	*de;
	struct stat	 us, ls;
	DIR		*d;
	char		 p[PATH_MAX];
	int		 rc = YX_OK;

	if ((d = tx_opendir(ld)) == NULL)
		return YX_E_IO;
	while (rc == YX_OK && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(ud, de->d_name, &us, AT_SYMLINK_NOFOLLOW) == 0 ||
		    fstatat(ld, de->d_name, &ls, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		tx_join(p, sizeof(p), rel, de->d_name);
		rc = tx_add(c, p, TX_DELETED, tx_type(ls.st_mode), tx_type(ls.st_mode));
	}
	closedir(d);
	return rc;
}

/*
 * The changes below upper directory ud and lower directory ld (-1: none
 * there) at rel. An added directory is one change (its tree goes in
 * whole); a directory both have is walked.
 */
static int
tx_walk(struct tx_ctx *c, int ud, int ld, const char *rel, int depth)
{
	struct dirent	*de;
	struct stat	 us, ls;
	DIR		*d;
	char		 p[PATH_MAX];
	bool		 opaque = tx_opaque(ud);
	int		 rc = YX_OK, u2, l2;

	if (depth > TX_DEPTH_MAX)
		return YX_E_BAD_REQUEST;
	if ((d = tx_opendir(ud)) == NULL)
		return YX_E_IO;
	while (rc == YX_OK && (de = readdir(d)) != NULL) {
		bool in_lower;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(ud, de->d_name, &us, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		tx_join(p, sizeof(p), rel, de->d_name);
		in_lower = ld != -1 && fstatat(ld, de->d_name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
		if (S_ISCHR(us.st_mode) && us.st_rdev == makedev(0, 0)) {	/* whiteout */
			if (in_lower)
				rc = tx_add(c, p, TX_DELETED, tx_type(ls.st_mode), tx_type(ls.st_mode));
			continue;
		}
		if (tx_type(us.st_mode) == '?')
			continue;	/* a socket or a device: not carried over */
		if (S_ISDIR(us.st_mode) && in_lower && S_ISDIR(ls.st_mode)) {
			u2 = tx_openat(ud, de->d_name, O_RDONLY | O_DIRECTORY, 0, false);
			l2 = tx_openat(ld, de->d_name, O_RDONLY | O_DIRECTORY, 0, false);
			if (u2 == -1)
				rc = YX_E_IO;
			else if ((us.st_mode & 07777) != (ls.st_mode & 07777) && tx_opaque(u2))
				rc = tx_add(c, p, TX_MODIFIED, 'd', 'd');
			if (rc == YX_OK && u2 != -1)
				rc = tx_walk(c, u2, l2, p, depth + 1);
			if (u2 != -1)
				close(u2);
			if (l2 != -1)
				close(l2);
			continue;
		}
		rc = tx_add(c, p, in_lower ? TX_MODIFIED : TX_ADDED, tx_type(us.st_mode),
		    in_lower ? tx_type(ls.st_mode) : '\0');
	}
	closedir(d);
	/* an opaque directory: the lower's entries it does not have are gone */
	if (rc == YX_OK && opaque && ld != -1)
		rc = tx_walk_hidden(c, ud, ld, rel);
	return rc;
}

/* The parent directory of rel in the live tree (readable) and the leaf. */
static int
tx_parent(int live, const char *rel, char *leaf, size_t len)
{
	const char	*slash = strrchr(rel, '/');
	char		 dir[PATH_MAX];

	if (slash == NULL) {
		snprintf(leaf, len, "%s", rel);
		return tx_openat(live, ".", O_RDONLY | O_DIRECTORY, 0, false);
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	snprintf(leaf, len, "%s", slash + 1);
	return tx_openat(live, dir, O_RDONLY | O_DIRECTORY, 0, false);
}

/* Was rel changed live since t0 (see the top)? */
static bool
tx_conflict(const struct tx_ctx *c, const struct tx_op *op)
{
	struct statx	stx;
	char		leaf[NAME_MAX + 1];
	int		pfd;
	bool		exists, changed;
	long long	ct, t0;

	if ((pfd = tx_parent(c->live, op->rel, leaf, sizeof(leaf))) == -1)
		return op->kind != TX_DELETED;	/* its directory went live */
	exists = statx(pfd, leaf, AT_SYMLINK_NOFOLLOW, STATX_CTIME | STATX_TYPE, &stx) == 0;
	close(pfd);
	if (!exists)
		return op->kind == TX_MODIFIED;	/* deleted live */
	if (op->kind == TX_ADDED)
		return true;			/* made live */
	ct = (long long)stx.stx_ctime.tv_sec * 1000000000LL + stx.stx_ctime.tv_nsec;
	t0 = (long long)c->t0.tv_sec * 1000000000LL + c->t0.tv_nsec;
	changed = ct >= t0;
	return changed;
}

/* ---- the journal ------------------------------------------------------- */

/* rel as hex (any byte a name may hold, on one line). */
static void
tx_hex(const char *s, char *out, size_t len)
{
	static const char	d[] = "0123456789abcdef";
	size_t			i, n = 0;

	for (i = 0; s[i] != '\0' && n + 3 < len; i++) {
		out[n++] = d[(unsigned char)s[i] >> 4];
		out[n++] = d[(unsigned char)s[i] & 15];
	}
	out[n] = '\0';
}

static int
tx_unhex(const char *s, char *out, size_t len)
{
	size_t	i, n = strlen(s);
	int	hi, lo;

	if (n % 2 != 0 || n / 2 >= len)
		return -1;
	for (i = 0; i < n / 2; i++) {
		hi = s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10;
		lo = s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10;
		if (hi < 0 || hi > 15 || lo < 0 || lo > 15 || (hi == 0 && lo == 0))
			return -1;
		out[i] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return 0;
}

/* Append a line to the journal, durably. */
static int
tx_jput(int jfd, const char *line)
{
	size_t n = strlen(line);

	if (write(jfd, line, n) != (ssize_t)n || fdatasync(jfd) == -1)
		return yx_err_from_errno(errno);
	return YX_OK;
}

/* Copy the regular file in (readable) into out: a clone when the
 * filesystem shares blocks (btrfs), else copied. */
static int
tx_copy_data(int in, int out)
{
	char	buf[65536];
	ssize_t	k;

	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	do
		k = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
	while (k > 0);
	if (k == 0)
		return 0;
	if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP)
		return -1;
	if (lseek(in, 0, SEEK_SET) == -1 || ftruncate(out, 0) == -1 ||
	    lseek(out, 0, SEEK_SET) == -1)
		return -1;
	while ((k = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)k) != k)
			return -1;
	return k < 0 ? -1 : 0;
}

/* Make name in dd a copy of entry name of sd (any type; a directory with
 * its tree), owned by uid:gid. 0 or -1. */
static int
tx_copy_entry(int sd, const char *sname, int dd, const char *dname, unsigned uid,
    unsigned gid, int depth)
{
	struct stat	 sb;
	struct dirent	*de;
	DIR		*d;
	char		 link[PATH_MAX];
	ssize_t		 n;
	int		 in = -1, out = -1, rc = -1;

	if (depth > TX_DEPTH_MAX || fstatat(sd, sname, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (S_ISLNK(sb.st_mode)) {
		if ((n = readlinkat(sd, sname, link, sizeof(link) - 1)) < 0)
			return -1;
		link[n] = '\0';
		return symlinkat(link, dd, dname) == 0 &&
			fchownat(dd, dname, uid, gid, AT_SYMLINK_NOFOLLOW) == 0 ?
		    0 :
		    -1;
	}
	if (S_ISFIFO(sb.st_mode))
		return mkfifoat(dd, dname, sb.st_mode & 0777) == 0 &&
			fchownat(dd, dname, uid, gid, AT_SYMLINK_NOFOLLOW) == 0 ?
		    0 :
		    -1;
	if (S_ISREG(sb.st_mode)) {
		if ((in = tx_openat(sd, sname, O_RDONLY | O_NONBLOCK, 0, false)) == -1 ||
		    (out = tx_openat(dd, dname, O_RDWR | O_CREAT | O_EXCL, 0600, false)) == -1 ||
		    tx_copy_data(in, out) == -1 || fchown(out, uid, gid) == -1 ||
		    fchmod(out, sb.st_mode & 01777) == -1)
			goto done;
		{
			struct timespec ts[2] = { sb.st_atim, sb.st_mtim };

			(void)futimens(out, ts);
		}
		rc = fsync(out);
		goto done;
	}
	if (!S_ISDIR(sb.st_mode))
		return 0;	/* a socket or a device: not carried over */
	if (mkdirat(dd, dname, 0700) == -1 ||
	    (in = tx_openat(sd, sname, O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
	    (out = tx_openat(dd, dname, O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
	    (d = tx_opendir(in)) == NULL)
		goto done;
	rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat es;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* an overlay whiteout in an opaque directory: nothing */
		if (fstatat(in, de->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISCHR(es.st_mode) && es.st_rdev == makedev(0, 0))
			continue;
		rc = tx_copy_entry(in, de->d_name, out, de->d_name, uid, gid, depth + 1);
	}
	closedir(d);
	if (rc == 0 && (fchown(out, uid, gid) == -1 || fchmod(out, sb.st_mode & 01777) == -1 || fsync(out) == -1))
		rc = -1;
done:
	if (out != -1)
		close(out);
	if (in != -1)
		close(in);
	return rc;
}

/* Remove the live entry leaf of pfd when its type is `type` ('d' or not). */
static void
tx_remove_typed(int pfd, const char *leaf, char type)
{
	struct stat sb;

	if (fstatat(pfd, leaf, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (type == 'd' && S_ISDIR(sb.st_mode))
		(void)yx_tree_remove(pfd, leaf);
	else if (type != 'd' && !S_ISDIR(sb.st_mode))
		(void)unlinkat(pfd, leaf, 0);
}

/* A journal line: 'P' (a temporary to put in place) or 'D' (a deletion),
 * the entry's type, its path (decoded) and, for 'P', the temporary. */
struct tx_jline {
	char	kind;
	char	t;
	int	fields;		/* sscanf's count: 3 with the temporary */
	char	rel[PATH_MAX];
	char	tmp[64];
};

/* The next 'P' or 'D' line of jf whose path decodes, into l; false at the
 * end. Other lines are passed over. */
static bool
tx_jline_next(FILE *jf, struct tx_jline *l)
{
	char line[2 * PATH_MAX + 64], a[2 * PATH_MAX];

	while (fgets(line, sizeof(line), jf) != NULL) {
		l->tmp[0] = '\0';	/* a line without it names none */
		if ((line[0] != 'P' && line[0] != 'D') || line[1] != ' ' ||
		    (l->fields = sscanf(line + 2, "%c %8191s %63s", &l->t, a, l->tmp)) < 2 ||
		    tx_unhex(a, l->rel, sizeof(l->rel)) == -1)
			continue;
		l->kind = line[0];
		return true;
	}
	return false;
}

/*
 * Carry out the journal open as jf from its first line on (the commit
 * point passed): deletions of the recorded type, renames of the
 * temporaries that are still there. Idempotent.
 */
static void
tx_apply(int live, FILE *jf, struct tx_ctx *c)
{
	struct tx_jline	l;
	char		leaf[NAME_MAX + 1];
	int		pfd;

	rewind(jf);
	while (tx_jline_next(jf, &l)) {
		if ((pfd = tx_parent(live, l.rel, leaf, sizeof(leaf))) == -1)
			continue;
		if (l.kind == 'D')
			tx_remove_typed(pfd, leaf, l.t);
		else if (strncmp(l.tmp, TX_TMP, strlen(TX_TMP)) == 0 &&
		    faccessat(pfd, l.tmp, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			if (l.t == 'd')	/* a directory is not renamed over */
				tx_remove_typed(pfd, leaf, 'd');
			(void)renameat(pfd, l.tmp, pfd, leaf);
		}
		close(pfd);
		if (c != NULL)
			tx_step(c);
	}
	(void)fsync(live);
}

/* Undo a journal without its commit point: the temporaries removed. */
static void
tx_undo(int live, FILE *jf)
{
	struct tx_jline	l;
	char		leaf[NAME_MAX + 1];
	int		pfd;

	rewind(jf);
	while (tx_jline_next(jf, &l)) {
		if (l.kind != 'P' || l.fields != 3 ||
		    strncmp(l.tmp, TX_TMP, strlen(TX_TMP)) != 0 ||
		    (pfd = tx_parent(live, l.rel, leaf, sizeof(leaf))) == -1)
			continue;
		tx_remove_typed(pfd, l.tmp, l.t == 'd' ? 'd' : 'f');
		close(pfd);
	}
}

/* Finish or undo the journal of layer directory txd over live. true when
 * there was one. */
static bool
tx_journal_recover(int txd, int live, const char *tid)
{
	char	 line[64];
	bool	 done = false;
	FILE	*jf;
	int	 fd;

	if ((fd = tx_openat(txd, TX_JOURNAL, O_RDONLY, 0, false)) == -1)
		return false;
	if ((jf = fdopen(fd, "r")) == NULL) {
		close(fd);
		return false;
	}
	while (fgets(line, sizeof(line), jf) != NULL)
		if (strcmp(line, "C\n") == 0)
			done = true;
	if (done)
		tx_apply(live, jf, NULL);
	else
		tx_undo(live, jf);
	fclose(jf);
	(void)unlinkat(txd, TX_JOURNAL, 0);
	(void)fsync(txd);
	log_info("thread %s: interrupted commit %s", tid, done ? "finished" : "undone");
	return true;
}

/*
 * The commit of c->ops (conflicts checked by the caller): temporaries and
 * the journal, the commit point, the renames and deletions.
 */
static int
tx_commit(struct tx_ctx *c, struct yx_errctx *err)
{
	char	 line[2 * PATH_MAX + 128], hex[2 * PATH_MAX + 1], leaf[NAME_MAX + 1], tmp[64];
	char	 uleaf[NAME_MAX + 1];
	FILE	*jf = NULL;
	size_t	 i;
	int	 jfd, pfd, ufd, rc = YX_OK;

	jfd = tx_openat(c->txd, TX_JOURNAL, O_RDWR | O_CREAT | O_TRUNC, 0600, false);
	if (jfd == -1)
		return yx_fail(err, yx_err_from_errno(errno), "transaction journal");
	if ((rc = tx_jput(jfd, "yxtx 1\n")) != YX_OK)
		goto fail;
	tx_step(c);
	for (i = 0; i < c->nops && rc == YX_OK; i++) {
		const struct tx_op *op = &c->ops[i];

		if (i > 0)
			tx_step(c);	/* between two changes */
		tx_hex(op->rel, hex, sizeof(hex));
		if (op->kind == TX_DELETED || (op->was != '\0' && (op->was == 'd') != (op->type == 'd'))) {
			/* a deletion, or a type that changes: the old one goes */
			snprintf(line, sizeof(line), "D %c %s\n", op->was == 'd' ? 'd' : 'f', hex);
			if ((rc = tx_jput(jfd, line)) != YX_OK)
				break;
		}
		/* a directory both have: its entries are changes of their own */
		if (op->kind == TX_DELETED ||
		    (op->kind == TX_MODIFIED && op->type == 'd' && op->was == 'd'))
			continue;
		if ((pfd = tx_parent(c->live, op->rel, leaf, sizeof(leaf))) == -1) {
			rc = yx_fail(err, YX_E_IO, "a directory of the change is gone");
			break;
		}
		/* the upper's side by descriptor too: no symlink on the way */
		if ((ufd = tx_parent(c->up, op->rel, uleaf, sizeof(uleaf))) == -1) {
			close(pfd);
			rc = yx_fail(err, YX_E_IO, "the transaction's layer");
			break;
		}
		yx_hidden_name(tmp, sizeof(tmp), TX_TMP);
		snprintf(line, sizeof(line), "P %c %s %s\n", op->type, hex, tmp);
		/* recorded first: an undo finds a temporary half written */
		if ((rc = tx_jput(jfd, line)) == YX_OK &&
		    tx_copy_entry(ufd, uleaf, pfd, tmp, c->run->uid, c->run->gid, 0) == -1)
			rc = yx_fail(err, errno == ENOSPC || errno == EDQUOT ? YX_E_QUOTA_EXCEEDED : YX_E_IO,
			    "cannot write the changes: %s", strerror(errno));
		close(ufd);
		close(pfd);
	}
	if (rc != YX_OK)
		goto fail;
	tx_step(c);	/* all written, not committed */
	if ((rc = tx_jput(jfd, "C\n")) != YX_OK)
		goto fail;
	tx_step(c);	/* committed, nothing applied */
	if ((jf = fdopen(jfd, "r")) == NULL) {
		rc = YX_E_NOMEM;
		goto fail;
	}
	jfd = -1;
	tx_apply(c->live, jf, c);
	fclose(jf);
	(void)unlinkat(c->txd, TX_JOURNAL, 0);
	(void)fsync(c->txd);
	return YX_OK;
fail:
	/* not committed: undone at once */
	if (jfd != -1 && (jf = fdopen(jfd, "r")) != NULL) {
		tx_undo(c->live, jf);
		fclose(jf);
	} else if (jfd != -1)
		close(jfd);
	(void)unlinkat(c->txd, TX_JOURNAL, 0);
	return rc;
}

/* ---- the reply's fields --------------------------------------------- */

#define TX_CHANGES_SHOWN	1000

static int
tx_fields(struct tx_ctx *c, bool applied, bool background, const bool *conflict,
    size_t nconflict, const char *why, struct yx_buf *b)
{
	char	vp[PATH_MAX + 64];
	size_t	i, shown = 0;
	int	rc;

	if ((rc = yx_buf_printf(b, "\"applied\":%s,", applied ? "true" : "false")) != YX_OK ||
	    (why != NULL && (rc = yx_buf_printf(b, "\"not_applied\":\"%s\",", why)) != YX_OK) ||
	    (rc = yx_buf_puts(b, "\"changes\":[")) != YX_OK)
		return rc;
	for (i = 0; i < c->nops && shown < TX_CHANGES_SHOWN && rc == YX_OK; i++, shown++) {
		const struct tx_op *op = &c->ops[i];

		snprintf(vp, sizeof(vp), "%s/%s", YX_VROOT_USER_DATA, op->rel);
		rc = yx_buf_printf(b, "%s{\"path\":", shown > 0 ? "," : "");
		if (rc == YX_OK)
			rc = yx_json_str_append(b, vp, strlen(vp));
		if (rc == YX_OK)
			rc = yx_buf_printf(b, ",\"change\":\"%s\",\"type\":\"%s\"}",
			    op->kind == TX_ADDED	   ? "added" :
				op->kind == TX_MODIFIED ? "modified" :
							  "deleted",
			    tx_type_name(op->type));
	}
	if (rc == YX_OK)
		rc = yx_buf_printf(b, "],\"changes_total\":%zu%s", c->nops,
		    c->overflow ? ",\"changes_overflow\":true" : "");
	if (rc == YX_OK && background)
		rc = yx_buf_puts(b, ",\"background_killed\":true");
	if (rc == YX_OK && nconflict > 0) {
		rc = yx_buf_puts(b, ",\"conflicts\":[");
		for (i = 0, shown = 0; i < c->nops && rc == YX_OK; i++) {
			if (!conflict[i] || shown >= TX_CHANGES_SHOWN)
				continue;
			snprintf(vp, sizeof(vp), "%s/%s", YX_VROOT_USER_DATA, c->ops[i].rel);
			if ((rc = yx_buf_puts(b, shown++ > 0 ? "," : "")) == YX_OK)
				rc = yx_json_str_append(b, vp, strlen(vp));
		}
		if (rc == YX_OK)
			rc = yx_buf_puts(b, "]");
	}
	return rc;
}

/* ---- the run ----------------------------------------------------------- */

/* Why a transaction was not applied, in a word the reply carries. */
static const char *
tx_why(const struct yx_exec_request *req, const struct yx_exec_result *res,
    bool background, bool overflow, size_t nconflict)
{
	if (req->tx == YX_TX_DISCARD)
		return "discard";
	if (res->timed_out)
		return "timed_out";
	if (res->exit_code != 0)
		return "exit_code";
	if (background)
		return "background_process";
	if (overflow)
		return "too_many_changes";
	return nconflict > 0 ? "conflicts" : "exit_code";
}

/*
 * The start: the ctime the kernel gives a change now (the lock file of the
 * thread touched and read back), so that the conflict check compares
 * timestamps of the same clock and granularity. 0 or -1.
 */
static int
tx_t0(struct tx_ctx *c)
{
	struct statx stx;

	if (utimensat(c->tfd, "tx.lock", NULL, AT_SYMLINK_NOFOLLOW) == -1 ||
	    statx(c->tfd, "tx.lock", AT_SYMLINK_NOFOLLOW, STATX_CTIME, &stx) == -1)
		return -1;
	c->t0.tv_sec = stx.stx_ctime.tv_sec;
	c->t0.tv_nsec = stx.stx_ctime.tv_nsec;
	return 0;
}

static int
tx_discard(void *arg, const char *data, size_t len)
{
	int *n = arg;

	(void)len;
	*n = atoi(data);
	return YX_OK;
}

/* How many processes run in the container now (the counting shell too). */
static int
tx_procs(struct yx_executor *ex, const char *name, const struct exec_run *run)
{
	const char *argv[] = { "/bin/sh", "-c",
			  "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n", NULL };
	struct yx_exec_req	xr;
	struct yx_exec_result	res;
	int			n = 0;

	memset(&xr, 0, sizeof(xr));
	xr.argv = argv;
	xr.env = exec_prepare_env;
	xr.workdir = "/";
	xr.user = run->user;
	xr.timeout_sec = 10;
	xr.on_output = tx_discard;
	xr.arg = &n;
	if (ex->drv->ops->exec(ex->drv, name, &xr, &res, NULL) != YX_OK)
		return 0;
	log_debug("transaction container %s: %d processes", name, n);
	return n;
}

/* The layer's directories of thread tfd for kind (c->txd, c->up, c->lo). */
static int
tx_open_layer(struct tx_ctx *c)
{
	int vol = -1;

	if (c->kind == YX_PRIV_BTRFS) {
		if ((vol = tx_openat(c->tfd, YX_PRIV_VOL, O_RDONLY | O_DIRECTORY, 0, true)) == -1)
			return -1;
		c->txd = tx_openat(vol, YX_PRIV_TXDIR, O_RDONLY | O_DIRECTORY, 0, false);
		close(vol);
	} else
		c->txd = tx_openat(c->tfd, YX_PRIV_TXDIR, O_RDONLY | O_DIRECTORY, 0, false);
	if (c->txd == -1)
		return -1;
	c->up = tx_openat(c->txd, "upper", O_RDONLY | O_DIRECTORY, 0, false);
	c->lo = c->kind == YX_PRIV_BTRFS ?
	    tx_openat(c->txd, "base", O_RDONLY | O_DIRECTORY, 0, false) :
	    tx_openat(c->live, ".", O_RDONLY | O_DIRECTORY, 0, false);
	return c->up == -1 || c->lo == -1 ? -1 : 0;
}

static void
tx_ctx_fini(struct tx_ctx *c)
{
	size_t	i;
	int	*fds[] = { &c->tfd, &c->txd, &c->up, &c->lo, &c->live };

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] != -1) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	for (i = 0; i < c->nops; i++)
		free(c->ops[i].rel);
	free(c->ops);
}

/* Open the thread's directory and its live user-data into c. */
static int
tx_ctx_open(struct tx_ctx *c, const char *saves, const char *tid)
{
	char path[YX_CFG_PATH + 16];

	snprintf(path, sizeof(path), "%s/threads", saves);
	{
		int threads = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (threads == -1)
			return -1;
		c->tfd = tx_openat(threads, tid, O_PATH | O_DIRECTORY, 0, false);
		close(threads);
	}
	if (c->tfd == -1)
		return -1;
	c->live = tx_openat(c->tfd, "user-data", O_RDONLY | O_DIRECTORY, 0, true);
	return c->live == -1 ? -1 : 0;
}

int
yx_exec_tx_recover(struct yx_executor *ex, const char *tid)
{
	struct tx_ctx	c;
	char		name[YX_TX_NAME_MAX];
	int		vol, txd = -1;
	bool		had = false;

	memset(&c, 0, sizeof(c));
	c.tfd = c.txd = c.up = c.lo = c.live = -1;
	if (tx_ctx_open(&c, ex->cfg->saves_dir, tid) == -1) {
		tx_ctx_fini(&c);
		return YX_E_NOT_FOUND;
	}
	/* a journal in either place */
	if ((vol = tx_openat(c.tfd, YX_PRIV_VOL, O_RDONLY | O_DIRECTORY, 0, true)) != -1) {
		txd = tx_openat(vol, YX_PRIV_TXDIR, O_RDONLY | O_DIRECTORY, 0, false);
		close(vol);
	}
	if (txd != -1) {
		had |= tx_journal_recover(txd, c.live, tid);
		close(txd);
	}
	if ((txd = tx_openat(c.tfd, YX_PRIV_TXDIR, O_RDONLY | O_DIRECTORY, 0, false)) != -1) {
		had |= tx_journal_recover(txd, c.live, tid);
		close(txd);
	}
	yx_provider_tx_name(&ex->prov, tid, name, sizeof(name));
	(void)yx_provider_tx_remove(&ex->prov, name);
	(void)yx_priv_tx_clean(tid, NULL);
	tx_ctx_fini(&c);
	return had ? YX_OK : YX_E_NOT_FOUND;
}

/*
 * Run the command in the transaction's own container (provider_tx.c): the
 * thread's settings, uid and mounts, the overlay on txm as its user-data,
 * no agent, the runner through an engine exec; then count what is left
 * running and remove the container. YX_OK with *res and *background.
 */
static int
tx_container_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, int timeout, struct yx_exec_result *res, bool *background,
    struct yx_errctx *err)
{
	struct yx_container_info info;
	struct yx_acquire_req	 ar;
	struct exec_cmd		 cmd;
	struct exec_run		 norun = *run;
	struct yx_mount		 extra[16];
	const char *const	 sleep_argv[] = { "/bin/sleep", "3600", NULL };
	char			 name[YX_TX_NAME_MAX], txm[YX_CFG_PATH + 200];
	int			 rc;

	norun.rundir_fd = -1;	/* no agent directory, no agent */
	memset(&ar, 0, sizeof(ar));
	ar.thread_id = req->thread_id;
	ar.owner_user = req->owner;
	ar.agent_id = req->agent_id;
	snprintf(txm, sizeof(txm), "%s/threads/%s/" YX_PRIV_TXM, ex->cfg->saves_dir,
	    req->thread_id);
	ar.user_data_host = txm;
	ar.uid = run->uid;
	ar.gid = run->gid;
	extra[0] = (struct yx_mount){ ex->cfg->runner_path, YX_RUNNER_TARGET, true };
	ar.extra = extra;
	ar.nextra = exec_acquire_extra(ex, &norun, extra);
	ar.settings = &run->eff;
	ar.cmd = sleep_argv;
	yx_provider_tx_name(&ex->prov, req->thread_id, name, sizeof(name));
	if ((rc = yx_provider_tx_create(&ex->prov, &ar, name, &info, err)) != YX_OK)
		return rc;
	exec_lease_cmd_init(&cmd, run, req->command, timeout);
	cmd.xr.user = run->user;	/* the thread's own uid, never a box's */
	rc = ex->drv->ops->exec(ex->drv, name, &cmd.xr, res, err);
	*background = rc == YX_OK && tx_procs(ex, name, run) > TX_PROCS_IDLE;
	(void)yx_provider_tx_remove(&ex->prov, name);
	return rc;
}

/*
 * The layer read, the conflicts checked, the commit made when it may be,
 * the reply's fields into out. YX_OK or the error that stopped it.
 */
static int
tx_finish(struct tx_ctx *c, const struct yx_exec_request *req,
    const struct yx_exec_result *res, bool background, struct yx_exec_output *out,
    struct yx_errctx *err)
{
	struct yx_buf	 b;
	bool		*conflict = NULL, applied = false;
	size_t		 i, nconflict = 0;
	int		 rc;

	yx_buf_init(&b, 64 << 20);
	if (tx_open_layer(c) == -1) {
		rc = yx_fail(err, YX_E_IO, "the transaction's layer");
		goto done;
	}
	if ((rc = tx_walk(c, c->up, c->lo, "", 0)) != YX_OK) {
		(void)yx_fail(err, rc, "cannot read the transaction's changes");
		goto done;
	}
	if ((conflict = calloc(c->nops + 1, sizeof(*conflict))) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	if (req->tx == YX_TX_COMMIT && res->exit_code == 0 && !res->timed_out && !background &&
	    !c->overflow) {
		for (i = 0; i < c->nops; i++)
			if ((conflict[i] = tx_conflict(c, &c->ops[i])))
				nconflict++;
		if (nconflict == 0 && c->nops > 0 && (rc = tx_commit(c, err)) != YX_OK)
			goto done;
		applied = nconflict == 0;
	}
	if ((rc = tx_fields(c, applied, background, conflict, nconflict,
		 applied ? NULL : tx_why(req, res, background, c->overflow, nconflict), &b)) !=
	    YX_OK)
		goto done;
	out->tx_applied = applied;
	if ((out->tx_json = strdup(b.data != NULL ? b.data : "")) == NULL)
		rc = yx_fail(err, YX_E_NOMEM, NULL);
	log_info("thread %s: transaction %s, %zu changes, %zu conflicts", req->thread_id,
	    applied ? "applied" : "not applied", c->nops, nconflict);
done:
	free(conflict);
	yx_buf_fini(&b);
	return rc;
}

/*
 * The transactional run (yx_executor_run with req->tx): the command's
 * outcome in *res, the transaction's in out->tx_*.
 */
int
exec_tx_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, int timeout, struct yx_exec_result *res,
    struct yx_exec_output *out, struct yx_errctx *err)
{
	struct tx_ctx	c;
	bool		background = false, made = false;
	int64_t		t[5] = { yx_mono_ms(), 0, 0, 0, 0 };
	int		rc;

	memset(&c, 0, sizeof(c));
	c.tfd = c.txd = c.up = c.lo = c.live = -1;
	c.ex = ex;
	c.run = run;
	c.tid = req->thread_id;
	(void)yx_exec_tx_recover(ex, req->thread_id);
	if (tx_ctx_open(&c, ex->cfg->saves_dir, req->thread_id) == -1) {
		rc = yx_fail(err, YX_E_NOT_FOUND, "thread not found");
		goto done;
	}
	if (tx_t0(&c) == -1) {
		rc = yx_fail(err, YX_E_IO, "the transaction's start time");
		goto done;
	}
	if ((rc = yx_priv_tx_begin(req->thread_id, &c.kind, err)) != YX_OK)
		goto done;
	made = true;
	t[1] = yx_mono_ms();
	if ((rc = tx_container_run(ex, req, run, timeout, res, &background, err)) != YX_OK ||
	    (rc = yx_priv_tx_unmount(req->thread_id, err)) != YX_OK)
		goto done;
	t[2] = yx_mono_ms();
	rc = tx_finish(&c, req, res, background, out, err);
	t[3] = yx_mono_ms();
done:
	if (made)
		(void)yx_priv_tx_clean(req->thread_id, NULL);
	t[4] = yx_mono_ms();
	log_debug("thread %s: transaction: layer %lld ms, container %lld ms, finish %lld ms, "
		  "clean %lld ms",
	    req->thread_id, (long long)(t[1] - t[0]), (long long)(t[2] - t[1]),
	    (long long)(t[3] - t[2]), (long long)(t[4] - t[3]));
	tx_ctx_fini(&c);
	return rc;
}
