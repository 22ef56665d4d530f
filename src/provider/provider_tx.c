/* SPDX-License-Identifier: MIT */
/*
 * provider_tx.c - the container of one transactional command (docs/design.md
 * §10 "Where the command runs"): a container of the thread's own settings,
 * hardening, uid and mounts (the same spec as its sandbox), but with the
 * transaction's overlay, not the live files, at /home/yuxi/user-data. It
 * is no slot of the table (the thread's sandbox keeps serving its other
 * commands on the live files meanwhile) and its name, <prefix>tx-<16 hex>
 * of SHA-256(thread id), is none the instance's listings take as its own
 * (yx_driver_name_ours): its owner removes it when the command ended, and
 * a stale one of a dead owner is removed by name before the thread's next
 * transaction and by the journal's recovery.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "provider/provider_int.h"
#include "yuxi/hash.h"
#include "yuxi/log.h"

void
yx_provider_tx_name(const struct yx_provider *p, const char *thread_id, char *buf,
    size_t len)
{
	char hex[YX_SHA256_HEX];

	(void)yx_sha256_hex(thread_id, strlen(thread_id), hex);
	snprintf(buf, len, "%stx-%.16s", p->cfg->container_prefix, hex);
}

int
yx_provider_tx_create(struct yx_provider *p, const struct yx_acquire_req *req,
    const char *name, struct yx_container_info *info, struct yx_errctx *err)
{
	int rc;

	(void)p->driver->ops->remove(p->driver, name, NULL);	/* a stale one */
	rc = yx_prov_create(p, req, name, name + strlen(p->cfg->container_prefix),
	    "transaction", 0, false, info, err);
	if (rc != YX_OK)
		(void)p->driver->ops->remove(p->driver, name, NULL);
	return rc;
}

int
yx_provider_tx_remove(struct yx_provider *p, const char *name)
{
	return p->driver->ops->remove(p->driver, name, NULL);
}
