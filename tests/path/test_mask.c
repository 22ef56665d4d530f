/* SPDX-License-Identifier: MIT */
/*
 * test_mask.c - yx_mask_output: leftmost-longest replacement of host paths.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

static void
expect_mask(const char *in, const struct yx_mask_rule *rules, size_t n,
    const char *want)
{
	char	*out = NULL;
	size_t	 len = 99;

	cr_assert_eq(yx_mask_output(in, strlen(in), rules, n, &out, &len), YX_OK,
	    "mask(%s)", in);
	cr_assert_not_null(out);
	cr_expect_str_eq(out, want, "mask(%s)", in);
	cr_expect_eq(len, strlen(want), "mask(%s): length", in);
	/* the executor keeps its buffer when there are no hits */
	cr_expect_eq(yx_mask_hits(in, strlen(in), rules, n) == 0,
	    strcmp(in, want) == 0, "mask(%s): hits", in);
	free(out);
}

static const struct yx_mask_rule host_rules[] = {
	{ "/var/lib/yuxi-sandbox/threads/t1/user-data", "/home/yuxi/user-data" },
	{ "/srv/skills", "/home/yuxi/skills" },
};

Test(mask, host_paths)
{
	expect_mask("cat: /var/lib/yuxi-sandbox/threads/t1/user-data/x: "
		    "No such file\n",
	    host_rules, 2,
	    "cat: /home/yuxi/user-data/x: No such file\n");
	expect_mask("/srv/skills/pdf and /srv/skills/doc", host_rules, 2,
	    "/home/yuxi/skills/pdf and /home/yuxi/skills/doc");
	expect_mask("nothing to see", host_rules, 2, "nothing to see");
	expect_mask("/srv/skill", host_rules, 2, "/srv/skill");
}

Test(mask, empty)
{
	char	*out = NULL;
	size_t	 len = 99;

	expect_mask("", host_rules, 2, "");
	expect_mask("abc", NULL, 0, "abc");
	cr_assert_eq(yx_mask_output(NULL, 0, host_rules, 2, &out, &len), YX_OK);
	cr_expect_str_eq(out, "");
	cr_expect_eq(len, 0);
	free(out);
}

/* Rules that do not share a first byte take the per-byte scan. */
Test(mask, mixed_first_bytes)
{
	static const struct yx_mask_rule r[] = {
		{ "/host/ud", "/home/yuxi/user-data" },
		{ "~/x", "~/y" },
		{ "", "never" },
	};

	expect_mask("a /host/ud/f ~/x ~ / b", r, 3,
	    "a /home/yuxi/user-data/f ~/y ~ / b");
	expect_mask("no hit at all", r, 3, "no hit at all");
	cr_expect_eq(yx_mask_hits("~/x~/x", 6, r, 3), 2);
}

Test(mask, longest_wins)
{
	static const struct yx_mask_rule r[] = {
		{ "/data", "<D>" },
		{ "/data/threads/t1", "<T1>" },
		{ "/data/threads", "<TH>" },
	};

	expect_mask("/data/threads/t1/x", r, 3, "<T1>/x");
	expect_mask("/data/threads/t2/x", r, 3, "<TH>/t2/x");
	expect_mask("/data/other", r, 3, "<D>/other");
	expect_mask("/dat", r, 3, "/dat");
	/* order of the rules does not matter */
	{
		static const struct yx_mask_rule rr[] = {
			{ "/data/threads", "<TH>" },
			{ "/data", "<D>" },
			{ "/data/threads/t1", "<T1>" },
		};
		expect_mask("/data/threads/t1/x /data/x", rr, 3, "<T1>/x <D>/x");
	}
}

Test(mask, overlapping_occurrences)
{
	static const struct yx_mask_rule aa[] = { { "aa", "X" } };
	static const struct yx_mask_rule ab[] = {
		{ "ab", "1" },
		{ "bc", "2" },
	};

	expect_mask("aaa", aa, 1, "Xa");
	expect_mask("aaaa", aa, 1, "XX");
	expect_mask("abc", ab, 2, "1c");	/* leftmost first */
	expect_mask("bcab", ab, 2, "21");
}

Test(mask, growth_and_shrink)
{
	static const struct yx_mask_rule r[] = {
		{ "x", "0123456789" },
		{ "long-host-path", "" },
		{ "", "never" },
		{ NULL, "never" },
		{ "n", NULL },
	};

	expect_mask("xx", r, 5, "01234567890123456789");
	expect_mask("a long-host-path b", r, 5, "a  b");
	expect_mask("on", r, 5, "o");
}

Test(mask, binary_input)
{
	static const struct yx_mask_rule r[] = { { "/h", "/c" } };
	char	*out = NULL;
	size_t	 len = 0;

	cr_assert_eq(yx_mask_output("a\0/h\0b", 6, r, 1, &out, &len), YX_OK);
	cr_expect_eq(len, 6);
	cr_expect(memcmp(out, "a\0/c\0b", 7) == 0);
	free(out);
}

/*
 * The text in pieces: every way of cutting it in two and in three gives
 * exactly the replacements of the whole (yx_mask_output), and what a piece
 * holds back stays shorter than the longest `from`.
 */
static void
expect_pieces(const char *in, const struct yx_mask_rule *rules, size_t n)
{
	struct yx_mask_stream	ms;
	struct yx_buf		out;
	char			*want = NULL;
	size_t			 len = strlen(in), wlen, i, j, k, cuts[4], longest = 0;

	for (k = 0; k < n; k++)
		if (rules[k].from != NULL && strlen(rules[k].from) > longest)
			longest = strlen(rules[k].from);
	cr_assert_eq(yx_mask_output(in, len, rules, n, &want, &wlen), YX_OK);
	for (i = 0; i <= len; i++)
		for (j = i; j <= len; j++) {
			cuts[0] = 0;
			cuts[1] = i;
			cuts[2] = j;
			cuts[3] = len;
			yx_mask_stream_init(&ms, rules, n);
			yx_buf_init(&out, SIZE_MAX);
			for (k = 0; k < 3; k++) {
				cr_assert_eq(yx_mask_stream_feed(&ms, in + cuts[k],
						 cuts[k + 1] - cuts[k], false, &out),
				    YX_OK);
				cr_expect(ms.carry.len < (longest > 0 ? longest : 1),
				    "%s cut at %zu, %zu: %zu held back", in, i, j,
				    ms.carry.len);
			}
			cr_assert_eq(yx_mask_stream_feed(&ms, NULL, 0, true, &out), YX_OK);
			cr_expect(out.len == wlen &&
				(wlen == 0 || memcmp(out.data, want, wlen) == 0),
			    "%s cut at %zu, %zu: %.*s", in, i, j, (int)out.len,
			    out.data);
			cr_expect_eq(ms.carry.len, 0);
			yx_buf_fini(&out);
			yx_mask_stream_fini(&ms);
		}
	free(want);
}

Test(mask, pieces)
{
	static const struct yx_mask_rule r[] = {
		{ "/data", "<D>" },
		{ "/data/threads/t1", "<T1>" },
		{ "/data/threads", "<TH>" },
		{ "~/x", "~/y" },
	};
	static const struct yx_mask_rule aa[] = { { "aa", "X" } };

	expect_pieces("see /data/threads/t1/x and /data/threads/t2 /dat/data", r, 4);
	expect_pieces("/data/threads/t", r, 4);
	expect_pieces("~/x~/x~~/x/", r, 4);
	expect_pieces("plain text, no rule at all", r, 4);
	expect_pieces("aaaaa", aa, 1);
	expect_pieces("", r, 4);
	expect_pieces("/data/threads", host_rules, 2);
}

/* A prefix that cannot be decided yet is held back; final decides it. */
Test(mask, prefix_held_back)
{
	struct yx_buf	out;
	size_t		used = 99;

	yx_buf_init(&out, SIZE_MAX);
	cr_assert_eq(yx_mask_prefix("ls /srv/sk", 10, host_rules, 2, false, &out,
			 &used),
	    YX_OK);
	cr_expect_eq(used, 3);
	cr_expect(out.len == 3 && memcmp(out.data, "ls ", 3) == 0);
	yx_buf_reset(&out);
	cr_assert_eq(yx_mask_prefix("ls /srv/sk", 10, host_rules, 2, true, &out,
			 &used),
	    YX_OK);
	cr_expect_eq(used, 10);
	cr_expect(out.len == 10 && memcmp(out.data, "ls /srv/sk", 10) == 0);
	yx_buf_reset(&out);
	/* a whole match at the end that a longer rule could extend waits */
	{
		static const struct yx_mask_rule r[] = {
			{ "/a/b", "S" },
			{ "/a/bc", "L" },
		};

		cr_assert_eq(yx_mask_prefix("x/a/b", 5, r, 2, false, &out, &used),
		    YX_OK);
		cr_expect_eq(used, 1);
		yx_buf_reset(&out);
		cr_assert_eq(yx_mask_prefix("x/a/b!", 6, r, 2, false, &out, &used),
		    YX_OK);
		cr_expect_eq(used, 6);
		cr_expect(out.len == 3 && memcmp(out.data, "xS!", 3) == 0);
	}
	yx_buf_fini(&out);
}
