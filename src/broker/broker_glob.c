/* SPDX-License-Identifier: MIT */
/*
 * broker_glob.c - the glob language of glob and grep (docs/api.md "glob"):
 * patterns compiled once (brace alternatives expanded, components
 * normalised, unsupported syntax refused with a reason) and matched against
 * slash-separated relative paths, component by component.
 *
 * The rules follow what deepagents' own backends do (fast-glob with
 * dot:true): `*`, `?`, `[...]`/`[!...]` (fnmatch(3), `\x` a literal x) match
 * within one component; a component `**` matches zero or more directories;
 * `{a,b}` alternatives, nested, at most BROKER_GLOB_ALTS; a group without a
 * top-level comma, or an unclosed `{`, is literal. With `dot` the wildcards
 * match a leading '.' too (glob, grep filters with '/'); without it a
 * leading '.' must be matched explicitly (grep's name filter, as
 * micromatch). Refused, never a silent empty answer: extglob groups
 * `@( !( +( *( ?(`, a leading `!` (negation), brace ranges `{1..3}`, `..`.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/broker.h"
#include "broker/broker_int.h"

#define BROKER_PATH_COMPS	512	/* components of a matched path */

void
broker_glob_free(struct broker_glob *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->alt[i]);
	free(g->alt);
	memset(g, 0, sizeof(*g));
}

/* The '}' closing the group opened at s[open], or 0; *comma: a comma at
 * its top level. Backslash escapes are skipped. */
static size_t
glob_group_end(const char *s, size_t open, bool *comma)
{
	size_t	i, depth = 0;

	*comma = false;
	for (i = open; s[i] != '\0'; i++) {
		if (s[i] == '\\' && s[i + 1] != '\0')
			i++;
		else if (s[i] == '{')
			depth++;
		else if (s[i] == ',' && depth == 1)
			*comma = true;
		else if (s[i] == '}' && --depth == 0)
			return i;
	}
	return 0;
}

/* Add a copy of s to g. YX_OK, YX_E_NOMEM, YX_E_INVALID_PATH (too many). */
static int
glob_add(struct broker_glob *g, const char *s)
{
	char **nv;

	if (g->n >= BROKER_GLOB_ALTS)
		return YX_E_INVALID_PATH;
	if ((nv = realloc(g->alt, (g->n + 1) * sizeof(*nv))) == NULL)
		return YX_E_NOMEM;
	g->alt = nv;
	if ((g->alt[g->n] = strdup(s)) == NULL)
		return YX_E_NOMEM;
	g->n++;
	return YX_OK;
}

/*
 * Expand the first brace group of s (from `from` on) that has a top-level
 * comma, recursively; a string without one is added as it is.
 */
static int
glob_expand(struct broker_glob *g, const char *s, size_t from)
{
	size_t	 i, end, start, len = strlen(s), depth;
	bool	 comma;
	char	*buf;
	int	 rc = YX_OK;

	for (i = from; s[i] != '\0'; i++) {
		if (s[i] == '\\' && s[i + 1] != '\0') {
			i++;
			continue;
		}
		if (s[i] != '{' || (end = glob_group_end(s, i, &comma)) == 0 ||
		    !comma)
			continue;
		if ((buf = malloc(len + 1)) == NULL)
			return YX_E_NOMEM;
		/* each top-level alternative of s[i+1 .. end) in turn */
		for (start = i + 1, depth = 0; rc == YX_OK;) {
			size_t k = start;

			for (; k < end; k++) {
				if (s[k] == '\\' && k + 1 < end)
					k++;
				else if (s[k] == '{')
					depth++;
				else if (s[k] == '}')
					depth--;
				else if (s[k] == ',' && depth == 0)
					break;
			}
			snprintf(buf, len + 1, "%.*s%.*s%s", (int)i, s,
			    (int)(k - start), s + start, s + end + 1);
			rc = glob_expand(g, buf, i);
			if (k >= end)
				break;
			start = k + 1;
		}
		free(buf);
		return rc;
	}
	return glob_add(g, s);
}

/* Why `pat` cannot be supported, or NULL. */
static const char *
glob_unsupported(const char *pat)
{
	const char	*p;
	bool		 comma;
	size_t		 i, end;

	if (pat[0] == '!')
		return "negation (a leading '!')";
	for (p = pat; *p != '\0'; p++) {
		if (*p == '\\' && p[1] != '\0') {
			p++;
			continue;
		}
		if (p[1] == '(' && strchr("@!+*?", *p) != NULL)
			return "extglob groups";
	}
	for (i = 0; pat[i] != '\0'; i++) {
		if (pat[i] == '\\' && pat[i + 1] != '\0') {
			i++;
			continue;
		}
		if (pat[i] == '{' && (end = glob_group_end(pat, i, &comma)) > 0 &&
		    !comma && memmem(pat + i, end - i, "..", 2) != NULL)
			return "brace ranges";
	}
	return NULL;
}

/*
 * Normalise one expanded alternative in place: a leading '/' and empty or
 * "." components dropped. YX_E_INVALID_PATH for ".." or nothing left.
 */
static int
glob_normalise(char *s)
{
	char	*out = s, *p = s, *c;
	size_t	 n;

	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		c = p;
		while (*p != '/' && *p != '\0')
			p++;
		n = (size_t)(p - c);
		if (n == 1 && c[0] == '.')
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return YX_E_INVALID_PATH;
		if (out != s)
			*out++ = '/';
		memmove(out, c, n);
		out += n;
	}
	*out = '\0';
	return out == s ? YX_E_INVALID_PATH : YX_OK;
}

/* Components of a normalised pattern. */
static size_t
glob_comps(const char *pat)
{
	size_t n = 1;

	for (; *pat != '\0'; pat++)
		n += *pat == '/';
	return n;
}

/* Components a pattern needs: its count, or BROKER_GLOB_DEEP with "**". */
static int
glob_depth(const char *pat)
{
	const char	*p, *c;
	int		 n = 0;

	for (p = pat;; p++) {
		c = p;
		while (*p != '/' && *p != '\0')
			p++;
		if (p - c == 2 && c[0] == '*' && c[1] == '*')
			return BROKER_GLOB_DEEP;
		n++;
		if (*p == '\0')
			return n;
	}
}

int
broker_glob_compile(const char *pattern, bool dot, struct broker_glob *g,
    const char **why)
{
	const char	*bad;
	size_t		 i;
	int		 rc, d;

	memset(g, 0, sizeof(*g));
	g->dot = dot;
	*why = "invalid glob pattern";
	if (pattern == NULL || pattern[0] == '\0' ||
	    strlen(pattern) >= YX_VPATH_MAX)
		return YX_E_INVALID_PATH;
	if ((bad = glob_unsupported(pattern)) != NULL) {
		*why = bad;
		return YX_E_INVALID_PATH;
	}
	if ((rc = glob_expand(g, pattern, 0)) != YX_OK) {
		if (rc == YX_E_INVALID_PATH)
			*why = "glob pattern has too many {} alternatives";
		broker_glob_free(g);
		return rc;
	}
	for (i = 0; i < g->n; i++) {
		if ((rc = glob_normalise(g->alt[i])) != YX_OK ||
		    glob_comps(g->alt[i]) > BROKER_GLOB_COMPS) {
			broker_glob_free(g);
			return YX_E_INVALID_PATH;
		}
		d = glob_depth(g->alt[i]);
		g->depth = d > g->depth ? d : g->depth;
	}
	return YX_OK;
}

/* Split a copy of s (in buf) at '/'; false if too many components. */
static bool
glob_split(const char *s, char *buf, size_t buflen, char **comps, size_t max,
    size_t *np)
{
	char	*p;
	size_t	 n = 0;

	if (snprintf(buf, buflen, "%s", s) >= (int)buflen)
		return false;
	for (p = buf; n < max;) {
		comps[n++] = p;
		if ((p = strchr(p, '/')) == NULL) {
			*np = n;
			return true;
		}
		*p++ = '\0';
	}
	return false;
}

/*
 * One alternative against one path, by dynamic programming over (pattern,
 * path) components: O(P*N) fnmatch calls, no backtracking blow-up. row[j]
 * holds "pattern[i..] matches path[j..]" for the current i.
 */
static bool
glob_match_one(const char *pat, const char *path, bool dot)
{
	char	 pbuf[YX_VPATH_MAX], sbuf[YX_VPATH_MAX];
	char	*pc[BROKER_GLOB_COMPS], *sc[BROKER_PATH_COMPS];
	bool	 next[BROKER_PATH_COMPS + 1], cur[BROKER_PATH_COMPS + 1];
	size_t	 np, ns, i, j;
	int	 flags = dot ? 0 : FNM_PERIOD;

	if (!glob_split(pat, pbuf, sizeof(pbuf), pc, BROKER_GLOB_COMPS, &np) ||
	    !glob_split(path, sbuf, sizeof(sbuf), sc, BROKER_PATH_COMPS, &ns))
		return false;
	for (j = 0; j <= ns; j++)
		next[j] = j == ns;
	for (i = np; i-- > 0;) {
		bool star = strcmp(pc[i], "**") == 0;

		for (j = ns + 1; j-- > 0;) {
			if (star)
				cur[j] = next[j] || (j < ns && (dot || sc[j][0] != '.') && cur[j + 1]);
			else
				cur[j] = j < ns && next[j + 1] &&
				    fnmatch(pc[i], sc[j], flags) == 0;
		}
		memcpy(next, cur, sizeof(next));
	}
	return next[0];
}

bool
broker_glob_match(const struct broker_glob *g, const char *path)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		if (glob_match_one(g->alt[i], path, g->dot))
			return true;
	return false;
}
