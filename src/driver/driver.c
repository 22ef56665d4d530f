/* SPDX-License-Identifier: MIT */
/*
 * driver.c - the driver factory: yx_driver_new() honours cfg->driver;
 * "auto" pings the Engine API socket and falls back to the `docker` command
 * when the socket does not answer. What the two drivers share is in
 * driver_common.c, which depends on neither.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "driver/driver_int.h"

/* True when an executable `docker` is found on PATH. */
static bool
docker_on_path(void)
{
	const char	*path = getenv("PATH");
	const char	*p, *e;
	char		 cand[4096];
	bool		 found = false;

	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; !found && *p != '\0'; p = (*e == ':') ? e + 1 : e) {
		e = strchr(p, ':');
		if (e == NULL)
			e = p + strlen(p);
		if (e == p)
			continue;
		if (snprintf(cand, sizeof(cand), "%.*s/docker", (int)(e - p),
			p) >= (int)sizeof(cand))
			continue;
		found = access(cand, X_OK) == 0;
	}
	return found;
}

/*
 * Returns a driver (caller frees with yx_driver_free) or NULL with err set
 * on allocation failure. In auto mode the API driver is kept when it answers
 * /_ping; otherwise the CLI driver when docker is on PATH; otherwise the API
 * driver, whose calls then report BACKEND_UNAVAILABLE.
 */
struct yx_driver *
yx_driver_new(const struct yx_config *cfg, struct yx_errctx *err)
{
	struct yx_driver *d = NULL;

	switch (cfg->driver) {
	case YX_DRIVER_CLI:
		d = yx_driver_cli_new(cfg, err);
		break;
	case YX_DRIVER_API:
		d = yx_driver_api_new(cfg, err);
		break;
	case YX_DRIVER_AUTO:
	default:
		if ((d = yx_driver_api_new(cfg, err)) == NULL)
			break;
		if (d->ops->ping(d, NULL) == YX_OK || !docker_on_path())
			break;
		log_info("engine API socket does not answer; using the "
			 "docker command");
		yx_driver_free(d);
		d = yx_driver_cli_new(cfg, err);
		break;
	}
	return d;
}

void
yx_driver_free(struct yx_driver *d)
{
	if (d != NULL)
		d->ops->free(d);
}
