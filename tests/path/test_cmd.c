/* SPDX-License-Identifier: MIT */
/*
 * test_cmd.c - golden table for yx_cmd_check (tests/path/cmd.tsv: command,
 * OK or PATH_NOT_ALLOWED, the refused token reported), plus the off policy
 * and the reporting buffer contract.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

#include "../lib/tsv.h"

#define BADLEN	64

static void
check_row(const struct tsv_row *row, size_t *nrows)
{
	char	 bad[BADLEN];
	int	 rc, want;

	cr_assert(row->nfield >= 2, "line %zu: %s: need 2 fields", row->lineno,
	    row->raw);
	(*nrows)++;
	if (strcmp(row->field[1], "OK") == 0)
		want = YX_OK;
	else if (strcmp(row->field[1], "PATH_NOT_ALLOWED") == 0)
		want = YX_E_PATH_NOT_ALLOWED;
	else
		cr_assert_fail("line %zu: bad expectation %s", row->lineno,
		    row->field[1]);
	cr_assert(strlen(row->field[0]) == row->flen[0],
	    "line %zu: commands cannot hold NUL", row->lineno);
	memset(bad, 'Z', sizeof(bad));
	rc = yx_cmd_check(row->field[0], YX_CMD_POLICY_STRICT, bad, sizeof(bad));
	cr_expect(rc == want, "line %zu: %s: got %s (token \"%s\"), want %s",
	    row->lineno, row->raw, rc == YX_OK ? "OK" : "PATH_NOT_ALLOWED",
	    bad, row->field[1]);
	if (want == YX_OK)
		cr_expect(bad[0] == '\0', "line %zu: token set on OK", row->lineno);
	else if (rc == want) {
		cr_expect(row->nfield >= 3, "line %zu: %s: no expected token",
		    row->lineno, row->raw);
		if (row->nfield >= 3)
			cr_expect(strcmp(bad, row->field[2]) == 0,
			    "line %zu: %s: token \"%s\", want \"%s\"",
			    row->lineno, row->raw, bad, row->field[2]);
	}
	cr_expect(yx_cmd_check(row->field[0], YX_CMD_POLICY_OFF, bad,
		      sizeof(bad)) == YX_OK,
	    "line %zu: off policy refused", row->lineno);
	cr_expect(yx_cmd_check(row->field[0], YX_CMD_POLICY_STRICT, NULL, 0) ==
		want,
	    "line %zu: result depends on bad buffer", row->lineno);
}

Test(cmd, golden_table)
{
	size_t	 nrows = tsv_replay("tests/path/cmd.tsv", check_row);

	cr_expect(nrows >= 50, "only %zu rows", nrows);
}

Test(cmd, report_buffer)
{
	char	 bad[8];

	cr_expect_eq(yx_cmd_check("cat /etc/passwd", YX_CMD_POLICY_STRICT, bad,
			 sizeof(bad)),
	    YX_E_PATH_NOT_ALLOWED);
	cr_expect_str_eq(bad, "/etc/pa", "truncated and terminated");
	cr_expect_eq(yx_cmd_check("cat /etc/passwd", YX_CMD_POLICY_STRICT, bad,
			 1),
	    YX_E_PATH_NOT_ALLOWED);
	cr_expect_str_eq(bad, "");
	cr_expect_eq(yx_cmd_check(NULL, YX_CMD_POLICY_STRICT, bad, sizeof(bad)),
	    YX_E_PATH_NOT_ALLOWED);
	cr_expect_eq(yx_cmd_check(NULL, YX_CMD_POLICY_OFF, NULL, 0), YX_OK);
	cr_expect_eq(yx_cmd_check("cat /etc/passwd", YX_CMD_POLICY_OFF, bad,
			 sizeof(bad)),
	    YX_OK);
	cr_expect_str_eq(bad, "");
}
