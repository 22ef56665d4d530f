/* SPDX-License-Identifier: MIT */
/*
 * prov_test.h - fixtures shared by the provider tests: a private shared
 * table (its name carries the pid and a counter, and is unlinked at the
 * end), a fake engine and a provider over both.
 */
#ifndef YUXI_TEST_PROV_TEST_H
#define YUXI_TEST_PROV_TEST_H

#include <sys/types.h>

#include "yuxi/provider.h"
#include "fake_driver.h"

struct ptest {
	char			 shm[64];
	struct yx_config	 cfg;
	struct yx_table		*t;
	struct fake_engine	*e;
	struct yx_driver	*d;
	struct yx_provider	 p;
};

/* Table of `cap` slots, max_replicas = cap, fake engine, provider. */
void	ptest_setup(struct ptest *pt, uint32_t cap);
void	ptest_teardown(struct ptest *pt);
/* A request for thread (skills fingerprint fp, may be NULL). */
struct yx_acquire_req ptest_req(const char *thread, const char *fp);
/* Acquire thread and assert success; returns the lease. */
struct yx_lease ptest_acquire(struct ptest *pt, const char *thread);
/* ptest_acquire(), then the hold given back (yx_provider_unhold()): the
 * thread's sandbox runs, idle; returns the lease. */
struct yx_lease ptest_idle(struct ptest *pt, const char *thread);
/* Copy of the slot of thread (state FREE when none). */
struct yx_shm_slot ptest_slot(struct ptest *pt, const char *thread);
/* Wait for a child and return its exit status (-1 when signalled). */
int	ptest_wait(pid_t pid);
/* Sleep ms milliseconds. */
void	ptest_sleep_ms(int ms);
/* Check the table invariants under the lock (criterion asserts). */
void	ptest_check_invariants(struct ptest *pt);

#endif
