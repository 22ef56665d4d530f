/* SPDX-License-Identifier: MIT */
/*
 * http_props.c - properties of the request-parsing layer (src/daemon/
 * http.c, router.c) checked on arbitrary input; see http_props.h.
 *
 * Query strings: parsing never reads past the input, every key is free of
 * NUL, every value is NUL-terminated at its length, the pair count is
 * bounded, and yx_query_get() finds the first of repeated keys.
 * Download names: the X-Accel-Redirect encoding only holds unreserved bytes,
 * '/' and %XX, and decodes back to the name; Content-Disposition never holds
 * a control byte, non-ASCII byte or an unescaped quote in its fallback.
 * JSON bodies: accepted only as one object, which serialises and parses
 * again to an object. FastCGI params: identity only ever comes from a valid
 * YUXI_USER, never from a client header param; an admin always has a user;
 * an accepted request has an absolute URI; the route capture is one
 * non-empty segment that fits its buffer.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "daemon/daemon_int.h"
#include "http_props.h"
#include "yuxi/http.h"
#include "yuxi/threads.h"

#define PROPS_MAX_INPUT	(64 * 1024)

/* A NUL-terminated heap copy of data up to its first NUL (NULL: no memory). */
static char *
props_cstr(const uint8_t *data, size_t size)
{
	const uint8_t	*z = memchr(data, 0, size);
	size_t		 n = z != NULL ? (size_t)(z - data) : size;
	char		*s;

	if ((s = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}

static const char *
props_names(const char *name)
{
	struct yx_buf	 b;
	char		*dec = NULL;
	const char	*why = NULL, *p, *q;
	size_t		 n, i;

	yx_buf_init(&b, SIZE_MAX);
	if (yx_pct_encode_path(&b, name) != YX_OK)
		goto done;
	for (i = 0; i < b.len; i++) {
		unsigned char c = (unsigned char)b.data[i];

		if (!(c == '/' || c == '%' || c == '.' || c == '_' || c == '~' ||
			c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			(c >= 'A' && c <= 'Z'))) {
			why = "accel uri holds a reserved byte";
			goto done;
		}
	}
	if ((dec = malloc(b.len + 1)) == NULL)
		goto done;
	if (yx_pct_decode(b.len ? b.data : "", b.len, false, dec, b.len + 1, &n) != YX_OK ||
	    n != strlen(name) || memcmp(dec, name, n) != 0) {
		why = "accel uri does not decode to the name";
		goto done;
	}
	b.len = 0;
	if (yx_content_disposition(&b, name) != YX_OK)
		goto done;
	if (yx_buf_append(&b, "", 1) != YX_OK)
		goto done;
	for (i = 0; i + 1 < b.len; i++) {
		unsigned char c = (unsigned char)b.data[i];

		if (c < 0x20 || c >= 0x7f) {
			why = "content-disposition holds a control or non-ASCII byte";
			goto done;
		}
	}
	if (yx_header_unsafe(b.data)) {
		why = "content-disposition unsafe as a header";
		goto done;
	}
	/* the fallback is exactly one quoted string, then filename* */
	p = b.data + strlen("attachment; filename=\"");
	if ((q = strchr(p, '"')) == NULL || strncmp(q, "\"; filename*=UTF-8''", 20) != 0 ||
	    strchr(q + 20, '"') != NULL || strchr(q + 20, ';') != NULL ||
	    strchr(q + 20, ' ') != NULL)
		why = "content-disposition quoting broken";
done:
	free(dec);
	yx_buf_fini(&b);
	return why;
}

const char *
query_props_check(const uint8_t *data, size_t size)
{
	struct yx_query	 q;
	struct yx_errctx e;
	const char	*why = NULL, *v;
	char		*name;
	size_t		 i, j, vl;
	int		 rc;

	if (size > PROPS_MAX_INPUT)
		return NULL;
	yx_errctx_clear(&e);
	rc = yx_query_parse(&q, (const char *)data, size, &e);
	if (rc == YX_OK) {
		if (q.n > YX_QUERY_PARAMS_MAX)
			why = "too many query pairs accepted";
		for (i = 0; why == NULL && i < q.n; i++) {
			if (q.kv[i].val[q.kv[i].vlen] != '\0')
				why = "query value not terminated at its length";
			v = yx_query_get(&q, q.kv[i].key, &vl);
			for (j = 0; j < i; j++)
				if (!strcmp(q.kv[j].key, q.kv[i].key))
					break;
			if (why == NULL && v != q.kv[j].val)
				why = "yx_query_get does not return the first value";
			if (why == NULL && yx_query_count(&q, q.kv[i].key) == 0)
				why = "yx_query_count misses a key";
		}
	} else if (rc != YX_E_BAD_REQUEST && rc != YX_E_NOMEM)
		why = "query parse returned an unexpected code";
	else if (size <= YX_QUERY_MAX && e.msg[0] == '\0')
		why = "query parse failed without a message";
	yx_query_fini(&q);
	if (why == NULL && (name = props_cstr(data, size)) != NULL) {
		why = props_names(name);
		free(name);
	}
	return why;
}

const char *
json_props_check(const uint8_t *data, size_t size)
{
	struct json_object	*o = NULL, *o2 = NULL;
	struct yx_errctx	 e;
	const char		*why = NULL, *s;
	size_t			 len = 0;
	int			 rc;

	if (size > PROPS_MAX_INPUT)
		return NULL;
	yx_errctx_clear(&e);
	rc = yx_json_parse_object((const char *)data, size, &o, &e);
	if (rc != YX_OK) {
		if (rc != YX_E_BAD_REQUEST || o != NULL)
			why = "json refusal not clean";
		return why;
	}
	if (!json_object_is_type(o, json_type_object)) {
		why = "json accepted a non-object";
		goto done;
	}
	s = json_object_to_json_string_length(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (s == NULL)
		goto done;
	if (yx_json_parse_object(s, len, &o2, &e) != YX_OK)
		why = "serialised object does not parse again";
done:
	json_object_put(o2);
	json_object_put(o);
	return why;
}

static const char *const fcgi_names[] = {
	"REQUEST_METHOD",
	"DOCUMENT_URI",
	"QUERY_STRING",
	"CONTENT_LENGTH",
	"YUXI_USER",
	"YUXI_ROLE",
	"HTTP_X_YUXI_USER",
	"HTTP_X_YUXI_ROLE",
	"YUXI_REQUEST_ID",
	"HTTP_X_REQUEST_ID",
	"REMOTE_ADDR",
};
#define FCGI_NPARAMS	(sizeof(fcgi_names) / sizeof(fcgi_names[0]))

const char *
fcgi_props_check(const uint8_t *data, size_t size)
{
	FCGX_Request		 fr;
	struct yx_http_req	 r;
	struct yx_errctx	 e;
	char			*env[FCGI_NPARAMS + 1], arg[256];
	const char		*why = NULL, *val[FCGI_NPARAMS];
	const uint8_t		*p = data, *end = data + size, *z;
	size_t			 i, n = 0, idx;
	int			 rc;

	if (size > PROPS_MAX_INPUT)
		return NULL;
	memset(env, 0, sizeof(env));
	for (i = 0; i < FCGI_NPARAMS && p <= end; i++) {
		size_t vl, nl = strlen(fcgi_names[i]);

		z = memchr(p, 0, (size_t)(end - p));
		vl = z != NULL ? (size_t)(z - p) : (size_t)(end - p);
		/* an empty field leaves the param out */
		if (vl > 0) {
			if ((env[n] = malloc(nl + vl + 2)) == NULL)
				goto done;
			memcpy(env[n], fcgi_names[i], nl);
			env[n][nl] = '=';
			memcpy(env[n] + nl + 1, p, vl);
			env[n][nl + vl + 1] = '\0';
			val[i] = env[n] + nl + 1;
			n++;
		} else
			val[i] = NULL;
		p += vl + 1;
	}
	for (; i < FCGI_NPARAMS; i++)
		val[i] = NULL;
	memset(&fr, 0, sizeof(fr));
	fr.envp = env;
	yx_errctx_clear(&e);
	rc = yx_http_req_init(&r, &fr, 1 << 16, &e);
	if (r.user[0] != '\0' && (val[4] == NULL || strcmp(r.user, val[4]) != 0))
		why = "identity not taken from YUXI_USER";
	else if (r.user[0] != '\0' && !yx_user_valid(r.user))
		why = "invalid user accepted";
	else if (r.admin && r.user[0] == '\0')
		why = "admin without a user";
	else if (r.admin && (val[5] == NULL || strcmp(val[5], "admin") != 0))
		why = "admin role not from YUXI_ROLE";
	else if (rc == YX_OK && r.path[0] != '/')
		why = "relative URI accepted";
	else if (rc != YX_OK && rc != YX_E_BAD_REQUEST && rc != YX_E_NOMEM)
		why = "req_init returned an unexpected code";
	/* a request id always, of the safe alphabet (it goes into a header);
	 * nginx's when valid; a client's never (not trusted by default) */
	else if (!yx_request_id_valid(r.request_id))
		why = "request id missing or unsafe";
	else if (yx_request_id_valid(val[8]) && strcmp(r.request_id, val[8]) != 0)
		why = "request id not taken from YUXI_REQUEST_ID";
	else if (val[9] != NULL && strcmp(r.request_id, val[9]) == 0 &&
	    (val[8] == NULL || strcmp(val[8], val[9]) != 0))
		why = "client X-Request-Id trusted";
	if (why == NULL && rc == YX_OK) {
		rc = yx_router_match(r.method, r.path, &idx, arg, sizeof(arg));
		if (rc == YX_OK && (idx >= yx_nroutes || strchr(arg, '/') != NULL || strlen(arg) >= sizeof(arg)))
			why = "route capture broken";
		if (rc == YX_OK && strstr(yx_routes[idx].pattern, "{}") != NULL &&
		    arg[0] == '\0')
			why = "empty route capture";
	}
	yx_http_req_fini(&r);
done:
	for (i = 0; i < n; i++)
		free(env[i]);
	return why;
}
