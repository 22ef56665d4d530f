/* SPDX-License-Identifier: MIT */
/*
 * test_text.c - the UTF-8 scanner, the two U+FFFD rules, cutting on a
 * character boundary and the JSON string writer (src/common/text.c), by
 * golden cases: every invalid form of RFC 3629 table 3-7, cut sequences,
 * control bytes and long runs.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/error.h"
#include "yuxi/text.h"

#define R	"\xef\xbf\xbd"	/* U+FFFD */

static char *
clean(const char *s, size_t n, enum yx_fffd mode, bool cut, bool *changed)
{
	static char	out[256];
	struct yx_buf	b;

	yx_buf_init(&b, 1 << 20);
	cr_assert_eq(yx_utf8_clean(&b, s, n, mode, cut, changed), YX_OK);
	cr_assert_lt(b.len, sizeof(out));
	memcpy(out, b.data != NULL ? b.data : "", b.len);
	out[b.len] = '\0';
	yx_buf_fini(&b);
	return out;
}

Test(text, scanner)
{
	static const struct {
		const char *s;
		size_t	    want;
	} t[] = {
		{ "A", 1 }, { "\xc2\xa9", 2 }, { "\xe2\x82\xac", 3 },
		{ "\xf0\x9f\x98\x80", 4 }, { "\xf4\x8f\xbf\xbf", 4 },
		{ "\xc0\x80", 0 },		/* overlong */
		{ "\xe0\x80\x80", 0 },		/* overlong */
		{ "\xed\xa0\x80", 0 },		/* surrogate */
		{ "\xf4\x90\x80\x80", 0 },	/* > U+10FFFF */
		{ "\xf5\x80\x80\x80", 0 }, { "\x80", 0 }, { "\xff", 0 },
		{ "\xe2\x82", 0 },		/* cut */
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(yx_utf8_seq((const unsigned char *)t[i].s,
				 strlen(t[i].s)),
		    t[i].want, "case %zu", i);
	cr_assert(yx_utf8_valid("h\xc3\xa9llo", 6));
	cr_assert(!yx_utf8_valid("h\xc3llo", 5));
	cr_assert(yx_utf8_valid("", 0));
}

/* yx_utf8_cut: at most max bytes, never half a well-formed character. */
Test(text, cut_on_boundary)
{
	static const struct {
		const char *s;
		size_t	    max, want;
	} t[] = {
		{ "abc", 5, 3 }, { "abc", 3, 3 }, { "abcd", 3, 3 },
		{ "a\xc3\xa9"
		  "b",
		    1, 1 }, /* before the 2-byte char */
		{ "a\xc3\xa9"
		  "b",
		    2, 1 }, /* inside it: back to 1 */
		{ "a\xc3\xa9"
		  "b",
		    3, 3 }, /* after it */
		{ "\xe2\x82\xac\xe2\x82\xac", 4, 3 },
		{ "\xe2\x82\xac\xe2\x82\xac", 5, 3 },
		{ "\xf0\x9f\x98\x80!", 1, 0 },
		{ "\xf0\x9f\x98\x80!", 3, 0 },
		{ "\xf0\x9f\x98\x80!", 4, 4 },
		{ "ab\x80\x80\x80\x80", 4, 4 },	/* ill-formed: cut anywhere */
		{ "\xe2\x82x", 2, 2 },		/* ill-formed lead */
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(yx_utf8_cut(t[i].s, strlen(t[i].s), t[i].max), t[i].want,
		    "case %zu", i);
}

Test(text, replacement_rules)
{
	bool changed;

	/* valid text is copied unchanged */
	cr_assert_str_eq(clean("ab\xc3\xa9", 4, YX_FFFD_BYTE, false, &changed),
	    "ab\xc3\xa9");
	cr_assert(!changed);
	/* a cut 3-byte sequence before 'x': two bytes, one maximal subpart */
	cr_assert_str_eq(clean("\xe2\x82x", 3, YX_FFFD_BYTE, false, &changed),
	    R R "x");
	cr_assert(changed);
	cr_assert_str_eq(clean("\xe2\x82x", 3, YX_FFFD_MAXIMAL, false, NULL),
	    R "x");
	/* an invalid lead byte is one subpart either way */
	cr_assert_str_eq(clean("\xff\xfe", 2, YX_FFFD_MAXIMAL, false, NULL), R R);
	/* surrogate lead: E0-EF with a bad second byte stops at one */
	cr_assert_str_eq(clean("\xed\xa0\x80", 3, YX_FFFD_MAXIMAL, false, NULL),
	    R R R);
	/* cut at the end of the input by a size limit: dropped only with cut */
	cr_assert_str_eq(clean("ok\xf0\x9f\x98", 5, YX_FFFD_MAXIMAL, true, &changed),
	    "ok");
	cr_assert(changed);
	cr_assert_str_eq(clean("ok\xf0\x9f\x98", 5, YX_FFFD_MAXIMAL, false, NULL),
	    "ok" R);
	/* NUL bytes are data */
	cr_assert_eq(memcmp(clean("a\0b", 3, YX_FFFD_BYTE, false, NULL), "a\0b", 3), 0);
}

Test(text, json_string)
{
	struct yx_buf	 b;
	char		 big[1000];
	size_t		 i;

	yx_buf_init(&b, 1 << 20);
	cr_assert_eq(yx_json_str_append(&b, "q\"b\\\n\t\x01\x7f\xc3\xa9\xff", 11),
	    YX_OK);
	cr_assert_str_eq(b.data, "\"q\\\"b\\\\\\n\\t\\u0001\x7f\xc3\xa9" R "\"");
	/* a long plain run (the word-at-a-time path) round-trips */
	for (i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('a' + i % 26);
	big[sizeof(big) - 1] = '\0';
	yx_buf_reset(&b);
	cr_assert_eq(yx_json_str_append(&b, big, strlen(big)), YX_OK);
	cr_assert_eq(b.len, strlen(big) + 2);
	cr_assert_eq(memcmp(b.data + 1, big, strlen(big)), 0);
	yx_buf_fini(&b);
	/* a cap smaller than the text: the buffer's error, nothing written */
	yx_buf_init(&b, 8);
	cr_assert_neq(yx_json_str_append(&b, big, 100), YX_OK);
	yx_buf_fini(&b);
}

Test(text, json_text_object)
{
	struct json_object *o = yx_json_text("x\xc3\x28y", 4);

	cr_assert_not_null(o);
	cr_assert_str_eq(json_object_get_string(o), "x" R "(y");
	json_object_put(o);
	o = yx_json_text("plain", 5);
	cr_assert_str_eq(json_object_get_string(o), "plain");
	json_object_put(o);
}

/* What a text arriving in pieces holds back for the next piece. */
Test(text, utf8_tail)
{
	static const struct {
		const char *s;
		size_t	    want;
	} t[] = {
		{ "", 0 }, { "abc", 0 }, { "a\xc3", 1 }, { "a\xc3\xa9", 0 },
		{ "\xe2\x82", 2 }, { "\xe2", 1 }, { "\xe2\x82\xac", 0 },
		{ "x\xf0\x9f\x98", 3 }, { "\xf0\x9f", 2 },
		{ "\xf0\x9f\x98\x80", 0 },
		{ "a\x80", 0 },		/* a stray continuation: invalid now */
		{ "a\xc0", 0 },		/* never a lead byte */
		{ "\xe0\x80", 0 },	/* overlong: invalid whatever follows */
		{ "\xed\xa0", 0 },	/* surrogate */
		{ "\xc3\xc3", 1 },	/* the first is invalid, the second cut */
		{ "\xf4\x90", 0 },	/* > U+10FFFF */
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(yx_utf8_tail(t[i].s, strlen(t[i].s)), t[i].want,
		    "case %zu", i);
}

/*
 * Cut anywhere, carried and cleaned piece by piece, a text gives what
 * cleaning it whole gives (the stream form of execute relies on it).
 */
Test(text, utf8_pieces)
{
	static const char s[] = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xff\xe2\x82 z";
	struct yx_buf	whole, parts, tmp;
	size_t		n = sizeof(s) - 1, cut, k;

	yx_buf_init(&whole, SIZE_MAX);
	cr_assert_eq(yx_utf8_clean(&whole, s, n, YX_FFFD_BYTE, false, NULL), YX_OK);
	for (cut = 0; cut <= n; cut++) {
		yx_buf_init(&parts, SIZE_MAX);
		yx_buf_init(&tmp, SIZE_MAX);
		k = yx_utf8_tail(s, cut);
		cr_assert_eq(yx_utf8_clean(&parts, s, cut - k, YX_FFFD_BYTE, false,
				 NULL),
		    YX_OK);
		cr_assert_eq(yx_buf_append(&tmp, s + cut - k, n - cut + k), YX_OK);
		cr_assert_eq(yx_utf8_clean(&parts, tmp.data, tmp.len, YX_FFFD_BYTE,
				 false, NULL),
		    YX_OK);
		cr_expect(parts.len == whole.len &&
			memcmp(parts.data, whole.data, whole.len) == 0,
		    "cut at %zu", cut);
		yx_buf_fini(&parts);
		yx_buf_fini(&tmp);
	}
	yx_buf_fini(&whole);
}

/* Base64 (RFC 4648 §10's vectors), both ways. */
Test(text, base64_vectors)
{
	static const struct {
		const char *plain, *enc;
	} t[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	struct yx_buf	b;
	size_t		i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		yx_buf_init(&b, SIZE_MAX);
		cr_assert_eq(yx_base64_append(&b, t[i].plain, strlen(t[i].plain)), YX_OK);
		cr_expect_str_eq(b.data != NULL ? b.data : "", t[i].enc);
		yx_buf_reset(&b);
		cr_assert_eq(yx_base64_decode(&b, t[i].enc, strlen(t[i].enc)), YX_OK);
		cr_expect(b.len == strlen(t[i].plain) &&
			memcmp(b.data != NULL ? b.data : "", t[i].plain, b.len) == 0,
		    "decode %s", t[i].enc);
		yx_buf_fini(&b);
	}
}

/* Every length and byte value round trips; what a decoder meets from an
 * LLM (line breaks, no padding) is taken, anything else refused. */
Test(text, base64_decode)
{
	static const char *const bad[] = { "Zg=", "Z", "Zm9vY", "Zg==Zg==", "Zm9v!", "Zm=9v",
		"Zg===", "-_8=" };
	unsigned char	raw[300];
	struct yx_buf	enc, dec;
	size_t		n, i;

	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(i * 151 + 7);
	for (n = 0; n <= sizeof(raw); n++) {
		yx_buf_init(&enc, SIZE_MAX);
		yx_buf_init(&dec, SIZE_MAX);
		cr_assert_eq(yx_base64_append(&enc, raw, n), YX_OK);
		cr_assert_eq(enc.len, (n + 2) / 3 * 4);
		cr_assert_eq(yx_base64_decode(&dec, enc.data != NULL ? enc.data : "", enc.len),
		    YX_OK);
		cr_expect(dec.len == n && (n == 0 || memcmp(dec.data, raw, n) == 0), "n=%zu", n);
		yx_buf_fini(&enc);
		yx_buf_fini(&dec);
	}
	yx_buf_init(&dec, SIZE_MAX);
	cr_assert_eq(yx_base64_decode(&dec, "Zm9v\r\nYmFy\n", 11), YX_OK);
	cr_expect(dec.len == 6 && memcmp(dec.data, "foobar", 6) == 0);
	yx_buf_reset(&dec);
	cr_assert_eq(yx_base64_decode(&dec, "Zm9vYg", 6), YX_OK);
	cr_expect(dec.len == 4 && memcmp(dec.data, "foob", 4) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		yx_buf_reset(&dec);
		cr_expect_eq(yx_base64_decode(&dec, bad[i], strlen(bad[i])), YX_E_BAD_REQUEST,
		    "%s", bad[i]);
	}
	yx_buf_fini(&dec);
}
