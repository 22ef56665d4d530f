/* SPDX-License-Identifier: MIT */
/*
 * profile.c - sandbox profiles of the agents file: parsing and validation
 * of every key (include/yuxi/agents.h lists them), the fingerprint of a
 * profile and the settings it gives a sandbox.
 *
 * Every value is checked when the file loads (the master at start-up and
 * on reload, each worker on its own copy), so a typo stops the load with
 * the JSON path of the key rather than giving a sandbox other settings
 * than meant: a profile meant to run under gVisor that silently ran under
 * runc would be worse than no start. Ranges are the service
 * configuration's (src/common/config.c).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/agents.h"
#include "yuxi/buf.h"
#include "yuxi/hash.h"
#include "yuxi/text.h"
#include "agentcfg/agentcfg_int.h"

#define PROF_TIMEOUT_MAX	600	/* as YUXI_SANDBOX_EXEC_TIMEOUT */

/* Names a profile's env may not set: the network setting owns them. */
static const char *const prof_env_reserved[] = { "HTTP_PROXY", "HTTPS_PROXY",
	"http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
	"no_proxy", NULL };

int
agentcfg_keys_check(struct json_object *o, const char *const *known,
    const char *where, struct yx_errctx *err)
{
	size_t i;

	json_object_object_foreach(o, key, val)
	{
		(void)val;
		if (key[0] == '_' || strcmp(key, "description") == 0)
			continue;
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (known[i] == NULL)
			return yx_fail(err, YX_E_BAD_REQUEST, "%s.%s: unknown key",
			    where, key);
	}
	return YX_OK;
}

/* A size: "512m" or a number of bytes, within [lo, hi]. */
static int
prof_size(struct json_object *v, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t n;

	if (json_object_is_type(v, json_type_int))
		n = json_object_get_int64(v);
	else if (!json_object_is_type(v, json_type_string) ||
	    yx_parse_size(json_object_get_string(v), &n) != YX_OK)
		return YX_E_BAD_REQUEST;
	if (n < lo || n > hi)
		return YX_E_BAD_REQUEST;
	*out = n;
	return YX_OK;
}

static int
prof_int(struct json_object *v, int lo, int hi, int *out)
{
	int64_t n;

	if (!json_object_is_type(v, json_type_int))
		return YX_E_BAD_REQUEST;
	n = json_object_get_int64(v);
	if (n < lo || n > hi)
		return YX_E_BAD_REQUEST;
	*out = (int)n;
	return YX_OK;
}

/* A string of [A-Za-z0-9._:/@-], 1..len-1 bytes, not starting with '-'. */
static int
prof_image(struct json_object *v, char *out, size_t len)
{
	const char	*s;
	size_t		 i, n;

	if (!json_object_is_type(v, json_type_string))
		return YX_E_BAD_REQUEST;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n == 0 || n >= len || s[0] == '-')
		return YX_E_BAD_REQUEST;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			(s[i] >= '0' && s[i] <= '9') || strchr("._:/@-", s[i]) != NULL))
			return YX_E_BAD_REQUEST;
	memcpy(out, s, n + 1);
	return YX_OK;
}

/* exec_timeout: a number (the default) or {"default": s, "max": s}. */
static int
prof_timeout(struct json_object *v, struct yx_profile *p, const char **why)
{
	struct json_object *d, *m;

	*why = "expected seconds (1..600) or {\"default\": s, \"max\": s}";
	if (json_object_is_type(v, json_type_int))
		return prof_int(v, 1, PROF_TIMEOUT_MAX, &p->exec_timeout);
	if (!json_object_is_type(v, json_type_object) ||
	    json_object_object_length(v) == 0)
		return YX_E_BAD_REQUEST;
	json_object_object_foreach(v, key, val)
	{
		(void)val;
		if (strcmp(key, "default") != 0 && strcmp(key, "max") != 0)
			return YX_E_BAD_REQUEST;
	}
	if ((json_object_object_get_ex(v, "default", &d) &&
		prof_int(d, 1, PROF_TIMEOUT_MAX, &p->exec_timeout) != YX_OK) ||
	    (json_object_object_get_ex(v, "max", &m) &&
		prof_int(m, 1, PROF_TIMEOUT_MAX, &p->exec_timeout_max) != YX_OK))
		return YX_E_BAD_REQUEST;
	if (p->exec_timeout_max > 0 && p->exec_timeout > p->exec_timeout_max) {
		*why = "the default is above the max";
		return YX_E_BAD_REQUEST;
	}
	return YX_OK;
}

/* A list of rules (array of strings) into r[], *n. */
static int
prof_rules(struct json_object *a, bool with_port, struct yx_egress_rule *r,
    size_t *n, char *why, size_t whylen)
{
	struct json_object	*v;
	char			 w[128];
	size_t			 i, len;

	if (!json_object_is_type(a, json_type_array)) {
		snprintf(why, whylen, "expected an array of strings");
		return YX_E_BAD_REQUEST;
	}
	if ((len = json_object_array_length(a)) > YX_EGRESS_RULES_MAX) {
		snprintf(why, whylen, "more than %d entries", YX_EGRESS_RULES_MAX);
		return YX_E_BAD_REQUEST;
	}
	for (i = 0; i < len; i++) {
		v = json_object_array_get_idx(a, i);
		if (!json_object_is_type(v, json_type_string) ||
		    yx_egress_rule_parse(json_object_get_string(v), with_port,
			&r[i], w, sizeof(w)) != YX_OK) {
			snprintf(why, whylen, "[%zu]: %s", i,
			    json_object_is_type(v, json_type_string) ? w :
								       "expected a string");
			return YX_E_BAD_REQUEST;
		}
	}
	*n = len;
	return YX_OK;
}

/* network: "none" or {"allow": [...], "allow_private": [...]}. */
static int
prof_network(struct json_object *v, struct yx_profile *p, char *why,
    size_t whylen)
{
	static const char *const known[] = { "allow", "allow_private", NULL };
	struct json_object	*a;
	size_t			 i;
	int			 rc;

	if (json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "none") == 0)
		return YX_OK;
	snprintf(why, whylen, "expected \"none\" or {\"allow\": [\"host:port\", ...]}");
	if (!json_object_is_type(v, json_type_object))
		return YX_E_BAD_REQUEST;
	json_object_object_foreach(v, key, val)
	{
		(void)val;
		for (i = 0; known[i] != NULL && strcmp(key, known[i]) != 0; i++)
			;
		if (known[i] == NULL) {
			snprintf(why, whylen, "%s: unknown key", key);
			return YX_E_BAD_REQUEST;
		}
	}
	if (!json_object_object_get_ex(v, "allow", &a) ||
	    json_object_array_length(a) == 0)
		return YX_E_BAD_REQUEST;
	if ((rc = prof_rules(a, true, p->net.allow, &p->net.nallow, why,
		 whylen)) != YX_OK)
		return rc;
	if (json_object_object_get_ex(v, "allow_private", &a) &&
	    (rc = prof_rules(a, false, p->net.priv, &p->net.nprivate, why,
		 whylen)) != YX_OK)
		return rc;
	return YX_OK;
}

/* A variable name: [A-Za-z_][A-Za-z0-9_]*, not one the service sets. */
static bool
prof_env_name_ok(const char *s)
{
	size_t i;

	if (!yx_env_name_ok(s))
		return false;
	for (i = 0; prof_env_reserved[i] != NULL; i++)
		if (strcmp(s, prof_env_reserved[i]) == 0)
			return false;
	return true;
}

/* env: {"NAME": "value"}, each "NAME=value" under YX_PROFILE_ENV_LEN. */
static int
prof_env(struct json_object *v, struct yx_profile *p, char *why, size_t whylen)
{
	const char *val;

	if (!json_object_is_type(v, json_type_object)) {
		snprintf(why, whylen, "expected {\"NAME\": \"value\"}");
		return YX_E_BAD_REQUEST;
	}
	if (json_object_object_length(v) > YX_PROFILE_ENV_MAX) {
		snprintf(why, whylen, "more than %d variables", YX_PROFILE_ENV_MAX);
		return YX_E_BAD_REQUEST;
	}
	json_object_object_foreach(v, key, jv)
	{
		if (!prof_env_name_ok(key)) {
			snprintf(why, whylen, "%s: not a variable name the profile "
					      "may set ([A-Za-z_][A-Za-z0-9_]*, "
					      "no *_PROXY: the network key sets them)",
			    key);
			return YX_E_BAD_REQUEST;
		}
		val = json_object_is_type(jv, json_type_string) ?
		    json_object_get_string(jv) :
		    NULL;
		if (val == NULL ||
		    strlen(val) != (size_t)json_object_get_string_len(jv) ||
		    strlen(key) + strlen(val) + 2 > YX_PROFILE_ENV_LEN) {
			snprintf(why, whylen, "%s: expected a string without NUL, "
					      "under %d bytes",
			    key, YX_PROFILE_ENV_LEN);
			return YX_E_BAD_REQUEST;
		}
		if (asprintf(&p->env[p->nenv], "%s=%s", key, val) < 0) {
			p->env[p->nenv] = NULL;
			return YX_E_NOMEM;
		}
		p->nenv++;
	}
	return YX_OK;
}

/* One key of a profile; why gets the reason of a refusal. */
static int
prof_key(const char *key, struct json_object *v, struct yx_profile *p,
    char *why, size_t whylen)
{
	const char	*w = NULL;
	int		 rc = YX_E_BAD_REQUEST;

	if (strcmp(key, "image") == 0) {
		rc = prof_image(v, p->image, sizeof(p->image));
		w = "expected an image name ([A-Za-z0-9._:/@-])";
	} else if (strcmp(key, "runtime") == 0) {
		if (json_object_is_type(v, json_type_string) &&
		    yx_runtime_valid(json_object_get_string(v))) {
			snprintf(p->runtime, sizeof(p->runtime), "%s",
			    json_object_get_string(v));
			rc = YX_OK;
		}
		w = "expected \"runc\" or \"runsc\"";
	} else if (strcmp(key, "memory") == 0) {
		rc = prof_size(v, 6LL << 20, 1LL << 40, &p->memory_bytes);
		w = "expected a size such as \"512m\" (6m..1t)";
	} else if (strcmp(key, "tmp_size") == 0) {
		rc = prof_size(v, 1LL << 20, 16LL << 30, &p->tmp_size);
		w = "expected a size such as \"64m\" (1m..16g)";
	} else if (strcmp(key, "cpus") == 0) {
		if (json_object_is_type(v, json_type_int) ||
		    json_object_is_type(v, json_type_double)) {
			p->cpus = json_object_get_double(v);
			rc = isfinite(p->cpus) && p->cpus >= 0.01 && p->cpus <= 256 ?
			    YX_OK :
			    YX_E_BAD_REQUEST;
		}
		w = "expected a number in [0.01, 256]";
	} else if (strcmp(key, "pids") == 0) {
		rc = prof_int(v, 16, 1 << 20, &p->pids);
		w = "expected an integer in [16, 1048576]";
	} else if (strcmp(key, "exec_timeout") == 0)
		rc = prof_timeout(v, p, &w);
	else if (strcmp(key, "workspace") == 0) {
		if (json_object_is_type(v, json_type_string) &&
		    (strcmp(json_object_get_string(v), "rw") == 0 ||
			strcmp(json_object_get_string(v), "ro") == 0)) {
			p->workspace = json_object_get_string(v)[1] == 'o' ?
			    YX_WORKSPACE_RO :
			    YX_WORKSPACE_RW;
			rc = YX_OK;
		}
		w = "expected \"rw\" or \"ro\"";
	} else if (strcmp(key, "network") == 0)
		return prof_network(v, p, why, whylen);
	else if (strcmp(key, "env") == 0)
		return prof_env(v, p, why, whylen);
	else if (strcmp(key, "services") == 0)
		return agentcfg_services_parse(v, p, why, whylen);
	if (rc != YX_OK)
		snprintf(why, whylen, "%s", w);
	return rc;
}

/* The canonical text of every field but the id, hashed into p->fp. */
static int
prof_finish(struct yx_profile *p)
{
	struct yx_buf	b;
	size_t		i;
	int		rc;

	yx_buf_init(&b, 1 << 20);
	rc = yx_buf_printf(&b, "image=%s\nruntime=%s\nmemory=%lld\ncpus=%.6g\n"
			       "pids=%d\ntmp_size=%lld\nexec_timeout=%d/%d\n"
			       "workspace=%s\n",
	    p->image, p->runtime, (long long)p->memory_bytes, p->cpus, p->pids,
	    (long long)p->tmp_size, p->exec_timeout, p->exec_timeout_max,
	    p->workspace == YX_WORKSPACE_RO ? "ro" : "rw");
	if (rc == YX_OK)
		rc = yx_egress_policy_text(&p->net, &b);
	for (i = 0; rc == YX_OK && i < p->nenv; i++)
		rc = yx_buf_printf(&b, "env %s\n", p->env[i]);
	for (i = 0; rc == YX_OK && i < p->nservices; i++)
		rc = yx_buf_printf(&b, "service %s %d %zu:%s\n", p->services[i].name,
		    p->services[i].ready_port, strlen(p->services[i].command),
		    p->services[i].command);
	if (rc == YX_OK)
		rc = yx_sha256_hex(b.data != NULL ? b.data : "", b.len, p->fp) ==
			YX_OK ?
		    YX_OK :
		    YX_E_INTERNAL;
	yx_buf_fini(&b);
	return rc;
}

const struct yx_profile *
yx_profile_default(void)
{
	static struct yx_profile	p;
	static bool			done;

	if (!done) {
		snprintf(p.id, sizeof(p.id), "default");
		(void)prof_finish(&p);	/* fixed text: cannot fail but NOMEM */
		done = true;
	}
	return &p;
}

/* One element of "profiles" into p (its id already checked unique). */
static int
prof_parse_one(struct json_object *o, size_t idx, struct yx_profile *p,
    struct yx_errctx *err)
{
	static const char *const known[] = { "id", "image", "runtime", "memory",
		"cpus", "pids", "tmp_size", "exec_timeout", "workspace",
		"network", "env", "services", NULL };
	char	where[YX_THREAD_ID_SIZE + 32], why[300];
	int	rc;

	snprintf(where, sizeof(where), "profiles[%zu] (\"%s\")", idx, p->id);
	if ((rc = agentcfg_keys_check(o, known, where, err)) != YX_OK)
		return rc;
	json_object_object_foreach(o, key, v)
	{
		if (key[0] == '_' || strcmp(key, "id") == 0 ||
		    strcmp(key, "description") == 0)
			continue;
		why[0] = '\0';
		if ((rc = prof_key(key, v, p, why, sizeof(why))) != YX_OK)
			return rc == YX_E_NOMEM ? yx_fail(err, rc, NULL) :
						  yx_fail(err, rc, "%s.%s: %s",
						      where, key, why);
	}
	if (prof_finish(p) != YX_OK)
		return yx_fail(err, YX_E_INTERNAL, "%s: cannot fingerprint", where);
	return YX_OK;
}

/* The "id" of profile i into p->id; unique among the first i. */
static int
prof_parse_id(struct json_object *o, size_t i, struct yx_profile *v,
    struct yx_errctx *err)
{
	struct json_object	*id;
	const char		*s;
	size_t			 j;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "id", &id) ||
	    !json_object_is_type(id, json_type_string))
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "profiles[%zu]: every profile needs a string \"id\"", i);
	s = json_object_get_string(id);
	if (!yx_thread_id_valid(s, strlen(s)))
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "profiles[%zu].id: must match [A-Za-z0-9_-]{1,128}", i);
	for (j = 0; j < i; j++)
		if (strcmp(v[j].id, s) == 0)
			return yx_fail(err, YX_E_BAD_REQUEST,
			    "profiles[%zu].id: duplicate profile id %s", i, s);
	snprintf(v[i].id, sizeof(v[i].id), "%s", s);
	return YX_OK;
}

int
agentcfg_profiles_parse(struct json_object *a, struct yx_profile **vp,
    size_t *np, struct yx_errctx *err)
{
	size_t	i, n;
	int	rc;

	*vp = NULL;
	*np = 0;
	if (!json_object_is_type(a, json_type_array))
		return yx_fail(err, YX_E_BAD_REQUEST, "profiles: expected an array");
	if ((n = json_object_array_length(a)) == 0)
		return YX_OK;
	if (n > YX_PROFILES_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST, "profiles: more than %d",
		    YX_PROFILES_MAX);
	if ((*vp = calloc(n, sizeof(**vp))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i);

		(*np)++;
		if ((rc = prof_parse_id(o, i, *vp, err)) != YX_OK ||
		    (rc = prof_parse_one(o, i, &(*vp)[i], err)) != YX_OK)
			return rc;
	}
	return YX_OK;
}

void
agentcfg_profiles_free(struct yx_profile *v, size_t n)
{
	size_t i, j;

	for (i = 0; v != NULL && i < n; i++) {
		for (j = 0; j < v[i].nenv; j++)
			free(v[i].env[j]);
		for (j = 0; j < v[i].nservices; j++)
			free(v[i].services[j].command);
	}
	free(v);
}

void
yx_profile_apply(const struct yx_profile *p, const struct yx_config *cfg,
    struct yx_config *out)
{
	*out = *cfg;
	if (p->image[0] != '\0')
		snprintf(out->image, sizeof(out->image), "%s", p->image);
	if (p->runtime[0] != '\0')
		snprintf(out->runtime, sizeof(out->runtime), "%s", p->runtime);
	if (p->memory_bytes > 0)
		out->memory_bytes = p->memory_bytes;
	if (p->cpus > 0)
		out->cpus = p->cpus;
	if (p->pids > 0)
		out->pids = p->pids;
	if (p->tmp_size > 0)
		out->tmp_size = p->tmp_size;
	out->exec_timeout = yx_profile_timeout(p, cfg, 0);
}

int
yx_profile_timeout(const struct yx_profile *p, const struct yx_config *cfg,
    int asked)
{
	int max = p->exec_timeout_max > 0 ? p->exec_timeout_max : PROF_TIMEOUT_MAX;

	if (asked <= 0)
		asked = p->exec_timeout > 0 ? p->exec_timeout : cfg->exec_timeout;
	return asked > max ? max : asked;
}
