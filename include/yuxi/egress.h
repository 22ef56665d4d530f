/* SPDX-License-Identifier: MIT */
/*
 * yuxi/egress.h - network egress by allowlist (docs/configuration.md
 * "Profiles", docs/architecture.md "Egress").
 *
 * A sandbox keeps --network none. A profile with
 * `"network": {"allow": ["pypi.example:443", "*.github.example:443"]}` gets:
 *   - inside, a relay (src/guest/relay.c, started by the in-sandbox agent)
 *     listening on 127.0.0.1:YX_RELAY_PORT that carries every connection
 *     over the unix socket /opt/yuxi/egress/proxy.sock, and
 *     HTTP_PROXY/HTTPS_PROXY (and lower case) naming it for commands;
 *   - on the host, the filtering proxy (src/egress/proxy.c): one process,
 *     forked by the master, serving one listening socket per sandbox.
 *     The socket is made by the proxy in a directory only the service can
 *     write (<saves>/egress/sb/<thread>/, bind-mounted read-only), and the
 *     allowlist is the one the executor registered for that socket: it is
 *     bound to the sandbox by the socket a connection came in on, never by
 *     anything the sandbox says.
 * The proxy serves `CONNECT host:port` and plain-HTTP requests with an
 * absolute `http://` URI, only for names the allowlist matches; it
 * resolves names itself (an IP literal is refused), refuses destinations
 * that resolve to loopback, private, link-local, metadata or special
 * addresses unless the profile names the host in `allow_private`, and
 * connects to the address it checked. Refusals are HTTP 403 with the
 * reason in the status line and the body; every decision is logged.
 *
 * Rules ("host:port"): host is a DNS name, lower-cased, a trailing dot
 * dropped, labels of [a-z0-9-] (1..63, not starting or ending with '-'),
 * at most 253 bytes; a label "*" matches exactly one label (as in TLS
 * certificates: "*.github.example" matches "api.github.example", not
 * "github.example" nor "a.b.github.example"). The last label is neither
 * "*" nor all digits, and nothing an IPv4 or IPv6 parser accepts is a
 * name. port is 1..65535 or "*" (any).
 *
 * The pure functions below are bounded and table-tested
 * (tests/egress/test_rules.c); the proxy and its client are in
 * src/egress/proxy.c, conn.c and client.c.
 */
#ifndef YUXI_EGRESS_H
#define YUXI_EGRESS_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/error.h"

#define YX_EGRESS_NAME_MAX	253	/* bytes of a DNS name */
#define YX_EGRESS_RULES_MAX	64	/* entries of allow, of allow_private */
/* The relay inside every sandbox with network: 127.0.0.1:3128 (the three
 * spellings below must agree), carrying connections to the socket in the
 * directory the executor mounts read-only at YX_EGRESS_TARGET. */
#define YX_RELAY_PORT		3128
#define YX_RELAY_URL		"http://127.0.0.1:3128"
#define YX_EGRESS_TARGET	"/opt/yuxi/egress"
#define YX_EGRESS_SOCK_NAME	"proxy.sock"
#define YX_EGRESS_SOCK_TARGET	YX_EGRESS_TARGET "/" YX_EGRESS_SOCK_NAME
#define YX_RELAY_ARG		"3128:" YX_EGRESS_SOCK_TARGET	/* yuxi-agent --relay */

struct yx_egress_rule {
	char	host[YX_EGRESS_NAME_MAX + 1];	/* normalised pattern */
	int	port;				/* 1..65535; 0 = any */
};

/* A sandbox's allowlist; nallow == 0 means no network at all. */
struct yx_egress_policy {
	size_t			nallow;
	struct yx_egress_rule	allow[YX_EGRESS_RULES_MAX];
	size_t			nprivate;	/* hosts that may resolve to */
	struct yx_egress_rule	priv[YX_EGRESS_RULES_MAX]; /* non-public addresses (port 0) */
};

/* Where a resolved address points (yx_egress_addr_class). */
enum yx_addr_class {
	YX_ADDR_PUBLIC,
	YX_ADDR_LOOPBACK,	/* 127/8, ::1 */
	YX_ADDR_PRIVATE,	/* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10 */
	YX_ADDR_LINKLOCAL,	/* 169.254/16, fe80::/10 */
	YX_ADDR_METADATA,	/* 169.254.169.254, 100.100.100.200, fd00:ec2::254 */
	YX_ADDR_SPECIAL,	/* unspecified, multicast, broadcast, reserved, documentation */
};

/*
 * Parse one rule: "host:port" (with_port) or "host". YX_OK with *r, or
 * YX_E_BAD_REQUEST with the reason in why (whylen bytes).
 */
int	yx_egress_rule_parse(const char *s, bool with_port,
    struct yx_egress_rule *r, char *why, size_t whylen);

/*
 * Normalise the host a request names (len bytes, not NUL-terminated) into
 * out (YX_EGRESS_NAME_MAX + 1 bytes): lower case, no trailing dot.
 * YX_OK; YX_E_FORBIDDEN for an IP literal in any spelling the resolver
 * would take ("127.1", "0x7f000001", "[::1]"); YX_E_BAD_REQUEST for
 * anything that is not a DNS name. *why gets a static reason.
 */
int	yx_egress_name_norm(const char *in, size_t len, char *out,
    const char **why);

/* Does pattern (normalised) match name (normalised)? Label by label. */
bool	yx_egress_host_match(const char *pattern, const char *name);
/* Is name:port on the allowlist? */
bool	yx_egress_allows(const struct yx_egress_policy *p, const char *name,
    int port);
/* May name resolve to a non-public address (allow_private)? */
bool	yx_egress_private_ok(const struct yx_egress_policy *p,
    const char *name);

/* The class of an AF_INET or AF_INET6 address (mapped and NAT64 IPv6
 * addresses by their IPv4 part); anything else is SPECIAL. */
enum yx_addr_class yx_egress_addr_class(const struct sockaddr *sa);
/* "public", "loopback", "private", "link-local", "metadata", "special". */
const char	*yx_addr_class_name(enum yx_addr_class c);

/*
 * The policy as canonical text, one "allow host:port" or "private host"
 * line each, in order: the control protocol's body and part of the
 * sandbox's settings fingerprint. YX_OK or YX_E_NOMEM.
 */
int	yx_egress_policy_text(const struct yx_egress_policy *p,
    struct yx_buf *b);

/*
 * The proxy's test override (YUXI_EGRESS_HOSTS, docs/configuration.md):
 * a hosts-style file read on every lookup, "ADDRESS NAME [NAME...]" lines
 * and '#' comments. When set, it replaces the system resolver (a name it
 * does not list does not resolve, so tests never send a DNS query), and
 * "redirect FROM TO" lines make a connection to address FROM go to TO
 * after every check passed (the controls of the security suite reach a
 * test upstream on 127.0.0.1 instead of the address they name).
 * yx_egress_hosts_lookup: YX_OK with up to max addresses in out (*n);
 * YX_E_NOT_FOUND when the file does not list name; YX_E_IO.
 * yx_egress_hosts_redirect: replaces *sa when a redirect names it.
 */
int	yx_egress_hosts_lookup(const char *file, const char *name,
     struct sockaddr_storage *out, size_t max, size_t *n);
void	yx_egress_hosts_redirect(const char *file,
    struct sockaddr_storage		     *sa);

/*
 * resolve.c: name's addresses as the proxy resolves them (the
 * YUXI_EGRESS_HOSTS file when set, else the system resolver), at most max
 * into out, ports 0. YX_OK with *n > 0; YX_E_NOT_FOUND.
 */
int	yx_egress_resolve(const struct yx_config *cfg, const char *name,
    struct sockaddr_storage *out, size_t max, size_t *n);
/*
 * resolve.c: is rule r a hole into the host (a port wildcard on a name
 * that resolves to loopback or to one of this host's own addresses: every
 * service of the host is then reachable)? true with the address into why
 * (whylen bytes). Resolves: for the start-up warning, not the proxy.
 */
bool	yx_egress_rule_opens_host(const struct yx_config *cfg,
    const struct yx_egress_rule *r, char *why, size_t whylen);

/*
 * Master: fork the proxy (a supervisor that restarts it with a backoff;
 * both die with their parent). It serves <saves>/egress/ctl.sock (0600)
 * for yx_egress_ensure() and one socket per registered sandbox. Returns
 * YX_OK with *pidp (the supervisor) or an error (logged).
 */
int	yx_egress_start(const struct yx_config *cfg, pid_t *pidp);
/*
 * Master, after its workers stopped: SIGTERM the supervisor pid (it stops
 * the proxy and its connections) and reap it, SIGKILL after a bounded
 * wait. Nothing for pid <= 0.
 */
void	yx_egress_stop(pid_t pid);

/*
 * Executor: make sure the proxy serves thread tid's socket with policy p,
 * owned by uid:gid; dir (dirlen bytes) gets the host directory to
 * bind-mount read-only at YX_EGRESS_TARGET. YX_OK;
 * YX_E_BACKEND_UNAVAILABLE when the proxy does not answer or refuses
 * (the message is caller-safe; details in the log); YX_E_BAD_REQUEST.
 */
/* The host directory of thread tid's egress socket into dir (dirlen
 * bytes): YX_OK or YX_E_BAD_REQUEST (too long). Nothing is made. */
int	yx_egress_dir(const struct yx_config *cfg, const char *tid, char *dir,
    size_t dirlen);
int	yx_egress_ensure(const struct yx_config *cfg, const char *tid,
    unsigned uid, unsigned gid, const struct yx_egress_policy *p,
    char *dir, size_t dirlen, struct yx_errctx *err);

#endif /* YUXI_EGRESS_H */
