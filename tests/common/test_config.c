/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - configuration from the environment (src/common/config.c):
 * the defaults, every kind of bad value failing with a message that names
 * its variable, YUXI_SANDBOX_UID_RANGE, sizes with their suffixes
 * (yx_parse_size), booleans, numbers at their bounds, YUXI_INSTANCE and
 * the names it gives. Each test runs in its
 * own process (Criterion), starting from an environment without YUXI_*
 * and without a configuration file (tests/common/test_conffile has those).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/ready.h"
#include "../lib/tutil.h"

/* Drop every YUXI_* variable the caller's environment may hold; then no
 * configuration file either (YUXI_CONFIG=none). */
static void
clear_yuxi_env(void)
{
	tutil_clear_yuxi_env();
	cr_assert_eq(setenv("YUXI_CONFIG", "none", 1), 0);
}

TestSuite(config, .init = clear_yuxi_env);

/* Load with name=value set; the result, the message in eb. */
static int
load_with(const char *name, const char *value, struct yx_config *c,
    char *eb, size_t el)
{
	cr_assert_eq(setenv(name, value, 1), 0);
	eb[0] = '\0';
	return yx_config_load(c, eb, el);
}

/* name=value is refused, and the message starts with "name: ". */
static void
expect_refused(const char *name, const char *value)
{
	struct yx_config	c;
	char			eb[256], want[128];

	cr_expect_eq(load_with(name, value, &c, eb, sizeof(eb)),
	    YX_E_BAD_REQUEST, "%s=%s accepted", name, value);
	snprintf(want, sizeof(want), "%s: ", name);
	cr_expect(strncmp(eb, want, strlen(want)) == 0 &&
		strlen(eb) > strlen(want),
	    "%s=%s: message \"%s\"", name, value, eb);
	cr_assert_eq(unsetenv(name), 0);
}

/* name=value is taken; c holds the result. */
static void
expect_taken(const char *name, const char *value, struct yx_config *c)
{
	char eb[256];

	cr_assert_eq(load_with(name, value, c, eb, sizeof(eb)), YX_OK,
	    "%s=%s: %s", name, value, eb);
	cr_assert_eq(unsetenv(name), 0);
}

Test(config, defaults)
{
	struct yx_config	c, d;
	char			eb[256];

	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	yx_config_defaults(&d);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0, "load without YUXI_* != defaults");
	cr_expect_str_eq(c.image, "yuxi-sandbox:latest");
	cr_expect_str_eq(c.container_prefix, "yuxi-sandbox-");
	cr_expect_eq(c.idle_timeout, 600);
	cr_expect_eq(c.idle_check_interval, 60);
	cr_expect_eq(c.max_replicas, 100);
	cr_expect_eq(c.driver, YX_DRIVER_AUTO);
	cr_expect_eq(c.memory_bytes, 512LL << 20);
	cr_expect(c.cpus == 1.0);
	cr_expect_eq(c.pids, 256);
	cr_expect_str_eq(c.network, "none");
	cr_expect(c.readonly_rootfs);
	cr_expect_str_eq(c.user, "1000:1000");
	cr_expect(c.uid == 1000 && c.gid == 1000);
	cr_expect(c.uid_base == YX_UID_RANGE_BASE && c.uid_count == YX_UID_RANGE_COUNT);
	cr_expect_eq(c.exec_timeout, 120);
	cr_expect_eq(c.output_limit, 256 << 10);
	cr_expect_eq(c.tmp_size, 64LL << 20);
	cr_expect_str_eq(c.saves_dir, YX_STATE_DIR);
	cr_expect_str_eq(c.skills_dir, "");
	cr_expect_str_eq(c.agents_file, "");
	cr_expect_eq(c.workers, 4);
	cr_expect_str_eq(c.fcgi_socket, YX_RUN_DIR "/fcgi.sock");
	cr_expect_eq(c.cmd_policy, YX_CMD_POLICY_STRICT);
	cr_expect_str_eq(c.shm_name, "/yuxi-sandbox");
	cr_expect_eq(c.upload_limit, 64 << 20);
	cr_expect_eq(c.viewer_file_limit, 1 << 20);
	cr_expect_eq(c.body_limit, 8 << 20);
	cr_expect_eq(c.request_budget_ms, 5000);
	cr_expect_eq(c.walk_read_budget, 256 << 20);
	cr_expect_eq(c.exec_agent, YX_EXEC_AGENT_AUTO);
	cr_expect_eq(c.max_threads_per_user, 1000);
	cr_expect_eq(c.max_sandboxes_per_user, 0);
	cr_expect_eq(c.verbose, 0);
	cr_expect_eq(c.ready_min_free, 1LL << 30);
	cr_expect_eq(c.ready_min_free_pct, 0);
	cr_expect_str_eq(c.audit_log, YX_LOG_DIR "/audit.jsonl");
	cr_expect(!c.trust_request_id);
}

/* Readiness, audit log and request-id settings (docs/configuration.md). */
Test(config, observe_settings)
{
	struct yx_config	c;
	char			p[YX_CFG_PATH];

	expect_taken("YUXI_READY_MIN_FREE", "5%", &c);
	cr_expect(c.ready_min_free == 0 && c.ready_min_free_pct == 5);
	expect_taken("YUXI_READY_MIN_FREE", "512m", &c);
	cr_expect(c.ready_min_free == 512LL << 20 && c.ready_min_free_pct == 0);
	expect_taken("YUXI_READY_MIN_FREE", "0", &c);
	cr_expect(c.ready_min_free == 0 && c.ready_min_free_pct == 0);
	expect_refused("YUXI_READY_MIN_FREE", "100%");
	expect_refused("YUXI_READY_MIN_FREE", "-1%");
	expect_refused("YUXI_READY_MIN_FREE", "5%%");
	expect_refused("YUXI_READY_MIN_FREE", "lots");
	expect_taken("YUXI_AUDIT_LOG", "/srv/audit/a.jsonl", &c);
	cr_expect_str_eq(c.audit_log, "/srv/audit/a.jsonl");
	expect_taken("YUXI_AUDIT_LOG", "off", &c);
	cr_expect_str_eq(c.audit_log, "");
	/* unlike other settings, an explicitly empty value is "none" */
	expect_taken("YUXI_AUDIT_LOG", "", &c);
	cr_expect_str_eq(c.audit_log, "");
	expect_refused("YUXI_AUDIT_LOG", "audit.jsonl");
	expect_taken("YUXI_TRUST_REQUEST_ID", "1", &c);
	cr_expect(c.trust_request_id);
	expect_refused("YUXI_TRUST_REQUEST_ID", "sometimes");
	/* the agent binary: its own setting, else beside the runner */
	expect_taken("YUXI_RUNNER_PATH", "/opt/y/bin/yuxi-run", &c);
	yx_config_agent_path(&c, p, sizeof(p));
	cr_expect_str_eq(p, "/opt/y/bin/yuxi-agent");
	cr_assert_eq(setenv("YUXI_AGENT_PATH", "/opt/a/agent", 1), 0);
	expect_taken("YUXI_RUNNER_PATH", "/opt/y/bin/yuxi-run", &c);
	yx_config_agent_path(&c, p, sizeof(p));
	cr_expect_str_eq(p, "/opt/a/agent");
}

/* An empty value is the same as an unset one, for every kind. */
Test(config, empty_value_means_default)
{
	static const char *const names[] = { "YUXI_WORKERS", "YUXI_SANDBOX_IMAGE",
		"YUXI_SAVES_DIR", "YUXI_SANDBOX_MEMORY", "YUXI_SANDBOX_READONLY_ROOTFS",
		"YUXI_DOCKER_DRIVER", "YUXI_SANDBOX_CPUS", "YUXI_SANDBOX_UID_RANGE" };
	struct yx_config	c, d;
	size_t			i;

	yx_config_defaults(&d);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_eq(setenv(names[i], "", 1), 0);
	expect_taken("YUXI_DEBUG", "", &c);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0);
}

/* Each kind of bad value, and the variable it names. */
Test(config, thread_disk_quota)
{
	struct yx_config c;

	yx_config_defaults(&c);
	cr_assert(c.disk_quota_auto);			/* auto ... */
	cr_assert_eq(c.thread_disk_quota, 0);		/* ... unsettled: 0 */
	expect_taken("YUXI_THREAD_DISK_QUOTA", "", &c);
	cr_assert(c.disk_quota_auto && c.thread_disk_quota == 0);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "auto", &c);
	cr_assert(c.disk_quota_auto && c.thread_disk_quota == 0);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "0", &c);
	cr_assert(!c.disk_quota_auto && c.thread_disk_quota == 0);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "off", &c);
	cr_assert(!c.disk_quota_auto && c.thread_disk_quota == 0);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "8m", &c);
	cr_assert(!c.disk_quota_auto);
	cr_assert_eq(c.thread_disk_quota, 8LL << 20);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "1G", &c);
	cr_assert_eq(c.thread_disk_quota, 1LL << 30);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "16384g", &c);
	cr_assert_eq(c.thread_disk_quota, 16LL << 40);
}

Test(config, pool_size)
{
	struct yx_config c;

	yx_config_defaults(&c);
	cr_assert(c.pool_auto && c.pool_size == 0);
	expect_taken("YUXI_POOL_SIZE", "auto", &c);
	cr_assert(c.pool_auto && c.pool_size == 0);
	expect_taken("YUXI_POOL_SIZE", "0", &c);
	cr_assert(!c.pool_auto && c.pool_size == 0);
	expect_taken("YUXI_POOL_SIZE", "64", &c);
	cr_assert(!c.pool_auto && c.pool_size == 64);
}

/* The pool rule: one box per worker, at least 2, at most a quarter of the
 * table and 64. */
Test(config, pool_rule)
{
	static const struct {
		int workers, replicas, want;
	} rows[] = {
		{ 4, 100, 4 },
		{ 1, 100, 2 },
		{ 3, 100, 3 },
		{ 256, 4096, 64 },
		{ 8, 16, 4 },
		{ 4, 8, 2 },
		{ 4, 7, 1 },
		{ 4, 3, 0 },
		{ 16, 1000, 16 },
	};
	struct yx_config	c;
	size_t			i;

	yx_config_defaults(&c);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		c.workers = rows[i].workers;
		c.max_replicas = rows[i].replicas;
		cr_expect_eq(yx_config_pool_rule(&c), rows[i].want, "%d workers, %d replicas",
		    rows[i].workers, rows[i].replicas);
	}
}

/* Settling the protections: auto ones on where the host gives them, off
 * and noted where it does not; explicit ones untouched (and refused by
 * yx_config_protect_check when the host cannot give them). */
Test(config, settle)
{
	struct yx_config	c;
	char			eb[512];

	yx_config_defaults(&c);
	yx_config_settle(&c, YX_PROTECT_ALL, NULL);
	cr_assert_eq(c.pool_size, yx_config_pool_rule(&c));
	cr_assert_eq(c.thread_disk_quota, YX_DISK_QUOTA_AUTO);
	cr_assert_eq(c.protect_lost, 0);
	cr_assert_eq(yx_config_protect_check(&c, eb, sizeof(eb)), YX_OK);

	yx_config_defaults(&c);
	yx_config_settle(&c, YX_PROTECT_POOL, "no loop devices");
	cr_assert_eq(c.pool_size, 4);
	cr_assert_eq(c.thread_disk_quota, 0);
	cr_assert_eq(c.protect_lost, YX_PROTECT_QUOTA);
	cr_assert_str_eq(c.protect_why, "no loop devices");

	yx_config_defaults(&c);
	yx_config_settle(&c, 0, "no CAP_SYS_ADMIN");
	cr_assert(c.pool_size == 0 && c.thread_disk_quota == 0);
	cr_assert_eq(c.protect_lost, YX_PROTECT_ALL);
	cr_assert_eq(yx_config_protect_check(&c, eb, sizeof(eb)), YX_OK);

	/* explicit: left alone, then refused */
	expect_taken("YUXI_POOL_SIZE", "2", &c);
	yx_config_settle(&c, 0, "no CAP_SYS_ADMIN");
	cr_assert_eq(c.pool_size, 2);
	cr_assert_eq(c.protect_lost, YX_PROTECT_QUOTA);
	cr_assert_eq(yx_config_protect_check(&c, eb, sizeof(eb)), YX_E_FORBIDDEN);
	cr_assert(strstr(eb, "YUXI_POOL_SIZE") != NULL && strstr(eb, "no CAP_SYS_ADMIN"), "%s", eb);
	expect_taken("YUXI_THREAD_DISK_QUOTA", "1g", &c);
	c.pool_size = 0;
	yx_config_settle(&c, YX_PROTECT_POOL, "no loop devices");
	cr_assert_eq(yx_config_protect_check(&c, eb, sizeof(eb)), YX_E_FORBIDDEN);
	cr_assert(strstr(eb, "YUXI_THREAD_DISK_QUOTA") != NULL, "%s", eb);

	/* explicit off: nothing lost; a front: nothing at all */
	expect_taken("YUXI_THREAD_DISK_QUOTA", "0", &c);
	yx_config_settle(&c, YX_PROTECT_POOL, NULL);
	cr_assert_eq(c.protect_lost, 0);
	yx_config_defaults(&c);
	c.mode = YX_MODE_FRONT;
	yx_config_settle(&c, YX_PROTECT_ALL, NULL);
	cr_assert(c.pool_size == 0 && c.thread_disk_quota == 0 && c.protect_lost == 0);
}

Test(config, bad_values_name_their_variable)
{
	static const struct {
		const char *name, *value;
	} bad[] = {
		/* integers: not a number, trailing bytes, out of [lo, hi] */
		{ "YUXI_WORKERS", "four" },
		{ "YUXI_WORKERS", "4x" },
		{ "YUXI_WORKERS", "0" },
		{ "YUXI_WORKERS", "257" },
		{ "YUXI_WORKERS", "-1" },
		{ "YUXI_WORKERS", "99999999999999999999" },
		{ "YUXI_USER_COMMANDS", "-1" },
		{ "YUXI_USER_COMMANDS", "257" },
		{ "YUXI_SANDBOX_EXEC_TIMEOUT", "601" },
		{ "YUXI_SANDBOX_BASE_PORT", "65001" },
		{ "YUXI_REQUEST_BUDGET_MS", "-5" },
		{ "YUXI_MAX_THREADS_PER_USER", "-1" },
		{ "YUXI_MAX_THREADS_PER_USER", "1000001" },
		{ "YUXI_MAX_SANDBOXES_PER_USER", "4097" },
		/* strings: a line break (would split a log line or a header) */
		{ "YUXI_SANDBOX_IMAGE", "img\nX-Injected: 1" },
		{ "YUXI_SANDBOX_HOST", "a\rb" },
		/* absolute paths */
		{ "YUXI_SAVES_DIR", "var/lib/yuxi" },
		{ "YUXI_FCGI_SOCKET", "fcgi.sock" },
		{ "YUXI_RUNNER_PATH", "./yuxi-run" },
		/* sizes: no number, unknown suffix, below / above the limits */
		{ "YUXI_SANDBOX_MEMORY", "lots" },
		{ "YUXI_SANDBOX_MEMORY", "512q" },
		{ "YUXI_SANDBOX_MEMORY", "5m" },
		{ "YUXI_SANDBOX_MEMORY", "2t" },
		{ "YUXI_UPLOAD_LIMIT", "1023" },
		{ "YUXI_BODY_LIMIT", "2g" },
		{ "YUXI_THREAD_DISK_QUOTA", "1m" },
		{ "YUXI_THREAD_DISK_QUOTA", "16385g" },
		{ "YUXI_THREAD_DISK_QUOTA", "-1" },
		{ "YUXI_THREAD_DISK_QUOTA", "lots" },
		{ "YUXI_POOL_SIZE", "65" },
		{ "YUXI_POOL_SIZE", "-1" },
		{ "YUXI_POOL_SIZE", "many" },
		/* booleans */
		{ "YUXI_SANDBOX_READONLY_ROOTFS", "maybe" },
		{ "YUXI_DEBUG", "2" },
		/* enumerations */
		{ "YUXI_DOCKER_DRIVER", "podman" },
		{ "YUXI_COMMAND_PATH_POLICY", "lax" },
		{ "YUXI_EXEC_AGENT", "sometimes" },
		/* the cpu count: range, not a finite number */
		{ "YUXI_SANDBOX_CPUS", "0" },
		{ "YUXI_SANDBOX_CPUS", "257" },
		{ "YUXI_SANDBOX_CPUS", "nan" },
		{ "YUXI_SANDBOX_CPUS", "inf" },
		{ "YUXI_SANDBOX_CPUS", "1,5" },
		/* the sandbox user: root, not numeric */
		{ "YUXI_SANDBOX_USER", "0" },
		{ "YUXI_SANDBOX_USER", "0:1000" },
		{ "YUXI_SANDBOX_USER", "yuxi" },
		{ "YUXI_SANDBOX_USER", "1000:" },
		/* names that reach the engine, the shm namespace, docker run */
		{ "YUXI_SANDBOX_CONTAINER_PREFIX", "a/b" },
		{ "YUXI_SANDBOX_CONTAINER_PREFIX", "-x" },
		{ "YUXI_SHM_NAME", "yuxi" },
		{ "YUXI_SHM_NAME", "/a/b" },
		{ "YUXI_SANDBOX_NETWORK", "host net" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(bad[i].name, bad[i].value);
}

Test(config, too_long_string_refused)
{
	struct yx_config	c;
	char			v[YX_CFG_STR + 1];

	memset(v, 'a', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	expect_refused("YUXI_SANDBOX_IMAGE", v);
	v[YX_CFG_STR - 1] = '\0';	/* 255 bytes and the NUL: fits */
	expect_taken("YUXI_SANDBOX_IMAGE", v, &c);
	cr_expect_eq(strlen(c.image), YX_CFG_STR - 1);
}

/* The first bad variable in load order is the one reported. */
Test(config, first_failure_reported)
{
	struct yx_config	c;
	char			eb[256];

	cr_assert_eq(setenv("YUXI_WORKERS", "0", 1), 0);
	cr_assert_eq(load_with("YUXI_SANDBOX_IMAGE", "a\nb", &c, eb, sizeof(eb)),
	    YX_E_BAD_REQUEST);
	cr_expect_str_eq(eb, "YUXI_SANDBOX_IMAGE: control characters not allowed");
}

/* The message is cut to the buffer; no buffer at all is allowed. */
Test(config, message_buffer)
{
	struct yx_config	c;
	char			eb[8];

	cr_assert_eq(load_with("YUXI_WORKERS", "0", &c, eb, sizeof(eb)),
	    YX_E_BAD_REQUEST);
	cr_expect_str_eq(eb, "YUXI_WO");
	cr_expect_eq(yx_config_load(&c, NULL, 0), YX_E_BAD_REQUEST);
}

#define INT_AT(member) offsetof(struct yx_config, member)

Test(config, integer_bounds_inclusive)
{
	static const struct {
		const char *name, *value;
		size_t	    off;	/* of an int member of struct yx_config */
		int	    want;
	} t[] = {
		{ "YUXI_WORKERS", "1", INT_AT(workers), 1 },
		{ "YUXI_WORKERS", "256", INT_AT(workers), 256 },
		{ "YUXI_SANDBOX_EXEC_TIMEOUT", "600", INT_AT(exec_timeout), 600 },
		{ "YUXI_REQUEST_BUDGET_MS", "0", INT_AT(request_budget_ms), 0 },
		{ "YUXI_MAX_THREADS_PER_USER", "0", INT_AT(max_threads_per_user), 0 },
		{ "YUXI_MAX_SANDBOXES_PER_USER", "4096", INT_AT(max_sandboxes_per_user),
		    4096 },
	};
	struct yx_config	c;
	size_t			i;
	int			got;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		expect_taken(t[i].name, t[i].value, &c);
		memcpy(&got, (const char *)&c + t[i].off, sizeof(got));
		cr_expect_eq(got, t[i].want, "%s=%s: %d", t[i].name, t[i].value, got);
	}
}

Test(config, booleans)
{
	static const char *const yes[] = { "1", "true", "TRUE", "yes", "On" };
	static const char *const no[] = { "0", "false", "No", "OFF", "off" };
	struct yx_config	c;
	size_t			i;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		expect_taken("YUXI_SANDBOX_READONLY_ROOTFS", no[i], &c);
		cr_expect_not(c.readonly_rootfs, "%s", no[i]);
	}
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		expect_taken("YUXI_SANDBOX_READONLY_ROOTFS", yes[i], &c);
		cr_expect(c.readonly_rootfs, "%s", yes[i]);
		expect_taken("YUXI_DEBUG", yes[i], &c);
		cr_expect_eq(c.verbose, 1, "%s", yes[i]);
	}
}

Test(config, sizes_with_suffixes)
{
	static const struct {
		const char *v;
		int64_t	    want;
	} t[] = {
		{ "268435456", 256LL << 20 },
		{ "262144k", 256LL << 20 },
		{ "256m", 256LL << 20 },
		{ "256M", 256LL << 20 },
		{ "256mb", 256LL << 20 },
		{ "256Mi", 256LL << 20 },
		{ "1g", 1LL << 30 },
		{ "1G", 1LL << 30 },
		{ "1GB", 1LL << 30 },
		{ "6m", 6LL << 20 },
		{ "1024g", 1LL << 40 },
	};
	struct yx_config	c;
	size_t			i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		expect_taken("YUXI_SANDBOX_MEMORY", t[i].v, &c);
		cr_expect_eq(c.memory_bytes, t[i].want, "%s -> %lld", t[i].v,
		    (long long)c.memory_bytes);
	}
	expect_taken("YUXI_SANDBOX_OUTPUT_LIMIT", "4k", &c);
	cr_expect_eq(c.output_limit, 4096);
	expect_taken("YUXI_WALK_READ_BUDGET", "0", &c);
	cr_expect_eq(c.walk_read_budget, 0);
}

/* The value of enumeration variable name in c. */
static int
enum_of(const struct yx_config *c, const char *name)
{
	if (strcmp(name, "YUXI_DOCKER_DRIVER") == 0)
		return c->driver;
	if (strcmp(name, "YUXI_COMMAND_PATH_POLICY") == 0)
		return c->cmd_policy;
	return c->exec_agent;
}

Test(config, enumerations_and_cpus)
{
	static const struct {
		const char *name, *value;
		int	    want;
	} t[] = {
		{ "YUXI_DOCKER_DRIVER", "cli", YX_DRIVER_CLI },
		{ "YUXI_DOCKER_DRIVER", "api", YX_DRIVER_API },
		{ "YUXI_DOCKER_DRIVER", "auto", YX_DRIVER_AUTO },
		{ "YUXI_COMMAND_PATH_POLICY", "off", YX_CMD_POLICY_OFF },
		{ "YUXI_COMMAND_PATH_POLICY", "strict", YX_CMD_POLICY_STRICT },
		{ "YUXI_EXEC_AGENT", "0", YX_EXEC_AGENT_OFF },
		{ "YUXI_EXEC_AGENT", "off", YX_EXEC_AGENT_OFF },
		{ "YUXI_EXEC_AGENT", "only", YX_EXEC_AGENT_ONLY },
		{ "YUXI_EXEC_AGENT", "1", YX_EXEC_AGENT_AUTO },
	};
	struct yx_config	c;
	size_t			i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		expect_taken(t[i].name, t[i].value, &c);
		cr_expect_eq(enum_of(&c, t[i].name), t[i].want, "%s=%s",
		    t[i].name, t[i].value);
	}
	expect_taken("YUXI_SANDBOX_CPUS", "0.5", &c);
	cr_expect(c.cpus == 0.5);
	expect_taken("YUXI_SANDBOX_CPUS", "0.01", &c);
	expect_refused("YUXI_SANDBOX_CPUS", "0.009");
}

Test(config, sandbox_user)
{
	struct yx_config c;

	expect_taken("YUXI_SANDBOX_USER", "1234", &c);
	cr_expect(c.uid == 1234 && c.gid == 1234);
	expect_taken("YUXI_SANDBOX_USER", "1234:99", &c);
	cr_expect(c.uid == 1234 && c.gid == 99);
}

Test(config, uid_range)
{
	struct yx_config c;

	expect_taken("YUXI_SANDBOX_UID_RANGE", "off", &c);
	cr_expect(c.uid_base == 0 && c.uid_count == 0);
	expect_taken("YUXI_SANDBOX_UID_RANGE", "100000-100015", &c);	/* 16 */
	cr_expect(c.uid_base == 100000 && c.uid_count == 16);
	expect_taken("YUXI_SANDBOX_UID_RANGE", "2147483632-2147483647", &c);
	cr_expect(c.uid_base == 2147483632u && c.uid_count == 16);
	expect_refused("YUXI_SANDBOX_UID_RANGE", "100000-100014");	/* 15 */
	expect_refused("YUXI_SANDBOX_UID_RANGE", "0-100");		/* root */
	expect_refused("YUXI_SANDBOX_UID_RANGE", "2147483632-2147483648");
	expect_refused("YUXI_SANDBOX_UID_RANGE", "900-2000");	/* holds 1000 */
	expect_refused("YUXI_SANDBOX_UID_RANGE", "100000-100100x");
	expect_refused("YUXI_SANDBOX_UID_RANGE", "100000");
	expect_refused("YUXI_SANDBOX_UID_RANGE", "on");
	/* the shared user moved out of the way: the same range is fine */
	cr_assert_eq(setenv("YUXI_SANDBOX_USER", "5000", 1), 0);
	expect_taken("YUXI_SANDBOX_UID_RANGE", "900-2000", &c);
	cr_expect(c.uid_base == 900 && c.uid_count == 1101);
}

Test(config, parse_size)
{
	static const struct {
		const char *s;
		int64_t	    want;
	} ok[] = {
		{ "0", 0 },
		{ "1", 1 },
		{ "2k", 2048 },
		{ "2K", 2048 },
		{ "2kb", 2048 },
		{ "3m", 3LL << 20 },
		{ "5g", 5LL << 30 },
		{ "9223372036854775807", INT64_MAX },
		{ "8589934591g", 8589934591LL << 30 },
	};
	static const char *const bad[] = { "", "k", "-1", "+1", " 1", "1 ", "100b",
		"1.5g", "1kk", "1 k", "1t", "0x10", "9223372036854775808",
		"8589934592g", "1gbb" };
	int64_t	v;
	size_t	i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = -1;
		cr_expect_eq(yx_parse_size(ok[i].s, &v), YX_OK, "%s", ok[i].s);
		cr_expect_eq(v, ok[i].want, "%s -> %lld", ok[i].s, (long long)v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		cr_expect_eq(yx_parse_size(bad[i], &v), YX_E_BAD_REQUEST, "\"%s\"",
		    bad[i]);
		cr_expect_eq(v, 42, "\"%s\" wrote its output", bad[i]);
	}
	cr_expect_eq(yx_parse_size(NULL, &v), YX_E_BAD_REQUEST);
}

/* YUXI_INSTANCE names the table and the containers; explicit names win. */
Test(config, instance_names_table_and_containers)
{
	struct yx_config	c;
	char			eb[256];

	expect_taken("YUXI_INSTANCE", "second_2", &c);
	cr_assert_str_eq(c.instance, "second_2");
	cr_assert_str_eq(c.shm_name, "/yuxi-sandbox.second_2");
	cr_assert_str_eq(c.container_prefix, "yuxi-sandbox.second_2-");
	cr_assert_eq(setenv("YUXI_INSTANCE", "second_2", 1), 0);
	cr_assert_eq(setenv("YUXI_SHM_NAME", "/mine", 1), 0);
	cr_assert_eq(setenv("YUXI_SANDBOX_CONTAINER_PREFIX", "mine-", 1), 0);
	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_assert_str_eq(c.instance, "second_2");
	cr_assert_str_eq(c.shm_name, "/mine");
	cr_assert_str_eq(c.container_prefix, "mine-");
	cr_assert_eq(unsetenv("YUXI_SHM_NAME"), 0);
	cr_assert_eq(unsetenv("YUXI_SANDBOX_CONTAINER_PREFIX"), 0);
	cr_assert_eq(unsetenv("YUXI_INSTANCE"), 0);
	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_assert_str_eq(c.instance, "");
	cr_assert_str_eq(c.shm_name, "/yuxi-sandbox");
	cr_assert_str_eq(c.container_prefix, "yuxi-sandbox-");
	/* no '-' or '.': no instance's prefix can begin another's */
	expect_refused("YUXI_INSTANCE", "a-b");
	expect_refused("YUXI_INSTANCE", "a.b");
	expect_refused("YUXI_INSTANCE", "_a");
	expect_refused("YUXI_INSTANCE", "Upper");
	expect_refused("YUXI_INSTANCE", "a b");
	expect_refused("YUXI_INSTANCE", "abcdefghijklmnopqrstuvwxyz0123456");
	expect_taken("YUXI_INSTANCE", "abcdefghijklmnopqrstuvwxyz012345", &c);
}

/*
 * yx_ready_capacity: the table's size against the tasks the kernel leaves
 * (kernel.pid_max, threads-max, minus what runs): a table no host here
 * can hold is warned about, naming the setting and the sysctl, and a
 * table of one sandbox is not.
 */
Test(config, capacity_against_the_kernel)
{
	struct yx_config	c;
	char			w[256], o[512];
	FILE			*f;
	long long		pid_max = 0;

	yx_config_defaults(&c);
	c.max_replicas = 1;
	cr_expect(yx_ready_capacity(&c, w, sizeof(w), o, sizeof(o)), "%s", o);
	cr_expect_str_eq(w, "");
	if ((f = fopen("/proc/sys/kernel/pid_max", "r")) == NULL ||
	    fscanf(f, "%lld", &pid_max) != 1 ||
	    pid_max >= 4096LL * YX_READY_TASKS_PER_SANDBOX) {
		if (f != NULL)
			fclose(f);
		cr_skip_test("kernel.pid_max leaves room for 4,096 sandboxes");
	}
	fclose(f);
	c.max_replicas = 4096;
	cr_assert_not(yx_ready_capacity(&c, w, sizeof(w), o, sizeof(o)));
	cr_expect_not_null(strstr(w, "YUXI_SANDBOX_MAX_REPLICAS=4096"), "%s", w);
	cr_expect_not_null(strstr(o, "sysctl -w kernel."), "%s", o);
	c.mode = YX_MODE_FRONT;	/* a front runs no sandboxes */
	cr_expect(yx_ready_capacity(&c, w, sizeof(w), o, sizeof(o)));
}
