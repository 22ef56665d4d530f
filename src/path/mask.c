/* SPDX-License-Identifier: MIT */
/*
 * mask.c - output masking (docs/design.md §4): command output may name the host
 * paths of a thread's user-data and of the skills; they are replaced by their
 * canonical names so no host layout leaks to the agent. This reduces leaks,
 * it is no security boundary (the sandbox can print anything it likes).
 *
 * Matching is leftmost, then longest: scanning left to right, at each offset
 * the longest rule `from` that matches there is replaced and the scan resumes
 * after it, so occurrences never overlap and a rule that is a prefix of
 * another never splits the longer match. Rules with an empty or NULL `from`
 * are ignored; a NULL `to` means "". Output is built in two passes (size,
 * then copy) so the single allocation is exact and checked.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

/*
 * Index of the longest rule matching in[i..len), or nrules when none does.
 */
static size_t
mask_match(const char *in, size_t len, size_t i,
    const struct yx_mask_rule *rules, size_t nrules)
{
	size_t	 r, n, best = nrules, bestlen = 0;

	for (r = 0; r < nrules; r++) {
		if (rules[r].from == NULL || rules[r].from[0] != in[i])
			continue;
		n = strlen(rules[r].from);
		if (n > bestlen && n <= len - i &&
		    memcmp(in + i, rules[r].from, n) == 0) {
			best = r;
			bestlen = n;
		}
	}
	return best;
}

/*
 * Offset of the next byte at or after i that starts some rule, or len.
 * Host roots all begin with '/', so this is usually one memchr.
 */
static size_t
mask_next(const char *in, size_t len, size_t i, const struct yx_mask_rule *rules,
    size_t nrules)
{
	const char	*p;
	size_t		 r;
	int		 c = -1;

	for (r = 0; r < nrules; r++) {
		if (rules[r].from == NULL || rules[r].from[0] == '\0')
			continue;
		if (c == -1)
			c = (unsigned char)rules[r].from[0];
		else if (c != (unsigned char)rules[r].from[0])
			break;		/* several first bytes: test each offset */
	}
	if (c == -1)
		return len;
	if (r == nrules) {
		p = memchr(in + i, c, len - i);
		return p != NULL ? (size_t)(p - in) : len;
	}
	for (; i < len; i++)
		for (r = 0; r < nrules; r++)
			if (rules[r].from != NULL && rules[r].from[0] == in[i])
				return i;
	return len;
}

/*
 * One masking pass. With out == NULL only count; else write. Returns the
 * output length, or SIZE_MAX when it would overflow size_t. *hits (when
 * not NULL) counts the replacements.
 */
static size_t
mask_pass(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules, char *out, size_t *hits)
{
	size_t	 i = 0, o = 0, j, r, tlen;
	const char *to;

	while (i < len) {
		/* copy up to the next possible match in one piece */
		j = mask_next(in, len, i, rules, nrules);
		if (j - i > SIZE_MAX - 1 - o)
			return SIZE_MAX;
		if (out != NULL)
			memcpy(out + o, in + i, j - i);
		o += j - i;
		if ((i = j) == len)
			break;
		r = mask_match(in, len, i, rules, nrules);
		if (r == nrules) {
			if (out != NULL)
				out[o] = in[i];
			if (o == SIZE_MAX - 1)
				return SIZE_MAX;
			o++;
			i++;
			continue;
		}
		if (hits != NULL)
			(*hits)++;
		to = rules[r].to != NULL ? rules[r].to : "";
		tlen = strlen(to);
		if (tlen >= SIZE_MAX - 1 - o)
			return SIZE_MAX;
		if (out != NULL)
			memcpy(out + o, to, tlen);
		o += tlen;
		i += strlen(rules[r].from);
	}
	return o;
}

/*
 * Mask in (len bytes; in may be NULL when len is 0). Returns YX_OK with
 * *outp a fresh NUL-terminated heap string (caller frees) of *outlenp bytes,
 * or YX_E_NOMEM (size overflow or allocation failure; *outp NULL, *outlenp 0).
 */
int
yx_mask_output(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules, char **outp, size_t *outlenp)
{
	char	*out = NULL;
	size_t	 n;
	int	 rc = YX_E_NOMEM;

	if (rules == NULL)
		nrules = 0;
	if ((n = mask_pass(in, len, rules, nrules, NULL, NULL)) == SIZE_MAX)
		goto fail;
	if ((out = malloc(n + 1)) == NULL)
		goto fail;
	mask_pass(in, len, rules, nrules, out, NULL);
	out[n] = '\0';
	*outp = out;
	*outlenp = n;
	return YX_OK;
fail:
	*outp = NULL;
	*outlenp = 0;
	return rc;
}

size_t
yx_mask_hits(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules)
{
	size_t hits = 0;

	if (rules == NULL || in == NULL)
		return 0;
	(void)mask_pass(in, len, rules, nrules, NULL, &hits);
	return hits;
}
