/* SPDX-License-Identifier: MIT */
/*
 * yuxi/skills.h - the set of skills visible to one thread (docs/design.md §5).
 *
 * A plain value type shared by the agents registry (which computes it from
 * YUXI_AGENTS_FILE), the broker (which hides every other skill), the provider
 * (which mounts exactly these at /home/yuxi/skills/<name>, read-only) and the
 * viewer. Names are single path components of [A-Za-z0-9._-], sorted, unique.
 * `fp` is the hex SHA-256 of the sorted names joined by '\n': a container whose
 * label carries another fingerprint is recreated on the next acquire.
 */
#ifndef YUXI_SKILLS_H
#define YUXI_SKILLS_H

#include <stddef.h>

#define YX_SKILLS_MAX		64
#define YX_SKILL_NAME_MAX	64

struct yx_skill_set {
	size_t	n;
	char	names[YX_SKILLS_MAX][YX_SKILL_NAME_MAX + 1];
	char	fp[65];
};

#endif /* YUXI_SKILLS_H */
