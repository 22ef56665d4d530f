/* SPDX-License-Identifier: MIT */
/*
 * ready_reply.c - the readiness answer's JSON (docs/api.md "GET /readyz"):
 * its checks and the failing ones, built the same way by a standalone
 * service's /readyz (h_ops.c) and a front's (h_front.c), which adds its
 * hosts.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "remote_int.h"

int
yx_ready_begin(struct yx_ready_json *j)
{
	j->bad = 0;
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

int
yx_ready_send(struct yx_http_req *r, struct yx_ready_json *j, bool ready)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL) {
		json_object_put(j->checks);
		json_object_put(j->failing);
		return YX_E_NOMEM;
	}
	json_object_object_add(o, "ready", json_object_new_boolean(ready));
	if (j->bad > 0)
		json_object_object_add(o, "failing", j->failing);
	else
		json_object_put(j->failing);
	json_object_object_add(o, "checks", j->checks);
	return yx_http_send_obj(r, ready ? 200 : 503, o);
}

/*
 * GET /readyz: 200 {"ready":true,"checks":[...]} or 503
 * {"ready":false,"failing":[names],"checks":[...]}; each check
 * {"name","ok","detail"}, the detail never naming a host path.
 */
