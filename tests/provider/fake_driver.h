/* SPDX-License-Identifier: MIT */
/*
 * fake_driver.h - an in-test container driver for fault injection in the
 * provider tests: its "engine" lives in an anonymous shared mapping, so
 * forked processes see the same containers and call counters. It can be
 * slow (create sleeps), fail (create/inspect answer a chosen error), and
 * lose containers behind the provider's back. The real-engine behaviour is
 * tested elsewhere against dockerd; this one exists because a real engine
 * cannot inject these faults.
 */
#ifndef YUXI_TEST_FAKE_DRIVER_H
#define YUXI_TEST_FAKE_DRIVER_H

#include <pthread.h>
#include <stdbool.h>

#include "yuxi/driver.h"

#define FAKE_MAX 256

struct fake_container {
	bool				used;
	struct yx_container_info	info;
};

struct fake_engine {
	pthread_mutex_t		lock;		/* pshared, robust */
	int			create_calls;
	int			remove_calls;
	int			inspect_calls;
	int			start_calls;
	int			create_delay_ms;
	int			fail_create;	/* error code, 0 = none */
	int			fail_inspect;
	int			fail_list;
	unsigned		seq;
	int			last_host_port;	/* of the last create */
	int			last_nmounts;
	char			last_mount_host[8][256];
	char			last_mount_target[8][256];
	struct fake_container	c[FAKE_MAX];
};

/* A fresh engine in a MAP_SHARED|MAP_ANONYMOUS mapping (inherited by fork). */
struct fake_engine	*fake_engine_new(void);
void			 fake_engine_free(struct fake_engine *e);
/* A driver over the engine (one per process; free with yx_driver_free). */
struct yx_driver	*fake_driver_new(struct fake_engine *e,
    const struct yx_config			     *cfg);

/* Test helpers. */
int	fake_add(struct fake_engine *e, const char *name, const char *thread,
    const char *sid, const char *fp, bool running);
/* Number of containers that exist. */
int	fake_count(struct fake_engine *e);
/* Remove (vanish) or stop a container by name; true when found. */
bool	fake_vanish(struct fake_engine *e, const char *name);
bool	fake_stop(struct fake_engine *e, const char *name);
/* Copy of the container named name; true when found. */
bool	fake_get(struct fake_engine *e, const char *name,
    struct yx_container_info *out);

#endif
