/* SPDX-License-Identifier: MIT */
/*
 * yuxi/driver.h - container engine drivers (docs/design.md §3 "Engine access").
 *
 * A driver turns container lifecycle and exec requests into engine calls:
 *   - "api": the Docker Engine HTTP API (v1.41) over the unix socket, libcurl;
 *   - "cli": the `docker` command, the fallback;
 *   - later, remote provisioners and in-sandbox agents add transports.
 * The provider (include/yuxi/provider.h) talks only to this interface.
 *
 * Ownership: yx_driver_new() returns a heap driver freed with
 * yx_driver_free() (NULL is a no-op). A driver is used by one process; after
 * fork() each process creates its own (libcurl handles are not fork-safe).
 * All calls are blocking and bounded by timeouts; none touch the shared table.
 *
 * Errors: YX_E_BACKEND_UNAVAILABLE when the engine cannot be reached or
 * answers 5xx; YX_E_IMAGE_MISSING names the image and the command that builds
 * it; YX_E_NOT_FOUND for an unknown container; YX_E_FILE_EXISTS for a name
 * conflict on create. Details go into the yx_errctx (NULL allowed).
 */
#ifndef YUXI_DRIVER_H
#define YUXI_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"

#define YX_LABEL_SANDBOX	"io.yuxi.sandbox"
#define YX_LABEL_THREAD		"io.yuxi.sandbox.thread"
#define YX_LABEL_ID		"io.yuxi.sandbox.id"
#define YX_LABEL_SKILLS		"io.yuxi.sandbox.skills"	/* skills fingerprint */

/*
 * A spec whose mounts include one at YX_SPEC_HOSTS, with network mode
 * "none" and no published port, leaves the engine no network to set up:
 * the Engine API driver then asks for none at all (Config.NetworkDisabled;
 * the runtime gives the container a network namespace of its own with only
 * the loopback interface, as mode "none" does, and the engine writes no
 * /etc/hosts or /etc/resolv.conf). The `docker run` form cannot say so and
 * keeps mode "none".
 */
#define YX_SPEC_HOSTS		"/etc/hosts"

#define YX_CONTAINER_ID_MAX	65	/* 64 hex + NUL */
#define YX_CONTAINER_NAME_MAX	128

struct yx_driver;

struct yx_mount {
	const char	*host;		/* absolute host path (bind source) */
	const char	*target;	/* absolute container path */
	bool		 readonly;
};

/* Everything needed to create one sandbox container. Borrowed pointers. */
struct yx_container_spec {
	const char		*name;		/* <prefix><sandbox_id> */
	const char		*image;
	const char		*thread_id;	/* label io.yuxi.sandbox.thread */
	const char		*sandbox_id;	/* label io.yuxi.sandbox.id */
	const char		*skills_fp;	/* label io.yuxi.sandbox.skills ("" ok) */
	const struct yx_mount	*mounts;
	size_t			 nmounts;
	int			 host_port;	/* >0: publish container port 8080 there */
	const struct yx_config	*cfg;		/* limits, user, network, security opts */
	unsigned		 uid, gid;	/* sandbox user; uid 0 = cfg->uid:gid */
	const char *const	*cmd;		/* NULL-terminated; NULL = image's */
	/* binds made with rslave propagation (a pool box's user-data and
	 * skills directories: mounts added below them later appear inside) */
	const struct yx_mount	*slave;
	size_t			 nslave;
	bool			 own_shim;	/* never in an engine shim group */
};

/* Whether a container of spec s is in an engine shim group (its
 * YUXI_SHIM_GROUP: docs/configuration.md "Shim groups"). */
bool	yx_spec_grouped(const struct yx_container_spec *s);

struct yx_container_info {
	char	id[YX_CONTAINER_ID_MAX];
	char	name[YX_CONTAINER_NAME_MAX];	/* without the leading '/' */
	char	thread_id[YX_THREAD_ID_SIZE];	/* from the label, "" if absent */
	char	sandbox_id[65];			/* from the label */
	char	skills_fp[65];			/* from the label */
	bool	running;
	int64_t	created;			/* unix seconds */
};

/*
 * Output sink for exec: called with each chunk of combined stdout/stderr in
 * write order. Return YX_OK to continue; anything else stops reading (the
 * exec is then killed) and is returned by yx_driver_exec().
 */
typedef int (*yx_output_fn)(void *arg, const char *data, size_t len);

struct yx_exec_req {
	const char *const	*argv;		/* NULL-terminated */
	const char *const	*env;		/* "K=V", NULL-terminated, may be NULL */
	const char		*workdir;	/* may be NULL */
	const char		*user;		/* "1000:1000", may be NULL (image default) */
	int			 timeout_sec;	/* > 0: kill the whole process tree after it */
	yx_output_fn		 on_output;
	void			*arg;		/* of on_output and on_tick */
	/*
	 * Optional, called about every YX_EXEC_TICK_MS while the command runs
	 * (the agent path: right after it started, then on that period; the
	 * Engine API path: as libcurl reports progress, about once a second
	 * when quiet): anything but YX_OK stops the command (its group is
	 * killed) and is returned, as a sink's error is. A streaming reply
	 * asks here whether its client is still there.
	 */
	int			(*on_tick)(void *arg);
};

#define YX_EXEC_TICK_MS	200

struct yx_exec_result {
	int	exit_code;	/* 124 on timeout; 128+N when killed by signal N */
	bool	timed_out;
	int64_t	duration_ms;
};

struct yx_driver_ops {
	const char *name;
	int	(*ping)(struct yx_driver *, struct yx_errctx *);
	int	(*image_present)(struct yx_driver *, const char *image, struct yx_errctx *);
	/* Create and start; fills info (id, name...). */
	int	(*create)(struct yx_driver *, const struct yx_container_spec *,
	    struct yx_container_info *, struct yx_errctx *);
	/* ref: container id or name. NOT_FOUND when it does not exist. */
	int	(*inspect)(struct yx_driver *, const char *ref,
	    struct yx_container_info *, struct yx_errctx *);
	int	(*start)(struct yx_driver *, const char *ref, struct yx_errctx *);
	/* Stop (with a short grace) and remove; NOT_FOUND counts as success. */
	int	(*remove)(struct yx_driver *, const char *ref, struct yx_errctx *);
	/* All containers of this service instance: label io.yuxi.sandbox=1
	 * and a name starting with cfg->container_prefix (running or not).
	 * Several instances may share one engine; the prefix keeps one
	 * instance's reaper away from another's containers.
	 * *out is a heap array (caller frees) of *n entries. */
	int	(*list)(struct yx_driver *, struct yx_container_info **out,
	    size_t *n, struct yx_errctx *);
	int	(*exec)(struct yx_driver *, const char *ref, const struct yx_exec_req *,
	    struct yx_exec_result *, struct yx_errctx *);
	void	(*free)(struct yx_driver *);
	/* The engine's runtimes as its JSON object ({"runsc": {"path": ...,
	 * "runtimeArgs": [...]}, ...}) into *out (heap, caller frees).
	 * May be NULL (a driver that cannot tell). */
	int	(*runtimes)(struct yx_driver *, char **out, struct yx_errctx *);
	/* The containers of list labelled as thread_id's only, the engine
	 * filtering them (a list of every sandbox of a full host is megabytes
	 * of JSON, and a thread's deletion asks). May be NULL (the caller
	 * filters list's answer). */
	int	(*list_thread)(struct yx_driver *, const char *thread_id,
	    struct yx_container_info **out, size_t *n, struct yx_errctx *);
};

struct yx_driver {
	const struct yx_driver_ops	*ops;
	const struct yx_config		*cfg;	/* borrowed; outlives the driver */
};

/*
 * Is a container named `name` one of the instance of container prefix
 * `prefix`: exactly <prefix><8..64 lowercase hex>, or a pool box
 * <prefix>pool-<16 lowercase hex> (an instance whose prefix merely starts
 * with another's is not the other's)?
 */
bool	yx_driver_name_ours(const char *prefix, const char *name);
/*
 * Is it a transactional command's container of that instance,
 * <prefix>tx-<16 lowercase hex> (docs/design.md §10)? Never in the
 * instance's listings (no slot of the table is one), but an instance's
 * own all the same: the orphans' search leaves it to its live instance.
 */
bool	yx_driver_name_tx(const char *prefix, const char *name);

/*
 * Create the driver cfg->driver asks for. AUTO picks "api" when the socket
 * answers /_ping, else "cli" when a docker binary exists, else "api" (which
 * will then report backend_unavailable). Returns NULL only on allocation
 * failure (err set).
 */
struct yx_driver	*yx_driver_new(const struct yx_config *cfg, struct yx_errctx *err);
struct yx_driver	*yx_driver_api_new(const struct yx_config *cfg, struct yx_errctx *err);
struct yx_driver	*yx_driver_cli_new(const struct yx_config *cfg, struct yx_errctx *err);
void			 yx_driver_free(struct yx_driver *d);

/*
 * The logging driver every sandbox container is made with
 * (HostConfig.LogConfig.Type, `docker run --log-driver`): "none". The
 * engine still drains the init's stdout and stderr (a command can open
 * /proc/1/fd/1 and /proc/1/fd/2: same uid) but stores nothing, so no
 * command can fill the engine's data directory through them, and the init
 * never blocks on a full pipe. Part of the container settings fingerprint
 * (executor.c): a container made with another log setting is recreated on
 * its next acquire. Static string; "engine-default" only in the control
 * build with YX_CONTROL_OFF=enginelog.
 */
const char		*yx_spec_log_setting(void);

/*
 * Can the engine run sandboxes under `runtime` (a profile's or
 * YUXI_SANDBOX_RUNTIME)? "runc" always. "runsc" when the engine has a
 * runtime of that name whose arguments include --network=none (else every
 * start fails: gVisor refuses to run with network in the root network
 * namespace) and --host-uds=all (the agent's socket and the egress relay's
 * cross the sandbox's edge as host unix sockets). YX_OK;
 * YX_E_BACKEND_UNAVAILABLE with the reason and the fix in err
 * (caller-safe: names no host path but the runtime's); the driver's error
 * when the engine cannot be asked. For `doctor` and /readyz.
 */
int			 yx_driver_runtime_check(struct yx_driver *d,
    const char *runtime, struct yx_errctx *err);

#endif /* YUXI_DRIVER_H */
