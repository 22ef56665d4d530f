/* SPDX-License-Identifier: MIT */
/*
 * yuxi/broker.h - the safe host-side file broker (docs/design.md §4,
 * docs/api.md).
 *
 * Every host-side access to a thread's user-data directory and to the skills
 * root goes through this module. The threat model: a hostile process inside
 * the sandbox owns the user-data tree and may plant symlinks, hardlinks,
 * FIFOs, sockets, setuid files, chmod 000 entries, and swap path components
 * at any moment (renameat2 RENAME_EXCHANGE), while the broker runs as root.
 *
 * Rules the broker enforces:
 * - Resolution is openat2(2) beneath an O_PATH fd of the root with
 *   RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS (and
 *   RESOLVE_NO_XDEV for user-data). No symlink is ever followed, inside or
 *   outside the tree: simplest and safest; one met on the way is
 *   YX_E_PATH_NOT_ALLOWED. String checks are only a second line.
 * - Content is read from regular files only. A file is first opened O_PATH
 *   (no open side effect for any type), checked with fstat, then reopened
 *   through its /proc/self/fd magic link (same inode, no path race); without
 *   /proc it is reopened by path with O_NONBLOCK and the inode compared.
 *   FIFOs, sockets and devices give YX_E_NOT_REGULAR and never block.
 * - Writes go to a fresh O_EXCL temp file in the target directory, chowned to
 *   the sandbox uid/gid, then renamed into place (RENAME_NOREPLACE when not
 *   overwriting). A planted hardlink is replaced, never written through. A
 *   failed write leaves nothing behind. When the user-data root is the root
 *   of a mount (a per-thread disk image, src/priv), running out of space
 *   there is YX_E_QUOTA_EXCEEDED; EDQUOT always is.
 * - Listings use lstat semantics: a symlink is type "symlink" with size 0,
 *   its target never revealed.
 * - Under the skills root only the thread's visible skills exist; any other
 *   name is YX_E_FILE_NOT_FOUND everywhere (lookups, listings, glob, grep).
 *   The skills root is read-only: writes give YX_E_READ_ONLY.
 * - A thread whose profile has a read-only workspace (YX_BROKER_RO) gets
 *   YX_E_READ_ONLY for writes, edits, uploads and deletes anywhere in its
 *   user-data but beneath outputs/ and large_tool_results/, as its sandbox
 *   does (EROFS).
 *
 * Hardlinks are not refused for reads: the sandbox can only link inodes that
 * are already inside its own mount (link(2) across mounts is EXDEV), so a
 * hardlink reveals nothing the sandbox could not read anyway.
 *
 * Paths: callers pass an already-resolved `enum yx_root` and a root-relative
 * `rel` ("workspace/a.txt", "" for the root) as produced by yx_path_resolve().
 * The broker re-checks it anyway (no leading '/', no empty, "." or ".."
 * component, components <= 255 bytes) and answers YX_E_INVALID_PATH.
 * Virtual paths in results are canonical: "/home/yuxi/user-data/<rel>".
 *
 * Ownership: `struct yx_broker` is caller storage (yx_broker_init/_fini).
 * Every result object is heap-allocated by the operation, owned by the
 * caller, and released with its _free function; _free(NULL) is a no-op.
 * On failure no result is returned (*outp is NULL).
 *
 * A test-only build compiles this module with -DYX_BROKER_CONTROL_UNSAFE,
 * which turns the protections off (plain openat following symlinks, blocking
 * opens, no type checks, in-place writes) so that the tests can prove the
 * protections are live. Production never defines it.
 */
#ifndef YUXI_BROKER_H
#define YUXI_BROKER_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

/*
 * Asked during a listing, glob or grep (about every YX_BROKER_POLL_MS):
 * true when whoever waits for the answer is gone, so the work stops.
 */
typedef bool	(*yx_broker_gone_fn)(void *arg);

/*
 * Limits; zero fields take the defaults in parentheses. The last four are
 * the budget of one ls, glob or grep (a worker is held for at most that
 * long): walk_bytes UINT64_MAX and time_ms < 0 mean no limit.
 */
struct yx_broker_limits {
	size_t	upload_max;	/* bytes of an upload (64 MiB) */
	size_t	viewer_max;	/* bytes returned by the viewer read (1 MiB) */
	size_t	read_max;	/* bytes of a file read by cat/edit/grep (10 MiB) */
	size_t	line_max;	/* bytes of one line in cat/grep output (2000) */
	size_t	max_results;	/* entries of ls/tree/glob/grep results (1000) */
	size_t	max_visit;	/* entries visited by a glob/grep walk (100000) */
	int	max_depth;	/* directory depth of a glob/grep walk (64) */
	uint64_t walk_bytes;	/* file bytes read by one grep (256 MiB) */
	int64_t	time_ms;	/* wall time of one ls/glob/grep (5000 ms) */
	yx_broker_gone_fn gone;	/* NULL: never asked */
	void	*gone_arg;
};

#define YX_BROKER_UPLOAD_MAX	(64u << 20)
#define YX_BROKER_VIEWER_MAX	(1u << 20)
#define YX_BROKER_READ_MAX	(10u << 20)
#define YX_BROKER_LINE_MAX	2000
#define YX_BROKER_MAX_RESULTS	1000
#define YX_BROKER_MAX_VISIT	100000
#define YX_BROKER_MAX_DEPTH	64
#define YX_BROKER_WALK_BYTES	(256u << 20)
#define YX_BROKER_TIME_MS	5000
#define YX_BROKER_POLL_MS	10	/* interval of the gone check */
#define YX_BROKER_CAT_LIMIT	2000	/* default line count of a cat */

/* init flags */
#define YX_BROKER_CREATE	0x1	/* create the user-data root if absent */
#define YX_BROKER_OWNED		0x2	/* the user-data root must belong to uid */
#define YX_BROKER_RO		0x4	/* user-data read-only but outputs/ and
					 * large_tool_results/ */

struct yx_broker {
	int			 ud_fd;		/* O_PATH user-data root, -1 */
	int			 sk_fd;		/* O_PATH skills root, -1 if none */
	char			**skills;	/* visible skill names */
	size_t			 nskills;
	uid_t			 uid;		/* sandbox owner of created files */
	gid_t			 gid;
	bool			 ro;		/* YX_BROKER_RO */
	bool			 quota;		/* user-data is a mount of its own */
	struct yx_broker_limits	 lim;
};

enum yx_ftype {
	YX_FT_FILE,
	YX_FT_DIR,
	YX_FT_SYMLINK,
	YX_FT_FIFO,
	YX_FT_SOCKET,
	YX_FT_CHARDEV,
	YX_FT_BLOCKDEV,
	YX_FT_OTHER,
};

/* "file", "dir", "symlink", "fifo", "socket", "chardev", "blockdev", "other". */
const char	*yx_ftype_name(enum yx_ftype t);

/*
 * Open the broker for one thread. `user_data` is the host path
 * <saves>/threads/<tid>/user-data (trusted: written by the service, never
 * by the sandbox); with YX_BROKER_CREATE the last component is created
 * (0755, owned by uid/gid) when absent - its parent must exist; with
 * YX_BROKER_OWNED it must belong to uid (YX_E_NOT_FOUND otherwise: it is
 * another thread's, e.g. a successor of a deleted thread of the same id).
 * `uid`/`gid` own what the broker creates. `skills_dir` may be NULL or ""
 * (no skills) or absent on disk (treated as empty). `skills` lists the
 * visible skill names (copied). `lim` may be NULL (defaults).
 * Returns YX_OK; YX_E_FILE_NOT_FOUND if user_data is absent (no CREATE);
 * YX_E_NOT_FOUND if it belongs to another uid (YX_BROKER_OWNED);
 * YX_E_PATH_NOT_ALLOWED if a root is a symlink; YX_E_NOT_DIRECTORY;
 * YX_E_NOMEM. On failure `b` needs no _fini (calling it is harmless).
 */
int	yx_broker_init(struct yx_broker *b, const char *user_data,
    const char *skills_dir, const char *const *skills, size_t nskills,
    uid_t uid, gid_t gid, const struct yx_broker_limits *lim,
    int flags, struct yx_errctx *e);
/*
 * Is `user_data` (the path init was given) still the directory the broker
 * holds? A thread deleted (its directory renamed away) and created again
 * under the same id has a new one there: a container created for the old
 * thread must not bind it by path. YX_OK (also for a broker without a
 * root); YX_E_NOT_FOUND ("thread not found") when the path is gone or is
 * another directory.
 */
int	yx_broker_still_at(const struct yx_broker *b, const char *user_data,
    struct yx_errctx *e);
/* Close the fds and free the skill list. Safe twice and after a failed
 * init (which leaves the fds at -1). */
void	yx_broker_fini(struct yx_broker *b);

/* ---- listings: ls, viewer tree, glob -------------------------------- */

/*
 * Why a listing, glob or grep was cut (`truncated`). A budget cut (bytes,
 * time, gone) stops the work and wins over the others.
 */
enum yx_broker_cut {
	YX_CUT_NONE,
	YX_CUT_RESULTS,		/* max_results (or grep's max_count) reached */
	YX_CUT_ENTRIES,		/* max_visit entries visited or in one directory */
	YX_CUT_DEPTH,		/* directories below max_depth not entered */
	YX_CUT_BYTES,		/* walk_bytes of files read */
	YX_CUT_TIME,		/* time_ms spent */
	YX_CUT_GONE,		/* the requester went away */
};

/* "results", "entries", "depth", "bytes", "time", "client_gone"; NULL for
 * YX_CUT_NONE. */
const char	*yx_broker_cut_name(enum yx_broker_cut c);

struct yx_broker_entry {
	char		*name;		/* last component */
	char		*path;		/* canonical virtual path */
	bool		 is_dir;	/* true only for a real directory */
	uint64_t	 size;		/* st_size of a regular file, else 0 */
	int64_t		 modified_at;	/* unix seconds (lstat mtime) */
	enum yx_ftype	 type;
};

struct yx_broker_list {
	char			*path;		/* canonical path of the base */
	struct yx_broker_entry	*v;		/* sorted by path */
	size_t			 n;
	bool			 truncated;	/* a limit cut the result */
	enum yx_broker_cut	 cut;		/* which one; NONE if not cut */
};
void	yx_broker_list_free(struct yx_broker_list *l);

/*
 * One level of a directory, sorted by name (agent ls and viewer tree; both
 * are a real listing with nothing injected). When a directory holds more
 * than max_visit names, the first max_visit in readdir order are kept;
 * more than max_results entries are cut; both set `truncated`, and so
 * does the time budget or the gone check (`cut` says which).
 * Returns YX_OK with *outp (caller frees); YX_E_INVALID_PATH;
 * YX_E_FILE_NOT_FOUND; YX_E_PATH_NOT_ALLOWED (symlink on the way or at the
 * end); YX_E_NOT_DIRECTORY (rel names a file); YX_E_NOMEM; YX_E_IO.
 */
int	yx_broker_ls(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_broker_list **outp, struct yx_errctx *e);

/*
 * Is (root, rel) a directory (a command's working directory)? Resolved
 * like every access, never following a symlink. YX_OK;
 * YX_E_FILE_NOT_FOUND (also a skill the thread does not see);
 * YX_E_NOT_DIRECTORY; YX_E_PATH_NOT_ALLOWED; each with a message.
 */
int	yx_broker_dir_exists(struct yx_broker *b, enum yx_root root,
    const char *rel, struct yx_errctx *e);

/*
 * Glob beneath directory `rel`: `pattern` is relative to it (no leading
 * '/', no ".." component), components matched with fnmatch(3) FNM_PERIOD
 * (`*`, `?`, `[...]`; a leading dot must be matched explicitly), and a
 * component "**" matches zero or more directories (not dot-directories).
 * Symlinks are never followed (a symlink can match as an entry itself).
 * The walk is bounded by max_depth, max_visit, time_ms and the gone
 * check, the result by max_results; any cut sets `truncated` and `cut`.
 * Matches are sorted by path.
 * Returns as yx_broker_ls, plus YX_E_INVALID_PATH for a bad pattern.
 */
int	yx_broker_glob(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *pattern, struct yx_broker_list **outp,
    struct yx_errctx *e);

/* ---- grep ------------------------------------------------------------- */

struct yx_broker_match {
	char	*path;		/* canonical virtual path of the file */
	size_t	 line;		/* 1-based line number */
	char	*text;		/* the line, without '\n', cut at line_max */
};

struct yx_broker_grep {
	struct yx_broker_match	*v;
	size_t			 n;
	bool			 truncated;
	enum yx_broker_cut	 cut;		/* why; NONE if not cut */
};
void	yx_broker_grep_free(struct yx_broker_grep *g);

/*
 * Literal (not regex) search for `needle` (non-empty) in the regular file
 * `rel`, or in every regular file beneath directory `rel` (walk sorted by
 * name, bounded as glob). `glob` (NULL or "" for all) filters files: a
 * pattern without '/' is matched against the file name, one with '/'
 * against the path relative to `rel` (glob syntax as above). Files with a
 * NUL byte and files over read_max are skipped; symlinks, FIFOs and other
 * non-regular files are skipped without opening them. `max_count` caps the
 * total number of matches (0 or above max_results = max_results); reaching
 * it sets `truncated`. The files read add up to at most walk_bytes: a file
 * that does not fit in what is left stops the search (cut YX_CUT_BYTES);
 * time_ms and the gone check stop it as well. Returns as yx_broker_ls (a
 * file `rel` is allowed), YX_E_BAD_REQUEST for an empty needle.
 */
int	yx_broker_grep(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *needle, const char *glob, size_t max_count,
    struct yx_broker_grep **outp, struct yx_errctx *e);

/* ---- reads -------------------------------------------------------------- */

struct yx_broker_text {
	char	*path;		/* canonical virtual path */
	char	*content;	/* NUL-terminated */
	size_t	 len;		/* bytes of content */
	size_t	 start_line;	/* 1-based first line shown (0 if none) */
	size_t	 end_line;	/* 1-based last line shown (0 if none) */
	size_t	 total_lines;
	int64_t	 next_offset;	/* 0-based offset of the next page, -1 none */
	bool	 lines_cut;	/* some line was cut at line_max */
	size_t	*cut;		/* 1-based numbers of the cut lines (heap) */
	size_t	 ncut;
	uint64_t size;		/* bytes of the file */
};
void	yx_broker_text_free(struct yx_broker_text *t);

/* yx_broker_cat flags */
#define YX_CAT_RAW	0x1	/* the lines as they are, no numbers */

/*
 * Agent read, `cat -n` style: lines split on '\n' (a '\r' before it is
 * dropped; a final line without '\n' counts; a trailing '\n' does not start
 * another line), each shown as "%6zu\t<line>" and joined with '\n'. With
 * YX_CAT_RAW the lines are shown as they are in the file, each with its own
 * terminator ('\r' kept), for clients that number lines themselves.
 * `offset` is the 0-based first line, `limit` the line count (0 = 2000).
 * Lines longer than line_max bytes are cut at a UTF-8 boundary (lines_cut
 * set, their numbers in cut[]; a raw line keeps its terminator). An empty
 * file gives content "" and total_lines 0.
 * Returns YX_OK with *outp (caller frees); YX_E_BINARY_FILE (a NUL byte);
 * YX_E_PAYLOAD_TOO_LARGE (file over read_max); YX_E_BAD_REQUEST (offset at
 * or past the end of a non-empty file); YX_E_IS_DIRECTORY;
 * YX_E_NOT_REGULAR; errors of resolution as yx_broker_ls.
 */
int	yx_broker_cat(struct yx_broker *b, enum yx_root root, const char *rel,
    size_t offset, size_t limit, unsigned flags,
    struct yx_broker_text **outp, struct yx_errctx *e);

struct yx_broker_blob {
	char		*path;		/* canonical virtual path */
	char		*content;	/* valid UTF-8, NUL-terminated */
	size_t		 len;		/* bytes of content */
	uint64_t	 size;		/* real size of the file */
	int64_t		 modified_at;
	bool		 truncated;	/* the file is larger than viewer_max */
};
void	yx_broker_blob_free(struct yx_broker_blob *bl);

/*
 * Viewer read: the first viewer_max bytes, decoded as UTF-8 with one U+FFFD
 * per maximal invalid subsequence (as Python's errors="replace"); a
 * sequence cut by the cap is dropped. Returns as yx_broker_cat (no
 * BINARY_FILE, no PAYLOAD_TOO_LARGE).
 */
int	yx_broker_view(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_broker_blob **outp, struct yx_errctx *e);

struct yx_broker_dl {
	uint64_t	size;
	int64_t		modified_at;
	char		rel[YX_VPATH_MAX];	/* root-relative path for nginx */
	char		name[YX_VNAME_MAX + 1];	/* last component */
};

/*
 * Download check: `rel` must be a regular file reachable without symlinks.
 * Fills caller storage `out` for X-Accel-Redirect (nginx re-checks with
 * disable_symlinks). Returns YX_OK; YX_E_IS_DIRECTORY; YX_E_NOT_REGULAR;
 * errors of resolution as yx_broker_ls.
 */
int	yx_broker_download(struct yx_broker *b, enum yx_root root,
    const char *rel, struct yx_broker_dl *out, struct yx_errctx *e);

/*
 * A download's bytes, for a client that cannot follow X-Accel-Redirect
 * (a tool call of the MCP endpoint): the whole regular file, at most max
 * bytes. YX_OK with *datap (caller frees; NUL-terminated, not counted)
 * and *lenp; YX_E_PAYLOAD_TOO_LARGE beyond max; otherwise as
 * yx_broker_download.
 */
int	yx_broker_fetch(struct yx_broker *b, enum yx_root root, const char *rel,
    size_t max, char **datap, size_t *lenp, struct yx_errctx *e);

/* ---- writes ------------------------------------------------------------ */

/*
 * Write `len` bytes of `data` to `rel` (user-data only), creating parent
 * directories (0755, owned by the sandbox). Without `overwrite` an existing
 * entry of any type gives YX_E_FILE_EXISTS (RENAME_NOREPLACE, so a
 * concurrent creation is never clobbered); with it, an existing directory
 * is YX_E_IS_DIRECTORY, a symlink YX_E_PATH_NOT_ALLOWED, another
 * non-regular file YX_E_NOT_REGULAR. The new file is mode 0644, owned by
 * the sandbox uid/gid. Returns YX_OK; YX_E_READ_ONLY (skills, a read-only
 * workspace);
 * YX_E_INVALID_PATH (rel is the root); YX_E_NOSPACE; YX_E_IO; resolution
 * errors. Nothing is left behind on failure.
 */
int	yx_broker_write(struct yx_broker *b, enum yx_root root, const char *rel,
    const void *data, size_t len, bool overwrite, struct yx_errctx *e);

/*
 * Replace `old` (non-empty) by `new` in the regular file `rel`. Without
 * `replace_all` exactly one occurrence must exist. The result replaces the
 * file atomically (temp + rename; the mode bits 0777 of the old file are
 * kept, setuid/setgid dropped). *occurrencesp (may be NULL) gets the count
 * replaced. Returns YX_OK; YX_E_BAD_REQUEST (empty old); YX_E_STRING_NOT_FOUND;
 * YX_E_AMBIGUOUS_MATCH ("N occurrences" in the message); YX_E_READ_ONLY;
 * YX_E_BINARY_FILE; YX_E_PAYLOAD_TOO_LARGE (file or result over read_max);
 * errors of yx_broker_cat and yx_broker_write.
 */
int	yx_broker_edit(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *old, const char *new, bool replace_all,
    size_t *occurrencesp, struct yx_errctx *e);

/*
 * Streaming source for uploads: fill up to `len` bytes of `buf`; return the
 * count, 0 at the end, -1 on error.
 */
typedef ssize_t (*yx_broker_read_fn)(void *arg, char *buf, size_t len);

/*
 * Upload: stream the body from `rd` into `rel` (user-data only), creating
 * parents. More than upload_max bytes gives YX_E_PAYLOAD_TOO_LARGE (the
 * source is not drained) and leaves nothing behind; a read error gives
 * YX_E_IO. Existing targets as yx_broker_write. *sizep (may be NULL) gets
 * the byte count.
 */
int	yx_broker_upload(struct yx_broker *b, enum yx_root root, const char *rel,
    yx_broker_read_fn rd, void *arg, bool overwrite, uint64_t *sizep,
    struct yx_errctx *e);

/*
 * Delete `rel` (user-data only) without following any symlink: a file, a
 * symlink (removed as a link, even one to a directory), a FIFO/socket, an
 * empty directory, or with `recursive` a directory and all below it (first
 * renamed to a hidden sibling, then removed within time_ms; *pending when
 * the budget ran out and the hidden sibling remains). Returns YX_OK;
 * YX_E_READ_ONLY (skills, a read-only workspace); YX_E_PATH_NOT_ALLOWED
 * (the root or a layout
 * folder itself, or a symlink on the way); YX_E_FILE_NOT_FOUND;
 * YX_E_BAD_REQUEST (a non-empty directory without `recursive`); YX_E_IO.
 */
int	yx_broker_delete(struct yx_broker *b, enum yx_root root, const char *rel,
    bool recursive, bool *pending, struct yx_errctx *e);

/* The folders of every user-data tree, parents first. */
#define YX_BROKER_LAYOUT_N	5
extern const char *const yx_broker_layout[YX_BROKER_LAYOUT_N];

/*
 * Create workspace/, outputs/, uploads/, uploads/attachments/ and
 * large_tool_results/ beneath the user-data root, owned by the sandbox
 * (existing directories are left as they are). Idempotent. Something else
 * in the place of one of them (a symlink, a file: the sandbox can do that
 * to its own tree) is moved aside in its directory, to
 * "<name>.moved-<time>-<n>", and the folder made again: bit i of
 * *repaired (may be NULL) says yx_broker_layout[i] was repaired. Nothing is
 * deleted and no link is followed. Returns YX_OK; YX_E_PATH_NOT_ALLOWED /
 * YX_E_NOT_DIRECTORY when the repair itself was raced away; YX_E_IO.
 */
int	yx_broker_ensure_layout(struct yx_broker *b, unsigned *repaired,
    struct yx_errctx *e);

/*
 * Open a fresh file large_tool_results/<name> for the executor to spill
 * output into: created as a new inode (O_EXCL temp renamed over whatever
 * was there, unless a directory), mode 0644, owned by the sandbox. `name`
 * is one component. Returns YX_OK with a write-only O_CLOEXEC fd in *fdp
 * (caller closes); YX_E_INVALID_PATH; YX_E_IS_DIRECTORY; errors of
 * ensure_layout.
 */
int	yx_broker_spill_open(struct yx_broker *b, const char *name, int *fdp,
    struct yx_errctx *e);

#endif /* YUXI_BROKER_H */
