/* SPDX-License-Identifier: MIT */
/*
 * yuxi/agents.h - the agents registry, the skills a thread sees and the
 * sandbox profile it runs under (docs/design.md §5, docs/configuration.md
 * "Agents file").
 *
 * YUXI_AGENTS_FILE is JSON (examples/agents.json):
 *
 *   {"profiles": [                          optional
 *     {"id": "untrusted", "runtime": "runsc", "memory": "256m", ...}
 *    ],
 *    "agents": [
 *     {"id": "coder",                       agent id, [A-Za-z0-9_-]{1,128}
 *      "description": "...",                optional, ignored
 *      "skills": ["python-basics", ...],    optional: the agent's selection
 *      "profile": "untrusted",              optional: the agent's profile
 *      "configs": [                         optional
 *        {"id": "minimal", "skills": []},   a config with its own selection
 *        {"id": "default"}                  no "skills": the agent's applies
 *      ]}
 *   ]}
 *
 * Skills rule: the visible skills of a thread are its config's selection
 * when the config has a "skills" key, else the agent's when the agent has
 * one, else none. Of those, only names that are valid skill names and exist
 * as directories (not symlinks) directly under YUXI_SKILLS_DIR count; the
 * directory is looked at on every call, so skills added or removed while
 * the service runs are seen at once.
 *
 * Profile rule: the config's "profile", else the agent's, else the profile
 * with id "default" when the file defines one, else the built-in default
 * (every field from the service configuration, YUXI_SANDBOX_*). A profile's
 * keys (all optional but "id"): image, runtime ("runc" | "runsc"), memory,
 * cpus, pids, tmp_size, exec_timeout ({"default": s, "max": s} or a number:
 * the default), workspace ("rw" | "ro"), network ("none" |
 * {"allow": ["host:port", ...], "allow_private": ["host", ...]},
 * include/yuxi/egress.h), env ({"NAME": "value"}), services ([{"name",
 * "command", "ready": {"port"}}]: processes the in-sandbox agent starts with
 * the box and keeps running, docs/browser.md); a key it does not set takes
 * the service configuration's value.
 *
 * Keys starting with '_' are comments, "description" is ignored; any other
 * unknown key, a bad value, a duplicate id, an invalid name or a profile
 * name nobody defines refuses the whole file, with the JSON path of the
 * key in the message (and line and column for a syntax error).
 *
 * Ownership: yx_agents_load() returns a heap registry freed by
 * yx_agents_free() (NULL is a no-op). Read-only after loading; the
 * profiles it returns live as long as it.
 */
#ifndef YUXI_AGENTS_H
#define YUXI_AGENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/egress.h"
#include "yuxi/error.h"
#include "yuxi/hash.h"
#include "yuxi/ident.h"
#include "yuxi/skills.h"

#define YX_AGENTS_FILE_MAX	(1 << 20)	/* bytes of YUXI_AGENTS_FILE */
#define YX_PROFILES_MAX		64
#define YX_PROFILE_ENV_MAX	32	/* variables of one profile */
#define YX_PROFILE_ENV_LEN	4096	/* bytes of one "NAME=value" */
#define YX_SERVICES_MAX		8	/* services of one profile */
#define YX_SERVICE_NAME_MAX	12	/* [a-z][a-z0-9]{0,11} */
#define YX_SERVICE_CMD_MAX	4096	/* bytes of one command */

struct yx_agents;

enum yx_workspace {
	YX_WORKSPACE_RW,	/* user-data read-write (the default) */
	YX_WORKSPACE_RO,	/* read-only but outputs/ and large_tool_results/ */
};

/*
 * A service of a profile: `command` run by /bin/sh -c in the sandbox, with
 * the commands' environment and working directory, started with the box
 * and restarted when it exits (src/guest/agent_services.c); ready once
 * something listens on 127.0.0.1:ready_port (0: once it runs).
 */
struct yx_service {
	char	 name[YX_SERVICE_NAME_MAX + 1];
	char	*command;	/* heap, freed with the registry */
	int	 ready_port;	/* 1..65535, 0: none */
};

/* One sandbox profile; 0 / "" fields take the service configuration's. */
struct yx_profile {
	char			 id[YX_THREAD_ID_SIZE];
	char			 image[YX_CFG_STR];	/* YUXI_SANDBOX_IMAGE */
	char			 runtime[32];		/* YUXI_SANDBOX_RUNTIME */
	int64_t			 memory_bytes;		/* YUXI_SANDBOX_MEMORY */
	double			 cpus;			/* YUXI_SANDBOX_CPUS */
	int			 pids;			/* YUXI_SANDBOX_PIDS */
	int64_t			 tmp_size;		/* YUXI_SANDBOX_TMP_SIZE */
	int			 exec_timeout;		/* YUXI_SANDBOX_EXEC_TIMEOUT */
	int			 exec_timeout_max;	/* 0: 600 */
	enum yx_workspace	 workspace;
	struct yx_egress_policy	 net;			/* nallow 0: no network */
	size_t			 nenv;
	char			*env[YX_PROFILE_ENV_MAX];	/* "NAME=value" */
	size_t			 nservices;
	struct yx_service	 services[YX_SERVICES_MAX];
	char			 fp[YX_SHA256_HEX];	/* of every field above but id */
};

/*
 * Load `file` ("" or NULL: an empty registry) with skills under
 * `skills_dir` ("" or NULL: no skills). YX_OK and *out (caller frees);
 * YX_E_BAD_REQUEST with a message for a malformed file; YX_E_NOMEM;
 * errno-mapped codes when the file cannot be read.
 */
int	yx_agents_load(struct yx_agents **out, const char *file, const char *skills_dir,
     struct yx_errctx *err);
void	yx_agents_free(struct yx_agents *ag);

/* Number of agents. */
size_t	yx_agents_count(const struct yx_agents *ag);

/*
 * Is (agent_id, config_id) known? agent_id "" means "no agent" and is
 * always valid with an empty config_id. YX_OK, or YX_E_BAD_REQUEST with a
 * message naming what is unknown.
 */
int	yx_agents_check(const struct yx_agents *ag, const char *agent_id,
    const char *config_id, struct yx_errctx *err);

/*
 * The visible skills of a thread of (agent_id, config_id), by the rule
 * above, into *out (sorted, unique, fingerprinted). Unknown agents and
 * configs give the empty set. YX_OK or YX_E_INTERNAL (hashing failed).
 */
int	yx_agents_skills(const struct yx_agents *ag, const char *agent_id,
    const char *config_id, struct yx_skill_set *out);

/*
 * The profile of a thread of (agent_id, config_id) by the rule above;
 * unknown agents and configs get the default. Never NULL; borrowed from ag.
 */
const struct yx_profile *yx_agents_profile(const struct yx_agents *ag,
    const char *agent_id, const char *config_id);

/* Does a profile of ag name `runtime` as its own? (A profile without one
 * takes YUXI_SANDBOX_RUNTIME's.) */
bool	yx_agents_uses_runtime(const struct yx_agents *ag, const char *runtime);

/* The i-th profile of the agents file (0-based); NULL past the last. */
const struct yx_profile *yx_agents_profile_at(const struct yx_agents *ag, size_t i);

/* The built-in default profile (id "default", nothing set: every value
 * from the service configuration). Static storage, made on first use. */
const struct yx_profile *yx_profile_default(void);

/*
 * The container settings of profile p: *out becomes a copy of cfg with the
 * profile's image, runtime, memory, cpus, pids, tmp_size and default exec
 * timeout (never above its max) in place of the configuration's.
 */
void	yx_profile_apply(const struct yx_profile *p, const struct yx_config *cfg,
    struct yx_config *out);
/*
 * The timeout of one command under p: `asked` seconds (<= 0: the
 * profile's default, else cfg->exec_timeout), capped at the profile's max
 * (else 600).
 */
int	yx_profile_timeout(const struct yx_profile *p, const struct yx_config *cfg,
    int asked);

/* Skill names: one component of [A-Za-z0-9._-], 1..YX_SKILL_NAME_MAX, not "." or "..". */
bool	yx_skill_name_valid(const char *name);

/*
 * Sort and de-duplicate s->names[0..n) and set s->fp (hex SHA-256 of the
 * names joined by '\n'; the empty set hashes the empty string). YX_OK or
 * YX_E_INTERNAL.
 */
int	yx_skill_set_finish(struct yx_skill_set *s);

#endif /* YUXI_AGENTS_H */
