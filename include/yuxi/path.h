/* SPDX-License-Identifier: MIT */
/*
 * yuxi/path.h - the virtual path namespace (docs/design.md §4) and the command
 * path policy. Pure functions: no I/O, no allocation, caller buffers, fail on
 * truncation. Table-tested (the tsv tables in tests/path/) and fuzzed (tests/fuzz/).
 *
 * The namespace has two roots:
 *   /home/yuxi/user-data   thread-private, read-write
 *   /home/yuxi/skills      read-only, one directory per visible skill
 * Aliases are mapped then reported canonically:
 *   /workspace   -> /home/yuxi/user-data/workspace
 *   /outputs     -> /home/yuxi/user-data/outputs
 *   /uploads     -> /home/yuxi/user-data/uploads
 *   /attachments -> /home/yuxi/user-data/uploads/attachments
 *   /skills      -> /home/yuxi/skills
 *   /mnt/user-data -> /home/yuxi/user-data
 *   /mnt/skills  -> /home/yuxi/skills
 * A relative path resolves against /home/yuxi/user-data/workspace.
 */
#ifndef YUXI_PATH_H
#define YUXI_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/ident.h"

#define YX_VROOT_HOME		"/home/yuxi"
#define YX_VROOT_USER_DATA	"/home/yuxi/user-data"
#define YX_VROOT_SKILLS		"/home/yuxi/skills"
#define YX_VROOT_WORKSPACE	"/home/yuxi/user-data/workspace"
/* seed 000's aliases, which exist inside every sandbox too (/mnt holds two
 * symlinks to the roots: docs/design.md §3) */
#define YX_MNT_DIR		"/mnt"
#define YX_MNT_USER_DATA	"/mnt/user-data"
#define YX_MNT_SKILLS		"/mnt/skills"

#define YX_VPATH_MAX		4096	/* bytes of a canonical path, NUL included */
#define YX_VNAME_MAX		255	/* bytes of one component */

enum yx_root {
	YX_ROOT_USER_DATA,
	YX_ROOT_SKILLS,
	YX_ROOT_TOP,		/* "/", whose entries are the two roots: only
				 * listings, glob and grep take it */
};

/*
 * A resolved virtual path. `canon` is the canonical absolute path
 * ("/home/yuxi/user-data/workspace/a.txt"); `rel` points into `canon` just
 * past the root and its slash ("workspace/a.txt"), or at "" for the root
 * itself. `rel` never starts with '/', never contains "." or ".." components,
 * empty components or NUL.
 */
struct yx_vpath {
	enum yx_root	 root;
	char		 canon[YX_VPATH_MAX];
	const char	*rel;
};

/*
 * Resolve a request path (already percent-decoded once by the HTTP layer;
 * `len` bytes, may contain NUL which is refused) into `out`.
 * Returns YX_OK; YX_E_INVALID_PATH for an empty path, NUL or control bytes,
 * a ".." component, an over-long path or component; YX_E_PATH_NOT_ALLOWED
 * for an absolute path outside both roots and their aliases.
 */
int	yx_path_resolve(const char *in, size_t len, struct yx_vpath *out);

/*
 * True when the request path names the namespace root itself ("/", "//",
 * "/./"): the parent of the two roots, which listings, glob and grep take
 * (YX_ROOT_TOP) and everything else refuses as outside the roots.
 */
bool	yx_path_is_top(const char *in, size_t len);

/* Same, writing only the canonical string into buf (size buflen). */
int	yx_path_canon(const char *in, size_t len, char *buf, size_t buflen);

/*
 * Command path policy (validate_execute_command_paths from the seeds): every
 * absolute path in the command - unquoted, quoted, after a redirection, after
 * "=" in VAR=/x or --opt=/x, inside $(...) or backticks - must lie under
 * /home/yuxi/ (and resolve into the namespace), /bin/, /usr/bin/,
 * /usr/local/bin/, /usr/lib/, or be exactly one of the pseudo-devices
 * /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, /dev/stdin,
 * /dev/stdout, /dev/stderr, /dev/fd/N (N digits). With YX_CMD_POLICY_OFF
 * everything passes.
 * Returns YX_OK or YX_E_PATH_NOT_ALLOWED with the first refused token copied
 * (truncated, NUL-terminated) into bad (size badlen; bad may be NULL).
 */
int	yx_cmd_check(const char *cmd, enum yx_cmd_policy policy, char *bad, size_t badlen);

/*
 * Output masking: replace every occurrence of each rule's `from` (a host
 * path) with its `to` (canonical name). Longest `from` wins where rules
 * overlap. Writes into a fresh heap string (*outp, caller frees, NUL
 * terminated, length in *outlenp). Returns YX_OK or YX_E_NOMEM.
 */
struct yx_mask_rule {
	const char	*from;
	const char	*to;
};
int	yx_mask_output(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules, char **outp, size_t *outlenp);
/* How many replacements yx_mask_output would make (0: nothing to mask, the
 * caller may keep its buffer). */
size_t	yx_mask_hits(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules);

/*
 * Masking of a text that arrives in pieces (a streamed command's output, a
 * background process's output read from an offset), with exactly the
 * replacements yx_mask_output makes on the whole text: mask the longest
 * prefix of in that more input cannot change, appending it masked to out,
 * and set *used to its length. What is left (shorter than the longest
 * `from`) may start a match cut by the end of the piece: the caller keeps
 * it and puts it in front of the next piece. With `final` all of in is
 * masked. YX_OK or out's error (YX_E_NOMEM, YX_E_PAYLOAD_TOO_LARGE).
 */
int	yx_mask_prefix(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules, bool final, struct yx_buf *out, size_t *used);

/* yx_mask_prefix with the carry kept here (caller storage; rules borrowed). */
struct yx_mask_stream {
	const struct yx_mask_rule	*rules;
	size_t				 nrules;
	struct yx_buf			 carry;
};
void	yx_mask_stream_init(struct yx_mask_stream *ms,
    const struct yx_mask_rule *rules, size_t nrules);
void	yx_mask_stream_fini(struct yx_mask_stream *ms);
/* Mask the carry and the next piece into out (all of it with `final`). */
int	yx_mask_stream_feed(struct yx_mask_stream *ms, const char *in,
    size_t len, bool final, struct yx_buf *out);

#endif /* YUXI_PATH_H */
