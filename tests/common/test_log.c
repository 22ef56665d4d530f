/* SPDX-License-Identifier: MIT */
/*
 * test_log.c - log_escape (src/common/log.c), the control that keeps
 * untrusted bytes (thread ids, paths, engine replies) from forging or
 * splitting log lines: control bytes, DEL, quotes, backslash and every byte
 * above 0x7e (valid UTF-8 or not) become \xNN; the result always fits the
 * buffer, is NUL-terminated and, when cut, ends in "..." after whole
 * escapes only.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "yuxi/log.h"

struct golden {
	const char	*in;
	size_t		 len;
	const char	*want;
};

#define G(lit, want)                           \
	{                                      \
		(lit), sizeof(lit) - 1, (want) \
	}

/* log_escape of each case into a 256-byte buffer. */
static void
check(const struct golden *t, size_t n)
{
	char	out[256];
	size_t	i;

	for (i = 0; i < n; i++) {
		cr_assert_eq(log_escape(out, sizeof(out), t[i].in, t[i].len), out);
		cr_expect_str_eq(out, t[i].want, "case %zu", i);
	}
}

#define CHECK(t)	check((t), sizeof(t) / sizeof((t)[0]))

Test(log_escape, printable_ascii_unchanged)
{
	static const struct golden t[] = {
		G("thread t-1 /home/yuxi/a b.txt (ok) it's",
		    "thread t-1 /home/yuxi/a b.txt (ok) it's"),
		G("", ""),
		G(" ~", " ~"),
	};

	CHECK(t);
}

Test(log_escape, control_bytes_and_del)
{
	static const struct golden t[] = {
		G("a\nb", "a\\x0ab"),
		G("\r\n2024-01-01 fake: line", "\\x0d\\x0a2024-01-01 fake: line"),
		G("\t\x1b[31m\x7f", "\\x09\\x1b[31m\\x7f"),
		G("\x01\x1f", "\\x01\\x1f"),
	};

	CHECK(t);
}

Test(log_escape, quote_and_backslash)
{
	static const struct golden t[] = {
		G("id=\"x\" path=\\y", "id=\\x22x\\x22 path=\\x5cy"),
		/* an escape in the input stays distinguishable from ours */
		G("\\x0a", "\\x5cx0a"),
	};

	CHECK(t);
}

Test(log_escape, bytes_above_ascii)
{
	static const struct golden t[] = {
		G("\xc3\xa9", "\\xc3\\xa9"),		/* valid UTF-8 */
		G("\xff\xfe", "\\xff\\xfe"),		/* never UTF-8 */
		G("\xc0\xaf", "\\xc0\\xaf"),		/* overlong '/' */
		G("\xed\xa0\x80", "\\xed\\xa0\\x80"),	/* surrogate */
		G("a\xe2\x82", "a\\xe2\\x82"),		/* cut sequence */
		G("\x80", "\\x80"),
	};

	CHECK(t);
}

Test(log_escape, nul_and_length)
{
	static const struct golden t[] = {
		{ "a\0b", 3, "a\\x00b" },
		{ "abcdef", 3, "abc" },		/* len, not the NUL */
		{ "abc", 0, "" },
	};

	CHECK(t);
}

/* Exact cuts: room is kept for "..." and the NUL before each byte. */
Test(log_escape, cut_exact)
{
	char	b[16];

	cr_expect_str_eq(log_escape(b, 6, "ab", 2), "ab");
	cr_expect_str_eq(log_escape(b, 5, "ab", 2), "a...");
	cr_expect_str_eq(log_escape(b, 8, "\n\n\n", 3), "\\x0a...");
	/* an escape that does not fit whole is left out, never cut */
	cr_expect_str_eq(log_escape(b, 7, "\n\n", 2), "...");
	cr_expect_str_eq(log_escape(b, 9, "a\nbc", 4), "a\\x0a...");
	cr_expect_str_eq(log_escape(b, 10, "a\nbc", 4), "a\\x0ab...");
	cr_expect_str_eq(log_escape(b, 11, "a\nbc", 4), "a\\x0abc");
	cr_expect_str_eq(log_escape(b, 4, "abc", 3), "...");
	cr_expect_str_eq(log_escape(b, 3, "abc", 3), "");
	cr_expect_str_eq(log_escape(b, 1, "abc", 3), "");
	cr_expect_str_eq(log_escape(b, 1, "", 0), "");
}

Test(log_escape, zero_sized_buffer_untouched)
{
	char	b[2] = { 'Z', 'Z' };

	cr_expect_eq(log_escape(b, 0, "abc", 3), b);
	cr_expect(b[0] == 'Z' && b[1] == 'Z');
}

/* The escape of src[0..n) with a large buffer (no cut). */
static size_t
full(const char *src, size_t n, char *out, size_t outlen)
{
	cr_assert_geq(outlen, 4 * n + 5);
	log_escape(out, outlen, src, n);
	return strlen(out);
}

/*
 * Every buffer size from 0 to past the whole escape, for inputs mixing
 * plain bytes and escapes: the output fits (NUL included, nothing written
 * past dstlen), and it is either the whole escape or the escape of a
 * prefix of the input followed by "..." (dstlen >= 4) or empty (< 4): no
 * escape is ever cut in half.
 */
Test(log_escape, cut_never_splits_an_escape)
{
	static const char *const in[] = { "plain text only",
		"a\nb\"c\\d\xff"
		"e",
		"\n\n\n\n\n\n", "ab\x01\x02"
				"cd\x7f\x80",
		"\xe6\x97\xa5\xe6\x9c\xac"
		"x" };
	char	buf[128], whole[128], pre[128];
	size_t	i, k, dl, n, wl, ol;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		n = strlen(in[i]);
		wl = full(in[i], n, whole, sizeof(whole));
		for (dl = 0; dl <= wl + 5; dl++) {
			memset(buf, '#', sizeof(buf));
			log_escape(buf, dl, in[i], n);
			cr_assert_eq(buf[dl], '#', "wrote past %zu", dl);
			if (dl == 0)
				continue;
			ol = strlen(buf);
			cr_assert_lt(ol, dl);
			if (strcmp(buf, whole) == 0)
				continue;
			if (dl < 4) {
				cr_expect_str_eq(buf, "", "dstlen %zu", dl);
				continue;
			}
			cr_assert(ol >= 3 && strcmp(buf + ol - 3, "...") == 0,
			    "input %zu dstlen %zu: \"%s\"", i, dl, buf);
			/* what precedes "..." is the escape of some prefix */
			for (k = 0; k < n; k++) {
				full(in[i], k, pre, sizeof(pre));
				if (strlen(pre) == ol - 3 &&
				    strncmp(pre, buf, ol - 3) == 0)
					break;
			}
			cr_expect_lt(k, n, "input %zu dstlen %zu: \"%s\" cuts an "
					   "escape",
			    i, dl, buf);
		}
	}
}

static bool
is_hex(char c)
{
	return c != '\0' && strchr("0123456789abcdef", c) != NULL;
}

/* Any bytes at all: only printable ASCII comes out, never a quote or a
 * line break, every backslash starts an \xNN escape, and with room
 * enough nothing is cut (one byte or four per input byte). */
Test(log_escape, output_alphabet)
{
	char		 src[256], out[4 * 256 + 5], *p;
	uint32_t	 x = 2463534242u;	/* xorshift32, fixed seed */
	size_t		 i, round, want;
	unsigned char	 c;

	for (round = 0; round < 200; round++) {
		want = 0;
		for (i = 0; i < sizeof(src); i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			c = (unsigned char)(round == 0 ? i : x);
			src[i] = (char)c;
			want += c < 0x20 || c > 0x7e || c == '"' || c == '\\' ? 4 : 1;
		}
		log_escape(out, sizeof(out), src, sizeof(src));
		for (p = out; *p != '\0'; p++) {
			cr_assert(*p >= 0x20 && *p < 0x7f && *p != '"',
			    "byte 0x%02x in the output", (unsigned char)*p);
			if (*p == '\\')
				cr_assert(p[1] == 'x' && is_hex(p[2]) && is_hex(p[3]),
				    "bare backslash at %zu", (size_t)(p - out));
		}
		cr_assert_eq((size_t)(p - out), want, "round %zu", round);
	}
}
