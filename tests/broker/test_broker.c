/* SPDX-License-Identifier: MIT */
/*
 * test_broker.c - functional semantics of the broker (deepagents
 * BackendProtocol behaviour, viewer reads, layout, limits, skills filter)
 * on a real temp tree. The escape scenarios are in test_escape.c.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "broker/broker_int.h"
#include "helpers.h"
#include "../lib/tutil.h"

TestSuite(broker, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

#define UD	YX_ROOT_USER_DATA
#define SK	YX_ROOT_SKILLS

#define assert_rc(rc, want) \
	cr_assert_eq((rc), (want), "rc %d (%s), want %d (%s)", (rc), \
	    yx_strerror(rc), (want), yx_strerror(want))

static struct yx_broker_text *
cat(const char *rel, size_t off, size_t lim)
{
	struct yx_broker_text	*t = NULL;
	struct yx_errctx	 e;
	int			 rc;

	rc = yx_broker_cat(&fx.b, UD, rel, off, lim, 0, &t, &e);
	cr_assert_eq(rc, YX_OK, "cat %s: %s", rel, e.msg);
	return t;
}

/* ---- init and path checks --------------------------------------------- */

Test(broker, init_missing_and_create)
{
	struct yx_broker	b;
	struct yx_errctx	e;
	struct stat		st;
	char			p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/threads/t2/user-data", fx.top);
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL, 0,
		      &e),
	    YX_E_FILE_NOT_FOUND);
	yx_broker_fini(&b);
	/* the thread directory itself is never made: a gone thread stays gone */
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL,
		      YX_BROKER_CREATE, &e),
	    YX_E_FILE_NOT_FOUND);
	snprintf(p, sizeof(p), "%s/threads/t2", fx.top);
	cr_assert_eq(stat(p, &st), -1);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/threads/t2/user-data", fx.top);
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL,
		      YX_BROKER_CREATE, &e),
	    YX_OK);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, FX_UID);
	yx_broker_fini(&b);
	/* OWNED: a root of another uid is another thread's: not found */
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL,
		      YX_BROKER_OWNED, &e),
	    YX_OK);
	yx_broker_fini(&b);
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID + 1, FX_GID, NULL,
		      YX_BROKER_OWNED, &e),
	    YX_E_NOT_FOUND);
	yx_broker_fini(&b);
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL,
		      YX_BROKER_CREATE, &e),
	    YX_OK);
	assert_rc(yx_broker_ensure_layout(&b, NULL, &e), YX_OK);
	yx_broker_fini(&b);
	yx_broker_fini(&b);	/* twice is harmless */
}

Test(broker, init_root_symlink_refused)
{
	struct yx_broker	b;
	char			p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/threads/t3", fx.top);
	cr_assert_eq(symlink(fx.ud, p), 0);
	assert_rc(yx_broker_init(&b, p, NULL, NULL, 0, FX_UID, FX_GID, NULL, 0,
		      NULL),
	    YX_E_PATH_NOT_ALLOWED);
}

Test(broker, invalid_rel_refused)
{
	static const char *const bad[] = {
		"../x",
		"/etc/passwd",
		"workspace//a",
		"workspace/./a",
		"workspace/",
		"workspace/..",
		".",
		"..",
		"a/../../b",
	};
	struct yx_broker_text	*t;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = NULL;
		assert_rc(yx_broker_cat(&fx.b, UD, bad[i], 0, 0, 0, &t, NULL),
		    YX_E_INVALID_PATH);
		cr_assert_null(t);
		assert_rc(yx_broker_write(&fx.b, UD, bad[i], "x", 1, true,
			      NULL),
		    YX_E_INVALID_PATH);
	}
}

/* ---- cat -n ------------------------------------------------------------ */

Test(broker, cat_format_exact)
{
	struct yx_broker_text *t;

	fx_puts("workspace/a.txt", "alpha\nbeta\n\ngamma");
	t = cat("workspace/a.txt", 0, 0);
	cr_assert_str_eq(t->content,
	    "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma");
	cr_assert_eq(t->len, strlen(t->content));
	cr_assert_str_eq(t->path, "/home/yuxi/user-data/workspace/a.txt");
	cr_assert_eq(t->start_line, 1);
	cr_assert_eq(t->end_line, 4);
	cr_assert_eq(t->total_lines, 4);
	cr_assert_eq(t->next_offset, -1);
	yx_broker_text_free(t);
}

Test(broker, cat_paging_and_crlf)
{
	struct yx_broker_text	*t;
	struct yx_errctx	 e;

	fx_puts("workspace/p.txt", "l1\r\nl2\r\nl3\r\nl4\r\nl5\r\n");
	t = cat("workspace/p.txt", 1, 2);
	cr_assert_str_eq(t->content, "     2\tl2\n     3\tl3");
	cr_assert_eq(t->start_line, 2);
	cr_assert_eq(t->end_line, 3);
	cr_assert_eq(t->total_lines, 5);
	cr_assert_eq(t->next_offset, 3);
	yx_broker_text_free(t);
	t = cat("workspace/p.txt", 3, 10);
	cr_assert_str_eq(t->content, "     4\tl4\n     5\tl5");
	cr_assert_eq(t->next_offset, -1);
	yx_broker_text_free(t);
	t = NULL;
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/p.txt", 5, 1, 0, &t, &e),
	    YX_E_BAD_REQUEST);
	cr_assert(strstr(e.msg, "5 lines") != NULL, "%s", e.msg);
}

/* format=raw: the lines as they are, terminators kept; cut lines named. */
Test(broker, cat_raw_and_cut_lines)
{
	struct yx_broker_text	*t = NULL;
	char			 line[2100];

	fx_puts("workspace/r.txt", "a\r\nb\nc");
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/r.txt", 0, 2, YX_CAT_RAW,
		      &t, NULL),
	    YX_OK);
	cr_assert_str_eq(t->content, "a\r\nb\n");
	cr_assert_eq(t->total_lines, 3);
	cr_assert_eq(t->next_offset, 2);
	cr_assert_eq(t->size, 6);
	cr_assert_eq(t->ncut, 0);
	yx_broker_text_free(t);
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/r.txt", 2, 5, YX_CAT_RAW,
		      &t, NULL),
	    YX_OK);
	cr_assert_str_eq(t->content, "c");	/* no terminator in the file */
	yx_broker_text_free(t);
	/* a line over line_max (2000): cut, its number reported, in both forms */
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	fx_puts("workspace/long.txt", "short\n");
	{
		char *p = fx_path("workspace/long.txt");
		FILE *f = fopen(p, "a");

		fprintf(f, "%s\nend\n", line);
		fclose(f);
	}
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/long.txt", 0, 0,
		      YX_CAT_RAW, &t, NULL),
	    YX_OK);
	cr_assert_eq(t->ncut, 1);
	cr_assert_eq(t->cut[0], 2);
	cr_assert_eq(t->len, 6 + 2000 + 1 + 4);
	yx_broker_text_free(t);
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/long.txt", 0, 0, 0, &t,
		      NULL),
	    YX_OK);
	cr_assert(t->lines_cut && t->ncut == 1 && t->cut[0] == 2);
	yx_broker_text_free(t);
}

/* Delete: files, links, empty and (recursive) full directories; the
 * layout folders, skills and absent names refused as documented. */
Test(broker, delete_cases)
{
	bool	pending;

	fx_mkdir("workspace/d");
	fx_mkdir("workspace/d/e");
	fx_puts("workspace/d/e/f.txt", "x");
	fx_puts("workspace/g.txt", "y");
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace/g.txt", false, &pending,
		      NULL),
	    YX_OK);
	cr_assert(access(fx_path("workspace/g.txt"), F_OK) != 0);
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace/g.txt", false, &pending,
		      NULL),
	    YX_E_FILE_NOT_FOUND);
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace/d", false, &pending,
		      NULL),
	    YX_E_BAD_REQUEST);
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace/d", true, &pending,
		      NULL),
	    YX_OK);
	cr_assert(!pending);
	cr_assert_str_eq(fx_names("workspace"), "");
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace", true, &pending,
		      NULL),
	    YX_E_PATH_NOT_ALLOWED);
	assert_rc(yx_broker_delete(&fx.b, UD, "", true, &pending, NULL),
	    YX_E_PATH_NOT_ALLOWED);
	assert_rc(yx_broker_delete(&fx.b, SK, "alpha/SKILL.md", false,
		      &pending, NULL),
	    YX_E_READ_ONLY);
	fx_symlink("/etc", "workspace/l");
	assert_rc(yx_broker_delete(&fx.b, UD, "workspace/l", false, &pending,
		      NULL),
	    YX_OK);
	cr_assert(access("/etc/passwd", F_OK) == 0);
}

Test(broker, cat_empty_and_wide_numbers)
{
	struct yx_broker_text	*t;
	char			*big;
	size_t			 i;

	fx_puts("workspace/empty", "");
	t = cat("workspace/empty", 0, 0);
	cr_assert_str_eq(t->content, "");
	cr_assert_eq(t->total_lines, 0);
	cr_assert_eq(t->start_line, 0);
	cr_assert_eq(t->next_offset, -1);
	yx_broker_text_free(t);
	/* 1,000,001 lines: numbers wider than 6 columns simply widen */
	big = malloc(2000002);
	for (i = 0; i < 2000002; i += 2) {
		big[i] = 'x';
		big[i + 1] = '\n';
	}
	fx_put("workspace/big", big, 2000002);
	free(big);
	t = cat("workspace/big", 999999, 2);
	cr_assert_str_eq(t->content, "1000000\tx\n1000001\tx");
	cr_assert_eq(t->total_lines, 1000001);
	yx_broker_text_free(t);
}

Test(broker, cat_long_line_cut_utf8)
{
	struct yx_broker_limits	lim = { .line_max = 5 };
	struct yx_broker_text	*t;

	fx_reopen(&lim);
	/* "abcd" + U+00E9 (2 bytes): a cut at 5 would split it */
	fx_puts("workspace/l.txt", "abcd\xc3\xa9zz\nok\n");
	t = cat("workspace/l.txt", 0, 0);
	cr_assert_str_eq(t->content, "     1\tabcd\n     2\tok");
	cr_assert(t->lines_cut);
	yx_broker_text_free(t);
}

Test(broker, cat_errors)
{
	struct yx_broker_limits	 lim = { .read_max = 16 };
	struct yx_broker_text	*t = NULL;
	struct yx_errctx	 e;

	fx_put("workspace/bin", "ab\0cd", 5);
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/bin", 0, 0, 0, &t, NULL),
	    YX_E_BINARY_FILE);
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace", 0, 0, 0, &t, NULL),
	    YX_E_IS_DIRECTORY);
	assert_rc(yx_broker_cat(&fx.b, UD, "", 0, 0, 0, &t, NULL),
	    YX_E_IS_DIRECTORY);
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/nope.txt", 0, 0, 0, &t, &e),
	    YX_E_FILE_NOT_FOUND);
	cr_assert_str_eq(e.msg,
	    "no such file: /home/yuxi/user-data/workspace/nope.txt");
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/bin/x", 0, 0, 0, &t, NULL),
	    YX_E_NOT_DIRECTORY);
	fx_reopen(&lim);
	fx_puts("workspace/large", "0123456789abcdefg");	/* 17 bytes */
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/large", 0, 0, 0, &t, NULL),
	    YX_E_PAYLOAD_TOO_LARGE);
	fx_puts("workspace/fits", "0123456789abcdef");	/* 16 bytes */
	assert_rc(yx_broker_cat(&fx.b, UD, "workspace/fits", 0, 0, 0, &t, NULL),
	    YX_OK);
	yx_broker_text_free(t);
}

Test(broker, setuid_and_mode000_files_read_normally)
{
	struct yx_broker_text *t;

	fx_puts("workspace/suid", "plain\n");
	cr_assert_eq(chmod(fx_path("workspace/suid"), 04755), 0);
	t = cat("workspace/suid", 0, 0);
	cr_assert_str_eq(t->content, "     1\tplain");
	yx_broker_text_free(t);
	fx_puts("workspace/locked", "hidden\n");
	cr_assert_eq(chmod(fx_path("workspace/locked"), 0), 0);
	t = cat("workspace/locked", 0, 0);
	cr_assert_str_eq(t->content, "     1\thidden");
	yx_broker_text_free(t);
}

/* ---- viewer read ------------------------------------------------------- */

static struct yx_broker_blob *
view(const char *rel)
{
	struct yx_broker_blob	*bl = NULL;
	struct yx_errctx	 e;

	cr_assert_eq(yx_broker_view(&fx.b, UD, rel, &bl, &e), YX_OK, "%s",
	    e.msg);
	return bl;
}

Test(broker, view_replaces_invalid_utf8)
{
	static const struct {
		const char	*in;
		size_t		 len;
		const char	*out;
	} cases[] = {
		{ "a\xff"
		  "b",
		    3, "a\xef\xbf\xbd"
		       "b" },
		{ "\xe2\x82"
		  "c",
		    3, "\xef\xbf\xbd"
		       "c" },				       /* cut sequence */
		{ "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd" },	/* overlong */
		{ "\xed\xa0\x80", 3,				/* surrogate */
		    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf0\x9f\x98\x80!", 5, "\xf0\x9f\x98\x80!" },
		{ "\xf4\x90\x80\x80", 4,			/* > U+10FFFF */
		    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "ab\xe2\x82", 4, "ab\xef\xbf\xbd" },		/* at EOF */
		{ "x\0y", 3, NULL },				/* NUL kept */
	};
	struct yx_broker_blob	*bl;
	size_t			 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_put("workspace/u.bin", cases[i].in, cases[i].len);
		bl = view("workspace/u.bin");
		if (cases[i].out != NULL) {
			cr_assert_eq(bl->len, strlen(cases[i].out), "case %zu", i);
			cr_assert_eq(memcmp(bl->content, cases[i].out, bl->len),
			    0, "case %zu", i);
		} else
			cr_assert(bl->len == 3 && memcmp(bl->content, "x\0y", 3) == 0);
		cr_assert_eq(bl->size, cases[i].len);
		cr_assert(!bl->truncated);
		yx_broker_blob_free(bl);
	}
}

Test(broker, view_truncates_at_cap)
{
	struct yx_broker_limits	 lim = { .viewer_max = 4 };
	struct yx_broker_blob	*bl;

	fx_reopen(&lim);
	fx_puts("workspace/t.txt", "abc\xe2\x82\xac tail");
	bl = view("workspace/t.txt");
	cr_assert_str_eq(bl->content, "abc");	/* the cut € is dropped */
	cr_assert(bl->truncated);
	cr_assert_eq(bl->size, 11);
	yx_broker_blob_free(bl);
	fx_puts("workspace/s.txt", "abcd");
	bl = view("workspace/s.txt");
	cr_assert_str_eq(bl->content, "abcd");
	cr_assert(!bl->truncated);
	yx_broker_blob_free(bl);
}

/* ---- download ------------------------------------------------------------ */

Test(broker, download_checks)
{
	struct yx_broker_dl	dl;
	struct stat		st;

	fx_mkdir("outputs");
	fx_puts("outputs/report.pdf", "%PDF-1.4 fake");
	cr_assert_eq(stat(fx_path("outputs/report.pdf"), &st), 0);
	assert_rc(yx_broker_download(&fx.b, UD, "outputs/report.pdf", &dl,
		      NULL),
	    YX_OK);
	cr_assert_eq(dl.size, 13);
	cr_assert_eq(dl.modified_at, st.st_mtim.tv_sec);
	cr_assert_str_eq(dl.rel, "outputs/report.pdf");
	cr_assert_str_eq(dl.name, "report.pdf");
	assert_rc(yx_broker_download(&fx.b, UD, "outputs", &dl, NULL),
	    YX_E_IS_DIRECTORY);
	cr_assert_eq(mkfifo(fx_path("outputs/fifo"), 0644), 0);
	assert_rc(yx_broker_download(&fx.b, UD, "outputs/fifo", &dl, NULL),
	    YX_E_NOT_REGULAR);
	assert_rc(yx_broker_download(&fx.b, UD, "outputs/none", &dl, NULL),
	    YX_E_FILE_NOT_FOUND);
}

/* A download's bytes read whole (the MCP endpoint's download): binary
 * kept, the size bounded, the download check's refusals. */
Test(broker, fetch_bytes)
{
	static const char	 bin[] = "a\0b\xff\n";
	char			*data = NULL;
	size_t			 len = 0;

	fx_mkdir("outputs");
	fx_put("outputs/b.bin", bin, sizeof(bin) - 1);
	assert_rc(yx_broker_fetch(&fx.b, UD, "outputs/b.bin", 64, &data, &len, NULL), YX_OK);
	cr_assert(len == sizeof(bin) - 1 && memcmp(data, bin, len) == 0);
	free(data);
	assert_rc(yx_broker_fetch(&fx.b, UD, "outputs/b.bin", 4, &data, &len, NULL),
	    YX_E_PAYLOAD_TOO_LARGE);
	assert_rc(yx_broker_fetch(&fx.b, UD, "outputs", 64, &data, &len, NULL),
	    YX_E_IS_DIRECTORY);
	fx_symlink(fx.secret, "outputs/s");
	assert_rc(yx_broker_fetch(&fx.b, UD, "outputs/s", 64, &data, &len, NULL),
	    YX_E_PATH_NOT_ALLOWED);
	assert_rc(yx_broker_fetch(&fx.b, UD, "outputs/none", 64, &data, &len, NULL),
	    YX_E_FILE_NOT_FOUND);
}

/* ---- write / edit / upload ------------------------------------------------ */

Test(broker, write_create_only_and_overwrite)
{
	struct yx_errctx	 e;
	struct stat		 st;
	char			*s;

	assert_rc(yx_broker_write(&fx.b, UD, "workspace/new/deep/f.txt",
		      "one\n", 4, false, &e),
	    YX_OK);
	cr_assert_str_eq(s = fx_slurp(fx_path("workspace/new/deep/f.txt"),
			     NULL),
	    "one\n");
	free(s);
	cr_assert_eq(stat(fx_path("workspace/new/deep/f.txt"), &st), 0);
	cr_assert_eq(st.st_uid, FX_UID);
	cr_assert_eq(st.st_gid, FX_GID);
	cr_assert_eq(st.st_mode & 07777, 0644);
	cr_assert_eq(stat(fx_path("workspace/new/deep"), &st), 0);
	cr_assert_eq(st.st_uid, FX_UID);
	cr_assert_eq(st.st_mode & 07777, 0755);
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/new/deep/f.txt",
		      "two\n", 4, false, &e),
	    YX_E_FILE_EXISTS);
	cr_assert_str_eq(s = fx_slurp(fx_path("workspace/new/deep/f.txt"),
			     NULL),
	    "one\n");
	free(s);
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/new/deep/f.txt",
		      "two\n", 4, true, &e),
	    YX_OK);
	cr_assert_str_eq(s = fx_slurp(fx_path("workspace/new/deep/f.txt"),
			     NULL),
	    "two\n");
	free(s);
	cr_assert_str_eq(fx_names("workspace/new/deep"), "f.txt",
	    "a temp file was left behind");
}

Test(broker, write_refusals)
{
	fx_mkdir("workspace/dir");
	assert_rc(yx_broker_write(&fx.b, SK, "alpha/x.md", "x", 1, true, NULL),
	    YX_E_READ_ONLY);
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/dir", "x", 1, true,
		      NULL),
	    YX_E_IS_DIRECTORY);
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/dir", "x", 1, false,
		      NULL),
	    YX_E_FILE_EXISTS);
	assert_rc(yx_broker_write(&fx.b, UD, "", "x", 1, true, NULL),
	    YX_E_IS_DIRECTORY);
	cr_assert_eq(mkfifo(fx_path("workspace/fifo"), 0644), 0);
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/fifo", "x", 1, true,
		      NULL),
	    YX_E_NOT_REGULAR);
	fx_symlink("elsewhere", "workspace/link");
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/link", "x", 1, true,
		      NULL),
	    YX_E_PATH_NOT_ALLOWED);
	fx_puts("workspace/file", "f");
	assert_rc(yx_broker_write(&fx.b, UD, "workspace/file/sub", "x", 1,
		      true, NULL),
	    YX_E_NOT_DIRECTORY);
	cr_assert_str_eq(fx_names("workspace"), "dir,fifo,file,link");
}

Test(broker, edit_cases)
{
	struct yx_errctx	 e;
	struct stat		 st;
	size_t			 n = 0;
	char			*s;

	fx_puts("workspace/e.txt", "foo bar foo baz foo\n");
	cr_assert_eq(chmod(fx_path("workspace/e.txt"), 04600), 0);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/e.txt", "", "x", false,
		      &n, &e),
	    YX_E_BAD_REQUEST);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/e.txt", "qux", "x",
		      false, &n, &e),
	    YX_E_STRING_NOT_FOUND);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/e.txt", "foo", "x",
		      false, &n, &e),
	    YX_E_AMBIGUOUS_MATCH);
	cr_assert(strstr(e.msg, "3") != NULL, "count missing: %s", e.msg);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/e.txt", "bar", "BAR",
		      false, &n, &e),
	    YX_OK);
	cr_assert_eq(n, 1);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/e.txt", "foo", "F",
		      true, &n, &e),
	    YX_OK);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(s = fx_slurp(fx_path("workspace/e.txt"), NULL),
	    "F BAR F baz F\n");
	free(s);
	cr_assert_eq(stat(fx_path("workspace/e.txt"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
	cr_assert_eq(st.st_uid, FX_UID);
	assert_rc(yx_broker_edit(&fx.b, SK, "alpha/SKILL.md", "alpha", "x",
		      false, &n, &e),
	    YX_E_READ_ONLY);
	fx_put("workspace/b.bin", "a\0foo", 5);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/b.bin", "foo", "x",
		      false, &n, &e),
	    YX_E_BINARY_FILE);
	assert_rc(yx_broker_edit(&fx.b, UD, "workspace/none", "foo", "x",
		      false, &n, &e),
	    YX_E_FILE_NOT_FOUND);
	cr_assert_str_eq(fx_names("workspace"), "b.bin,e.txt");
}

struct body {
	size_t	left;
	size_t	chunk;
	int	fail_at;	/* call number that fails, 0 = never */
	int	calls;
};

static ssize_t
body_read(void *arg, char *buf, size_t len)
{
	struct body *bd = arg;

	if (++bd->calls == bd->fail_at)
		return -1;
	if (len > bd->chunk)
		len = bd->chunk;
	if (len > bd->left)
		len = bd->left;
	memset(buf, 'u', len);
	bd->left -= len;
	return (ssize_t)len;
}

Test(broker, upload_stream_and_limits)
{
	struct yx_broker_limits	 lim = { .upload_max = 100000 };
	struct body		 bd = { 100000, 777, 0, 0 };
	struct yx_errctx	 e;
	struct stat		 st;
	uint64_t		 size = 0;
	char			*s;

	fx_reopen(&lim);
	fx_mkdir("uploads");
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/a.bin", body_read, &bd,
		      true, &size, &e),
	    YX_OK);
	cr_assert_eq(size, 100000);
	cr_assert_eq(stat(fx_path("uploads/a.bin"), &st), 0);
	cr_assert_eq(st.st_size, 100000);
	cr_assert_eq(st.st_uid, FX_UID);
	/* one byte over: refused, the old file intact, nothing left behind */
	bd = (struct body){ 100001, 4096, 0, 0 };
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/a.bin", body_read, &bd,
		      true, &size, &e),
	    YX_E_PAYLOAD_TOO_LARGE);
	cr_assert_eq(stat(fx_path("uploads/a.bin"), &st), 0);
	cr_assert_eq(st.st_size, 100000);
	bd = (struct body){ 50, 4096, 0, 0 };
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/big/new.bin", body_read,
		      &bd, true, &size, &e),
	    YX_OK);
	bd = (struct body){ 100001, 4096, 0, 0 };
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/b.bin", body_read, &bd,
		      true, &size, &e),
	    YX_E_PAYLOAD_TOO_LARGE);
	bd = (struct body){ 5000, 1000, 3, 0 };
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/c.bin", body_read, &bd,
		      true, &size, &e),
	    YX_E_IO);
	cr_assert_str_eq(fx_names("uploads"), "a.bin,big");
	bd = (struct body){ 5, 1000, 0, 0 };
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/a.bin", body_read, &bd,
		      false, &size, &e),
	    YX_E_FILE_EXISTS);
	assert_rc(yx_broker_upload(&fx.b, UD, "uploads/big", body_read, &bd,
		      true, &size, &e),
	    YX_E_IS_DIRECTORY);
	cr_assert_not_null(s = fx_slurp(fx_path("uploads/big/new.bin"), NULL));
	cr_assert_eq(strlen(s), 50);
	free(s);
}

/* ---- listings ------------------------------------------------------------ */

static void
make_socket(const char *rel)
{
	close(tutil_unix_listen(fx_path(rel), 0));
}

Test(broker, ls_types_sorted_lstat)
{
	struct yx_broker_list	*l = NULL;
	struct yx_errctx	 e;

	fx_puts("workspace/b.txt", "12345");
	fx_mkdir("workspace/a");
	fx_symlink("/etc/passwd", "workspace/c");
	cr_assert_eq(mkfifo(fx_path("workspace/d"), 0644), 0);
	make_socket("workspace/e");
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace", &l, &e), YX_OK);
	cr_assert_str_eq(l->path, "/home/yuxi/user-data/workspace");
	cr_assert_eq(l->n, 5);
	cr_assert(!l->truncated);
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/user-data/workspace/a");
	cr_assert_str_eq(l->v[0].name, "a");
	cr_assert(l->v[0].is_dir);
	cr_assert_str_eq(yx_ftype_name(l->v[0].type), "dir");
	cr_assert_eq(l->v[1].size, 5);
	cr_assert_str_eq(yx_ftype_name(l->v[1].type), "file");
	cr_assert(l->v[1].modified_at > 1000000000);
	cr_assert_str_eq(yx_ftype_name(l->v[2].type), "symlink");
	cr_assert_eq(l->v[2].size, 0);
	cr_assert(!l->v[2].is_dir);
	cr_assert_str_eq(yx_ftype_name(l->v[3].type), "fifo");
	cr_assert_str_eq(yx_ftype_name(l->v[4].type), "socket");
	yx_broker_list_free(l);
	assert_rc(yx_broker_ls(&fx.b, UD, "", &l, &e), YX_OK);
	cr_assert_eq(l->n, 1);
	cr_assert_str_eq(l->path, "/home/yuxi/user-data");
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/user-data/workspace");
	yx_broker_list_free(l);
	l = NULL;
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/b.txt", &l, &e),
	    YX_E_NOT_DIRECTORY);
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/zz", &l, &e),
	    YX_E_FILE_NOT_FOUND);
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/d", &l, &e),
	    YX_E_NOT_DIRECTORY);
	cr_assert_null(l);
}

Test(broker, ls_truncated)
{
	struct yx_broker_limits	 lim = { .max_results = 2 };
	struct yx_broker_list	*l = NULL;

	fx_reopen(&lim);
	fx_puts("workspace/3", "");
	fx_puts("workspace/1", "");
	fx_puts("workspace/2", "");
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace", &l, NULL), YX_OK);
	cr_assert_eq(l->n, 2);
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_RESULTS);
	cr_assert_str_eq(yx_broker_cut_name(l->cut), "results");
	cr_assert_str_eq(l->v[0].name, "1");
	cr_assert_str_eq(l->v[1].name, "2");
	yx_broker_list_free(l);
}

Test(broker, skills_visible_filter)
{
	struct yx_broker_list	*l = NULL;
	struct yx_broker_grep	*g = NULL;
	struct yx_broker_text	*t = NULL;
	struct yx_broker_dl	 dl;

	assert_rc(yx_broker_ls(&fx.b, SK, "", &l, NULL), YX_OK);
	cr_assert_eq(l->n, 2);
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/skills/alpha");
	cr_assert_str_eq(l->v[1].path, "/home/yuxi/skills/beta");
	yx_broker_list_free(l);
	assert_rc(yx_broker_cat(&fx.b, SK, "alpha/SKILL.md", 0, 0, 0, &t, NULL),
	    YX_OK);
	cr_assert_str_eq(t->path, "/home/yuxi/skills/alpha/SKILL.md");
	yx_broker_text_free(t);
	t = NULL;
	assert_rc(yx_broker_cat(&fx.b, SK, "hidden/SKILL.md", 0, 0, 0, &t, NULL),
	    YX_E_FILE_NOT_FOUND);
	assert_rc(yx_broker_ls(&fx.b, SK, "hidden", &l, NULL),
	    YX_E_FILE_NOT_FOUND);
	assert_rc(yx_broker_download(&fx.b, SK, "hidden/SKILL.md", &dl, NULL),
	    YX_E_FILE_NOT_FOUND);
	assert_rc(yx_broker_glob(&fx.b, SK, "", "**/SKILL.md", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 2);
	cr_assert_str_eq(l->v[1].path, "/home/yuxi/skills/beta/SKILL.md");
	yx_broker_list_free(l);
	assert_rc(yx_broker_grep(&fx.b, SK, "", "needle", NULL, 0, &g, NULL),
	    YX_OK);
	cr_assert_eq(g->n, 2);
	cr_assert_str_eq(g->v[0].text, "needle in alpha");
	cr_assert_str_eq(g->v[1].text, "needle in beta");
	yx_broker_grep_free(g);
}

Test(broker, no_skills_root)
{
	struct yx_broker	 b;
	struct yx_broker_list	*l = NULL;
	char			 p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/no-such-skills", fx.top);
	assert_rc(yx_broker_init(&b, fx.ud, p, NULL, 0, FX_UID, FX_GID, NULL, 0,
		      NULL),
	    YX_OK);
	assert_rc(yx_broker_ls(&b, SK, "", &l, NULL), YX_OK);
	cr_assert_eq(l->n, 0);
	yx_broker_list_free(l);
	l = NULL;
	assert_rc(yx_broker_ls(&b, SK, "alpha", &l, NULL), YX_E_FILE_NOT_FOUND);
	yx_broker_fini(&b);
}

/* ---- glob ---------------------------------------------------------------- */

/* One pattern against one path under the glob rules (dot: glob's). */
static bool
gmatch(const char *pat, bool dot, const char *path)
{
	struct broker_glob	g;
	const char		*why;
	bool			m;

	cr_assert_eq(broker_glob_compile(pat, dot, &g, &why), YX_OK, "%s: %s",
	    pat, why);
	m = broker_glob_match(&g, path);
	broker_glob_free(&g);
	return m;
}

Test(broker, glob_match_table)
{
	static const struct {
		const char	*pat;
		bool		 dot;	/* glob (true) or grep's name filter */
		const char	*path;
		bool		 match;
	} t[] = {
		{ "*.py", true, "a.py", true },
		{ "*.py", true, "d/a.py", false },
		/* glob: wildcards match dotfiles (deepagents' dot:true) */
		{ "*.py", true, ".a.py", true },
		{ "*", true, ".env", true },
		{ "**/*.py", true, ".git/a.py", true },
		/* grep's name filter: a leading dot only explicitly */
		{ "*.py", false, ".a.py", false },
		{ ".*.py", false, ".a.py", true },
		{ "**/*.py", true, "a.py", true },
		{ "**/*.py", true, "d/e/a.py", true },
		{ "d/**", true, "d/e/f", true },
		{ "d/**/f", true, "d/f", true },
		{ "d/**/f", true, "d/x/y/f", true },
		{ "d/**/f", true, "e/x/f", false },
		{ "?.txt", true, "a.txt", true },
		{ "?.txt", true, "ab.txt", false },
		{ "[ab].c", true, "b.c", true },
		{ "[!ab].c", true, "b.c", false },
		{ "**/**/x", true, "a/b/x", true },
		{ "**", true, "a/b", true },
		{ "a/*", true, "a/b/c", false },
		/* braces, nested; literal groups */
		{ "*.{py,md}", true, "x.md", true },
		{ "*.{py,md}", true, "x.txt", false },
		{ "{src,lib{,s}}/a", true, "libs/a", true },
		{ "{src,lib{,s}}/a", true, "lib/a", true },
		{ "{a}.txt", true, "{a}.txt", true },
		{ "{a}.txt", true, "a.txt", false },
		{ "x{y", true, "x{y", true },
		/* a leading '/', empty and "." components are dropped */
		{ "/w/*.txt", true, "w/a.txt", true },
		{ "./w//*.txt", true, "w/a.txt", true },
		{ "a\\*b", true, "a*b", true },
		{ "a\\*b", true, "axb", false },
	};
	static const char *const refused[] = {
		"",
		"/",
		"a/../b",
		"..",
		"!(a)",
		"!a",
		"@(a|b)",
		"+(a)",
		"*(a)",
		"?(a)",
		"{1..3}",
		"{a..z}",
	};
	struct broker_glob	 g;
	const char		*why;
	char			 big[4000];
	size_t			 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_assert_eq(gmatch(t[i].pat, t[i].dot, t[i].path), t[i].match,
		    "%s vs %s", t[i].pat, t[i].path);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(broker_glob_compile(refused[i], true, &g, &why),
		    YX_E_INVALID_PATH, "%s accepted", refused[i]);
		broker_glob_free(&g);
	}
	/* 2^9 = 512 alternatives: refused, with a reason */
	snprintf(big, sizeof(big), "%s", "");
	for (i = 0; i < 9; i++)
		strcat(big, "{a,b}");
	cr_assert_eq(broker_glob_compile(big, true, &g, &why), YX_E_INVALID_PATH);
	cr_assert(strstr(why, "alternatives") != NULL, "%s", why);
	broker_glob_free(&g);
}

Test(broker, glob_walk)
{
	struct yx_broker_limits	 lim = { .max_results = 3 };
	struct yx_broker_list	*l = NULL;

	fx_mkdir("workspace/src");
	fx_mkdir("workspace/src/sub");
	fx_puts("workspace/top.py", "");
	fx_puts("workspace/src/a.py", "");
	fx_puts("workspace/src/b.c", "");
	fx_puts("workspace/src/sub/c.py", "");
	fx_puts("workspace/src/sub/.hidden.py", "");
	/* dotfiles match (as deepagents' own backends) */
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**/*.py", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 4);
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/user-data/workspace/src/a.py");
	cr_assert_str_eq(l->v[1].path,
	    "/home/yuxi/user-data/workspace/src/sub/.hidden.py");
	cr_assert_str_eq(l->v[2].path,
	    "/home/yuxi/user-data/workspace/src/sub/c.py");
	cr_assert_str_eq(l->v[3].path, "/home/yuxi/user-data/workspace/top.py");
	cr_assert(!l->truncated);
	yx_broker_list_free(l);
	/* braces */
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**/*.{c,py}", &l,
		      NULL),
	    YX_OK);
	cr_assert_eq(l->n, 5);
	yx_broker_list_free(l);
	/* the namespace root: both roots, paths matched from "home/..." */
	assert_rc(yx_broker_glob(&fx.b, YX_ROOT_TOP, "", "**/sub/*.py", &l,
		      NULL),
	    YX_OK);
	cr_assert_eq(l->n, 2);
	cr_assert_str_eq(l->path, "/");
	yx_broker_list_free(l);
	assert_rc(yx_broker_glob(&fx.b, YX_ROOT_TOP, "", "home/yuxi/*", &l,
		      NULL),
	    YX_OK);
	cr_assert_eq(l->n, 2, "roots: %zu", l->n);
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/skills");
	cr_assert_str_eq(l->v[1].path, "/home/yuxi/user-data");
	cr_assert(l->v[1].is_dir);
	yx_broker_list_free(l);
	assert_rc(yx_broker_glob(&fx.b, YX_ROOT_TOP, "",
		      "/home/yuxi/user-data/workspace/*.py", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 1);
	cr_assert_str_eq(l->v[0].path, "/home/yuxi/user-data/workspace/top.py");
	yx_broker_list_free(l);
	/* nothing sits directly under "/" */
	assert_rc(yx_broker_glob(&fx.b, YX_ROOT_TOP, "", "*", &l, NULL), YX_OK);
	cr_assert_eq(l->n, 0);
	yx_broker_list_free(l);
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "*.py", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 1);
	yx_broker_list_free(l);
	assert_rc(yx_broker_glob(&fx.b, UD, "", "workspace/src/*", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 3);
	cr_assert(l->v[2].is_dir);
	yx_broker_list_free(l);
	l = NULL;
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "../*", &l, NULL),
	    YX_E_INVALID_PATH);
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace/top.py", "*", &l, NULL),
	    YX_E_NOT_DIRECTORY);
	fx_reopen(&lim);
	fx_puts("workspace/src/d.py", "");
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**/*.py", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 3);
	cr_assert(l->truncated);
	yx_broker_list_free(l);
}

Test(broker, glob_depth_and_visit_bounds)
{
	struct yx_broker_limits	 lim = { .max_depth = 3, .max_visit = 1000 };
	struct yx_broker_list	*l = NULL;
	char			 rel[256];
	int			 i;

	fx_reopen(&lim);
	snprintf(rel, sizeof(rel), "workspace");
	for (i = 0; i < 5; i++) {
		strcat(rel, "/d");
		fx_mkdir(rel);
	}
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**", &l, NULL),
	    YX_OK);
	cr_assert_eq(l->n, 3);		/* d, d/d, d/d/d */
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_DEPTH);
	yx_broker_list_free(l);
	lim.max_depth = 0;
	lim.max_visit = 10;
	fx_reopen(&lim);
	for (i = 0; i < 20; i++) {
		snprintf(rel, sizeof(rel), "workspace/f%02d", i);
		fx_puts(rel, "");
	}
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "f*", &l, NULL),
	    YX_OK);
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_ENTRIES);
	cr_assert(l->n <= 10);
	yx_broker_list_free(l);
}

/* ---- grep ---------------------------------------------------------------- */

Test(broker, grep_semantics)
{
	struct yx_broker_grep	*g = NULL;

	fx_mkdir("workspace/s");
	fx_puts("workspace/s/a.py", "x = 1\nprint(a.c)\nabc\n");
	fx_puts("workspace/s/b.txt", "a.c here\n");
	fx_put("workspace/s/bin.py", "a.c\0", 4);
	fx_puts("workspace/top.py", "no\nno\na.c at 3\r\n");
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace", "a.c", NULL, 0, &g,
		      NULL),
	    YX_OK);
	cr_assert_eq(g->n, 3, "literal, binary skipped: %zu", g->n);
	cr_assert_str_eq(g->v[0].path, "/home/yuxi/user-data/workspace/s/a.py");
	cr_assert_eq(g->v[0].line, 2);
	cr_assert_str_eq(g->v[0].text, "print(a.c)");
	cr_assert_str_eq(g->v[1].path, "/home/yuxi/user-data/workspace/s/b.txt");
	cr_assert_eq(g->v[2].line, 3);
	cr_assert_str_eq(g->v[2].text, "a.c at 3");
	cr_assert(!g->truncated);
	cr_assert_eq(g->cut, YX_CUT_NONE);
	cr_assert_null(yx_broker_cut_name(g->cut));
	yx_broker_grep_free(g);
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace", "a.c", "*.py", 0, &g,
		      NULL),
	    YX_OK);
	cr_assert_eq(g->n, 2);
	yx_broker_grep_free(g);
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace", "a.c", "s/*.txt", 0,
		      &g, NULL),
	    YX_OK);
	cr_assert_eq(g->n, 1);
	yx_broker_grep_free(g);
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace", "a.c", NULL, 2, &g,
		      NULL),
	    YX_OK);
	cr_assert_eq(g->n, 2);
	cr_assert(g->truncated);
	cr_assert_eq(g->cut, YX_CUT_RESULTS);
	yx_broker_grep_free(g);
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace/top.py", "no", NULL, 0,
		      &g, NULL),
	    YX_OK);
	cr_assert_eq(g->n, 2);
	cr_assert_str_eq(g->v[1].path, "/home/yuxi/user-data/workspace/top.py");
	yx_broker_grep_free(g);
	g = NULL;
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace", "", NULL, 0, &g, NULL),
	    YX_E_BAD_REQUEST);
	assert_rc(yx_broker_grep(&fx.b, UD, "workspace/none", "x", NULL, 0, &g,
		      NULL),
	    YX_E_FILE_NOT_FOUND);
	cr_assert_null(g);
}

/* ---- layout and spill files -------------------------------------------- */

Test(broker, ensure_layout)
{
	static const char *const dirs[] = {
		"workspace",
		"outputs",
		"uploads",
		"uploads/attachments",
		"large_tool_results",
	};
	struct stat	st;
	size_t		i;
	unsigned	rep;

	assert_rc(yx_broker_ensure_layout(&fx.b, NULL, NULL), YX_OK);
	assert_rc(yx_broker_ensure_layout(&fx.b, NULL, NULL), YX_OK);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		cr_assert_eq(lstat(fx_path(dirs[i]), &st), 0, "%s", dirs[i]);
		cr_assert(S_ISDIR(st.st_mode));
		if (i > 0)	/* workspace pre-existed (root-owned) */
			cr_assert_eq(st.st_uid, FX_UID, "%s", dirs[i]);
	}
	cr_assert_str_eq(fx_names(""),
	    "large_tool_results,outputs,uploads,workspace");
	/* a folder swapped for a symlink (or a file) by the sandbox is moved
	 * aside, never followed, and made again; the reply says which */
	fx_rmrf(fx_path("outputs"));
	fx_symlink(fx.out, "outputs");
	fx_rmrf(fx_path("uploads/attachments"));
	fx_puts("uploads/attachments", "a file in the way");
	assert_rc(yx_broker_ensure_layout(&fx.b, &rep, NULL), YX_OK);
	cr_assert_eq(rep, (1u << 1) | (1u << 3), "repaired 0x%x", rep);
	cr_assert_eq(lstat(fx_path("outputs"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode) && st.st_uid == FX_UID);
	cr_assert_eq(lstat(fx_path("uploads/attachments"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	/* the link itself is kept aside, pointing where it did; its target
	 * outside is untouched and holds nothing new */
	cr_assert(strstr(fx_names(""), "outputs.moved-") != NULL, "%s",
	    fx_names(""));
	cr_assert(strstr(fx_names("uploads"), "attachments.moved-") != NULL);
	cr_assert_eq(lstat(fx.secret, &st), 0);
	cr_assert_eq(st.st_uid, 0, "the link's target was chowned");
	assert_rc(yx_broker_ensure_layout(&fx.b, &rep, NULL), YX_OK);
	cr_assert_eq(rep, 0);
}

Test(broker, spill_open_fresh_inode)
{
	struct stat	 st;
	char		*s;
	int		 fd = -1;

	assert_rc(yx_broker_spill_open(&fx.b, "../x", &fd, NULL),
	    YX_E_INVALID_PATH);
	assert_rc(yx_broker_spill_open(&fx.b, "a/b", &fd, NULL),
	    YX_E_INVALID_PATH);
	cr_assert_eq(fd, -1);
	assert_rc(yx_broker_ensure_layout(&fx.b, NULL, NULL), YX_OK);
	/* a planted hardlink at the name is replaced, not truncated */
	fx_link_secret("large_tool_results/out.txt");
	assert_rc(yx_broker_spill_open(&fx.b, "out.txt", &fd, NULL), YX_OK);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "spilled", 7), 7);
	close(fd);
	cr_assert_str_eq(s = fx_slurp(fx_path("large_tool_results/out.txt"),
			     NULL),
	    "spilled");
	free(s);
	cr_assert_str_eq(s = fx_slurp(fx.secret, NULL), FX_SECRET "\n");
	free(s);
	cr_assert_eq(stat(fx_path("large_tool_results/out.txt"), &st), 0);
	cr_assert_eq(st.st_uid, FX_UID);
	cr_assert_str_eq(fx_names("large_tool_results"), "out.txt");
}
