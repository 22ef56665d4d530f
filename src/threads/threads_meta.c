/* SPDX-License-Identifier: MIT */
/*
 * threads_meta.c - a thread's metadata (docs/api.md "Threads", "metadata"):
 * the rules a caller's pairs must keep, the JSON merge patch of PATCH
 * /api/threads/{id} (RFC 7396 §2, applied to the one-level object), the
 * JSON view and the match of a listing's metadata.KEY=VALUE filter.
 *
 * Pure: no I/O; every function works on the caller's struct.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/text.h"
#include "yuxi/threads.h"

/* [A-Za-z0-9_.-]{1,YX_META_KEY_MAX} */
static bool
meta_key_ok(const char *k)
{
	size_t n = strlen(k), i;

	if (n == 0 || n > YX_META_KEY_MAX)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* At most YX_META_VALUE_MAX bytes of valid UTF-8 without control characters. */
static bool
meta_value_ok(const char *v, size_t n)
{
	size_t i;

	if (n > YX_META_VALUE_MAX || !yx_utf8_valid(v, n))
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

static int
meta_find(const struct yx_thread_meta *m, const char *key)
{
	unsigned i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->key[i], key) == 0)
			return (int)i;
	return -1;
}

static void
meta_del(struct yx_thread_meta *m, unsigned i)
{
	for (; i + 1 < m->n; i++) {
		memcpy(m->key[i], m->key[i + 1], sizeof(m->key[i]));
		memcpy(m->value[i], m->value[i + 1], sizeof(m->value[i]));
	}
	m->n--;
}

/*
 * Apply one pair of object o to m: a string sets key, null removes it
 * (only when patch), anything else is refused.
 */
static int
meta_apply(struct yx_thread_meta *m, const char *key, struct json_object *v,
    bool patch, struct yx_errctx *err)
{
	const char	*s;
	size_t		 n;
	int		 i;

	if (!meta_key_ok(key))
		return yx_fail(err, YX_E_INVALID_METADATA,
		    "metadata keys must match [A-Za-z0-9_.-]{1,%d}", YX_META_KEY_MAX);
	i = meta_find(m, key);
	if (v == NULL && patch) {
		if (i >= 0)
			meta_del(m, (unsigned)i);
		return YX_OK;
	}
	if (!json_object_is_type(v, json_type_string))
		return yx_fail(err, YX_E_INVALID_METADATA, patch ? "metadata values must be strings (null removes a key)" : "metadata values must be strings");
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (strlen(s) != n || !meta_value_ok(s, n))
		return yx_fail(err, YX_E_INVALID_METADATA,
		    "metadata values must be at most %d bytes of UTF-8 without control characters",
		    YX_META_VALUE_MAX);
	if (i < 0) {
		if (m->n >= YX_META_KEYS)
			return yx_fail(err, YX_E_INVALID_METADATA,
			    "at most %d metadata keys", YX_META_KEYS);
		i = (int)m->n++;
		memcpy(m->key[i], key, strlen(key) + 1);
	}
	memcpy(m->value[i], s, n + 1);
	return YX_OK;
}

static int
meta_each(struct yx_thread_meta *m, struct json_object *o, bool patch,
    struct yx_errctx *err)
{
	int rc = YX_OK;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return yx_fail(err, YX_E_INVALID_METADATA,
		    "metadata must be an object of string values");
	json_object_object_foreach(o, key, v)
	{
		if ((rc = meta_apply(m, key, v, patch, err)) != YX_OK)
			break;
	}
	return rc;
}

int
yx_thread_meta_parse(struct json_object *o, struct yx_thread_meta *m,
    struct yx_errctx *err)
{
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = meta_each(m, o, false, err)) != YX_OK)
		memset(m, 0, sizeof(*m));
	return rc;
}

int
yx_thread_meta_merge(struct yx_thread_meta *m, struct json_object *o,
    struct yx_errctx *err)
{
	struct yx_thread_meta	next = *m;
	int			rc;

	/* all or nothing: m changes only when the whole patch applies */
	if ((rc = meta_each(&next, o, true, err)) == YX_OK)
		*m = next;
	return rc;
}

struct json_object *
yx_thread_meta_json(const struct yx_thread_meta *m)
{
	struct json_object	*o;
	unsigned		 i;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	for (i = 0; i < m->n; i++)
		json_object_object_add(o, m->key[i],
		    json_object_new_string(m->value[i]));
	return o;
}

bool
yx_thread_meta_has(const struct yx_thread_meta *m, const char *key,
    const char *value)
{
	int i = meta_find(m, key);

	return i >= 0 && strcmp(m->value[i], value) == 0;
}
