/* SPDX-License-Identifier: MIT */
/*
 * broker_list.c - directory reads through the broker: one-level listings
 * (agent ls, viewer tree), the bounded recursive walk behind glob and grep,
 * and the glob matcher. Listings use lstat semantics: a symlink is reported
 * as such with size 0 and never followed; descending into a subdirectory is
 * an openat2 of one component beneath the parent's fd, so a directory
 * swapped for a symlink mid-walk is skipped, not followed. Under the skills
 * root only the visible skills are listed.
 *
 * Each listing, glob and grep runs on a budget (struct broker_budget): wall
 * time, file bytes read (grep) and a periodic "is the requester still
 * there?" check. Running out stops the work at the next entry and the
 * answer is what was found so far, marked truncated with the reason, so no
 * request holds a worker longer than time_ms plus one entry's work (at
 * most one read_max read).
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/broker.h"
#include "broker/broker_int.h"

#define BROKER_NAMES_CHECK	1024	/* readdir names between budget checks */

static const char *const broker_cut_names[] = {
	NULL,
	"results",
	"entries",
	"depth",
	"bytes",
	"time",
	"client_gone",
};

const char *
yx_broker_cut_name(enum yx_broker_cut c)
{
	if ((unsigned)c >= sizeof(broker_cut_names) / sizeof(broker_cut_names[0]))
		return NULL;
	return broker_cut_names[c];
}

/* ---- the budget of one listing, glob or grep ---------------------------- */

struct broker_budget {
	int64_t			 deadline;	/* CLOCK_MONOTONIC us; INT64_MAX none */
	int64_t			 next_poll;	/* when to ask gone() next, us */
	uint64_t		 bytes_left;	/* of walk_bytes */
	yx_broker_gone_fn	 gone;
	void			*gone_arg;
	enum yx_broker_cut	 cut;		/* why the work was cut, NONE */
};

/* Start the budget of lim now. */
static void
broker_budget_init(struct broker_budget *bg, const struct yx_broker_limits *lim)
{
	int64_t now = yx_mono_us();

	memset(bg, 0, sizeof(*bg));
	bg->deadline = INT64_MAX;
	if (lim->time_ms >= 0 && lim->time_ms < (INT64_MAX - now) / 1000)
		bg->deadline = now + lim->time_ms * 1000;
	bg->next_poll = now;
	bg->bytes_left = lim->walk_bytes;
	bg->gone = lim->gone;
	bg->gone_arg = lim->gone_arg;
}

/* Record why the work was cut: the first reason stays, except that a
 * budget cut (bytes, time, gone: the one that stopped it) replaces a limit
 * cut. */
static void
broker_cut(struct broker_budget *bg, enum yx_broker_cut why)
{
	if (bg->cut == YX_CUT_NONE || (why >= YX_CUT_BYTES && bg->cut < YX_CUT_BYTES))
		bg->cut = why;
}

/*
 * True when the budget is spent: a budget cut was recorded, the time is up
 * or (asked at most every YX_BROKER_POLL_MS) the requester is gone.
 */
static bool
broker_budget_spent(struct broker_budget *bg)
{
	int64_t now;

	if (bg->cut >= YX_CUT_BYTES)
		return true;
	now = yx_mono_us();
	if (now >= bg->deadline)
		broker_cut(bg, YX_CUT_TIME);
	else if (bg->gone != NULL && now >= bg->next_poll) {
		if (bg->gone(bg->gone_arg))
			broker_cut(bg, YX_CUT_GONE);
		bg->next_poll = yx_mono_us() + YX_BROKER_POLL_MS * 1000;
	}
	return bg->cut >= YX_CUT_BYTES;
}

void
yx_broker_list_free(struct yx_broker_list *l)
{
	size_t i;

	if (l == NULL)
		return;
	for (i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].path);
	}
	free(l->v);
	free(l->path);
	free(l);
}

void
yx_broker_grep_free(struct yx_broker_grep *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->n; i++) {
		free(g->v[i].path);
		free(g->v[i].text);
	}
	free(g->v);
	free(g);
}

/* Grow an array of `size`-byte elements to hold n + 1. YX_OK or NOMEM. */
static int
broker_grow(void **vp, size_t *allocp, size_t n, size_t size)
{
	size_t	 na;
	void	*p;

	if (n < *allocp)
		return YX_OK;
	na = *allocp != 0 ? *allocp * 2 : 16;
	if (na > SIZE_MAX / size || (p = realloc(*vp, na * size)) == NULL)
		return YX_E_NOMEM;
	*vp = p;
	*allocp = na;
	return YX_OK;
}

static int
broker_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
broker_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct yx_broker_entry *)a)->path,
	    ((const struct yx_broker_entry *)b)->path);
}

static void
broker_names_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * The names of directory dfd (not "." or ".."; with `skills`, only visible
 * skills), at most `max` of them (cut YX_CUT_ENTRIES when more exist; fewer
 * when the budget ran out), sorted. Returns YX_OK with *namesp (free with
 * broker_names_free); YX_E_NOMEM; YX_E_IO.
 */
static int
broker_dir_names(struct yx_broker *b, int dfd, bool skills, size_t max,
    char ***namesp, size_t *np, struct broker_budget *bg)
{
	DIR		*d = NULL;
	struct dirent	*de;
	char		**names = NULL;
	size_t		 n = 0, alloc = 0;
	int		 fd, rc = YX_OK;

	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		rc = errno == ENOMEM ? YX_E_NOMEM : YX_E_IO;
		if (fd != -1)
			close(fd);
		goto out;
	}
	rewinddir(d);
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (skills && !broker_skill_visible(b, de->d_name, strlen(de->d_name)))
			continue;
		if (n >= max) {
			broker_cut(bg, YX_CUT_ENTRIES);
			break;
		}
		if (n % BROKER_NAMES_CHECK == BROKER_NAMES_CHECK - 1 &&
		    broker_budget_spent(bg))
			break;
		if ((rc = broker_grow((void **)&names, &alloc, n,
			 sizeof(*names))) != YX_OK)
			goto out;
		if ((names[n] = strdup(de->d_name)) == NULL) {
			rc = YX_E_NOMEM;
			goto out;
		}
		n++;
	}
	if (de == NULL && errno != 0)
		rc = YX_E_IO;
	else if (n > 0)
		qsort(names, n, sizeof(*names), broker_strcmp);
out:
	if (d != NULL)
		closedir(d);
	if (rc != YX_OK) {
		broker_names_free(names, n);
		names = NULL;
		n = 0;
	}
	*namesp = names;
	*np = n;
	return rc;
}

/* Append the entry `rel` (root-relative; last component name) to l. */
static int
broker_entry_add(struct yx_broker_list *l, size_t *allocp, enum yx_root root,
    const char *rel, const char *name, const struct stat *st)
{
	struct yx_broker_entry	*en;
	int			 rc;

	if ((rc = broker_grow((void **)&l->v, allocp, l->n,
		 sizeof(*l->v))) != YX_OK)
		return rc;
	en = &l->v[l->n];
	memset(en, 0, sizeof(*en));
	en->type = broker_ftype(st->st_mode);
	en->is_dir = en->type == YX_FT_DIR;
	en->size = en->type == YX_FT_FILE ? (uint64_t)st->st_size : 0;
	en->modified_at = (int64_t)st->st_mtim.tv_sec;
	en->name = strdup(name);
	en->path = broker_vpath_dup(root, rel, NULL);
	if (en->name == NULL || en->path == NULL) {
		free(en->name);
		free(en->path);
		return YX_E_NOMEM;
	}
	l->n++;
	return YX_OK;
}

/* A new empty list for (root, rel). NULL when out of memory. */
static struct yx_broker_list *
broker_list_new(enum yx_root root, const char *rel)
{
	struct yx_broker_list *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	if ((l->path = broker_vpath_dup(root, rel, NULL)) == NULL) {
		free(l);
		return NULL;
	}
	return l;
}

/*
 * Open directory rel beneath its root for listing. Returns YX_OK with *dfdp
 * (-1 for the absent skills root, which lists as empty) or an error.
 */
static int
broker_dir_open(struct yx_broker *b, enum yx_root root, const char *rel,
    int *dfdp, uint64_t *resp, struct yx_errctx *e)
{
	int rootfd, rc, en;

	*dfdp = -1;
	if ((rc = broker_root(b, root, rel, &rootfd, resp, e)) != YX_OK)
		return rc;
	if (rootfd == -1)
		return YX_OK;
	if ((en = broker_open_dir(rootfd, rel, *resp, dfdp)) != 0)
		return broker_fail_errno(e, en, root, rel);
	return YX_OK;
}

/* See broker.h. */
int
yx_broker_ls(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_broker_list **outp, struct yx_errctx *e)
{
	struct yx_broker_list	 *l = NULL;
	struct broker_budget	  bg;
	struct stat		  st;
	char			**names = NULL, sub[YX_VPATH_MAX];
	size_t			  n = 0, i, alloc = 0;
	uint64_t		  res;
	int			  dfd = -1, rc;

	*outp = NULL;
	broker_budget_init(&bg, &b->lim);
	if ((rc = broker_dir_open(b, root, rel, &dfd, &res, e)) != YX_OK)
		goto out;
	if ((l = broker_list_new(root, rel)) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	if (dfd != -1 &&
	    (rc = broker_dir_names(b, dfd, root == YX_ROOT_SKILLS && rel[0] == '\0', b->lim.max_visit, &names, &n, &bg)) != YX_OK) {
		rc = broker_fail(e, rc, root, rel);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (l->n >= b->lim.max_results) {
			broker_cut(&bg, YX_CUT_RESULTS);
			break;
		}
		if (broker_budget_spent(&bg))
			break;
		if (broker_lstatat(dfd, names[i], &st) != 0)
			continue;	/* vanished meanwhile */
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "",
		    names[i]);
		if ((rc = broker_entry_add(l, &alloc, root, sub, names[i],
			 &st)) != YX_OK) {
			rc = yx_fail(e, rc, NULL);
			goto out;
		}
	}
	l->cut = bg.cut;
	l->truncated = bg.cut != YX_CUT_NONE;
	*outp = l;
	l = NULL;
out:
	broker_names_free(names, n);
	yx_broker_list_free(l);
	if (dfd != -1)
		close(dfd);
	return rc;
}

/* ---- the bounded walk (glob and grep) ------------------------------------ */

struct broker_walk {
	struct yx_broker	*b;
	enum yx_root		 root;
	uint64_t		 res;
	char			 path[YX_VPATH_MAX];	/* rel of the current entry */
	size_t			 baselen;	/* bytes of "<base>/" in path */
	int			 depth_max;
	size_t			 visited;
	size_t			 max_results;
	struct broker_budget	 bg;
	bool			 stop;
	const char		*mprefix;	/* namespace root: the root's
						 * path, matched before path */
	/* glob */
	struct broker_glob	*pattern;
	struct yx_broker_list	*list;
	size_t			 alloc;
	/* grep */
	const char		*needle;
	struct broker_glob	*filter;
	bool			 filter_path;	/* with '/': the whole path */
	struct yx_broker_grep	*grep;
};

static int	broker_walk_dir(struct broker_walk *, int, int);
static int	broker_grep_file(struct broker_walk *, int, const char *);

/* Visit one entry of dfd; path already holds its rel. */
static int
broker_walk_entry(struct broker_walk *w, int dfd, const char *name, int depth)
{
	struct stat	 st;
	char		 full[YX_VPATH_MAX + 32];
	const char	*sub = w->path + w->baselen;
	int		 sfd, rc = YX_OK;

	if (broker_lstatat(dfd, name, &st) != 0)
		return YX_OK;
	if (w->mprefix != NULL) {	/* the namespace root: the full path */
		snprintf(full, sizeof(full), "%s/%s", w->mprefix, w->path);
		sub = full;
	}
	if (w->pattern != NULL && broker_glob_match(w->pattern, sub)) {
		if (w->list->n >= w->max_results) {
			broker_cut(&w->bg, YX_CUT_RESULTS);
			w->stop = true;
			return YX_OK;
		}
		rc = broker_entry_add(w->list, &w->alloc, w->root, w->path, name,
		    &st);
	} else if (w->needle != NULL && S_ISREG(st.st_mode) &&
	    (w->filter == NULL || broker_glob_match(w->filter, w->filter_path ? sub : name)))
		rc = broker_grep_file(w, dfd, name);
	if (rc != YX_OK || !S_ISDIR(st.st_mode) || w->stop)
		return rc;
	if (depth + 1 >= w->depth_max) {
		if (depth + 1 >= w->b->lim.max_depth)
			broker_cut(&w->bg, YX_CUT_DEPTH);
		return YX_OK;
	}
	if (broker_open_dir(dfd, name, w->res, &sfd) != 0)
		return YX_OK;	/* swapped or vanished: skip */
	rc = broker_walk_dir(w, sfd, depth + 1);
	close(sfd);
	return rc;
}

/* Walk directory dfd (whose rel is w->path) at `depth` (0 = the base). */
static int
broker_walk_dir(struct broker_walk *w, int dfd, int depth)
{
	char	**names = NULL;
	size_t	  n = 0, i, len = strlen(w->path), nl;
	int	  rc;

	if ((rc = broker_dir_names(w->b, dfd, w->root == YX_ROOT_SKILLS && len == 0, w->b->lim.max_visit, &names, &n, &w->bg)) != YX_OK)
		goto out;
	for (i = 0; i < n && !w->stop; i++) {
		if (++w->visited > w->b->lim.max_visit) {
			broker_cut(&w->bg, YX_CUT_ENTRIES);
			w->stop = true;
			break;
		}
		if (broker_budget_spent(&w->bg)) {
			w->stop = true;
			break;
		}
		nl = strlen(names[i]);
		if (len + 1 + nl >= sizeof(w->path))
			continue;
		snprintf(w->path + len, sizeof(w->path) - len, "%s%s",
		    len > 0 ? "/" : "", names[i]);
		rc = broker_walk_entry(w, dfd, names[i], depth);
		w->path[len] = '\0';
		if (rc != YX_OK)
			break;
	}
out:
	broker_names_free(names, n);
	return rc;
}

/* Prepare w for a walk of (root, rel). */
static void
broker_walk_init(struct broker_walk *w, struct yx_broker *b,
    enum yx_root root, const char *rel, uint64_t res)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
	w->root = root;
	w->res = res;
	snprintf(w->path, sizeof(w->path), "%s", rel);
	w->baselen = rel[0] != '\0' ? strlen(rel) + 1 : 0;
	w->depth_max = b->lim.max_depth;
	w->max_results = b->lim.max_results;
	broker_budget_init(&w->bg, &b->lim);
}

/*
 * Walk root `r` of the namespace root for w (glob or grep over "/"): its
 * entries are matched as "home/yuxi/<root>/<rel>", and the root itself is
 * a glob candidate. YX_OK or a walk error.
 */
static int
broker_walk_top(struct broker_walk *w, enum yx_root r, int depth_max)
{
	struct stat	 st;
	uint64_t	 res;
	int		 rootfd, dfd = -1, rc;

	w->root = r;
	w->mprefix = r == YX_ROOT_SKILLS ? YX_VROOT_SKILLS + 1 :
					   YX_VROOT_USER_DATA + 1;
	w->path[0] = '\0';
	w->baselen = 0;
	if (broker_root(w->b, r, "", &rootfd, &res, NULL) != YX_OK ||
	    rootfd == -1)
		return YX_OK;	/* no skills root: nothing there */
	w->res = res;
	if (w->pattern != NULL && broker_glob_match(w->pattern, w->mprefix) &&
	    fstat(rootfd, &st) == 0) {
		if (w->list->n >= w->max_results) {
			broker_cut(&w->bg, YX_CUT_RESULTS);
			w->stop = true;
			return YX_OK;
		}
		if ((rc = broker_entry_add(w->list, &w->alloc, r, "",
			 r == YX_ROOT_SKILLS ? "skills" : "user-data", &st)) != YX_OK)
			return rc;
	}
	if (depth_max <= 0 || broker_open_dir(rootfd, "", res, &dfd) != 0)
		return YX_OK;
	w->depth_max = depth_max;
	rc = broker_walk_dir(w, dfd, 0);
	close(dfd);
	return rc;
}

/* Directories below the base a pattern of `depth` components can reach. */
static int
broker_glob_reach(const struct broker_glob *g, int max, bool top)
{
	int d = g->depth;

	if (d == BROKER_GLOB_DEEP)
		return max;
	if (top)	/* "home/yuxi/<root>" come first */
		d -= 3;
	return d < max ? d : max;
}

/* See broker.h. */
int
yx_broker_glob(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *pattern, struct yx_broker_list **outp, struct yx_errctx *e)
{
	struct broker_walk	*w = NULL;
	struct broker_glob	 g;
	const char		*why;
	uint64_t		 res;
	int			 dfd = -1, rc;

	*outp = NULL;
	memset(&g, 0, sizeof(g));
	if ((rc = broker_glob_compile(pattern, true, &g, &why)) != YX_OK) {
		rc = rc == YX_E_NOMEM ? yx_fail(e, rc, NULL) :
					yx_fail(e, rc, "unsupported glob syntax: %s", why);
		goto out;
	}
	if (root != YX_ROOT_TOP &&
	    (rc = broker_dir_open(b, root, rel, &dfd, &res, e)) != YX_OK)
		goto out;
	if ((w = malloc(sizeof(*w))) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	broker_walk_init(w, b, root, rel, root == YX_ROOT_TOP ? 0 : res);
	w->pattern = &g;
	w->depth_max = broker_glob_reach(&g, b->lim.max_depth, false);
	if ((w->list = broker_list_new(root, rel)) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	if (root == YX_ROOT_TOP) {
		int reach = broker_glob_reach(&g, b->lim.max_depth, true);

		rc = broker_walk_top(w, YX_ROOT_USER_DATA, reach);
		if (rc == YX_OK && !w->stop)
			rc = broker_walk_top(w, YX_ROOT_SKILLS, reach);
	} else if (dfd != -1)
		rc = broker_walk_dir(w, dfd, 0);
	if (rc != YX_OK) {
		rc = broker_fail(e, rc, root, rel);
		goto out;
	}
	if (w->list->n > 1)
		qsort(w->list->v, w->list->n, sizeof(*w->list->v),
		    broker_entry_cmp);
	w->list->cut = w->bg.cut;
	w->list->truncated = w->bg.cut != YX_CUT_NONE;
	*outp = w->list;
	w->list = NULL;
out:
	if (w != NULL)
		yx_broker_list_free(w->list);
	free(w);
	broker_glob_free(&g);
	if (dfd != -1)
		close(dfd);
	return rc;
}

/* ---- grep ------------------------------------------------------------- */

/* Record one matching line. YX_OK or YX_E_NOMEM. */
static int
broker_grep_add(struct broker_walk *w, size_t *allocp, size_t lineno,
    const char *line, size_t len)
{
	struct yx_broker_match	*m;
	int			 rc;

	if ((rc = broker_grow((void **)&w->grep->v, allocp, w->grep->n,
		 sizeof(*w->grep->v))) != YX_OK)
		return rc;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len > w->b->lim.line_max) {
		len = w->b->lim.line_max;
		while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80)
			len--;
	}
	m = &w->grep->v[w->grep->n];
	m->line = lineno;
	m->path = broker_vpath_dup(w->root, w->path, NULL);
	m->text = strndup(line, len);
	if (m->path == NULL || m->text == NULL) {
		free(m->path);
		free(m->text);
		return YX_E_NOMEM;
	}
	w->grep->n++;
	return YX_OK;
}

/*
 * Search one regular file `name` of dfd (rel in w->path). Unreadable,
 * non-regular (swapped meanwhile), over-large and binary files are skipped.
 * The bytes read come out of the walk's budget; a file that does not fit in
 * what is left stops the walk. Returns YX_OK or YX_E_NOMEM.
 */
static int
broker_grep_file(struct broker_walk *w, int dfd, const char *name)
{
	struct stat	 st;
	const char	*p, *end, *nl;
	char		*data = NULL;
	size_t		 len, cap, lineno = 0, nlen = strlen(w->needle);
	bool		 trunc;
	int		 fd = -1, en, rc = YX_OK;

	if (broker_open_reg(dfd, name, w->res, &fd, &st, &en) != YX_OK ||
	    (uint64_t)st.st_size > w->b->lim.read_max)
		goto out;
	if ((uint64_t)st.st_size > w->bg.bytes_left) {
		broker_cut(&w->bg, YX_CUT_BYTES);
		w->stop = true;
		goto out;
	}
	cap = w->b->lim.read_max;
	if (w->bg.bytes_left < cap)
		cap = (size_t)w->bg.bytes_left;
	rc = broker_read_fd(fd, cap, false, &data, &len, &trunc);
	w->bg.bytes_left -= rc == YX_OK ? len : cap;
	if (rc != YX_OK) {
		/* grown past what is left since the fstat: out of budget */
		if (rc == YX_E_PAYLOAD_TOO_LARGE && cap < w->b->lim.read_max) {
			broker_cut(&w->bg, YX_CUT_BYTES);
			w->stop = true;
		}
		rc = rc == YX_E_NOMEM ? rc : YX_OK;
		goto out;
	}
	if (memchr(data, '\0', len) != NULL)
		goto out;
	for (p = data, end = data + len; p < end; p = nl + 1) {
		lineno++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (memmem(p, (size_t)(nl - p), w->needle, nlen) == NULL)
			continue;
		if (w->grep->n >= w->max_results) {
			broker_cut(&w->bg, YX_CUT_RESULTS);
			w->stop = true;
			break;
		}
		if ((rc = broker_grep_add(w, &w->alloc, lineno, p,
			 (size_t)(nl - p))) != YX_OK)
			break;
	}
out:
	free(data);
	if (fd != -1)
		close(fd);
	return rc;
}

/* Grep the single file rel (not a directory): open its parent, search
 * the one name. Returns YX_OK, YX_E_FILE_NOT_FOUND (raced away), NOMEM. */
static int
broker_grep_one(struct broker_walk *w, int rootfd, const char *rel)
{
	const char	*slash = strrchr(rel, '/');
	char		 dir[YX_VPATH_MAX];
	int		 dfd = -1, rc;

	snprintf(dir, sizeof(dir), "%.*s",
	    slash != NULL ? (int)(slash - rel) : 0, rel);
	if (broker_open_dir(rootfd, dir, w->res, &dfd) != 0)
		return YX_E_FILE_NOT_FOUND;
	rc = broker_grep_file(w, dfd, slash != NULL ? slash + 1 : rel);
	close(dfd);
	return rc;
}

/* See broker.h. */
int
yx_broker_grep(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *needle, const char *glob, size_t max_count,
    struct yx_broker_grep **outp, struct yx_errctx *e)
{
	struct broker_walk	*w = NULL;
	struct broker_glob	 g;
	struct stat		 st;
	const char		*why;
	uint64_t		 res = 0;
	int			 rootfd = -1, dfd = -1, en, fd = -1, rc;

	*outp = NULL;
	memset(&g, 0, sizeof(g));
	if (needle == NULL || needle[0] == '\0') {
		rc = yx_fail(e, YX_E_BAD_REQUEST, "pattern must not be empty");
		goto out;
	}
	/* a file filter without '/' matches names, dotfiles only explicitly */
	if (glob != NULL && glob[0] != '\0' &&
	    (rc = broker_glob_compile(glob, strchr(glob, '/') != NULL, &g,
		 &why)) != YX_OK) {
		rc = rc == YX_E_NOMEM ? yx_fail(e, rc, NULL) :
					yx_fail(e, rc, "unsupported glob syntax: %s", why);
		goto out;
	}
	if (root != YX_ROOT_TOP &&
	    (rc = broker_root(b, root, rel, &rootfd, &res, e)) != YX_OK)
		goto out;
	if ((w = malloc(sizeof(*w))) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	broker_walk_init(w, b, root, rel, res);
	if ((w->grep = calloc(1, sizeof(*w->grep))) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	w->needle = needle;
	w->filter = g.n > 0 ? &g : NULL;
	w->filter_path = g.dot;
	if (max_count > 0 && max_count < w->max_results)
		w->max_results = max_count;
	if (root == YX_ROOT_TOP) {
		rc = broker_walk_top(w, YX_ROOT_USER_DATA, b->lim.max_depth);
		if (rc == YX_OK && !w->stop)
			rc = broker_walk_top(w, YX_ROOT_SKILLS, b->lim.max_depth);
		goto walked;
	}
	if (rootfd == -1)
		goto done;
	en = broker_open_dir(rootfd, rel, res, &dfd);
	if (en == ENOTDIR) {
		/* a file: check it exists as a regular file, then search it */
		if ((rc = broker_open_reg(rootfd, rel, res, &fd, &st, &en)) !=
		    YX_OK) {
			rc = broker_fail(e, rc, root, rel);
			goto out;
		}
		rc = broker_grep_one(w, rootfd, rel);
	} else if (en != 0) {
		rc = broker_fail_errno(e, en, root, rel);
		goto out;
	} else
		rc = broker_walk_dir(w, dfd, 0);
walked:
	if (rc != YX_OK) {
		rc = yx_fail(e, rc, NULL);
		goto out;
	}
done:
	w->grep->cut = w->bg.cut;
	w->grep->truncated = w->bg.cut != YX_CUT_NONE;
	*outp = w->grep;
	w->grep = NULL;
out:
	if (w != NULL)
		yx_broker_grep_free(w->grep);
	free(w);
	broker_glob_free(&g);
	if (dfd != -1)
		close(dfd);
	if (fd != -1)
		close(fd);
	return rc;
}
