/* SPDX-License-Identifier: MIT */
/*
 * agents.c - the agents registry, visible-skill computation and profile
 * selection; see include/yuxi/agents.h for the file schema and the rules
 * (profiles themselves are parsed in profile.c).
 *
 * The registry is loaded once per process (the master validates it at
 * start-up so a bad file stops the service; each worker loads its own copy;
 * a reload runs the same yx_agents_load()).
 * Skill directories are checked on every call with fstatat(AT_SYMLINK_NOFOLLOW)
 * relative to the skills directory, so a symlink never counts as a skill.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/agents.h"
#include "yuxi/config.h"
#include "yuxi/hash.h"
#include "yuxi/path.h"
#include "agentcfg/agentcfg_int.h"

struct yx_agent_sel {
	bool	has;		/* the "skills" key was present */
	size_t	n;
	char	names[YX_SKILLS_MAX][YX_SKILL_NAME_MAX + 1];
};

struct yx_agent_config {
	char			id[YX_THREAD_ID_MAX + 1];
	struct yx_agent_sel	sel;
	int			profile;	/* index in profiles, -1: none */
};

struct yx_agent {
	char			 id[YX_THREAD_ID_MAX + 1];
	struct yx_agent_sel	 sel;
	int			 profile;	/* index in profiles, -1: none */
	size_t			 nconfigs;
	struct yx_agent_config	*configs;
};

struct yx_agents {
	char			 skills_dir[YX_CFG_PATH];
	size_t			 n;
	struct yx_agent		*v;
	size_t			 nprofiles;
	struct yx_profile	*profiles;
	const struct yx_profile	*dflt;		/* "default", else the built-in */
};

bool
yx_skill_name_valid(const char *name)
{
	size_t i;

	if (name == NULL || name[0] == '\0' || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (i = 0; name[i] != '\0'; i++) {
		char c = name[i];

		if (i >= YX_SKILL_NAME_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int
skill_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
yx_skill_set_finish(struct yx_skill_set *s)
{
	const void	*parts[YX_SKILLS_MAX];
	size_t		 lens[YX_SKILLS_MAX], i, o;

	if (s->n > 1)
		qsort(s->names, s->n, sizeof(s->names[0]), skill_cmp);
	for (i = 1, o = s->n > 0 ? 1 : 0; i < s->n; i++)
		if (strcmp(s->names[i], s->names[o - 1]) != 0)
			memmove(s->names[o++], s->names[i], sizeof(s->names[0]));
	s->n = o;
	for (i = 0; i < s->n; i++) {
		parts[i] = s->names[i];
		lens[i] = strlen(s->names[i]);
	}
	return yx_sha256_hex_parts(parts, lens, s->n, s->fp);
}

/* Parse an optional "skills" array of o into sel. */
static int
agents_parse_sel(struct json_object *o, struct yx_agent_sel *sel, const char *who,
    struct yx_errctx *err)
{
	struct json_object	*a, *v;
	const char		*s;
	size_t			 i, n;

	memset(sel, 0, sizeof(*sel));
	if (!json_object_object_get_ex(o, "skills", &a))
		return YX_OK;
	if (!json_object_is_type(a, json_type_array))
		return yx_fail(err, YX_E_BAD_REQUEST, "%s: \"skills\" must be an array", who);
	n = json_object_array_length(a);
	if (n > YX_SKILLS_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST, "%s: more than %d skills", who,
		    YX_SKILLS_MAX);
	sel->has = true;
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(a, i);
		s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		if (!yx_skill_name_valid(s))
			return yx_fail(err, YX_E_BAD_REQUEST, "%s: invalid skill name", who);
		snprintf(sel->names[sel->n++], sizeof(sel->names[0]), "%s", s);
	}
	return YX_OK;
}

/* The "id" of o into dst; must be a valid id. */
static int
agents_parse_id(struct json_object *o, char *dst, size_t len, const char *what,
    struct yx_errctx *err)
{
	struct json_object	*v;
	const char		*s;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "id", &v) ||
	    !json_object_is_type(v, json_type_string))
		return yx_fail(err, YX_E_BAD_REQUEST, "every %s needs a string \"id\"", what);
	s = json_object_get_string(v);
	if (!yx_thread_id_valid(s, strlen(s)) || strlen(s) >= len)
		return yx_fail(err, YX_E_BAD_REQUEST, "%s id must match [A-Za-z0-9_-]{1,128}",
		    what);
	memcpy(dst, s, strlen(s) + 1);
	return YX_OK;
}

/*
 * The optional "profile" of o (at `where`) into *idx: the index of a
 * profile the file defines, -1 when absent. YX_OK or YX_E_BAD_REQUEST.
 */
static int
agents_parse_profile(const struct yx_agents *ag, struct json_object *o,
    const char *where, int *idx, struct yx_errctx *err)
{
	struct json_object	*v;
	const char		*s;
	size_t			 i;

	*idx = -1;
	if (!json_object_object_get_ex(o, "profile", &v))
		return YX_OK;
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	for (i = 0; i < ag->nprofiles; i++)
		if (strcmp(ag->profiles[i].id, s) == 0) {
			*idx = (int)i;
			return YX_OK;
		}
	return yx_fail(err, YX_E_BAD_REQUEST, "%s.profile: no profile \"%s\" in "
					      "\"profiles\"",
	    where, s);
}

static int
agents_parse_configs(const struct yx_agents *ag, struct json_object *o, size_t ai,
    struct yx_agent *a, struct yx_errctx *err)
{
	static const char *const known[] = { "id", "skills", "profile", NULL };
	struct json_object	*arr;
	size_t			 i, j, n;
	char			 who[300], where[400];
	int			 rc;

	if (!json_object_object_get_ex(o, "configs", &arr))
		return YX_OK;
	if (!json_object_is_type(arr, json_type_array))
		return yx_fail(err, YX_E_BAD_REQUEST, "agent %s: \"configs\" must be an array",
		    a->id);
	if ((n = json_object_array_length(arr)) == 0)
		return YX_OK;
	if ((a->configs = calloc(n, sizeof(*a->configs))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	for (i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);

		if ((rc = agents_parse_id(c, a->configs[i].id, sizeof(a->configs[i].id),
			 "config", err)) != YX_OK)
			return rc;
		for (j = 0; j < i; j++)
			if (!strcmp(a->configs[j].id, a->configs[i].id))
				return yx_fail(err, YX_E_BAD_REQUEST,
				    "agent %s: duplicate config id %s", a->id, a->configs[i].id);
		snprintf(who, sizeof(who), "agent %s config %s", a->id, a->configs[i].id);
		snprintf(where, sizeof(where), "agents[%zu].configs[%zu] (\"%s\")", ai,
		    i, a->configs[i].id);
		if ((rc = agentcfg_keys_check(c, known, where, err)) != YX_OK ||
		    (rc = agents_parse_sel(c, &a->configs[i].sel, who, err)) != YX_OK ||
		    (rc = agents_parse_profile(ag, c, where,
			 &a->configs[i].profile, err)) != YX_OK)
			return rc;
		a->nconfigs++;
	}
	return YX_OK;
}

/* "profiles" (optional) and the default profile. */
static int
agents_parse_profiles(struct yx_agents *ag, struct json_object *root,
    struct yx_errctx *err)
{
	struct json_object	*arr;
	size_t			 i;
	int			 rc;

	if (!json_object_object_get_ex(root, "profiles", &arr))
		return YX_OK;
	if ((rc = agentcfg_profiles_parse(arr, &ag->profiles, &ag->nprofiles,
		 err)) != YX_OK)
		return rc;
	for (i = 0; i < ag->nprofiles; i++)
		if (strcmp(ag->profiles[i].id, "default") == 0)
			ag->dflt = &ag->profiles[i];
	return YX_OK;
}

static int
agents_parse(struct yx_agents *ag, struct json_object *root, struct yx_errctx *err)
{
	static const char *const top[] = { "agents", "profiles", NULL };
	static const char *const known[] = { "id", "skills", "configs", "profile",
		NULL };
	struct json_object	*arr, *o;
	size_t			 i, j, n;
	char			 who[300], where[200];
	int			 rc;

	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "agents", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return yx_fail(err, YX_E_BAD_REQUEST, "expected {\"agents\": [...]}");
	if ((rc = agentcfg_keys_check(root, top, "$", err)) != YX_OK ||
	    (rc = agents_parse_profiles(ag, root, err)) != YX_OK)
		return rc;
	if ((n = json_object_array_length(arr)) == 0)
		return YX_OK;
	if ((ag->v = calloc(n, sizeof(*ag->v))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	for (i = 0; i < n; i++) {
		struct yx_agent *a = &ag->v[i];

		o = json_object_array_get_idx(arr, i);
		ag->n++;
		if ((rc = agents_parse_id(o, a->id, sizeof(a->id), "agent", err)) != YX_OK)
			return rc;
		for (j = 0; j < i; j++)
			if (!strcmp(ag->v[j].id, a->id))
				return yx_fail(err, YX_E_BAD_REQUEST, "duplicate agent id %s",
				    a->id);
		snprintf(who, sizeof(who), "agent %s", a->id);
		snprintf(where, sizeof(where), "agents[%zu] (\"%s\")", i, a->id);
		if ((rc = agentcfg_keys_check(o, known, where, err)) != YX_OK ||
		    (rc = agents_parse_sel(o, &a->sel, who, err)) != YX_OK ||
		    (rc = agents_parse_profile(ag, o, where, &a->profile, err)) != YX_OK ||
		    (rc = agents_parse_configs(ag, o, i, a, err)) != YX_OK)
			return rc;
	}
	return YX_OK;
}

/*
 * A syntax error: YX_E_BAD_REQUEST naming the line and column where the
 * parser stopped (json-c counts bytes; columns are 1-based bytes).
 */
static int
agents_syntax(struct json_tokener *tok, const char *text, size_t len,
    struct yx_errctx *err)
{
	size_t	off = (size_t)tok->char_offset, i, line = 1, col = 1;

	if (off > len)
		off = len;
	for (i = 0; i < off; i++, col++)
		if (text[i] == '\n') {
			line++;
			col = 0;
		}
	return yx_fail(err, YX_E_BAD_REQUEST, "line %zu column %zu: not valid "
					      "JSON (%s)",
	    line, col,
	    json_tokener_get_error(tok) != json_tokener_success ?
		json_tokener_error_desc(json_tokener_get_error(tok)) :
		"trailing text");
}

/* The offset of the first quoted "name" in text at or after from, or -1. */
static long
agents_find_quoted(const char *text, size_t from, const char *name, size_t nlen)
{
	const char *p = text + from;

	while ((p = strchr(p, '"')) != NULL) {
		if (strncmp(p + 1, name, nlen) == 0 && p[1 + nlen] == '"')
			return (long)(p - text);
		p++;
	}
	return -1;
}

/*
 * Where a semantic error is in the file (json-c keeps no positions): the
 * line of the first "<key>" after its object's "<id>", from the error's
 * JSON path (`profiles[0] ("x").memroy: unknown key`). The message gets
 * "line N: " in front; it stays as it was when they are not found.
 */
static void
agents_locate(const char *text, struct yx_errctx *err)
{
	char		 path[sizeof(err->msg)], pre[32];
	const char	*colon = strstr(err->msg, ": "), *key, *id, *idend;
	size_t		 i, line = 1, from = 0, n, keep;
	long		 at, idat;

	if (colon == NULL || (size_t)(colon - err->msg) >= sizeof(path))
		return;
	memcpy(path, err->msg, (size_t)(colon - err->msg));
	path[colon - err->msg] = '\0';
	if ((key = strrchr(path, '.')) == NULL || key[1] == '\0')
		return;
	key++;
	if ((id = strstr(path, "(\"")) != NULL && (idend = strstr(id + 2, "\")")) != NULL &&
	    (idat = agents_find_quoted(text, 0, id + 2, (size_t)(idend - id - 2))) >= 0)
		from = (size_t)idat;
	if ((at = agents_find_quoted(text, from, key, strlen(key))) < 0 &&
	    (at = agents_find_quoted(text, 0, key, strlen(key))) < 0)
		return;
	for (i = 0; i < (size_t)at; i++)
		line += text[i] == '\n';
	n = (size_t)snprintf(pre, sizeof(pre), "line %zu: ", line);
	keep = strlen(err->msg);
	if (keep > sizeof(err->msg) - 1 - n)
		keep = sizeof(err->msg) - 1 - n;
	memmove(err->msg + n, err->msg, keep);
	memcpy(err->msg, pre, n);
	err->msg[n + keep] = '\0';
}

/* Read at most YX_AGENTS_FILE_MAX bytes of path into a heap string. */
static int
agents_read(const char *path, char **out, size_t *lenp, struct yx_errctx *err)
{
	char	*buf = NULL;
	size_t	 len = 0;
	ssize_t	 r;
	int	 fd, rc = YX_OK;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return yx_fail(err, yx_err_from_errno(errno), "cannot open: %s",
		    strerror(errno));
	if ((buf = malloc(YX_AGENTS_FILE_MAX + 1)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	while (len <= YX_AGENTS_FILE_MAX &&
	    (r = read(fd, buf + len, YX_AGENTS_FILE_MAX + 1 - len)) > 0)
		len += (size_t)r;
	if (len > YX_AGENTS_FILE_MAX) {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "file larger than %d bytes",
		    YX_AGENTS_FILE_MAX);
		goto done;
	}
	*out = buf;
	*lenp = len;
	buf = NULL;
done:
	free(buf);
	close(fd);
	return rc;
}

int
yx_agents_load(struct yx_agents **out, const char *file, const char *skills_dir,
    struct yx_errctx *err)
{
	struct yx_agents	*ag = NULL;
	struct json_tokener	*tok = NULL;
	struct json_object	*root = NULL;
	char			*text = NULL;
	size_t			 len = 0;
	int			 rc;

	*out = NULL;
	if ((ag = calloc(1, sizeof(*ag))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if (skills_dir != NULL)
		snprintf(ag->skills_dir, sizeof(ag->skills_dir), "%s", skills_dir);
	rc = YX_OK;
	ag->dflt = yx_profile_default();
	if (file == NULL || file[0] == '\0')
		goto done;
	if ((rc = agents_read(file, &text, &len, err)) != YX_OK)
		goto done;
	if ((tok = json_tokener_new()) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (root == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset != (int)len) {
		rc = agents_syntax(tok, text, len, err);
		goto done;
	}
	if ((rc = agents_parse(ag, root, err)) != YX_OK && err != NULL)
		agents_locate(text, err);
done:
	json_object_put(root);
	if (tok != NULL)
		json_tokener_free(tok);
	free(text);
	if (rc == YX_OK)
		*out = ag;
	else
		yx_agents_free(ag);
	return rc;
}

void
yx_agents_free(struct yx_agents *ag)
{
	size_t i;

	if (ag == NULL)
		return;
	for (i = 0; i < ag->n; i++)
		free(ag->v[i].configs);
	free(ag->v);
	agentcfg_profiles_free(ag->profiles, ag->nprofiles);
	free(ag);
}

size_t
yx_agents_count(const struct yx_agents *ag)
{
	return ag->n;
}

static const struct yx_agent *
agents_find(const struct yx_agents *ag, const char *id)
{
	size_t i;

	for (i = 0; i < ag->n; i++)
		if (!strcmp(ag->v[i].id, id))
			return &ag->v[i];
	return NULL;
}

static const struct yx_agent_config *
agents_find_config(const struct yx_agent *a, const char *id)
{
	size_t i;

	for (i = 0; i < a->nconfigs; i++)
		if (!strcmp(a->configs[i].id, id))
			return &a->configs[i];
	return NULL;
}

int
yx_agents_check(const struct yx_agents *ag, const char *agent_id,
    const char *config_id, struct yx_errctx *err)
{
	const struct yx_agent *a;

	if (agent_id == NULL || agent_id[0] == '\0') {
		if (config_id != NULL && config_id[0] != '\0')
			return yx_fail(err, YX_E_BAD_REQUEST,
			    "agent_config_id given without agent_id");
		return YX_OK;
	}
	if ((a = agents_find(ag, agent_id)) == NULL)
		return yx_fail(err, YX_E_BAD_REQUEST, "unknown agent_id");
	if (config_id != NULL && config_id[0] != '\0' && agents_find_config(a, config_id) == NULL)
		return yx_fail(err, YX_E_BAD_REQUEST, "unknown agent_config_id for this agent");
	return YX_OK;
}

int
yx_agents_skills(const struct yx_agents *ag, const char *agent_id,
    const char *config_id, struct yx_skill_set *out)
{
	const struct yx_agent		*a = NULL;
	const struct yx_agent_config	*c = NULL;
	const struct yx_agent_sel	*sel = NULL;
	struct stat			 sb;
	size_t				 i;
	int				 dfd = -1;

	memset(out, 0, sizeof(*out));
	if (agent_id != NULL && agent_id[0] != '\0')
		a = agents_find(ag, agent_id);
	if (a != NULL && config_id != NULL && config_id[0] != '\0')
		c = agents_find_config(a, config_id);
	if (c != NULL && c->sel.has)
		sel = &c->sel;
	else if (a != NULL && a->sel.has)
		sel = &a->sel;
	if (sel != NULL && sel->n > 0 && ag->skills_dir[0] != '\0')
		dfd = open(ag->skills_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; dfd != -1 && i < sel->n; i++) {
		if (fstatat(dfd, sel->names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(sb.st_mode))
			memcpy(out->names[out->n++], sel->names[i], sizeof(out->names[0]));
	}
	if (dfd != -1)
		close(dfd);
	return yx_skill_set_finish(out);
}

const struct yx_profile *
yx_agents_profile_at(const struct yx_agents *ag, size_t i)
{
	return ag != NULL && i < ag->nprofiles ? &ag->profiles[i] : NULL;
}

bool
yx_agents_uses_runtime(const struct yx_agents *ag, const char *runtime)
{
	size_t i;

	for (i = 0; ag != NULL && i < ag->nprofiles; i++)
		if (strcmp(ag->profiles[i].runtime, runtime) == 0)
			return true;
	return false;
}

const struct yx_profile *
yx_agents_profile(const struct yx_agents *ag, const char *agent_id,
    const char *config_id)
{
	const struct yx_agent		*a = NULL;
	const struct yx_agent_config	*c = NULL;

	if (agent_id != NULL && agent_id[0] != '\0')
		a = agents_find(ag, agent_id);
	if (a != NULL && config_id != NULL && config_id[0] != '\0')
		c = agents_find_config(a, config_id);
	if (c != NULL && c->profile >= 0)
		return &ag->profiles[c->profile];
	if (a != NULL && a->profile >= 0)
		return &ag->profiles[a->profile];
	return ag->dflt;
}
