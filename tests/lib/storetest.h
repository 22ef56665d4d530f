/* SPDX-License-Identifier: MIT */
/*
 * storetest.h - the fixture of the thread store tests (tests/threads): a
 * store with the default configuration over a fresh temporary tree.
 */
#ifndef TESTS_LIB_STORETEST_H
#define TESTS_LIB_STORETEST_H

#include <stddef.h>

#include "yuxi/config.h"
#include "yuxi/threads.h"

/*
 * Make /tmp/<name>-XXXXXX (its path in base, basesz bytes), load the
 * defaults into cfg with the saves directory <base>/saves and open st over
 * it. Failures are Criterion assertions.
 */
void	storetest_open(const char *name, char *base, size_t basesz,
    struct yx_config *cfg, struct yx_thread_store *st);
/*
 * storetest_open(), then a thread disk of quota bytes on filesystem fs
 * (enum yx_disk_fs) in both cfg and st, then the privileged helper started
 * over cfg without dropping CAP_SYS_ADMIN (priv_start(..., false)), so that
 * the test can plant and clean up what the helper must refuse (tests/priv).
 * Failures are Criterion assertions; close with storetest_priv_close().
 */
void	storetest_priv_open(const char *name, char *base, size_t basesz,
    struct yx_config *cfg, struct yx_thread_store *st, long long quota,
    int fs);
/* Close st and remove the tree at base (with yx_tree_remove). */
void	storetest_close(const char *base, struct yx_thread_store *st);
/* The same after the privileged helper ran on it (tests/priv): stop the
 * helper and unmount what it left mounted below base first. */
void	storetest_priv_close(const char *base, struct yx_thread_store *st);
/* A thread record to create: id, owner and agent_id set, the rest zero. */
struct yx_thread storetest_thread(const char *id, const char *owner,
    const char *agent_id);

#endif
