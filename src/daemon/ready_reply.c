/* SPDX-License-Identifier: MIT */
/*
 * ready_reply.c - the readiness answer's JSON (docs/api.md "GET /readyz"):
 * its checks and the failing ones, built the same way by a standalone
 * service's /readyz (h_ops.c) and a front's (h_front.c), which adds its
 * hosts; a standalone service adds the protections it runs with.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/ready.h"

#include "daemon_int.h"
#include "remote_int.h"

int
yx_ready_begin(struct yx_ready_json *j)
{
	j->bad = 0;
	j->protections = j->warnings = NULL;
	j->checks = json_object_new_array();
	j->failing = json_object_new_array();
	if (j->checks == NULL || j->failing == NULL) {
		json_object_put(j->checks);
		json_object_put(j->failing);
		return YX_E_NOMEM;
	}
	return YX_OK;
}

void
yx_ready_add(struct yx_ready_json *j, const char *name, bool ok, const char *detail)
{
	struct json_object *c;

	if (!ok) {
		j->bad++;
		json_object_array_add(j->failing, json_object_new_string(name));
	}
	if ((c = json_object_new_object()) == NULL)
		return;
	json_object_object_add(c, "name", json_object_new_string(name));
	json_object_object_add(c, "ok", json_object_new_boolean(ok));
	json_object_object_add(c, "detail", json_object_new_string(detail));
	json_object_array_add(j->checks, c);
}

void
yx_ready_protections(struct yx_ready_json *j, const struct yx_config *cfg)
{
	struct yx_ready_protect	 p;
	struct json_object	*o, *pool, *quota;
	char			 cap[256], capo[512];
	unsigned		 i;
	bool			 capok;

	yx_ready_protect(cfg, &p);
	if ((o = json_object_new_object()) == NULL)
		return;
	if ((pool = json_object_new_object()) != NULL) {
		json_object_object_add(pool, "on", json_object_new_boolean(p.pool_size > 0));
		json_object_object_add(pool, "size", json_object_new_int(p.pool_size));
		json_object_object_add(pool, "own_uids",
		    json_object_new_boolean(p.pool_size > 0 && p.own_uids));
		json_object_object_add(pool, "auto", json_object_new_boolean(cfg->pool_auto));
		json_object_object_add(o, "pool", pool);
	}
	if ((quota = json_object_new_object()) != NULL) {
		json_object_object_add(quota, "on", json_object_new_boolean(p.disk_quota > 0));
		json_object_object_add(quota, "bytes", json_object_new_int64(p.disk_quota));
		json_object_object_add(quota, "auto",
		    json_object_new_boolean(cfg->disk_quota_auto));
		json_object_object_add(o, "disk_quota", quota);
	}
	json_object_object_add(o, "detail", json_object_new_string(p.detail));
	j->protections = o;
	capok = yx_ready_capacity(cfg, cap, sizeof(cap), capo, sizeof(capo));
	if ((p.nwarn == 0 && capok) || (j->warnings = json_object_new_array()) == NULL)
		return;
	for (i = 0; i < p.nwarn; i++)
		json_object_array_add(j->warnings, json_object_new_string(p.warn[i]));
	if (!capok)
		json_object_array_add(j->warnings, json_object_new_string(cap));
}

int
yx_ready_send(struct yx_http_req *r, struct yx_ready_json *j, bool ready)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL) {
		json_object_put(j->checks);
		json_object_put(j->failing);
		json_object_put(j->protections);
		json_object_put(j->warnings);
		return YX_E_NOMEM;
	}
	json_object_object_add(o, "ready", json_object_new_boolean(ready));
	if (j->bad > 0)
		json_object_object_add(o, "failing", j->failing);
	else
		json_object_put(j->failing);
	json_object_object_add(o, "checks", j->checks);
	if (j->protections != NULL)
		json_object_object_add(o, "protections", j->protections);
	if (j->warnings != NULL)
		json_object_object_add(o, "warnings", j->warnings);
	return yx_http_send_obj(r, ready ? 200 : 503, o);
}
