/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - names as the egress proxy resolves them (include/yuxi/egress.h):
 * the YUXI_EGRESS_HOSTS file when set, else the system resolver; and the
 * start-up check of an allowlist's rules for holes into the host itself
 * (issue 27: "allowed.test:*" on a name that resolves to 127.0.0.1 let a
 * sandbox reach every service of the host, the service's own nginx
 * included). The proxy does what a rule says; the daemon warns when a
 * rule says that.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "yuxi/egress.h"

int
yx_egress_resolve(const struct yx_config *cfg, const char *name,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	struct addrinfo	 hints, *res = NULL, *ai;

	*n = 0;
	if (cfg->egress_hosts[0] != '\0')
		return yx_egress_hosts_lookup(cfg->egress_hosts, name, out, max, n) == YX_OK &&
			*n > 0 ?
		    YX_OK :
		    YX_E_NOT_FOUND;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return YX_E_NOT_FOUND;
	for (ai = res; ai != NULL && *n < max; ai = ai->ai_next)
		if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
		    ai->ai_addrlen <= sizeof(out[0])) {
			memset(&out[*n], 0, sizeof(out[0]));
			memcpy(&out[(*n)++], ai->ai_addr, ai->ai_addrlen);
		}
	freeaddrinfo(res);
	return *n > 0 ? YX_OK : YX_E_NOT_FOUND;
}

/* Do a and b hold the same address (ports aside)? */
static bool
same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
	return a->sa_family == AF_INET6 &&
	    memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
		&((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
		sizeof(struct in6_addr)) == 0;
}

/* Is sa one of this host's own interface addresses? */
static bool
own_addr(const struct sockaddr *sa)
{
	struct ifaddrs	*ifs = NULL, *i;
	bool		 yes = false;

	if (getifaddrs(&ifs) == -1)
		return false;
	for (i = ifs; i != NULL && !yes; i = i->ifa_next)
		yes = i->ifa_addr != NULL && same_addr(i->ifa_addr, sa);
	freeifaddrs(ifs);
	return yes;
}

bool
yx_egress_rule_opens_host(const struct yx_config *cfg,
    const struct yx_egress_rule *r, char *why, size_t whylen)
{
	struct sockaddr_storage	 a[8];
	char			 txt[INET6_ADDRSTRLEN];
	const void		*p;
	size_t			 n = 0, i;

	/* a wildcard name ("*.example.com") names no address of its own */
	if (r->port != 0 || strchr(r->host, '*') != NULL ||
	    yx_egress_resolve(cfg, r->host, a, sizeof(a) / sizeof(a[0]), &n) != YX_OK)
		return false;
	for (i = 0; i < n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)(const void *)&a[i];

		if (yx_egress_addr_class(sa) != YX_ADDR_LOOPBACK && !own_addr(sa))
			continue;
		p = sa->sa_family == AF_INET ?
		    (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr :
		    (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (inet_ntop(sa->sa_family, p, txt, sizeof(txt)) == NULL)
			snprintf(txt, sizeof(txt), "?");
		snprintf(why, whylen, "%s resolves to %s, %s", r->host, txt,
		    yx_egress_addr_class(sa) == YX_ADDR_LOOPBACK ? "the host's loopback" :
								   "an address of this host");
		return true;
	}
	return false;
}
