/* SPDX-License-Identifier: MIT */
/*
 * agentcfg_int.h - private interface between the agents registry
 * (agents.c) and the profile parser (profile.c) of src/agentcfg.
 */
#ifndef YUXI_AGENTCFG_INT_H
#define YUXI_AGENTCFG_INT_H

#include <stddef.h>

#include "yuxi/agents.h"
#include "yuxi/error.h"

struct json_object;

/*
 * Refuse a key of object o that is not in known[] (NULL-terminated),
 * "description" or a '_' comment: YX_E_BAD_REQUEST "<where>.<key>:
 * unknown key" in err. YX_OK otherwise.
 */
int	agentcfg_keys_check(struct json_object *o, const char *const *known,
    const char *where, struct yx_errctx *err);

/*
 * Parse the "profiles" array a into a heap array *vp of *np profiles
 * (unique ids, every value checked, fingerprints set). YX_OK;
 * YX_E_BAD_REQUEST with "profiles[i] (\"id\").key: why"; YX_E_NOMEM. On
 * failure what was parsed is still in *vp for agentcfg_profiles_free.
 */
int	agentcfg_profiles_parse(struct json_object *a, struct yx_profile **vp,
     size_t *np, struct yx_errctx *err);
void	agentcfg_profiles_free(struct yx_profile *v, size_t n);

/*
 * A profile's "services" (profile_svc.c): [{"name", "command", "ready"?:
 * {"port"}}] into p->services. YX_OK; YX_E_BAD_REQUEST with the reason in
 * why; YX_E_NOMEM. What was parsed stays in p for agentcfg_profiles_free.
 */
int	agentcfg_services_parse(struct json_object *v, struct yx_profile *p,
    char *why, size_t whylen);

#endif /* YUXI_AGENTCFG_INT_H */
