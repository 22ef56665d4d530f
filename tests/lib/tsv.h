/* SPDX-License-Identifier: MIT */
/*
 * tsv.h - golden table reader (tests/path/canon.tsv, cmd.tsv). A table is UTF-8 text,
 * one case a line, fields separated by TAB; blank lines and lines starting
 * with '#' are skipped. Fields are decoded: \\ \t \n \r, \xHH (any byte,
 * NUL included) and \{N*text} (text repeated N times, for over-long cases).
 */
#ifndef TESTS_LIB_TSV_H
#define TESTS_LIB_TSV_H

#include <stddef.h>
#include <stdio.h>

#define TSV_FIELDS	4

struct tsv_row {
	size_t	 lineno;
	char	 raw[8192];		/* the line as written, for messages */
	int	 nfield;
	char	*field[TSV_FIELDS];	/* decoded, NUL-terminated, heap */
	size_t	 flen[TSV_FIELDS];	/* decoded length (NULs counted) */
};

/* Open $top_srcdir/<rel> (top_srcdir defaults to "."); NULL on failure. */
FILE	*tsv_open(const char *rel);
/*
 * Read the next case into row (free the previous with tsv_row_fini).
 * Returns 1 for a row, 0 at end of file, -1 for a malformed line (row->raw
 * and row->lineno say which).
 */
int	 tsv_next(FILE *fp, struct tsv_row *row);
void	 tsv_row_init(struct tsv_row *row);
void	 tsv_row_fini(struct tsv_row *row);
/* Decode one escaped field (n bytes) into a fresh heap string; NULL if bad. */
char	*tsv_decode(const char *s, size_t n, size_t *lenp);
/*
 * Pass every case of table rel to check(row, &n), which counts in n the
 * rows it checked, in a Criterion test: a table that cannot be opened or a
 * malformed line fails it. Returns n.
 */
size_t	 tsv_replay(const char *rel,
    void (*check)(const struct tsv_row *row, size_t *n));

#endif
