/* SPDX-License-Identifier: MIT */
/*
 * reload.c - what the master reads again on SIGHUP (docs/operations.md,
 * "Reload and stop"), and the start-up check of the files the workers load
 * on their own.
 *
 * A reload reads the configuration exactly as the start did: the same file
 * (the one named by -c or YUXI_CONFIG, or the installed default, which
 * cfg->config_file remembers) under the same environment (the master's own,
 * which it never changes), then checks the skills directory and the agents
 * file as `yuxi-sandboxd -t` does. Settings the running master has built
 * its shared state on (the socket, the shared table, the saves directory,
 * the container names) cannot change under it: a new value is logged and
 * the running one kept; a restart applies it.
 */
#include "config.h"

#include <sys/stat.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "daemon_int.h"
#include "yuxi/egress.h"
#include "yuxi/log.h"

/* offset and size of a field of struct yx_config */
#define RO_FIELD(f)	offsetof(struct yx_config, f), sizeof(((struct yx_config *)0)->f)

/* Settings fixed for the master's life, and why. */
static const struct restart_only {
	const char	*name;
	size_t		 off, len;
	bool		 str;
} restart_only[] = {
	/* the socket is never closed: no connection is refused */
	{ "YUXI_FCGI_SOCKET", RO_FIELD(fcgi_socket), true },
	{ "YUXI_FCGI_SOCKET_GROUP", RO_FIELD(fcgi_socket_gid), false },
	{ "YUXI_FCGI_SOCKET_MODE", RO_FIELD(fcgi_socket_mode), false },
	/* the table every process maps, and its size */
	{ "YUXI_SHM_NAME", RO_FIELD(shm_name), true },
	{ "YUXI_INSTANCE", RO_FIELD(instance), true },
	{ "YUXI_SANDBOX_MAX_REPLICAS", RO_FIELD(max_replicas), false },
	/* the thread store the master repaired at start */
	{ "YUXI_SAVES_DIR", RO_FIELD(saves_dir), true },
	/* the names of the running sandboxes, which the reaper reconciles */
	{ "YUXI_SANDBOX_CONTAINER_PREFIX", RO_FIELD(container_prefix), true },
	/* what the thread store and the table hold (docs/scaling.md) */
	{ "YUXI_MODE", RO_FIELD(mode), false },
	/* the egress proxy, started once by the master, reads it */
	{ "YUXI_EGRESS_HOSTS", RO_FIELD(egress_hosts), true },
	/* the preview ingress, started once by the master, reads it */
	{ "YUXI_PREVIEW_CONNECTIONS", RO_FIELD(preview_connections), false },
};

/*
 * Warn of allowlist rules that open the host itself (a port wildcard on a
 * name that resolves to loopback or to the host's own address: every
 * service of the host is then one CONNECT away, docs/security.md).
 */
static void
reload_warn_rules(const struct yx_config *cfg, const struct yx_agents *ag)
{
	const struct yx_profile	*p;
	char			 why[400];
	size_t			 i, k;

	for (i = 0; (p = yx_agents_profile_at(ag, i)) != NULL; i++)
		for (k = 0; k < p->net.nallow; k++)
			if (yx_egress_rule_opens_host(cfg, &p->net.allow[k], why, sizeof(why)))
				log_warnx("profile %s: network rule \"%s:*\" opens every port of "
					  "this host to its sandboxes (%s): name the ports",
				    p->id, p->net.allow[k].host, why);
}

int
yx_daemon_check_files(const struct yx_config *cfg, char *eb, size_t el)
{
	struct yx_agents	*ag = NULL;
	struct yx_errctx	 e;
	struct stat		 sb;

	yx_errctx_clear(&e);
	if (cfg->skills_dir[0] != '\0' &&
	    (stat(cfg->skills_dir, &sb) == -1 || !S_ISDIR(sb.st_mode))) {
		snprintf(eb, el, "YUXI_SKILLS_DIR: %s is not a directory", cfg->skills_dir);
		return YX_E_BAD_REQUEST;
	}
	if (yx_agents_load(&ag, cfg->agents_file, cfg->skills_dir, &e) != YX_OK) {
		snprintf(eb, el, "YUXI_AGENTS_FILE: %s: %s", cfg->agents_file, e.msg);
		return YX_E_BAD_REQUEST;
	}
	reload_warn_rules(cfg, ag);
	yx_agents_free(ag);
	return YX_OK;
}

/* Keep the running value of every restart-only setting in next; log each. */
static void
reload_keep_fixed(const struct yx_config *cur, struct yx_config *next)
{
	const struct restart_only	*r;
	const char			*a, *b;
	size_t				 i;

	for (i = 0; i < sizeof(restart_only) / sizeof(restart_only[0]); i++) {
		r = &restart_only[i];
		a = (const char *)cur + r->off;
		b = (const char *)next + r->off;
		if (r->str ? strcmp(a, b) == 0 : memcmp(a, b, r->len) == 0)
			continue;
		log_warnx("reload: %s changes at restart only; the running value stays",
		    r->name);
		memcpy((char *)next + r->off, a, r->len);
	}
}

int
yx_reload_config(const struct yx_config *cur, struct yx_config *next,
    char *eb, size_t el)
{
	const char	*file = cur->config_file[0] != '\0' ? cur->config_file : NULL;
	int		 rc;

	if ((rc = yx_config_load_file(next, file, eb, el)) != YX_OK ||
	    (rc = yx_daemon_check_files(next, eb, el)) != YX_OK)
		return rc;
	reload_keep_fixed(cur, next);
	/* what the host gives was probed at start (CAP_SYS_ADMIN is gone) */
	yx_config_settle(next, cur->protect_can, cur->protect_why);
	return yx_config_protect_check(next, eb, el);
}
