/* SPDX-License-Identifier: MIT */
/*
 * yuxi/hostlist.h - the sandbox hosts of a front (docs/scaling.md):
 * YUXI_SANDBOX_PROVISIONER_URL parsed, and the rendezvous order in which
 * a new thread tries them.
 *
 * The setting is a comma-separated list of "[NAME=]URL". NAME is what a
 * thread's record keeps as its placement ("host" in thread.json), so a
 * host may move to another address without its threads noticing; it
 * defaults to the URL's host and port with ':' made '-'. URL is
 * https://HOST[:PORT][/PATH] (no query, no fragment, no user part, no
 * trailing '/'), the base every forwarded path is appended to.
 *
 * Placement is rendezvous (highest random weight) hashing: every host
 * scores SHA-256(name "\n" thread_id) and a thread tries the hosts from
 * the highest score down. Adding or removing a host moves only the new
 * threads that would score highest on it; recorded placements never move.
 *
 * Pure functions, no I/O: table-tested (tests/common/test_hostlist.c).
 */
#ifndef YUXI_HOSTLIST_H
#define YUXI_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YX_HOSTS_MAX		32	/* hosts one front knows */
#define YX_HOST_NAME_MAX	32	/* bytes of a name, NUL excluded */
#define YX_HOST_URL_MAX		256	/* bytes of a base URL, NUL excluded */

struct yx_host {
	char	name[YX_HOST_NAME_MAX + 1];	/* [A-Za-z0-9][A-Za-z0-9._-]* */
	char	url[YX_HOST_URL_MAX + 1];	/* https://..., no trailing '/' */
};

/* Caller storage; a plain value. */
struct yx_hostlist {
	struct yx_host	v[YX_HOSTS_MAX];
	size_t		n;
};

/*
 * Parse spec into l. YX_OK (an empty spec gives no host); YX_E_BAD_REQUEST
 * with the reason in why (size whylen): a URL that is not https://, a bad
 * name, a name or URL given twice, more than YX_HOSTS_MAX hosts.
 */
int	yx_hostlist_parse(const char *spec, struct yx_hostlist *l, char *why,
    size_t whylen);
/* Is s a valid host name? */
bool	yx_host_name_valid(const char *s);
/* Index of the host called name, or -1. */
int	yx_hostlist_find(const struct yx_hostlist *l, const char *name);
/* The score of (host name, key): the first 64 bits of SHA-256(name "\n" key). */
uint64_t yx_host_score(const char *name, const char *key);
/*
 * Fill order[0 .. l->n - 1] with the host indexes, highest score for key
 * first (ties, which need a hash collision, by index).
 */
void	yx_hostlist_order(const struct yx_hostlist *l, const char *key, size_t *order);

#endif /* YUXI_HOSTLIST_H */
