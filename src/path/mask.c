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
 *
 * A text that arrives in pieces is masked the same way (yx_mask_prefix):
 * the scan stops at the first position where a rule's `from` could still
 * match once more bytes come (what is left there is a proper prefix of
 * some `from`). Every position before it is decided by the bytes already
 * there - a longer match at an earlier position would have made that
 * position the stop - so the pieces together give exactly the replacements
 * of the whole text, and what is held back is shorter than the longest
 * `from`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/buf.h"
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

/* Is in[i..len) a proper prefix of some rule's `from` (more input could
 * make it match)? */
static bool
mask_partial(const char *in, size_t len, size_t i,
    const struct yx_mask_rule *rules, size_t nrules)
{
	size_t r;

	for (r = 0; r < nrules; r++)
		if (rules[r].from != NULL && strlen(rules[r].from) > len - i &&
		    memcmp(in + i, rules[r].from, len - i) == 0)
			return true;
	return false;
}

int
yx_mask_prefix(const char *in, size_t len, const struct yx_mask_rule *rules,
    size_t nrules, bool final, struct yx_buf *out, size_t *used)
{
	const char	*to;
	size_t		 i = 0, j, r;
	int		 rc = YX_OK;

	if (rules == NULL)
		nrules = 0;
	while (i < len && rc == YX_OK) {
		j = mask_next(in, len, i, rules, nrules);
		if ((rc = yx_buf_append(out, in + i, j - i)) != YX_OK ||
		    (i = j) == len)
			break;
		if (!final && mask_partial(in, len, i, rules, nrules))
			break;
		if ((r = mask_match(in, len, i, rules, nrules)) == nrules) {
			rc = yx_buf_append(out, in + i++, 1);
			continue;
		}
		to = rules[r].to != NULL ? rules[r].to : "";
		rc = yx_buf_append(out, to, strlen(to));
		i += strlen(rules[r].from);
	}
	*used = i;
	return rc;
}

void
yx_mask_stream_init(struct yx_mask_stream *ms, const struct yx_mask_rule *rules,
    size_t nrules)
{
	ms->rules = rules;
	ms->nrules = nrules;
	yx_buf_init(&ms->carry, SIZE_MAX);
}

void
yx_mask_stream_fini(struct yx_mask_stream *ms)
{
	yx_buf_fini(&ms->carry);
}

int
yx_mask_stream_feed(struct yx_mask_stream *ms, const char *in, size_t len,
    bool final, struct yx_buf *out)
{
	size_t	used;
	int	rc;

	if (ms->carry.len == 0) {	/* the usual case: no copy */
		if ((rc = yx_mask_prefix(in, len, ms->rules, ms->nrules, final,
			 out, &used)) != YX_OK)
			return rc;
		yx_buf_reset(&ms->carry);
		return yx_buf_append(&ms->carry, in + used, len - used);
	}
	if ((rc = yx_buf_append(&ms->carry, in, len)) != YX_OK ||
	    (rc = yx_mask_prefix(ms->carry.data, ms->carry.len, ms->rules,
		 ms->nrules, final, out, &used)) != YX_OK)
		return rc;
	memmove(ms->carry.data, ms->carry.data + used, ms->carry.len - used);
	ms->carry.len -= used;
	return YX_OK;
}
