/*
 * yuxi/threads.h - the thread store (DESIGN.md §5, API.md "Threads").
 *
 * A thread is a directory <YUXI_SAVES_DIR>/threads/<thread_id>/ holding the
 * record thread.json ({thread_id, owner, agent_id, agent_config_id,
 * created_at}) beside user-data/ (the sandbox's private tree, owned by the
 * sandbox uid/gid). A thread belongs to the user who created it; every
 * lookup takes the caller and answers YX_E_NOT_FOUND alike for an unknown
 * thread and for another user's, so callers cannot tell them apart.
 *
 * Creation is atomic: the whole directory is built under a hidden temporary
 * name (".tmp-...") and renamed into place with RENAME_NOREPLACE, so a thread
 * directory is either absent or complete. Deletion renames the directory to a
 * hidden tombstone (".trash-...") first, freeing the id at once, then removes
 * the tree with an unlinkat() walk that never follows a symlink. Hidden names
 * can never be thread ids ('.' is not in [A-Za-z0-9_-]).
 *
 * Ownership: struct yx_thread_store is caller storage (_init/_fini); it
 * holds one directory descriptor. Records are plain values.
 */
#ifndef YUXI_THREADS_H
#define YUXI_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/error.h"

#define YX_USER_MAX		64	/* bytes of a user name, NUL excluded */
#define YX_AGENT_ID_MAX		128	/* bytes of an agent or config id */
#define YX_THREADS_LIST_MAX	1000	/* threads returned by one listing */
#define YX_THREADS_SCAN_MAX	100000	/* directory entries one listing reads */

struct yx_thread {
	char	thread_id[129];
	char	owner[YX_USER_MAX + 1];
	char	agent_id[YX_AGENT_ID_MAX + 1];		/* "" = none */
	char	agent_config_id[YX_AGENT_ID_MAX + 1];	/* "" = none */
	int64_t	created_ms;				/* unix ms */
};

struct yx_thread_store {
	int		dirfd;		/* <saves>/threads, O_DIRECTORY; -1 when closed */
	unsigned	uid, gid;	/* owner of user-data/ and below */
	bool		chown_ok;	/* false when not root: skip fchown */
};

/*
 * Open (creating when missing) <cfg->saves_dir>/threads. YX_OK, or an error
 * with a message naming the directory.
 */
int	yx_thread_store_init(struct yx_thread_store *st, const struct yx_config *cfg,
	    struct yx_errctx *err);
void	yx_thread_store_fini(struct yx_thread_store *st);

/*
 * Create thread `want->thread_id` for `want->owner` (created_ms is set
 * here). YX_OK with *created true and *out the new record; YX_OK with
 * *created false and *out the existing record when the same owner already
 * has it; YX_E_THREAD_EXISTS when another user owns it;
 * YX_E_INVALID_THREAD_ID for a bad id; YX_E_IO and friends otherwise.
 */
int	yx_thread_create(struct yx_thread_store *st, const struct yx_thread *want,
	    struct yx_thread *out, bool *created, struct yx_errctx *err);

/*
 * Read the record of `id` owned by `owner`. YX_OK; YX_E_INVALID_THREAD_ID;
 * YX_E_NOT_FOUND when absent or owned by someone else (same message).
 */
int	yx_thread_get(struct yx_thread_store *st, const char *id, const char *owner,
	    struct yx_thread *out, struct yx_errctx *err);

/*
 * The threads of `owner`, newest first, at most YX_THREADS_LIST_MAX. *out is
 * a heap array (caller frees; NULL when *n is 0). YX_OK, YX_E_NOMEM, YX_E_IO.
 */
int	yx_thread_list(struct yx_thread_store *st, const char *owner,
	    struct yx_thread **out, size_t *n, struct yx_errctx *err);

/*
 * Remove thread `id` of `owner` and all its data. YX_OK; YX_E_NOT_FOUND as
 * for yx_thread_get(); YX_E_IO when the tree could not be removed entirely
 * (the id is free anyway: the rest stays in a hidden tombstone).
 */
int	yx_thread_remove(struct yx_thread_store *st, const char *id, const char *owner,
	    struct yx_errctx *err);

/*
 * Open the thread's directory (O_DIRECTORY|O_NOFOLLOW) for the broker.
 * Returns a descriptor the caller closes, or -1 with errno set.
 */
int	yx_thread_dirfd(struct yx_thread_store *st, const char *id);

/* Remove leftover ".tmp-*" and ".trash-*" entries (start-up). Returns count. */
unsigned yx_thread_store_sweep(struct yx_thread_store *st);

/*
 * Remove the tree `name` beneath directory `dirfd` without following any
 * symlink. YX_OK (also when absent), YX_E_IO when something stayed.
 */
int	yx_tree_remove(int dirfd, const char *name);

/* User names: [A-Za-z0-9._@+-]{1,64}, not starting with '.'. */
bool	yx_user_valid(const char *user);

/* Format unix ms as ISO 8601 UTC "2024-05-01T12:00:00.123Z" (buf >= 32). */
char	*yx_iso8601_ms(int64_t ms, char *buf, size_t len);

#endif /* YUXI_THREADS_H */
