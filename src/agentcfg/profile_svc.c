/* SPDX-License-Identifier: MIT */
/*
 * profile_svc.c - a profile's "services" (docs/configuration.md "Agents
 * file and profiles", docs/browser.md): the processes the in-sandbox
 * agent starts with the box and keeps running, parsed and checked when
 * the agents file loads.
 *
 *   "services": [{"name": "display", "command": "Xvfb :99 ...",
 *                 "ready": {"port": 6080}}]
 *
 * A name is [a-z][a-z0-9]{0,11} and unique in its profile: it names the
 * service's keeper and files in the sandbox's agent directory
 * (proc.svc-<name>.sock, svc.<name>) and the API's routes. A command is
 * one string for /bin/sh -c, without NUL, at most YX_SERVICE_CMD_MAX
 * bytes; "ready" is optional, its only key "port" (1..65535).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/agents.h"
#include "agentcfg/agentcfg_int.h"

/* [a-z][a-z0-9]{0,YX_SERVICE_NAME_MAX-1} */
static bool
svc_name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > YX_SERVICE_NAME_MAX || s[0] < 'a' || s[0] > 'z')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* "ready": {"port": N}. */
static int
svc_ready(struct json_object *v, struct yx_service *s)
{
	struct json_object	*port;
	int64_t			 n;

	if (!json_object_is_type(v, json_type_object) ||
	    json_object_object_length(v) != 1 ||
	    !json_object_object_get_ex(v, "port", &port) ||
	    !json_object_is_type(port, json_type_int))
		return YX_E_BAD_REQUEST;
	n = json_object_get_int64(port);
	if (n < 1 || n > 65535)
		return YX_E_BAD_REQUEST;
	s->ready_port = (int)n;
	return YX_OK;
}

/* One element of the array into s (its name unique among p's first i). */
static int
svc_one(struct json_object *o, size_t i, struct yx_profile *p, char *why,
    size_t whylen)
{
	struct yx_service	*s = &p->services[i];
	struct json_object	*name, *cmd, *ready;
	const char		*c;
	size_t			 j, n;

	snprintf(why, whylen, "[%zu]: expected {\"name\", \"command\", "
			      "\"ready\"?: {\"port\"}}",
	    i);
	if (!json_object_is_type(o, json_type_object))
		return YX_E_BAD_REQUEST;
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		if (key[0] != '_' && strcmp(key, "name") != 0 &&
		    strcmp(key, "command") != 0 && strcmp(key, "ready") != 0 &&
		    strcmp(key, "description") != 0) {
			snprintf(why, whylen, "[%zu].%s: unknown key", i, key);
			return YX_E_BAD_REQUEST;
		}
	}
	if (!json_object_object_get_ex(o, "name", &name) ||
	    !json_object_object_get_ex(o, "command", &cmd) ||
	    !json_object_is_type(name, json_type_string) ||
	    !json_object_is_type(cmd, json_type_string))
		return YX_E_BAD_REQUEST;
	n = (size_t)json_object_get_string_len(name);
	if (!svc_name_ok(json_object_get_string(name), n)) {
		snprintf(why, whylen, "[%zu].name: must match [a-z][a-z0-9]{0,%d}", i,
		    YX_SERVICE_NAME_MAX - 1);
		return YX_E_BAD_REQUEST;
	}
	memcpy(s->name, json_object_get_string(name), n + 1);
	for (j = 0; j < i; j++)
		if (strcmp(p->services[j].name, s->name) == 0) {
			snprintf(why, whylen, "[%zu].name: duplicate service %s", i,
			    s->name);
			return YX_E_BAD_REQUEST;
		}
	c = json_object_get_string(cmd);
	n = (size_t)json_object_get_string_len(cmd);
	if (n == 0 || strlen(c) != n || n > YX_SERVICE_CMD_MAX) {
		snprintf(why, whylen, "[%zu].command: expected a string without NUL, "
				      "1 to %d bytes",
		    i, YX_SERVICE_CMD_MAX);
		return YX_E_BAD_REQUEST;
	}
	if (json_object_object_get_ex(o, "ready", &ready) &&
	    svc_ready(ready, s) != YX_OK) {
		snprintf(why, whylen, "[%zu].ready: expected {\"port\": 1..65535}", i);
		return YX_E_BAD_REQUEST;
	}
	if ((s->command = strdup(c)) == NULL)
		return YX_E_NOMEM;
	return YX_OK;
}

int
agentcfg_services_parse(struct json_object *v, struct yx_profile *p,
    char *why, size_t whylen)
{
	size_t	i, n;
	int	rc;

	if (!json_object_is_type(v, json_type_array)) {
		snprintf(why, whylen, "expected an array of {\"name\", \"command\"}");
		return YX_E_BAD_REQUEST;
	}
	if ((n = json_object_array_length(v)) > YX_SERVICES_MAX) {
		snprintf(why, whylen, "more than %d services", YX_SERVICES_MAX);
		return YX_E_BAD_REQUEST;
	}
	for (i = 0; i < n; i++) {
		if ((rc = svc_one(json_object_array_get_idx(v, i), i, p, why,
			 whylen)) != YX_OK)
			return rc;
		p->nservices++;
	}
	return YX_OK;
}
