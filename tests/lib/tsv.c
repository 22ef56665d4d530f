/* SPDX-License-Identifier: MIT */
/*
 * tsv.c - golden table reader; see tsv.h.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tsv.h"

#define TSV_DECODED_MAX	(1024 * 1024)

FILE *
tsv_open(const char *rel)
{
	const char	*top;
	char		 path[4096];

	if ((top = getenv("top_srcdir")) == NULL)
		top = ".";
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", top, rel) >=
	    sizeof(path))
		return NULL;
	return fopen(path, "r");
}

void
tsv_row_init(struct tsv_row *row)
{
	memset(row, 0, sizeof(*row));
}

void
tsv_row_fini(struct tsv_row *row)
{
	int	 i;

	for (i = 0; i < TSV_FIELDS; i++) {
		free(row->field[i]);
		row->field[i] = NULL;
		row->flen[i] = 0;
	}
	row->nfield = 0;
}

static int
tsv_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Append n bytes to out (capacity TSV_DECODED_MAX); 0 or -1 when full. */
static int
tsv_put(char *out, size_t *o, const char *p, size_t n)
{
	if (n >= TSV_DECODED_MAX - *o)
		return -1;
	memcpy(out + *o, p, n);
	*o += n;
	return 0;
}

/* Decode the escape at s[*i] (a backslash); 0 or -1 when malformed. */
static int
tsv_escape(const char *s, size_t n, size_t *i, char *out, size_t *o)
{
	const char	*star, *end;
	char		 c;
	unsigned long	 reps;
	int		 hi, lo;

	if (*i + 1 >= n)
		return -1;
	c = s[*i + 1];
	*i += 2;
	switch (c) {
	case '\\': return tsv_put(out, o, "\\", 1);
	case 't': return tsv_put(out, o, "\t", 1);
	case 'n': return tsv_put(out, o, "\n", 1);
	case 'r': return tsv_put(out, o, "\r", 1);
	case 'x':
		if (*i + 2 > n || (hi = tsv_hex(s[*i])) < 0 ||
		    (lo = tsv_hex(s[*i + 1])) < 0)
			return -1;
		c = (char)(hi * 16 + lo);
		*i += 2;
		return tsv_put(out, o, &c, 1);
	case '{':
		reps = strtoul(s + *i, (char **)&star, 10);
		end = memchr(s + *i, '}', n - *i);
		if (end == NULL || *star != '*' || star > end)
			return -1;
		for (; reps > 0; reps--) {
			if (tsv_put(out, o, star + 1, end - star - 1) < 0)
				return -1;
		}
		*i = end - s + 1;
		return 0;
	default:
		return -1;
	}
}

char *
tsv_decode(const char *s, size_t n, size_t *lenp)
{
	char	*out, *small;
	size_t	 i = 0, o = 0;

	if ((out = malloc(TSV_DECODED_MAX)) == NULL)
		return NULL;
	while (i < n) {
		if (s[i] == '\\') {
			if (tsv_escape(s, n, &i, out, &o) < 0)
				goto fail;
		} else if (tsv_put(out, &o, s + i++, 1) < 0)
			goto fail;
	}
	out[o] = '\0';
	if ((small = realloc(out, o + 1)) != NULL)
		out = small;
	*lenp = o;
	return out;
fail:
	free(out);
	return NULL;
}

int
tsv_next(FILE *fp, struct tsv_row *row)
{
	char	*p, *tab;
	size_t	 n;

	tsv_row_fini(row);
	for (;;) {
		if (fgets(row->raw, sizeof(row->raw), fp) == NULL)
			return 0;
		row->lineno++;
		n = strlen(row->raw);
		if (n > 0 && row->raw[n - 1] != '\n' && !feof(fp))
			return -1;	/* line too long */
		while (n > 0 && (row->raw[n - 1] == '\n' || row->raw[n - 1] == '\r'))
			row->raw[--n] = '\0';
		if (n > 0 && row->raw[0] != '#')
			break;
	}
	for (p = row->raw; row->nfield < TSV_FIELDS; p = tab + 1) {
		tab = strchr(p, '\t');
		n = tab != NULL ? (size_t)(tab - p) : strlen(p);
		row->field[row->nfield] = tsv_decode(p, n,
		    &row->flen[row->nfield]);
		if (row->field[row->nfield] == NULL)
			return -1;
		row->nfield++;
		if (tab == NULL)
			break;
	}
	return 1;
}

size_t
tsv_replay(const char *rel, void (*check)(const struct tsv_row *, size_t *))
{
	struct tsv_row	*row;
	FILE		*fp;
	size_t		 nrows = 0;
	int		 r;

	cr_assert_not_null(fp = tsv_open(rel), "cannot open %s (top_srcdir?)",
	    rel);
	cr_assert_not_null(row = malloc(sizeof(*row)));
	tsv_row_init(row);
	while ((r = tsv_next(fp, row)) == 1)
		check(row, &nrows);
	cr_expect(r == 0, "line %zu: malformed: %s", row->lineno, row->raw);
	tsv_row_fini(row);
	free(row);
	fclose(fp);
	return nrows;
}
