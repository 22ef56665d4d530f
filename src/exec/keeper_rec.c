/* SPDX-License-Identifier: MIT */
/*
 * keeper_rec.c - what proc.c (background processes) and session.c
 * (sessions) share: their records in the thread's directory, one JSON
 * file per keeper, and the talk to a keeper within a request's budget
 * (exec_int.h "Keepers").
 *
 * A record is written through a temporary name: a new one by a rename, an
 * update by an exchange with the current one, which fails when it is gone
 * (a refresh racing a DELETE never brings a forgotten keeper back). What a
 * keeper says is untrusted like everything from the sandbox: bounded,
 * parsed strictly.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/replace.h"
#include "exec/agent_client.h"
#include "exec/exec_int.h"

#define REC_MAX		(1 << 20)	/* bytes of one record */

int
exec_rec_dir(int tdir, const char *name, bool create)
{
	int fd;

	fd = openat(tdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT && create &&
	    (mkdirat(tdir, name, 0700) == 0 || errno == EEXIST))
		fd = openat(tdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

bool
exec_rec_id_valid(const char *id, char prefix)
{
	return id[0] == prefix && strlen(id) == EXEC_REC_ID_SIZE - 1 &&
	    strspn(id + 1, "0123456789abcdef") == EXEC_REC_ID_SIZE - 2;
}

int
exec_rec_new_id(char prefix, char id[EXEC_REC_ID_SIZE])
{
	unsigned char	r[8];
	size_t		i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return YX_E_IO;
	id[0] = prefix;
	for (i = 0; i < sizeof(r); i++)
		snprintf(id + 1 + 2 * i, 3, "%02x", r[i]);
	return YX_OK;
}

int
exec_rec_put(int dfd, const char *id, struct json_object *o, unsigned how)
{
	struct yx_replace	r = { .mode = 0600 };
	int			rc = YX_E_IO;

	/* yx_replace_at's temporary is the record's own: two workers may
	 * refresh a record at once */
	if ((how & EXEC_REC_CREATE) == 0)
		r.flags = YX_REPLACE_EXISTING;
	if ((how & EXEC_REC_HINT) != 0)
		r.flags |= YX_REPLACE_HINT;
	if ((r.data = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN,
		 &r.len)) != NULL &&
	    (rc = yx_replace_at(dfd, id, &r)) != YX_OK && rc != YX_E_NOT_FOUND)
		rc = YX_E_IO;
	if (rc == YX_E_IO)
		log_warn("keeper record %s", id);
	return rc;
}

int
exec_rec_get(int dfd, const char *id, struct json_object **out)
{
	struct json_tokener	*tok;
	struct stat		 st;
	char			*text = NULL;
	ssize_t			 n = -1;
	int			 fd;

	*out = NULL;
	memset(&st, 0, sizeof(st));
	if ((fd = openat(dfd, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return YX_E_NOT_FOUND;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < REC_MAX &&
	    (text = malloc((size_t)st.st_size + 1)) != NULL)
		n = read(fd, text, (size_t)st.st_size);
	close(fd);
	if (n == st.st_size && (tok = json_tokener_new()) != NULL) {
		*out = json_tokener_parse_ex(tok, text, (int)n);
		json_tokener_free(tok);
	}
	free(text);
	if (*out != NULL && !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
	}
	return *out != NULL ? YX_OK : YX_E_IO;
}

int64_t
exec_rec_int(struct json_object *o, const char *key, int64_t dflt)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
		json_object_is_type(v, json_type_int) ?
	    json_object_get_int64(v) :
	    dflt;
}

const char *
exec_rec_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
		json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) :
	    NULL;
}

int
exec_kstatus_parse(const char *s, struct exec_kstatus *ks)
{
	static const char *const keys[] = { "from", "to", "total", "written",
		"code", "ended", "run", "timedout", "killed", "stdin", "busy",
		"idle" };
	long long	 v;
	const char	*p = s, *eq;
	char		*end;
	size_t		 i, k;

	memset(ks, 0, sizeof(*ks));
	ks->code = -1;
	while (*p != '\0') {
		if ((eq = strchr(p, '=')) == NULL)
			return -1;
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if ((size_t)(eq - p) == strlen(keys[k]) &&
			    strncmp(p, keys[k], strlen(keys[k])) == 0)
				break;
		errno = 0;
		v = strtoll(eq + 1, &end, 10);
		if (errno != 0 || end == eq + 1 || (*end != ' ' && *end != '\0'))
			return -1;
		if (k < 4 && v < 0)
			return -1;
		i = (size_t)v;
		switch (k) {
		case 0: ks->from = i; break;
		case 1: ks->to = i; break;
		case 2: ks->total = i; break;
		case 3: ks->written = i; break;
		case 4: ks->code = v; break;
		case 5: ks->ended = v; break;
		case 6: ks->run = v != 0; break;
		case 7: ks->timedout = v != 0; break;
		case 8: ks->killed = v != 0; break;
		case 9: ks->in_open = v != 0; break;
		case 10: ks->busy = v != 0; break;
		case 11: ks->idle = v != 0; break;
		default: break;	/* a newer keeper's word */
		}
		p = *end == ' ' ? end + 1 : end;
	}
	return ks->from <= ks->to && ks->to <= ks->total ? 0 : -1;
}

int
exec_keeper_exit(const struct yx_proc_ctx *c, const char *id,
    struct exec_kstatus *ks)
{
	char	name[EXEC_REC_ID_SIZE + 16], text[256];
	ssize_t	n;

	snprintf(name, sizeof(name), YX_AGENT_PROC_PREFIX "%s.exit", id);
	n = yx_agent_read_small(c->rundir, name, c->uid, text, sizeof(text));
	if (n > 0 && text[n - 1] == '\n')
		text[n - 1] = '\0';
	if (n <= 0 || exec_kstatus_parse(text, ks) != 0)
		return -1;
	ks->run = 0;
	return 0;
}

void
exec_keeper_forget_exit(const struct yx_proc_ctx *c, const char *id)
{
	char name[EXEC_REC_ID_SIZE + 16];

	snprintf(name, sizeof(name), YX_AGENT_PROC_PREFIX "%s.exit", id);
	(void)unlinkat(c->rundir, name, 0);	/* a name in it, nothing followed */
}

int
exec_keeper_op(const struct yx_proc_ctx *c, const char *id, int op,
    const char *payload, size_t len, int wait_ms, yx_output_fn sink, void *arg,
    char *status, struct yx_errctx *err)
{
	int rc;

	rc = yx_agent_keeper_op(c->rundir, c->uid, id, op, payload, len, wait_ms,
	    c->until, sink, arg, status, err);
	if (rc == YX_OK && c->answered != NULL)
		*c->answered = true;
	if (rc != YX_E_TIMEOUT)
		return rc;
	if (c->stalled != NULL)
		*c->stalled = true;
	return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
	    "the sandbox's process keeper did not answer in time");
}

/* qsort's comparison: the kind's order, by its sort key, then by id. */
static const struct exec_rec_kind *rec_sorting;

static int
rec_cmp(const void *a, const void *b)
{
	int64_t x = rec_sorting->key(a), y = rec_sorting->key(b);

	if (x != y)
		return x < y ? -1 : 1;
	return strcmp(rec_sorting->id(a), rec_sorting->id(b));
}

int
exec_rec_all(const struct yx_proc_ctx *c, const struct exec_rec_kind *k, int dfd,
    void **out, size_t *n, struct yx_errctx *err)
{
	struct dirent	*de;
	char		*v;
	DIR		*d;
	int		 fd, rc;

	*out = NULL;
	*n = 0;
	if ((v = calloc(k->max + 1, k->size)) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		free(v);
		return yx_fail(err, YX_E_IO, "%s records unreadable", k->what);
	}
	while ((de = readdir(d)) != NULL && *n <= k->max) {
		if (!exec_rec_id_valid(de->d_name, k->prefix))
			continue;
		rc = k->load(c, dfd, de->d_name, v + *n * k->size);
		if (rc == YX_OK)
			(*n)++;
	}
	closedir(d);
	rec_sorting = k;	/* one worker is one thread */
	qsort(v, *n, k->size, rec_cmp);
	*out = v;
	return YX_OK;
}

int
exec_rec_room(const struct yx_proc_ctx *c, const struct exec_rec_kind *k, int dfd,
    size_t *live, struct yx_errctx *err)
{
	char	*v;
	size_t	 n, i, left;
	int	 rc;

	*live = 0;
	if ((rc = exec_rec_all(c, k, dfd, (void **)&v, &n, err)) != YX_OK)
		return rc;
	for (i = 0; i < n; i++)
		*live += k->live(v + i * k->size);
	left = n;
	for (i = 0; i < n && left >= k->max; i++)
		if (!k->live(v + i * k->size) &&
		    unlinkat(dfd, k->id(v + i * k->size), 0) == 0)
			left--;
	for (i = 0; k->fini != NULL && i < n; i++)
		k->fini(v + i * k->size);
	free(v);
	if (left >= k->max)
		return yx_fail(err, k->limit_err, "too many %s records", k->what);
	return YX_OK;
}
