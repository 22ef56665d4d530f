/* SPDX-License-Identifier: MIT */
/*
 * corpus.c - replay a fuzzer's seed corpus through its property check
 * (corpus.h).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "corpus.h"

#define CORPUS_FILE_MAX	(1024 * 1024)

/* Read a whole file into a fresh heap buffer; NULL on failure. */
static uint8_t *
read_file(const char *path, size_t *lenp)
{
	uint8_t	*p;
	FILE	*fp;

	if ((fp = fopen(path, "rb")) == NULL)
		return NULL;
	if ((p = malloc(CORPUS_FILE_MAX)) != NULL) {
		*lenp = fread(p, 1, CORPUS_FILE_MAX, fp);
		if (ferror(fp)) {
			free(p);
			p = NULL;
		}
	}
	fclose(fp);
	return p;
}

size_t
corpus_replay(const char *name, corpus_check_fn check)
{
	char		 dir[4096], path[8192];
	const char	*top, *why;
	struct dirent	*de;
	uint8_t		*data;
	size_t		 n, count = 0;
	DIR		*d;

	if ((top = getenv("top_srcdir")) == NULL)
		top = ".";
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top, name);
	cr_assert_not_null(d = opendir(dir), "cannot open %s", dir);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_not_null(data = read_file(path, &n), "read %s", path);
		why = check(data, n);
		cr_expect(why == NULL, "%s/%s: %s", name, de->d_name, why);
		free(data);
		count++;
	}
	closedir(d);
	return count;
}
