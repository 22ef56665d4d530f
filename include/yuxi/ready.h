/* SPDX-License-Identifier: MIT */
/*
 * yuxi/ready.h - the readiness checks: what serving needs, checked the same
 * way by GET /readyz, the master at start-up and `yuxi-sandbox doctor`
 * (docs/operations.md "Readiness").
 *
 * The checks, in order:
 *   engine   the container engine answers a ping;
 *   image    YUXI_SANDBOX_IMAGE is present in the engine;
 *   runtime  the engine can run the runtimes asked for: YUXI_SANDBOX_RUNTIME
 *            (every sandbox without a profile of its own runs under it),
 *            and those a caller names with yx_ready_need_runtime (doctor
 *            and the start-up report: every profile's; not /readyz, where
 *            one profile's missing runtime would take the whole instance
 *            out of a load balancer while its other sandboxes work);
 *            "runc" always passes; "runsc" when the engine has that
 *            runtime with the arguments it needs (yx_driver_runtime_check,
 *            a GET /info);
 *   runner   the in-sandbox runner (YUXI_RUNNER_PATH) is a regular,
 *            executable file;
 *   agent    the in-sandbox agent binary likewise (passes as "not used"
 *            with YUXI_EXEC_AGENT=off);
 *   table    the shared provider table answers its lock and is consistent;
 *   disk     the saves directory's filesystem has YUXI_READY_MIN_FREE free.
 * The engine, image and runtime answers are cached for YX_READY_CACHE_MS, so a
 * load balancer may poll /readyz often; the others are a few system calls.
 *
 * Every result carries two texts: `detail`, safe for any API caller (never
 * a host path, never engine text), and `oper`, for the operator (the log,
 * the CLI), which may name host paths.
 *
 * Ownership: struct yx_ready is caller storage; it borrows the config, the
 * driver and the table (any may be NULL: the checks that need them fail),
 * which must outlive it. One per process; not thread-safe.
 */
#ifndef YUXI_READY_H
#define YUXI_READY_H

#include <stdbool.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/error.h"

#define YX_READY_CACHE_MS	2000

enum yx_ready_id {
	YX_READY_ENGINE,
	YX_READY_IMAGE,
	YX_READY_RUNTIME,
	YX_READY_RUNNER,
	YX_READY_AGENT,
	YX_READY_TABLE,
	YX_READY_DISK,
	YX_READY_N
};

struct yx_ready_result {
	const char	*name;		/* "engine", ... (static) */
	int		 rc;		/* YX_OK when the check passes */
	char		 detail[160];	/* for API callers: no host path */
	char		 oper[YX_CFG_PATH + 256]; /* for operators: may name host paths */
};

struct yx_driver;
struct yx_table;

struct yx_ready {
	const struct yx_config	*cfg;
	struct yx_driver	*drv;
	struct yx_table		*table;
	int64_t			 engine_at_ms;	/* mono ms of the cached answers; 0 = none */
	int64_t			 runtime_at_ms;	/* likewise, the runtime's */
	bool			 runsc;		/* a sandbox may run under runsc */
	struct yx_ready_result	 engine, image, runtime;
};

void	yx_ready_init(struct yx_ready *rd, const struct yx_config *cfg,
    struct yx_driver *drv, struct yx_table *table);
/*
 * Check `runtime` too (a profile's; yx_runtime_valid) from the next run
 * on. Call after yx_ready_init.
 */
void	yx_ready_need_runtime(struct yx_ready *rd, const char *runtime);
/*
 * Run every check into res[YX_READY_N] (indexed by enum yx_ready_id).
 * Returns the number of checks that failed (0: ready).
 */
unsigned yx_ready_run(struct yx_ready *rd, struct yx_ready_result *res);
/* Just the engine ping, through the same cache: true when it answers. */
bool	yx_ready_engine_up(struct yx_ready *rd);
/* The name of check id ("engine", ...); "?" for an unknown id. */
const char *yx_ready_name(int id);

/*
 * The protections this instance runs with (yuxi/config.h, settled by
 * yx_config_settle): the pool of pre-started boxes and the per-thread disk
 * quota, both on by default where the host gives them. Not a check (it
 * never makes the instance unready): /readyz shows it beside the checks,
 * the start-up report logs it (a warning per protection the defaults
 * asked for and the host does not give), doctor prints it. detail and
 * warn[] are for API callers (no host path), oper for operators.
 */
struct yx_ready_protect {
	int		 pool_size;	/* boxes; 0: off */
	bool		 own_uids;	/* each box its own uid (a uid range) */
	int64_t		 disk_quota;	/* bytes per new thread; 0: off */
	unsigned	 lost;		/* YX_PROTECT_* asked for by "auto", not given */
	char		 detail[400];
	char		 oper[YX_CFG_STR + 400];
	unsigned	 nwarn;
	char		 warn[2][256];	/* one per lost protection */
};
void	yx_ready_protect(const struct yx_config *cfg, struct yx_ready_protect *p);

/*
 * Whether this host's kernel leaves room for YUXI_SANDBOX_MAX_REPLICAS
 * sandboxes: each takes about YX_READY_TASKS_PER_SANDBOX tasks (measured
 * 21.4 with the default profile, a pool and a disk quota: the engine's
 * shim's threads, the processes in the box, the disk image's kernel
 * threads), counted against kernel.pid_max and kernel.threads-max with
 * what runs now. false, with a warning for API callers in warn (no host
 * path) and the operator's in oper, when it does not; true otherwise.
 */
#define YX_READY_TASKS_PER_SANDBOX	24
bool	yx_ready_capacity(const struct yx_config *cfg, char *warn, size_t warnlen,
    char *oper, size_t operlen);

/*
 * Whether the engine groups sandboxes into shared shims (YUXI_SHIM_GROUP_SIZE,
 * docs/configuration.md "Shim groups"): true when grouping is off by
 * setting, or when the first containerd-shim-runc-v2 on the PATH of the
 * host's containerd is the grouping shim (src/shim); false, with what was
 * found in oper, when containerd finds the engine's own (one shim process,
 * about 3 MiB, per sandbox) or cannot be looked at (not root, no
 * containerd on this host).
 */
bool	yx_ready_shim_groups(const struct yx_config *cfg, char *oper,
    size_t operlen);

/*
 * The master's children besides workers and reaper that this instance
 * uses (the privileged helper, the egress proxy: yuxi/provider.h, read
 * from the shared table), one result each into res (room for YX_COMP_N):
 * not ready while one that the default profile dflt needs is down (the
 * helper with a disk quota or a pool; the proxy when dflt has network).
 * Returns the count (0 without a table).
 */
struct yx_profile;
unsigned yx_ready_components(struct yx_ready *rd, const struct yx_profile *dflt,
    struct yx_ready_result *res);

#endif /* YUXI_READY_H */
