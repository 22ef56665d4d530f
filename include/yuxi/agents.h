/* SPDX-License-Identifier: MIT */
/*
 * yuxi/agents.h - the agents registry and the skills a thread sees
 * (docs/design.md §5).
 *
 * YUXI_AGENTS_FILE is JSON (examples/agents.json):
 *
 *   {"agents": [
 *     {"id": "coder",                       agent id, [A-Za-z0-9_-]{1,128}
 *      "description": "...",                optional, ignored
 *      "skills": ["python-basics", ...],    optional: the agent's selection
 *      "configs": [                         optional
 *        {"id": "minimal", "skills": []},   a config with its own selection
 *        {"id": "default"}                  no "skills": the agent's applies
 *      ]}
 *   ]}
 *
 * Rule: the visible skills of a thread are its config's selection when the
 * config has a "skills" key, else the agent's when the agent has one, else
 * none. Of those, only names that are valid skill names and exist as
 * directories (not symlinks) directly under YUXI_SKILLS_DIR count; the
 * directory is looked at on every call, so skills added or removed while
 * the service runs are seen at once. Unknown fields are ignored; a malformed
 * file, a duplicate id or an invalid name refuses to load.
 *
 * Ownership: yx_agents_load() returns a heap registry freed by
 * yx_agents_free() (NULL is a no-op). Read-only after loading.
 */
#ifndef YUXI_AGENTS_H
#define YUXI_AGENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "yuxi/error.h"
#include "yuxi/skills.h"

#define YX_AGENTS_FILE_MAX	(1 << 20)	/* bytes of YUXI_AGENTS_FILE */

struct yx_agents;

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

/* Skill names: one component of [A-Za-z0-9._-], 1..YX_SKILL_NAME_MAX, not "." or "..". */
bool	yx_skill_name_valid(const char *name);

/*
 * Sort and de-duplicate s->names[0..n) and set s->fp (hex SHA-256 of the
 * names joined by '\n'; the empty set hashes the empty string). YX_OK or
 * YX_E_INTERNAL.
 */
int	yx_skill_set_finish(struct yx_skill_set *s);

#endif /* YUXI_AGENTS_H */
