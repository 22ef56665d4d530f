/*
 * test_http_corpus.c - replay the HTTP-layer fuzzers' corpora
 * (tests/fuzz/corpus/query, json, fcgi: seeds and every crash turned
 * regression case) through the properties the harnesses assert
 * (tests/fuzz/http_props.c), so every `make check` covers them even where
 * libFuzzer is not built. Also checks, with hand-made inputs, that the
 * properties can fail (a check that cannot fail proves nothing).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../fuzz/http_props.h"

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

/* Check every file of tests/fuzz/corpus/<sub>; returns how many. */
static size_t
replay(const char *sub, const char *(*check)(const uint8_t *, size_t))
{
	char		 dir[4096], path[8192];
	const char	*top, *why;
	struct dirent	*de;
	uint8_t		*data;
	size_t		 n, count = 0;
	DIR		*d;

	if ((top = getenv("top_srcdir")) == NULL)
		top = ".";
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top, sub);
	cr_assert_not_null(d = opendir(dir), "cannot open %s", dir);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_not_null(data = read_file(path, &n), "read %s", path);
		why = check(data, n);
		cr_expect(why == NULL, "%s/%s: %s", sub, de->d_name, why);
		free(data);
		count++;
	}
	closedir(d);
	return count;
}

Test(http_corpus, query)
{
	cr_expect(replay("query", query_props_check) >= 8);
}

Test(http_corpus, json)
{
	cr_expect(replay("json", json_props_check) >= 8);
}

Test(http_corpus, fcgi)
{
	cr_expect(replay("fcgi", fcgi_props_check) >= 8);
}

/* The identity property is live: HTTP_X_YUXI_USER never becomes the user. */
Test(http_corpus, spoofed_header_param_ignored)
{
	static const char in[] = "GET\0/api/threads\0\0\0\0\0mallory\0admin";

	cr_expect(fcgi_props_check((const uint8_t *)in, sizeof(in) - 1) == NULL);
}
