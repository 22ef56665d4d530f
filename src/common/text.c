/* SPDX-License-Identifier: MIT */
/*
 * text.c - UTF-8 scanning and cleaning, JSON strings; see
 * include/yuxi/text.h.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/error.h"
#include "yuxi/text.h"

#define FFFD	"\xef\xbf\xbd"

size_t
yx_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char	lo = 0x80, hi = 0xbf;
	size_t		len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

bool
yx_utf8_valid(const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, k;

	while (i < len && (k = yx_utf8_seq(u + i, len - i)) > 0)
		i += k;
	return i == len;
}

size_t
yx_utf8_cut(const char *s, size_t len, size_t max)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 k, l;

	if (len <= max)
		return len;
	if ((u[max] & 0xc0) != 0x80)	/* the first byte left out starts a character */
		return max;
	for (k = max; k > 0 && max - k < 3 && (u[k] & 0xc0) == 0x80; k--)
		continue;
	l = yx_utf8_seq(u + k, len - k);
	return l > 0 && k + l > max ? k : max;
}

/*
 * At an ill-formed position s (n bytes left): the length of the maximal
 * subpart of a sequence starting there (>= 1), and whether it is a
 * well-begun sequence that only the end of the input cut (*trunc).
 */
static size_t
utf8_bad(const unsigned char *s, size_t n, bool *trunc)
{
	unsigned	lo = 0x80, hi = 0xbf;
	size_t		need, k;

	*trunc = false;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 1;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else
		return 1;	/* not a lead byte */
	for (k = 1; k <= need && k < n; k++) {
		if (s[k] < lo || s[k] > hi)
			return k;
		lo = 0x80;
		hi = 0xbf;
	}
	*trunc = k == n;
	return k;
}

size_t
yx_utf8_tail(const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 k;
	bool			 trunc;

	for (k = 1; k <= 3 && k <= len; k++)
		if (u[len - k] >= 0xc2 && u[len - k] <= 0xf4 &&
		    yx_utf8_seq(u + len - k, k) == 0 &&
		    utf8_bad(u + len - k, k, &trunc) == k && trunc)
			return k;
	return 0;
}

int
yx_utf8_clean(struct yx_buf *b, const char *s, size_t len, enum yx_fffd mode,
    bool cut, bool *changed)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, run = 0, k;
	bool			 trunc;
	int			 rc = YX_OK;

	if (changed != NULL)
		*changed = false;
	while (i < len) {
		if ((k = yx_utf8_seq(u + i, len - i)) > 0) {
			i += k;
			continue;
		}
		if (changed != NULL)
			*changed = true;
		k = utf8_bad(u + i, len - i, &trunc);
		if (mode == YX_FFFD_BYTE)
			k = 1;
		if ((rc = yx_buf_append(b, s + run, i - run)) != YX_OK)
			return rc;
		if (cut && trunc) {	/* cut by the end of the input: drop */
			run = i = len;
			break;
		}
		if ((rc = yx_buf_append(b, FFFD, 3)) != YX_OK)
			return rc;
		i += k;
		run = i;
	}
	return yx_buf_append(b, s + run, len - run);
}

#define JSON_ONES	0x0101010101010101ULL
#define JSON_HIGHS	0x8080808080808080ULL
/* Some byte of w is zero (exact as a yes/no answer). */
/* clang-format off */
#define JSON_HASZERO(w)	(((w) - JSON_ONES) & ~(w) & JSON_HIGHS)
/* clang-format on */

/*
 * True when the 8 bytes at p need no escaping: all ASCII, none below 0x20,
 * no '"' and no '\\' (tested a word at a time).
 */
static inline bool
json_plain8(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return ((w & JSON_HIGHS) | ((w - JSON_ONES * 0x20) & ~w & JSON_HIGHS) |
		   JSON_HASZERO(w ^ (JSON_ONES * '"')) |
		   JSON_HASZERO(w ^ (JSON_ONES * '\\'))) == 0;
}

/* The escape of control or special byte c into e; its length. */
static size_t
json_escape(unsigned char c, char e[6])
{
	static const char hex[] = "0123456789abcdef";

	e[0] = '\\';
	switch (c) {
	case '"':
	case '\\': e[1] = (char)c; return 2;
	case '\n': e[1] = 'n'; return 2;
	case '\r': e[1] = 'r'; return 2;
	case '\t': e[1] = 't'; return 2;
	case '\b': e[1] = 'b'; return 2;
	case '\f': e[1] = 'f'; return 2;
	default:
		memcpy(e + 1, "u00", 3);
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		return 6;
	}
}

/*
 * Write s (len bytes) as the body of a JSON string into dst, or with dst
 * NULL only measure. The encoded length.
 */
static size_t
json_str_put(char *dst, const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, o = 0, k;
	char			 e[6];

	while (i < len) {
		/* plain bytes: a word at a time, stored as they are scanned */
		for (; i + 8 <= len && json_plain8(u + i); i += 8, o += 8)
			if (dst != NULL)
				memcpy(dst + o, s + i, 8);
		for (; i < len && u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' &&
		     u[i] != '\\';
		     i++, o++)
			if (dst != NULL)
				dst[o] = s[i];
		if (i == len)
			break;
		if (u[i] >= 0x80) {
			if ((k = yx_utf8_seq(u + i, len - i)) == 0) {
				if (dst != NULL)
					memcpy(dst + o, FFFD, 3);
				o += 3;
				i++;
				continue;
			}
			if (dst != NULL)
				memcpy(dst + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		k = json_escape(u[i], e);
		if (dst != NULL)
			memcpy(dst + o, e, k);
		o += k;
		i++;
	}
	return o;
}

#define JSON_ONEPASS_MAX	(4u << 20)	/* larger: measure, then write */

int
yx_json_str_append(struct yx_buf *b, const char *s, size_t len)
{
	size_t	n;
	int	rc;

	/* one pass into room for the worst case (6 bytes per byte) for up
	 * to 4 MiB, else measured first: no 6x allocation for a huge text */
	if (len <= JSON_ONEPASS_MAX && b->cap - b->len > 2 &&
	    len <= (b->cap - b->len - 2) / 6)
		n = len * 6;
	else
		n = json_str_put(NULL, s, len);
	if ((rc = yx_buf_reserve(b, n + 2)) != YX_OK)
		return rc;
	b->data[b->len++] = '"';
	b->len += json_str_put(b->data + b->len, s, len);
	b->data[b->len++] = '"';
	b->data[b->len] = '\0';
	return YX_OK;
}

struct json_object *
yx_json_text(const char *s, size_t len)
{
	struct json_object	*o = NULL;
	struct yx_buf		 b;

	if (len > INT32_MAX)
		return NULL;
	if (yx_utf8_valid(s, len))
		return json_object_new_string_len(s, (int)len);
	yx_buf_init(&b, INT32_MAX);
	if (yx_utf8_clean(&b, s, len, YX_FFFD_BYTE, false, NULL) == YX_OK)
		o = json_object_new_string_len(b.data != NULL ? b.data : "",
		    (int)b.len);
	yx_buf_fini(&b);
	return o;
}

struct json_object *
yx_json_time(int64_t ms)
{
	char ts[40];

	return ms > 0 ? json_object_new_string(yx_iso8601_ms(ms, ts, sizeof(ts))) :
			NULL;
}

bool
yx_env_name_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			(s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int
yx_base64_append(struct yx_buf *b, const void *data, size_t len)
{
	const unsigned char	*p = data;
	size_t			 i, n;
	char			*o;
	uint32_t		 v;
	int			 rc;

	if (len > (SIZE_MAX / 4) * 3 - 3)
		return YX_E_NOMEM;
	n = (len + 2) / 3 * 4;
	if ((rc = yx_buf_reserve(b, n)) != YX_OK)
		return rc;
	o = b->data + b->len;
	for (i = 0; i + 2 < len; i += 3, o += 4) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		o[0] = b64_alphabet[v >> 18];
		o[1] = b64_alphabet[(v >> 12) & 63];
		o[2] = b64_alphabet[(v >> 6) & 63];
		o[3] = b64_alphabet[v & 63];
	}
	if (i < len) {
		v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
		o[0] = b64_alphabet[v >> 18];
		o[1] = b64_alphabet[(v >> 12) & 63];
		o[2] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		o[3] = '=';
	}
	b->len += n;
	b->data[b->len] = '\0';
	return YX_OK;
}

/* The value of a base64 character, -1 for anything else. */
static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int
yx_base64_decode(struct yx_buf *b, const char *s, size_t len)
{
	unsigned char	out[3];
	uint32_t	v = 0;
	size_t		i, n = 0, pad = 0;
	int		d, rc;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || (d = b64_value(c)) < 0)
			return YX_E_BAD_REQUEST;	/* data after '=', or not base64 */
		v = v << 6 | (uint32_t)d;
		if (++n % 4 == 0) {
			out[0] = (unsigned char)(v >> 16);
			out[1] = (unsigned char)(v >> 8);
			out[2] = (unsigned char)v;
			if ((rc = yx_buf_append(b, out, 3)) != YX_OK)
				return rc;
			v = 0;
		}
	}
	/* what is left: 2 or 3 characters (1 or 2 bytes), padded to 4 */
	if (n % 4 == 1 || pad > 2 || (pad > 0 && (n + pad) % 4 != 0))
		return YX_E_BAD_REQUEST;
	if (n % 4 == 2) {
		out[0] = (unsigned char)(v >> 4);
		return yx_buf_append(b, out, 1);
	}
	if (n % 4 == 3) {
		out[0] = (unsigned char)(v >> 10);
		out[1] = (unsigned char)(v >> 2);
		return yx_buf_append(b, out, 2);
	}
	return YX_OK;
}
