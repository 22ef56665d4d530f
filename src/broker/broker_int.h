/* SPDX-License-Identifier: MIT */
/*
 * broker_int.h - private helpers shared by the broker's files: path checks,
 * the one resolution primitive (openat2 beneath a root), safe opens of
 * directories and regular files, bounded reads, and the temp-file writer.
 * Everything that YX_BROKER_CONTROL_UNSAFE switches off lives in broker.c
 * behind these helpers, so the operations are the same code in both builds.
 */
#ifndef YUXI_BROKER_INT_H
#define YUXI_BROKER_INT_H

#include <sys/stat.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/broker.h"

/* Canonical virtual path of (root, rel) into buf; truncation is impossible
 * for validated rel (YX_VPATH_MAX). */
void	 broker_vpath(enum yx_root root, const char *rel, char *buf, size_t len);
/* Heap copy of the canonical path of (root, rel) + "/" + name (name may be
 * NULL). NULL on allocation failure. */
char	*broker_vpath_dup(enum yx_root root, const char *rel, const char *name);

struct yx_buf;
/* yx_buf_steal that is NUL-terminated even for an empty buffer (NULL when
 * out of memory). */
char	*broker_steal(struct yx_buf *buf, size_t *lenp);

/* errno of a broker syscall -> enum yx_err, with "<text>: <vpath>". */
int	 broker_fail_errno(struct yx_errctx *e, int errnum, enum yx_root root,
    const char *rel);
/* Same for an enum yx_err. */
/*
 * Writes to root/rel refused by the broker's mode: the skills root always,
 * user-data outside outputs/ and large_tool_results/ with YX_BROKER_RO.
 */
bool	 broker_read_only(const struct yx_broker *b, enum yx_root root,
    const char *rel);
int	 broker_fail(struct yx_errctx *e, int err, enum yx_root root,
     const char *rel);

/*
 * Check `rel` and the skills visibility; give the root fd (borrowed) and
 * the resolve flags to use. Returns YX_OK, YX_E_INVALID_PATH,
 * YX_E_FILE_NOT_FOUND (invisible skill or no skills root).
 */
int	 broker_root(struct yx_broker *b, enum yx_root root, const char *rel,
    int *rootfdp, uint64_t *resolvep, struct yx_errctx *e);
/* Is `name` (len bytes) a visible skill? */
bool	 broker_skill_visible(const struct yx_broker *b, const char *name,
    size_t len);

/* openat2 (safe) or openat (control). Returns 0 with *fdp, or an errno. */
int	 broker_openat(int dirfd, const char *path, int flags, mode_t mode,
    uint64_t resolve, int *fdp);
/* Open directory `path` ("" = dirfd itself) for reading. errno or 0. */
int	 broker_open_dir(int dirfd, const char *path, uint64_t resolve, int *fdp);
/*
 * Open the regular file `path` beneath dirfd for reading without blocking
 * and without opening any other type; fills *st from the opened fd.
 * Returns an enum yx_err (YX_OK, YX_E_IS_DIRECTORY, YX_E_NOT_REGULAR,
 * YX_E_PATH_NOT_ALLOWED, ...); *errnop gets the errno when there is one.
 */
int	 broker_open_reg(int dirfd, const char *path, uint64_t resolve,
    int *fdp, struct stat *st, int *errnop);
/* lstat of one name in dirfd (stat in control mode). 0 or errno. */
int	 broker_lstatat(int dirfd, const char *name, struct stat *st);
enum yx_ftype broker_ftype(mode_t mode);

/*
 * Read fd to the end, at most `cap` bytes. With `cut` a longer file is cut
 * (*truncp true); without it a longer file is YX_E_PAYLOAD_TOO_LARGE.
 * *datap is NUL-terminated, caller frees. YX_OK, YX_E_NOMEM, YX_E_IO.
 */
int	 broker_read_fd(int fd, size_t cap, bool cut, char **datap,
    size_t *lenp, bool *truncp);

/* Resolve + open + read a regular file (cat, view, edit). */
int	 broker_open_file(struct yx_broker *b, enum yx_root root,
    const char *rel, int *fdp, struct stat *st, struct yx_errctx *e);
int	 broker_slurp(struct yx_broker *b, enum yx_root root, const char *rel,
    size_t cap, bool cut, bool text, char **datap, size_t *lenp,
    struct stat *st, bool *truncp, struct yx_errctx *e);

/* Create (as needed) and open directory `dir` (rel, "" = root) beneath the
 * root fd; new directories are 0755 and owned by the sandbox. 0 or errno. */
int	 broker_mkdirs(struct yx_broker *b, int rootfd, uint64_t resolve,
    const char *dir, size_t dirlen, int *fdp);

/* A file being written: temp in the target's directory, then committed. */
struct broker_tmp {
	int		 dirfd;		/* parent directory, -1 */
	int		 fd;		/* the temp (or, in control, the target) */
	char		 name[40];	/* temp name in dirfd, "" when none */
	const char	*base;		/* last component of rel */
	enum yx_root	 root;
	const char	*rel;
	bool		 quota;		/* b->quota: ENOSPC is quota_exceeded */
};

/* Prepare a write of `rel` (user-data only): check, create parents, check
 * the existing target (see yx_broker_write), create the temp. */
int	 broker_tmp_open(struct yx_broker *b, enum yx_root root,
    const char *rel, bool overwrite, struct broker_tmp *t,
    struct yx_errctx *e);
/* Write all of data to the temp. YX_OK, YX_E_NOSPACE, YX_E_QUOTA_EXCEEDED,
 * YX_E_IO. */
int	 broker_tmp_write(struct broker_tmp *t, const void *data, size_t len,
    struct yx_errctx *e);
/* chown/chmod and rename into place; on failure the temp is removed. */
int	 broker_tmp_commit(struct yx_broker *b, struct broker_tmp *t,
    bool overwrite, mode_t mode, struct yx_errctx *e);
/* Remove the temp if still there and close the fds. Always safe. */
void	 broker_tmp_abort(struct broker_tmp *t);

/* ---- broker_glob.c: the glob language (see yx_broker_glob) ---- */

#define BROKER_GLOB_COMPS	64	/* components of a glob pattern */
#define BROKER_GLOB_ALTS	256	/* {a,b} alternatives of one pattern */
#define BROKER_GLOB_DEEP	INT_MAX	/* depth of a pattern with "**" */

/* A compiled pattern: its brace alternatives, normalised. */
struct broker_glob {
	char	**alt;
	size_t	  n;
	bool	  dot;		/* wildcards match a leading '.' */
	int	  depth;	/* most components, BROKER_GLOB_DEEP with "**" */
};

/*
 * Compile pattern into g (caller storage; broker_glob_free). YX_OK;
 * YX_E_INVALID_PATH with the reason in *why (unsupported syntax, "..",
 * nothing left, too many alternatives or components); YX_E_NOMEM.
 */
int	 broker_glob_compile(const char *pattern, bool dot, struct broker_glob *g,
    const char **why);
/* Does any alternative of g match the relative slash-separated path? */
bool	 broker_glob_match(const struct broker_glob *g, const char *path);
void	 broker_glob_free(struct broker_glob *g);

#endif /* YUXI_BROKER_INT_H */
