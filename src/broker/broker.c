/* SPDX-License-Identifier: MIT */
/*
 * broker.c - the broker context and its resolution core: root fds, the
 * visible-skills filter, path re-validation, and the few primitives through
 * which every other broker file touches the disk (openat2 beneath a root,
 * safe opens of directories and regular files, lstat, bounded reads,
 * directory creation). YX_BROKER_CONTROL_UNSAFE (test builds only) swaps
 * these primitives for naive ones so the tests can show the leaks they stop.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "broker/broker_int.h"
#include "yuxi/buf.h"
#include "common/control_int.h"

#define BROKER_EAGAIN_RETRIES	16

static const char *const broker_ftype_names[] = {
	"file",
	"dir",
	"symlink",
	"fifo",
	"socket",
	"chardev",
	"blockdev",
	"other",
};

const char *
yx_ftype_name(enum yx_ftype t)
{
	if ((unsigned)t >= sizeof(broker_ftype_names) /
		sizeof(broker_ftype_names[0]))
		return "other";
	return broker_ftype_names[t];
}

enum yx_ftype
broker_ftype(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return YX_FT_FILE;
	case S_IFDIR: return YX_FT_DIR;
	case S_IFLNK: return YX_FT_SYMLINK;
	case S_IFIFO: return YX_FT_FIFO;
	case S_IFSOCK: return YX_FT_SOCKET;
	case S_IFCHR: return YX_FT_CHARDEV;
	case S_IFBLK: return YX_FT_BLOCKDEV;
	default: return YX_FT_OTHER;
	}
}

/* ---- paths and errors ------------------------------------------------- */

static const char *
broker_root_prefix(enum yx_root root)
{
	if (root == YX_ROOT_TOP)
		return "";
	return root == YX_ROOT_SKILLS ? YX_VROOT_SKILLS : YX_VROOT_USER_DATA;
}

void
broker_vpath(enum yx_root root, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", broker_root_prefix(root),
	    rel[0] != '\0' ? "/" : "", rel);
}

char *
broker_steal(struct yx_buf *buf, size_t *lenp)
{
	/* appending nothing reserves room and writes the terminator */
	if (yx_buf_append(buf, "", 0) != YX_OK)
		return NULL;
	return yx_buf_steal(buf, lenp);
}

/*
 * Returns a heap string "<root>[/rel][/name]" (caller frees) or NULL when
 * out of memory.
 */
char *
broker_vpath_dup(enum yx_root root, const char *rel, const char *name)
{
	struct yx_buf	buf;
	char		*p = NULL;

	yx_buf_init(&buf, SIZE_MAX);
	if (yx_buf_puts(&buf, root == YX_ROOT_TOP && rel[0] == '\0' && name == NULL ? "/" : broker_root_prefix(root)) != YX_OK)
		goto out;
	if (rel[0] != '\0' && yx_buf_printf(&buf, "/%s", rel) != YX_OK)
		goto out;
	if (name != NULL && yx_buf_printf(&buf, "/%s", name) != YX_OK)
		goto out;
	p = broker_steal(&buf, NULL);
out:
	yx_buf_fini(&buf);
	return p;
}

int
broker_fail(struct yx_errctx *e, int err, enum yx_root root, const char *rel)
{
	char vp[YX_VPATH_MAX + 32];

	broker_vpath(root, rel, vp, sizeof(vp));
	return yx_fail(e, err, "%s: %s", yx_strerror(err), vp);
}

static int
broker_map_errno(int errnum)
{
	switch (errnum) {
	case ENOENT: return YX_E_FILE_NOT_FOUND;
	case ELOOP:
	case EXDEV: return YX_E_PATH_NOT_ALLOWED;
	case ENOTDIR: return YX_E_NOT_DIRECTORY;
	case EISDIR: return YX_E_IS_DIRECTORY;
	case ENXIO:
	case ENODEV: return YX_E_NOT_REGULAR;
	case EAGAIN: return YX_E_BUSY;
	default: return yx_err_from_errno(errnum);
	}
}

int
broker_fail_errno(struct yx_errctx *e, int errnum, enum yx_root root,
    const char *rel)
{
	return broker_fail(e, broker_map_errno(errnum), root, rel);
}

/*
 * Re-validate a root-relative path: no leading '/', no empty, "." or ".."
 * component, components <= YX_VNAME_MAX, total < YX_VPATH_MAX. A C string
 * cannot hold a NUL; the HTTP layer refuses embedded NULs before us.
 */
static bool
broker_rel_valid(const char *rel)
{
	const char	*p, *c;
	size_t		 n;

	if (rel == NULL || strlen(rel) >= YX_VPATH_MAX - sizeof(YX_VROOT_USER_DATA))
		return false;
	if (rel[0] == '\0')
		return true;
	for (p = rel;; p = c + 1) {
		c = strchr(p, '/');
		n = c != NULL ? (size_t)(c - p) : strlen(p);
		if (n == 0 || n > YX_VNAME_MAX)
			return false;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (c == NULL)
			return true;
	}
}

bool
broker_skill_visible(const struct yx_broker *b, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < b->nskills; i++)
		if (strlen(b->skills[i]) == len &&
		    memcmp(b->skills[i], name, len) == 0)
			return true;
	return false;
}

/*
 * Returns YX_OK with the borrowed root fd and resolve flags;
 * YX_E_INVALID_PATH; YX_E_FILE_NOT_FOUND for a skill that is not visible
 * or when there is no skills root (the skills root itself, rel "", is
 * handled by the listing code).
 */
int
broker_root(struct yx_broker *b, enum yx_root root, const char *rel,
    int *rootfdp, uint64_t *resolvep, struct yx_errctx *e)
{
	const char	*slash;
	size_t		 n;

	if (!broker_rel_valid(rel))
		return yx_fail(e, YX_E_INVALID_PATH, "invalid path");
	*resolvep = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
	    RESOLVE_NO_SYMLINKS;
	if (root == YX_ROOT_USER_DATA) {
		*resolvep |= RESOLVE_NO_XDEV;
		*rootfdp = b->ud_fd;
		return YX_OK;
	}
	if (root != YX_ROOT_SKILLS)
		return yx_fail(e, YX_E_INVALID_PATH, "invalid root");
	*rootfdp = b->sk_fd;
	if (rel[0] == '\0')
		return YX_OK;
	slash = strchr(rel, '/');
	n = slash != NULL ? (size_t)(slash - rel) : strlen(rel);
	if (b->sk_fd == -1 || !broker_skill_visible(b, rel, n))
		return broker_fail(e, YX_E_FILE_NOT_FOUND, root, rel);
	return YX_OK;
}

/* ---- the resolution primitive ------------------------------------------ */

#ifndef YX_BROKER_CONTROL_UNSAFE
/*
 * openat2 beneath dirfd. O_NOFOLLOW and O_CLOEXEC are always added; a mode
 * is passed only with O_CREAT. EAGAIN (a concurrent rename seen by the
 * kernel's resolution) is retried. Returns 0 with *fdp, or an errno.
 */
int
broker_openat(int dirfd, const char *path, int flags, mode_t mode,
    uint64_t resolve, int *fdp)
{
	struct open_how	how;
	int		fd, i;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = resolve;
	if (path[0] == '\0')
		path = ".";
	for (i = 0; i < BROKER_EAGAIN_RETRIES; i++) {
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0) {
			*fdp = fd;
			return 0;
		}
		if (errno != EAGAIN)
			break;
	}
	return errno;
}
#else
/* Control build: a plain openat that follows symlinks and blocks. */
int
broker_openat(int dirfd, const char *path, int flags, mode_t mode,
    uint64_t resolve, int *fdp)
{
	int fd;

	(void)resolve;
	if (path[0] == '\0')
		path = ".";
	flags &= ~(O_NOFOLLOW | O_NONBLOCK);
	fd = openat(dirfd, path, flags | O_CLOEXEC, mode);
	if (fd == -1)
		return errno;
	*fdp = fd;
	return 0;
}
#endif

/*
 * Returns 0 with a readable directory fd in *fdp, or an errno: ENOTDIR for
 * a non-directory (O_DIRECTORY is checked before any open side effect),
 * ELOOP when the last component is a symlink (O_DIRECTORY|O_NOFOLLOW
 * reports ENOTDIR for it; an O_PATH look tells the two apart).
 */
int
broker_open_dir(int dirfd, const char *path, uint64_t resolve, int *fdp)
{
	struct stat	st;
	int		rc, pfd = -1;

	rc = broker_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK,
	    0, resolve, fdp);
	if (rc != ENOTDIR ||
	    broker_openat(dirfd, path, O_PATH, 0, resolve, &pfd) != 0)
		return rc;
	if (fstat(pfd, &st) == 0 && S_ISLNK(st.st_mode))
		rc = ELOOP;
	close(pfd);
	return rc;
}

int
broker_lstatat(int dirfd, const char *name, struct stat *st)
{
#ifndef YX_BROKER_CONTROL_UNSAFE
	const int flags = AT_SYMLINK_NOFOLLOW;
#else
	const int flags = 0;
#endif
	if (fstatat(dirfd, name, st, flags) == -1)
		return errno;
	return 0;
}

#ifndef YX_BROKER_CONTROL_UNSAFE
/* Type policy for content operations. */
static int
broker_type_check(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return YX_OK;
	if (S_ISDIR(st->st_mode))
		return YX_E_IS_DIRECTORY;
	if (S_ISLNK(st->st_mode))
		return YX_E_PATH_NOT_ALLOWED;
	return YX_E_NOT_REGULAR;
}

/*
 * Reopen the O_PATH fd `pfd` for reading: through /proc/self/fd (the same
 * inode, whatever happened to the path since), else by path with
 * O_NONBLOCK. The result must be the inode `want`. Returns YX_OK or an
 * error code (*errnop set when an errno explains it).
 */
static int
broker_reopen(int pfd, int dirfd, const char *path, uint64_t resolve,
    const struct stat *want, int *fdp, struct stat *st, int *errnop)
{
	char	proc[64];
	int	fd, rc;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd == -1 && (errno == ENOENT || errno == ENOTDIR)) {
		/* no /proc: reopen by path; O_NONBLOCK keeps a swapped-in
		 * FIFO from blocking, the inode check below catches it. */
		if ((rc = broker_openat(dirfd, path,
			 O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, resolve, &fd)) != 0) {
			errno = rc;
			fd = -1;
		}
	}
	if (fd == -1) {
		*errnop = errno;
		return broker_map_errno(errno);
	}
	if (fstat(fd, st) == -1) {
		*errnop = errno;
		close(fd);
		return YX_E_IO;
	}
	if (st->st_dev != want->st_dev || st->st_ino != want->st_ino ||
	    !S_ISREG(st->st_mode)) {
		close(fd);
		return YX_E_PATH_NOT_ALLOWED;
	}
	*fdp = fd;
	return YX_OK;
}

/*
 * Safe open of a regular file: O_PATH first (no open side effect for a
 * FIFO or device), fstat, type check, then reopen the same inode.
 */
int
broker_open_reg(int dirfd, const char *path, uint64_t resolve, int *fdp,
    struct stat *st, int *errnop)
{
	struct stat	pst;
	int		pfd = -1, rc;

	*errnop = 0;
	if ((rc = broker_openat(dirfd, path, O_PATH, 0, resolve, &pfd)) != 0) {
		*errnop = rc;
		rc = broker_map_errno(rc);
		goto out;
	}
	if (fstat(pfd, &pst) == -1) {
		*errnop = errno;
		rc = YX_E_IO;
		goto out;
	}
	if ((rc = broker_type_check(&pst)) != YX_OK)
		goto out;
	rc = broker_reopen(pfd, dirfd, path, resolve, &pst, fdp, st, errnop);
out:
	if (pfd != -1)
		close(pfd);
	return rc;
}
#else
/* Control build: open by path, following symlinks, blocking, any type. */
int
broker_open_reg(int dirfd, const char *path, uint64_t resolve, int *fdp,
    struct stat *st, int *errnop)
{
	int fd = -1, rc;

	*errnop = 0;
	if ((rc = broker_openat(dirfd, path, O_RDONLY, 0, resolve, &fd)) != 0) {
		*errnop = rc;
		return broker_map_errno(rc);
	}
	if (fstat(fd, st) == -1) {
		*errnop = errno;
		close(fd);
		return YX_E_IO;
	}
	if (S_ISDIR(st->st_mode)) {
		close(fd);
		return YX_E_IS_DIRECTORY;
	}
	*fdp = fd;
	return YX_OK;
}
#endif

/* ---- reads ------------------------------------------------------------- */

/*
 * Returns YX_OK with a NUL-terminated heap copy (caller frees) of at most
 * cap bytes; YX_E_PAYLOAD_TOO_LARGE when more exist and !cut; YX_E_NOMEM;
 * YX_E_IO.
 */
int
broker_read_fd(int fd, size_t cap, bool cut, char **datap, size_t *lenp,
    bool *truncp)
{
	struct yx_buf	buf;
	char		chunk[16384];
	ssize_t		n;
	size_t		want;
	int		rc = YX_OK;

	yx_buf_init(&buf, cap);
	*truncp = false;
	for (;;) {
		/* ask for one byte past the cap to learn whether more exist */
		want = cap - buf.len + 1;
		if (want > sizeof(chunk))
			want = sizeof(chunk);
		n = read(fd, chunk, want);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			rc = errno == EAGAIN ? YX_E_BUSY : YX_E_IO;
			goto out;
		}
		if (n == 0)
			break;
		if ((size_t)n > cap - buf.len) {
			if (!cut) {
				rc = YX_E_PAYLOAD_TOO_LARGE;
				goto out;
			}
			*truncp = true;
			n = (ssize_t)(cap - buf.len);
			if ((rc = yx_buf_append(&buf, chunk, (size_t)n)) != YX_OK)
				goto out;
			break;
		}
		if ((rc = yx_buf_append(&buf, chunk, (size_t)n)) != YX_OK)
			goto out;
	}
	if ((*datap = broker_steal(&buf, lenp)) == NULL)
		rc = YX_E_NOMEM;
out:
	yx_buf_fini(&buf);
	return rc;
}

/*
 * Resolve (root, rel) and open it as a regular file: *fdp (caller closes)
 * and *st. YX_OK; YX_E_FILE_NOT_FOUND (also the absent skills root);
 * YX_E_IS_DIRECTORY for the root itself; the errors of broker_root and
 * broker_open_reg, each with a message.
 */
int
broker_open_file(struct yx_broker *b, enum yx_root root, const char *rel,
    int *fdp, struct stat *st, struct yx_errctx *e)
{
	uint64_t	res;
	int		rootfd, rc, en;

	*fdp = -1;
	if ((rc = broker_root(b, root, rel, &rootfd, &res, e)) != YX_OK)
		return rc;
	if (rootfd == -1 || rel[0] == '\0')
		return broker_fail(e,
		    rootfd == -1 ? YX_E_FILE_NOT_FOUND : YX_E_IS_DIRECTORY,
		    root, rel);
	if ((rc = broker_open_reg(rootfd, rel, res, fdp, st, &en)) != YX_OK)
		return broker_fail(e, rc, root, rel);
	return YX_OK;
}

/*
 * Open (root, rel) as a regular file and read it (see broker_read_fd); with
 * `text`, a NUL byte makes it YX_E_BINARY_FILE. Returns YX_OK with *datap
 * (caller frees) and *st; the errors of broker_open_file and
 * broker_read_fd with a message.
 */
int
broker_slurp(struct yx_broker *b, enum yx_root root, const char *rel,
    size_t cap, bool cut, bool text, char **datap, size_t *lenp,
    struct stat *st, bool *truncp, struct yx_errctx *e)
{
	int fd = -1, rc;

	*datap = NULL;
	if ((rc = broker_open_file(b, root, rel, &fd, st, e)) != YX_OK)
		goto out;
	rc = broker_read_fd(fd, cap, cut, datap, lenp, truncp);
	if (rc == YX_E_PAYLOAD_TOO_LARGE)
		rc = yx_fail(e, rc, "file larger than %zu bytes", cap);
	else if (rc != YX_OK)
		rc = broker_fail(e, rc, root, rel);
	else if (text && memchr(*datap, '\0', *lenp) != NULL) {
		rc = broker_fail(e, YX_E_BINARY_FILE, root, rel);
		free(*datap);
		*datap = NULL;
	}
out:
	if (fd != -1)
		close(fd);
	return rc;
}

/* ---- directories ---------------------------------------------------------- */

/*
 * Open one component `name` of dirfd as a directory, creating it (0755,
 * chowned to the sandbox) when absent. Returns 0 with *fdp or an errno.
 */
static int
broker_mkdir_one(struct yx_broker *b, int dirfd, const char *name,
    uint64_t resolve, int *fdp)
{
	bool	made = false;
	int	rc;

	rc = broker_open_dir(dirfd, name, resolve, fdp);
	if (rc == ENOENT) {
		if (mkdirat(dirfd, name, 0755) == 0)
			made = true;
		else if (errno != EEXIST)
			return errno;
		rc = broker_open_dir(dirfd, name, resolve, fdp);
	}
	if (rc != 0 || !made)
		return rc;
	/* ours: give it to the sandbox; umask must not narrow the mode */
	if (fchown(*fdp, b->uid, b->gid) == -1 || fchmod(*fdp, 0755) == -1) {
		rc = errno;
		close(*fdp);
		*fdp = -1;
	}
	return rc;
}

/*
 * Walk `dir` (dirlen bytes of a validated rel) from the root one component
 * at a time, each step an openat2 on the previous fd. Returns 0 with a
 * directory fd (caller closes) or an errno.
 */
int
broker_mkdirs(struct yx_broker *b, int rootfd, uint64_t resolve,
    const char *dir, size_t dirlen, int *fdp)
{
	char		 comp[YX_VNAME_MAX + 1];
	const char	*p, *end = dir + dirlen, *c;
	int		 cur = -1, next = -1, rc;

	if ((rc = broker_open_dir(rootfd, "", resolve, &cur)) != 0)
		goto out;
	for (p = dir; p < end; p = c + 1) {
		if ((c = memchr(p, '/', (size_t)(end - p))) == NULL)
			c = end;
		if ((size_t)(c - p) > YX_VNAME_MAX || c == p) {
			rc = EINVAL;
			goto out;
		}
		memcpy(comp, p, (size_t)(c - p));
		comp[c - p] = '\0';
		if ((rc = broker_mkdir_one(b, cur, comp, resolve, &next)) != 0)
			goto out;
		close(cur);
		cur = next;
	}
	*fdp = cur;
	cur = -1;
out:
	if (cur != -1)
		close(cur);
	return rc;
}

/* ---- the context ------------------------------------------------------- */

static int
broker_open_root(const char *path, int *fdp)
{
	int fd;

	struct stat st;

	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOTDIR && lstat(path, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		return ELOOP;
	if (fd == -1)
		return errno;
	*fdp = fd;
	return 0;
}

/*
 * Create the last component of a trusted host path (its parent - the
 * thread's directory - must exist: a thread that is gone is not brought
 * back as an ownerless directory), owned by uid/gid, mode 0755.
 */
static int
broker_create_root(const char *path, uid_t uid, gid_t gid)
{
	int fd, rc = 0;

	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		return errno;
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno;
	if (fchown(fd, uid, gid) == -1 || fchmod(fd, 0755) == -1)
		rc = errno;
	close(fd);
	return rc;
}

static int
broker_copy_skills(struct yx_broker *b, const char *const *skills, size_t n)
{
	size_t i;

	if (n == 0)
		return YX_OK;
	if ((b->skills = calloc(n, sizeof(*b->skills))) == NULL)
		return YX_E_NOMEM;
	for (i = 0; i < n; i++) {
		if ((b->skills[i] = strdup(skills[i])) == NULL)
			return YX_E_NOMEM;
		b->nskills++;
	}
	return YX_OK;
}

static void
broker_limits(struct yx_broker_limits *l, const struct yx_broker_limits *in)
{
	memset(l, 0, sizeof(*l));
	if (in != NULL)
		*l = *in;
	if (l->upload_max == 0)
		l->upload_max = YX_BROKER_UPLOAD_MAX;
	if (l->viewer_max == 0)
		l->viewer_max = YX_BROKER_VIEWER_MAX;
	if (l->read_max == 0)
		l->read_max = YX_BROKER_READ_MAX;
	if (l->line_max == 0)
		l->line_max = YX_BROKER_LINE_MAX;
	if (l->max_results == 0)
		l->max_results = YX_BROKER_MAX_RESULTS;
	if (l->max_visit == 0)
		l->max_visit = YX_BROKER_MAX_VISIT;
	if (l->max_depth <= 0)
		l->max_depth = YX_BROKER_MAX_DEPTH;
	if (l->walk_bytes == 0)
		l->walk_bytes = YX_BROKER_WALK_BYTES;
	if (l->time_ms == 0)
		l->time_ms = YX_BROKER_TIME_MS;
}

/*
 * The user-data root must belong to b->uid: a thread deleted (and its id
 * taken again, with another uid) between the caller's lookup and this open
 * is not found rather than mixed up with its successor.
 */
static int
broker_check_owner(const struct yx_broker *b)
{
	struct stat st;

	if (fstat(b->ud_fd, &st) == -1)
		return YX_E_IO;
	return st.st_uid == b->uid ? YX_OK : YX_E_NOT_FOUND;
}

bool
broker_read_only(const struct yx_broker *b, enum yx_root root, const char *rel)
{
	static const char *const rw[] = { "outputs", "large_tool_results" };
	size_t	i, n;

	if (root == YX_ROOT_SKILLS)
		return true;
	if (!b->ro || root != YX_ROOT_USER_DATA)
		return false;
	if (YX_CONTROL_OFF("readonly"))
		return false;
	for (i = 0; rel != NULL && i < 2; i++) {
		n = strlen(rw[i]);
		if (strncmp(rel, rw[i], n) == 0 && (rel[n] == '/' || rel[n] == '\0'))
			return false;
	}
	return true;
}

/*
 * Is the user-data root the root of a mount (a thread's own disk image,
 * or any filesystem mounted there)? Its ENOSPC is then the thread's quota.
 */
static bool
broker_own_fs(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE,
		&stx) == -1)
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* See broker.h. */
int
yx_broker_init(struct yx_broker *b, const char *user_data,
    const char *skills_dir, const char *const *skills, size_t nskills,
    uid_t uid, gid_t gid, const struct yx_broker_limits *lim, int flags,
    struct yx_errctx *e)
{
	int rc, en;

	memset(b, 0, sizeof(*b));
	b->ud_fd = b->sk_fd = -1;
	b->uid = uid;
	b->gid = gid;
	b->ro = (flags & YX_BROKER_RO) != 0;
	broker_limits(&b->lim, lim);
	if ((rc = broker_copy_skills(b, skills, nskills)) != YX_OK) {
		rc = yx_fail(e, rc, NULL);
		goto fail;
	}
	en = broker_open_root(user_data, &b->ud_fd);
	if (en == ENOENT && (flags & YX_BROKER_CREATE) &&
	    (en = broker_create_root(user_data, uid, gid)) == 0)
		en = broker_open_root(user_data, &b->ud_fd);
	if (en != 0) {
		rc = yx_fail(e, broker_map_errno(en), "user-data root: %s",
		    strerror(en));
		goto fail;
	}
	if ((flags & YX_BROKER_OWNED) && (rc = broker_check_owner(b)) != YX_OK) {
		rc = yx_fail(e, rc, "user-data root belongs to another thread");
		goto fail;
	}
	b->quota = broker_own_fs(b->ud_fd);
	if (skills_dir != NULL && skills_dir[0] != '\0') {
		en = broker_open_root(skills_dir, &b->sk_fd);
		if (en != 0 && en != ENOENT) {
			rc = yx_fail(e, broker_map_errno(en), "skills root: %s",
			    strerror(en));
			goto fail;
		}
	}
	return YX_OK;
fail:
	yx_broker_fini(b);
	return rc;
}

int
yx_broker_still_at(const struct yx_broker *b, const char *user_data,
    struct yx_errctx *e)
{
	struct stat	 a, c;

	if (b->ud_fd == -1)
		return YX_OK;
#ifdef YX_BROKER_CONTROL_UNSAFE
	(void)a, (void)c, (void)user_data, (void)e;	/* the path is trusted */
#else
	if (fstat(b->ud_fd, &a) == -1 || lstat(user_data, &c) == -1 ||
	    !S_ISDIR(c.st_mode) || a.st_dev != c.st_dev || a.st_ino != c.st_ino)
		return yx_fail(e, YX_E_NOT_FOUND, "thread not found");
#endif
	return YX_OK;
}

void
yx_broker_fini(struct yx_broker *b)
{
	size_t i;

	if (b->ud_fd != -1)
		close(b->ud_fd);
	if (b->sk_fd != -1)
		close(b->sk_fd);
	b->ud_fd = b->sk_fd = -1;
	for (i = 0; i < b->nskills; i++)
		free(b->skills[i]);
	free(b->skills);
	b->skills = NULL;
	b->nskills = 0;
}

int
yx_broker_dir_exists(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_errctx *e)
{
	uint64_t	res;
	int		rootfd, fd = -1, rc, en;

	if ((rc = broker_root(b, root, rel, &rootfd, &res, e)) != YX_OK)
		return rc;
	if (rootfd == -1)
		return broker_fail(e, YX_E_FILE_NOT_FOUND, root, rel);
	if (rel[0] == '\0')
		return YX_OK;
	if ((en = broker_open_dir(rootfd, rel, res, &fd)) != 0)
		return broker_fail_errno(e, en, root, rel);
	close(fd);
	return YX_OK;
}
