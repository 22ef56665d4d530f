/* SPDX-License-Identifier: MIT */
/*
 * provider_orphans.c - sandboxes no live instance owns (issue 27,
 * docs/operations.md "Orphaned sandboxes"): containers with this service's
 * label io.yuxi.sandbox=1 whose name starts with no live instance's
 * container prefix. They are what a sandbox host that was killed for good
 * leaves behind (its reaper, which would remove them, is gone with it),
 * or an instance started under another prefix since.
 *
 * A live instance is one whose master holds its table's lock
 * (yuxi/tablelock.h): the lock's line ends with its container prefix
 * (YX_ORPHAN_PREFIX_TAG). The caller's own prefix always counts as owned:
 * `yuxi-sandbox gc` (without --orphans) and `gc --all` manage those.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/provider_int.h"
#include "yuxi/driver.h"
#include "yuxi/log.h"
#include "yuxi/tablelock.h"

#define ORPHAN_PREFIXES	256	/* live instances we keep track of */

struct orphan_live {
	char	prefix[ORPHAN_PREFIXES][sizeof(((struct yx_config *)0)->container_prefix)];
	size_t	n;
};

/* A live instance's line: note its prefix (the text after the tag). */
static void
orphan_note(void *arg, const char *desc)
{
	struct orphan_live	*lv = arg;
	const char		*p = strstr(desc, YX_ORPHAN_PREFIX_TAG);

	if (p == NULL || lv->n == ORPHAN_PREFIXES)
		return;
	p += strlen(YX_ORPHAN_PREFIX_TAG);
	snprintf(lv->prefix[lv->n], sizeof(lv->prefix[0]), "%.*s", (int)strcspn(p, " \t\n"), p);
	if (lv->prefix[lv->n][0] != '\0')
		lv->n++;
}

static bool
orphan_owned(const struct orphan_live *lv, const char *name)
{
	size_t i;

	for (i = 0; i < lv->n; i++)
		if (yx_driver_name_ours(lv->prefix[i], name) ||
		    yx_driver_name_tx(lv->prefix[i], name))
			return true;
	return false;
}

int
yx_orphans_find(const struct yx_config *cfg, const char *only,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err)
{
	struct yx_container_info	*all = NULL;
	struct orphan_live		*lv = NULL;
	struct yx_driver		*drv = NULL;
	struct yx_config		*any = NULL;
	size_t				 nall = 0, i;
	int				 rc;

	*out = NULL;
	*n = 0;
	if ((lv = calloc(1, sizeof(*lv))) == NULL || (any = malloc(sizeof(*any))) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	snprintf(lv->prefix[lv->n++], sizeof(lv->prefix[0]), "%s", cfg->container_prefix);
	if ((rc = yx_tablelock_each_live(orphan_note, lv)) != YX_OK) {
		rc = yx_fail(err, rc, "cannot read the table locks in /dev/shm");
		goto done;
	}
	/* every labelled container, whatever its prefix */
	*any = *cfg;
	any->container_prefix[0] = '\0';
	if ((drv = yx_driver_new(any, err)) == NULL) {
		rc = err != NULL && err->code != YX_OK ? err->code : YX_E_NOMEM;
		goto done;
	}
	if ((rc = drv->ops->list(drv, &all, &nall, err)) != YX_OK)
		goto done;
	for (i = 0; i < nall; i++) {
		if (orphan_owned(lv, all[i].name) ||
		    (only != NULL && strncmp(all[i].name, only, strlen(only)) != 0))
			continue;
		all[(*n)++] = all[i];
	}
	*out = all;
	all = NULL;
done:
	free(all);
	yx_driver_free(drv);
	free(any);
	free(lv);
	return rc;
}

int
yx_orphans_remove(const struct yx_config *cfg, const struct yx_container_info *v,
    size_t n, unsigned *removed, struct yx_errctx *err)
{
	struct yx_driver	*drv;
	size_t			 i;
	int			 rc = YX_OK, r;

	*removed = 0;
	if ((drv = yx_driver_new(cfg, err)) == NULL)
		return err != NULL && err->code != YX_OK ? err->code : YX_E_NOMEM;
	for (i = 0; i < n; i++) {
		if ((r = drv->ops->remove(drv, v[i].id, err)) == YX_OK) {
			(*removed)++;
			log_info("orphaned sandbox %s (thread %s) removed", v[i].name,
			    v[i].thread_id[0] != '\0' ? v[i].thread_id : "-");
		} else if (rc == YX_OK)
			rc = r;
	}
	yx_driver_free(drv);
	return rc;
}
