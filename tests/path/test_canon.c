/* SPDX-License-Identifier: MIT */
/*
 * test_canon.c - golden table for yx_path_resolve / yx_path_canon
 * (tests/path/canon.tsv: input, then the canonical path or an error name),
 * plus the properties every accepted row must have (root and rel agree with
 * canon, resolving the output again is idempotent) and yx_thread_id_valid.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

#include "../lib/tsv.h"

static const struct {
	const char	*name;
	int		 code;
} err_names[] = {
#define ERR_NAME(name, status, code, text) { #name, YX_E_##name },
	YX_ERRORS(ERR_NAME)
#undef ERR_NAME
};

static const char *
err_name(int code)
{
	size_t	 i;

	for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++) {
		if (err_names[i].code == code)
			return err_names[i].name;
	}
	return "?";
}

/* Error code for an expectation field, -1 when it is a path instead. */
static int
err_code(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++) {
		if (strcmp(err_names[i].name, name) == 0)
			return err_names[i].code;
	}
	return -1;
}

/* Check root/rel consistency and idempotence of an accepted row. */
static void
check_ok_props(const struct tsv_row *row, const struct yx_vpath *vp)
{
	struct yx_vpath	 again;
	const char	*root;
	size_t		 rlen;
	char		 buf[YX_VPATH_MAX];

	root = vp->root == YX_ROOT_SKILLS ? YX_VROOT_SKILLS : YX_VROOT_USER_DATA;
	rlen = strlen(root);
	cr_expect(strncmp(vp->canon, root, rlen) == 0,
	    "line %zu: %s: canon %s not under root %s", row->lineno, row->raw,
	    vp->canon, root);
	cr_expect(vp->rel == vp->canon + rlen + (vp->canon[rlen] == '/'),
	    "line %zu: %s: rel does not follow the root", row->lineno, row->raw);
	cr_expect(vp->rel[0] != '/', "line %zu: rel starts with /", row->lineno);
	cr_expect(yx_path_resolve(vp->canon, strlen(vp->canon), &again) == YX_OK &&
		strcmp(again.canon, vp->canon) == 0 && again.root == vp->root,
	    "line %zu: %s: resolving %s again is not idempotent", row->lineno,
	    row->raw, vp->canon);
	cr_expect(yx_path_canon(row->field[0], row->flen[0], buf, sizeof(buf)) ==
		    YX_OK &&
		strcmp(buf, vp->canon) == 0,
	    "line %zu: %s: yx_path_canon disagrees", row->lineno, row->raw);
}

static void
check_row(const struct tsv_row *row, size_t *nrows)
{
	struct yx_vpath	 vp;
	int		 rc, want;
	char		 buf[YX_VPATH_MAX];

	cr_assert(row->nfield >= 2, "line %zu: %s: need 2 fields", row->lineno,
	    row->raw);
	(*nrows)++;
	rc = yx_path_resolve(row->field[0], row->flen[0], &vp);
	want = err_code(row->field[1]);
	if (want < 0) {
		cr_expect(rc == YX_OK && strcmp(vp.canon, row->field[1]) == 0,
		    "line %zu: %s: got %s \"%.200s\", want \"%.200s\"",
		    row->lineno, row->raw, err_name(rc), vp.canon,
		    row->field[1]);
		if (rc == YX_OK)
			check_ok_props(row, &vp);
		return;
	}
	cr_expect(rc == want, "line %zu: %s: got %s \"%.200s\", want %s",
	    row->lineno, row->raw, err_name(rc), vp.canon, row->field[1]);
	cr_expect(vp.canon[0] == '\0' && vp.rel == vp.canon,
	    "line %zu: failure leaves output", row->lineno);
	cr_expect(yx_path_canon(row->field[0], row->flen[0], buf, sizeof(buf)) ==
		    want &&
		buf[0] == '\0',
	    "line %zu: %s: yx_path_canon disagrees", row->lineno, row->raw);
}

Test(canon, golden_table)
{
	size_t	 nrows = tsv_replay("tests/path/canon.tsv", check_row);

	cr_expect(nrows >= 100, "only %zu rows", nrows);
}

Test(canon, rel_and_root)
{
	struct yx_vpath	 vp;

	cr_assert_eq(yx_path_resolve("/home/yuxi/user-data", 20, &vp), YX_OK);
	cr_expect_str_eq(vp.rel, "");
	cr_expect_eq(vp.root, YX_ROOT_USER_DATA);
	cr_assert_eq(yx_path_resolve("/skills/pdf/SKILL.md", 20, &vp), YX_OK);
	cr_expect_str_eq(vp.canon, "/home/yuxi/skills/pdf/SKILL.md");
	cr_expect_str_eq(vp.rel, "pdf/SKILL.md");
	cr_expect_eq(vp.root, YX_ROOT_SKILLS);
	cr_assert_eq(yx_path_resolve("a.txt", 5, &vp), YX_OK);
	cr_expect_str_eq(vp.rel, "workspace/a.txt");
	cr_expect_eq(vp.root, YX_ROOT_USER_DATA);
	/* len governs, not the NUL terminator: a prefix of the string. */
	cr_assert_eq(yx_path_resolve("/outputs/x/../y", 10, &vp), YX_OK);
	cr_expect_str_eq(vp.canon, "/home/yuxi/user-data/outputs/x");
	cr_expect_eq(yx_path_resolve(NULL, 0, &vp), YX_E_INVALID_PATH);
}

/* The namespace root: only "/" spelled any way; never a relative path. */
Test(canon, namespace_root)
{
	struct yx_vpath vp;

	cr_assert(yx_path_is_top("/", 1));
	cr_assert(yx_path_is_top("//", 2));
	cr_assert(yx_path_is_top("/./", 3));
	cr_assert(!yx_path_is_top("", 0));
	cr_assert(!yx_path_is_top(".", 1));
	cr_assert(!yx_path_is_top("/home", 5));
	cr_assert(!yx_path_is_top("/..", 3));
	cr_assert(!yx_path_is_top("/\n", 2));
	/* it is no root of the resolver: everything else still refuses it */
	cr_assert_eq(yx_path_resolve("/", 1, &vp), YX_E_PATH_NOT_ALLOWED);
}

Test(canon, length_limits)
{
	static char	 in[2 * YX_VPATH_MAX], buf[YX_VPATH_MAX];
	struct yx_vpath	 vp;
	size_t		 n, base = strlen(YX_VROOT_USER_DATA);

	/* Fill to exactly YX_VPATH_MAX - 1 bytes: the largest accepted. */
	memcpy(in, YX_VROOT_USER_DATA, base);
	for (n = base; n < YX_VPATH_MAX - 1; n++)
		in[n] = (n - base) % 101 == 0 ? '/' : 'a';
	in[n - 1] = 'z';
	cr_expect_eq(yx_path_resolve(in, n, &vp), YX_OK);
	cr_expect_eq(strlen(vp.canon), YX_VPATH_MAX - 1);
	in[n++] = 'b';
	cr_expect_eq(yx_path_resolve(in, n, &vp), YX_E_INVALID_PATH);
	/* A relative form fits the input limit but grows past it. */
	cr_expect_eq(yx_path_resolve(in + base + 1, n - base - 2, &vp),
	    YX_E_INVALID_PATH, "relative form grows past the limit");
	/* 8000 slashes collapse: the canonical length is what counts. */
	memset(in, '/', sizeof(in));
	memcpy(in + sizeof(in) - 9, "outputs/x", 9);
	cr_expect_eq(yx_path_resolve(in, sizeof(in), &vp), YX_OK);
	cr_expect_str_eq(vp.canon, "/home/yuxi/user-data/outputs/x");
	/* yx_path_canon fails rather than truncate. */
	cr_expect_eq(yx_path_canon("/outputs/x", 10, buf, 30), YX_E_INVALID_PATH);
	cr_expect_str_eq(buf, "");
	cr_expect_eq(yx_path_canon("/outputs/x", 10, buf, 31), YX_OK);
	cr_expect_str_eq(buf, "/home/yuxi/user-data/outputs/x");
	cr_expect_eq(yx_path_canon("/outputs/x", 10, NULL, 0), YX_E_INVALID_PATH);
}

Test(thread_id, syntax)
{
	char	 id[YX_THREAD_ID_MAX + 2];

	cr_expect(yx_thread_id_valid("abc", 3));
	cr_expect(yx_thread_id_valid("A-z_0-9", 7));
	cr_expect(!yx_thread_id_valid("", 0));
	cr_expect(!yx_thread_id_valid(NULL, 0));
	cr_expect(!yx_thread_id_valid("a/b", 3));
	cr_expect(!yx_thread_id_valid("..", 2));
	cr_expect(!yx_thread_id_valid("a.b", 3));
	cr_expect(!yx_thread_id_valid("a b", 3));
	cr_expect(!yx_thread_id_valid("a\0b", 3));
	cr_expect(!yx_thread_id_valid("\xc3\xa9", 2));
	memset(id, 'x', sizeof(id));
	cr_expect(yx_thread_id_valid(id, YX_THREAD_ID_MAX));
	cr_expect(!yx_thread_id_valid(id, YX_THREAD_ID_MAX + 1));
}
