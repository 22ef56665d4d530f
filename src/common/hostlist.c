/* SPDX-License-Identifier: MIT */
/*
 * hostlist.c - YUXI_SANDBOX_PROVISIONER_URL and rendezvous placement; see
 * include/yuxi/hostlist.h.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "yuxi/error.h"
#include "yuxi/hash.h"
#include "yuxi/hostlist.h"

#define HL_SCHEME	"https://"

static int
hl_fail(char *why, size_t whylen, const char *item, size_t len, const char *what)
{
	if (why != NULL && whylen > 0)
		snprintf(why, whylen, "%.*s: %s", (int)(len > 80 ? 80 : len), item, what);
	return YX_E_BAD_REQUEST;
}

bool
yx_host_name_valid(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > YX_HOST_NAME_MAX || !isalnum((unsigned char)s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("._-", s[i]) == NULL)
			return false;
	return true;
}

/*
 * Check url (len bytes) and copy it into h->url; the default name (the
 * authority, ':' as '-') goes to dname. NULL or the reason.
 */
static const char *
hl_url(const char *url, size_t len, struct yx_host *h, char *dname)
{
	const char	*auth, *end;
	size_t		 alen, i;

	if (len <= strlen(HL_SCHEME) || strncmp(url, HL_SCHEME, strlen(HL_SCHEME)) != 0)
		return "not an https:// URL";
	if (len > YX_HOST_URL_MAX)
		return "URL too long";
	if (url[len - 1] == '/')
		return "URL ends in '/'";
	auth = url + strlen(HL_SCHEME);
	for (i = 0; i < len; i++)
		if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f ||
		    strchr("?#@\"\\", url[i]) != NULL)
			return "URL with a query, a fragment, a user part or a bad byte";
	if ((end = memchr(auth, '/', len - (size_t)(auth - url))) == NULL)
		end = url + len;
	if ((alen = (size_t)(end - auth)) == 0)
		return "URL without a host";
	for (i = 0; i < alen; i++)
		if (!isalnum((unsigned char)auth[i]) && strchr(".-:[]", auth[i]) == NULL)
			return "bad byte in the URL's host";
	/* the default name: the authority with ':' as '-' (when it is one) */
	dname[0] = '\0';
	for (i = 0; i < alen && alen <= YX_HOST_NAME_MAX; i++)
		dname[i] = auth[i] == ':' ? '-' : auth[i];
	if (alen <= YX_HOST_NAME_MAX)
		dname[alen] = '\0';
	memcpy(h->url, url, len);
	h->url[len] = '\0';
	return NULL;
}

/* One "[NAME=]URL" item of len bytes into h. */
static int
hl_item(const char *item, size_t len, struct yx_host *h, char *why, size_t whylen)
{
	char		 dname[YX_HOST_NAME_MAX + 1];
	const char	*eq, *url = item, *bad;
	size_t		 ulen = len;

	memset(h, 0, sizeof(*h));
	eq = memchr(item, '=', len);
	if (eq != NULL) {
		if ((size_t)(eq - item) > YX_HOST_NAME_MAX)
			return hl_fail(why, whylen, item, len, "name too long");
		memcpy(h->name, item, (size_t)(eq - item));
		url = eq + 1;
		ulen = len - (size_t)(url - item);
	}
	if ((bad = hl_url(url, ulen, h, dname)) != NULL)
		return hl_fail(why, whylen, item, len, bad);
	if (eq == NULL)
		memcpy(h->name, dname, strlen(dname) + 1);
	if (!yx_host_name_valid(h->name))
		return hl_fail(why, whylen, item, len,
		    eq == NULL ? "give it a name: NAME=URL, NAME [A-Za-z0-9][A-Za-z0-9._-]{0,31}" :
				 "name must be [A-Za-z0-9][A-Za-z0-9._-]{0,31}");
	return YX_OK;
}

int
yx_hostlist_parse(const char *spec, struct yx_hostlist *l, char *why, size_t whylen)
{
	const char	*p, *comma;
	size_t		 len, i;
	int		 rc;

	memset(l, 0, sizeof(*l));
	for (p = spec; p != NULL && *p != '\0'; p = comma != NULL ? comma + 1 : NULL) {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0)
			return hl_fail(why, whylen, "(empty)", 7, "empty item");
		if (l->n == YX_HOSTS_MAX)
			return hl_fail(why, whylen, p, len, "too many hosts (at most 32)");
		if ((rc = hl_item(p, len, &l->v[l->n], why, whylen)) != YX_OK)
			return rc;
		for (i = 0; i < l->n; i++)
			if (strcmp(l->v[i].name, l->v[l->n].name) == 0 ||
			    strcmp(l->v[i].url, l->v[l->n].url) == 0)
				return hl_fail(why, whylen, p, len, "name or URL given twice");
		l->n++;
	}
	return YX_OK;
}

int
yx_hostlist_find(const struct yx_hostlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return (int)i;
	return -1;
}

uint64_t
yx_host_score(const char *name, const char *key)
{
	const void	*parts[2] = { name, key };
	size_t		 lens[2] = { strlen(name), strlen(key) };
	char		 hex[YX_SHA256_HEX];
	uint64_t	 v = 0;
	size_t		 i;

	if (yx_sha256_hex_parts(parts, lens, 2, hex) != YX_OK)
		return 0;
	for (i = 0; i < 16; i++)
		v = v << 4 | (uint64_t)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
	return v;
}

void
yx_hostlist_order(const struct yx_hostlist *l, const char *key, size_t *order)
{
	uint64_t	score[YX_HOSTS_MAX];
	size_t		i, j;

	/* insertion sort: at most 32 hosts */
	for (i = 0; i < l->n; i++) {
		score[i] = yx_host_score(l->v[i].name, key);
		for (j = i; j > 0 && score[order[j - 1]] < score[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
}
