/* SPDX-License-Identifier: MIT */
/*
 * yuxi/config.h - service configuration from the environment
 * (docs/design.md §6).
 *
 * yx_config_load() fills caller storage from environ, applying defaults and
 * validating every value; a bad value fails with a message that names the
 * variable, so the master (or CLI) can refuse to start. The struct holds no
 * pointers: it can be copied, and placed in shared memory if ever needed.
 */
#ifndef YUXI_CONFIG_H
#define YUXI_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum yx_driver_kind {
	YX_DRIVER_AUTO,		/* Engine API if the socket answers, else CLI */
	YX_DRIVER_API,		/* Docker Engine API over the unix socket */
	YX_DRIVER_CLI,		/* the `docker` command */
};

enum yx_exec_agent_mode {
	YX_EXEC_AGENT_AUTO,	/* in-sandbox agent when it answers, else engine exec */
	YX_EXEC_AGENT_OFF,	/* engine exec only */
	YX_EXEC_AGENT_ONLY,	/* agent only (tests, benchmarks) */
};

/* YUXI_THREAD_DISK_FS: the filesystem of new per-thread disk images
 * (docs/configuration.md "Snapshots"); btrfs gives snapshots. */
enum yx_disk_fs {
	YX_DISK_FS_EXT4,
	YX_DISK_FS_BTRFS,
};

/* YUXI_MODE: one host, or one front and many sandbox hosts (docs/scaling.md). */
enum yx_mode {
	YX_MODE_STANDALONE,	/* the engine on this host (default) */
	YX_MODE_FRONT,		/* the public API; sandboxes on the provisioners */
	YX_MODE_PROVISIONER,	/* a sandbox host: only the front may call it */
};

enum yx_cmd_policy {
	YX_CMD_POLICY_STRICT,	/* validate_execute_command_paths semantics */
	YX_CMD_POLICY_OFF,
};

#define YX_CFG_STR	256
#define YX_CFG_PATH	1024
#define YX_INSTANCE_MAX	33	/* YUXI_INSTANCE: [a-z0-9][a-z0-9_]{0,31} + NUL */
#define YX_PREVIEW_DOMAIN_MAX	208	/* YUXI_PREVIEW_DOMAIN: name (200) + ":65535" + NUL */

/* Bounds of YUXI_THREAD_DISK_QUOTA (src/priv: an ext4 image per thread),
 * and the size its default, "auto", stands for where the host can give it. */
#define YX_DISK_QUOTA_MIN	(8LL << 20)
#define YX_DISK_QUOTA_MAX	(16LL << 40)
#define YX_DISK_QUOTA_AUTO	(2LL << 30)

/* The most YUXI_POOL_SIZE may be. */
#define YX_POOL_SIZE_MAX	64

/*
 * The protections a host may be unable to give (yx_config_settle): the
 * pool of pre-started boxes and the per-thread disk quota, both needing
 * mounts that only a process with CAP_SYS_ADMIN in the engine's mount
 * namespace can make (docs/design.md §8).
 */
#define YX_PROTECT_POOL		0x1u
#define YX_PROTECT_QUOTA	0x2u
#define YX_PROTECT_ALL		(YX_PROTECT_POOL | YX_PROTECT_QUOTA)

/* Default per-thread uid range (docs/configuration.md): clear of regular
 * users, of Debian's subuid allocations and of systemd's reserved ranges. */
#define YX_UID_RANGE_BASE	2000000000u
#define YX_UID_RANGE_COUNT	65536u

struct yx_config {
	/* seed names */
	char		image[YX_CFG_STR];		/* YUXI_SANDBOX_IMAGE (yuxi-sandbox:latest) */
	int		base_port;			/* YUXI_SANDBOX_BASE_PORT (0 = no publishing) */
	char		container_prefix[64];		/* YUXI_SANDBOX_CONTAINER_PREFIX (yuxi-sandbox-) */
	char		reap_orphans[64];		/* YUXI_REAP_ORPHANS: "" off, "*" all, or a
							 * prefix of the orphans the reaper removes */
	int		idle_timeout;			/* YUXI_SANDBOX_IDLE_TIMEOUT seconds (600) */
	int		idle_check_interval;		/* YUXI_SANDBOX_IDLE_CHECK_INTERVAL seconds (60) */
	int		idle_timeout_max;		/* YUXI_SANDBOX_IDLE_TIMEOUT_MAX seconds (86400):
							 * the most a thread's idle_timeout may be */
	int		max_replicas;			/* YUXI_SANDBOX_MAX_REPLICAS (100) */
	char		sandbox_host[YX_CFG_STR];	/* YUXI_SANDBOX_HOST (127.0.0.1) */
	char		provisioner_url[YX_CFG_PATH];	/* YUXI_SANDBOX_PROVISIONER_URL ("" = local) */
	char		security_opts[YX_CFG_PATH];	/* YUXI_SANDBOX_SECURITY_OPTS (comma list) */
	char		host_project_dir[YX_CFG_PATH];	/* YUXI_HOST_PROJECT_DIR ("" = same as ours) */
	char		docker_api_base[YX_CFG_STR];	/* YUXI_DOCKER_API_BASE (http://localhost/v1.41) */
	char		docker_api_socket[YX_CFG_PATH];	/* YUXI_DOCKER_API_SOCKET (/var/run/docker.sock) */
	/* ours */
	enum yx_driver_kind driver;			/* YUXI_DOCKER_DRIVER auto|api|cli */
	int64_t		memory_bytes;			/* YUXI_SANDBOX_MEMORY (512m) */
	double		cpus;				/* YUXI_SANDBOX_CPUS (1) */
	int		pids;				/* YUXI_SANDBOX_PIDS (256) */
	char		network[64];			/* YUXI_SANDBOX_NETWORK (none) */
	char		runtime[32];			/* YUXI_SANDBOX_RUNTIME (runc; runsc: gVisor) */
	int		shim_group_size;		/* YUXI_SHIM_GROUP_SIZE sandboxes per engine shim (16; 0 = one each) */
	bool		readonly_rootfs;		/* YUXI_SANDBOX_READONLY_ROOTFS (1) */
	char		user[64];			/* YUXI_SANDBOX_USER (1000:1000) */
	unsigned	uid, gid;			/* parsed from user */
	unsigned	uid_base;			/* YUXI_SANDBOX_UID_RANGE first uid */
	unsigned	uid_count;			/* ... size; 0 = every thread runs as uid:gid */
	int		exec_timeout;			/* YUXI_SANDBOX_EXEC_TIMEOUT (120, max 600) */
	size_t		output_limit;			/* YUXI_SANDBOX_OUTPUT_LIMIT (256 KiB) */
	int64_t		tmp_size;			/* YUXI_SANDBOX_TMP_SIZE (64m) */
	int64_t		thread_disk_quota;		/* YUXI_THREAD_DISK_QUOTA bytes (0 = off) */
	bool		disk_quota_auto;		/* ... is "auto" (the default): 0 until settled */
	enum yx_disk_fs	disk_fs;			/* YUXI_THREAD_DISK_FS ext4|btrfs (ext4) */
	int		snapshots_max;			/* YUXI_THREAD_SNAPSHOTS_MAX per thread (16; 0 = none) */
	char		saves_dir[YX_CFG_PATH];		/* YUXI_SAVES_DIR ($(localstatedir)/lib/yuxi-sandbox) */
	char		skills_dir[YX_CFG_PATH];	/* YUXI_SKILLS_DIR ("" = no skills) */
	char		agents_file[YX_CFG_PATH];	/* YUXI_AGENTS_FILE ("" = no agents) */
	int		workers;			/* YUXI_WORKERS (4) */
	char		fcgi_socket[YX_CFG_PATH];	/* YUXI_FCGI_SOCKET ($(runstatedir)/yuxi-sandbox/fcgi.sock) */
	int		fcgi_socket_gid;		/* YUXI_FCGI_SOCKET_GROUP (-1: the directory's) */
	unsigned	fcgi_socket_mode;		/* YUXI_FCGI_SOCKET_MODE (0660; 0600 or 0660) */
	char		url_prefix[128];		/* YUXI_URL_PREFIX ("" or "/a/b", no trailing /) */
	enum yx_cmd_policy cmd_policy;			/* YUXI_COMMAND_PATH_POLICY strict|off */
	char		shm_name[64];			/* YUXI_SHM_NAME (/yuxi-sandbox) */
	size_t		upload_limit;			/* YUXI_UPLOAD_LIMIT (64 MiB) */
	size_t		viewer_file_limit;		/* YUXI_VIEWER_FILE_LIMIT (1 MiB) */
	size_t		body_limit;			/* YUXI_BODY_LIMIT JSON bodies (8 MiB) */
	int		request_budget_ms;		/* YUXI_REQUEST_BUDGET_MS walks, deletes (5000; 0 = none) */
	uint64_t	walk_read_budget;		/* YUXI_WALK_READ_BUDGET bytes one grep reads (256m; 0 = none) */
	char		runner_path[YX_CFG_PATH];	/* YUXI_RUNNER_PATH host path of yuxi-run */
	enum yx_exec_agent_mode exec_agent;		/* YUXI_EXEC_AGENT auto|off|only */
	char		agent_path[YX_CFG_PATH];	/* YUXI_AGENT_PATH ("" = beside the runner) */
	char		egress_hosts[YX_CFG_PATH];	/* YUXI_EGRESS_HOSTS (tests: the proxy's resolver) */
	int		max_threads_per_user;		/* YUXI_MAX_THREADS_PER_USER (1000; 0 = no limit) */
	int		max_sandboxes_per_user;		/* YUXI_MAX_SANDBOXES_PER_USER running (0 = no limit) */
	int		pool_size;			/* YUXI_POOL_SIZE pre-started boxes (0 = off) */
	bool		pool_auto;			/* ... is "auto" (the default): 0 until settled */
	unsigned	protect_can;			/* YX_PROTECT_* this host can give (settled) */
	unsigned	protect_lost;			/* ... asked for by "auto" and not given */
	char		protect_why[YX_CFG_STR];	/* why not (operator text; "" = all given) */
	int64_t		ready_min_free;			/* YUXI_READY_MIN_FREE bytes (1g; 0 = no check) */
	int		ready_min_free_pct;		/* ... or percent of the saves filesystem (0 = bytes) */
	char		audit_log[YX_CFG_PATH];		/* YUXI_AUDIT_LOG (<log dir>/audit.jsonl; "" = none) */
	bool		trust_request_id;		/* YUXI_TRUST_REQUEST_ID (0): a client X-Request-Id counts */
	/* background processes (docs/api.md "Background processes") */
	int		proc_max;			/* YUXI_PROCESS_MAX running per thread (4) */
	int		proc_lifetime;			/* YUXI_PROCESS_LIFETIME seconds (3600, max 86400) */
	size_t		proc_output_keep;		/* YUXI_PROCESS_OUTPUT_KEEP bytes per process (1m) */
	int		proc_keepalive;			/* YUXI_PROCESS_KEEPALIVE seconds (3600; 0 = none) */
	int		proc_waiters;			/* YUXI_PROCESS_WAITERS long-polls at once (0 = workers/2) */
	/* sessions (docs/api.md "Sessions") */
	int		session_max;			/* YUXI_SESSION_MAX live per thread (4) */
	int		session_user_max;		/* YUXI_SESSION_USER_MAX live per user (16) */
	int		session_idle;			/* YUXI_SESSION_IDLE seconds (1800; 0 = none) */
	int		user_commands;			/* YUXI_USER_COMMANDS one user's at once (0 = workers - 1) */
	int		host_calls;			/* YUXI_HOST_CALLS a front's calls to one host at once (0 = workers/2) */
	/* previews (docs/api.md "Previews") */
	char		preview_domain[YX_PREVIEW_DOMAIN_MAX];	/* YUXI_PREVIEW_DOMAIN name[:port] ("" = off) */
	int		preview_ttl;			/* YUXI_PREVIEW_TTL default seconds (3600) */
	int		preview_ttl_max;		/* YUXI_PREVIEW_TTL_MAX seconds (86400) */
	int		preview_port_min;		/* YUXI_PREVIEW_PORTS low (1) */
	int		preview_port_max;		/* ... high (65535) */
	int		preview_max;			/* YUXI_PREVIEW_MAX per thread (16) */
	int		preview_connections;		/* YUXI_PREVIEW_CONNECTIONS open per sandbox (256) */
	enum yx_mode	mode;				/* YUXI_MODE standalone|front|provisioner */
	char		provisioner_token_file[YX_CFG_PATH]; /* YUXI_PROVISIONER_TOKEN_FILE (front, provisioner) */
	char		provisioner_ca[YX_CFG_PATH];	/* YUXI_PROVISIONER_CA ("" = system CAs) */
	int		verbose;			/* YUXI_DEBUG (0) */
	char		instance[YX_INSTANCE_MAX];	/* YUXI_INSTANCE ("" = the default instance) */
	char		config_file[YX_CFG_PATH];	/* the file read; "" = none */
};

/*
 * Fill `cfg` from the configuration file and the environment, which
 * overrides it. The file is `file`, else YUXI_CONFIG ("none": no file),
 * else, for a program run from a build tree, the development run's
 * var/yuxi-sandbox.conf of its source tree (yx_config_source_tree;
 * scripts/run-service.sh writes it) when it exists, else the
 * installed $(sysconfdir)/yuxi-sandbox/yuxi-sandbox.conf when it exists:
 * "KEY=value" lines with the environment's names, '#' comments,
 * a value in double quotes loses them. Returns YX_OK, or YX_E_BAD_REQUEST
 * with "YUXI_X: why" (from the file: "FILE:LINE: YUXI_X: why") in errbuf
 * (size errlen) for the first invalid value, unknown setting or bad line.
 */
int	yx_config_load_file(struct yx_config *cfg, const char *file,
    char *errbuf, size_t errlen);
/*
 * Is this program run from a build tree (config.status beside it, never an
 * installed program)? Then true, with the source tree the build tree was
 * configured from (its Makefile's abs_top_srcdir) in out (outlen bytes):
 * where a build-tree program finds the development run's configuration
 * and the checkout's files (nginx templates, web page, image recipes).
 */
bool	yx_config_source_tree(char *out, size_t outlen);
/* yx_config_load_file(cfg, NULL, ...). */
int	yx_config_load(struct yx_config *cfg, char *errbuf, size_t errlen);
/* Defaults only, ignoring the environment (tests). */
void	yx_config_defaults(struct yx_config *cfg);

/*
 * The size YUXI_POOL_SIZE=auto stands for: one box per worker
 * (YUXI_WORKERS, the most first commands served at once), at least 2, at
 * most YX_POOL_SIZE_MAX and at most a quarter of YUXI_SANDBOX_MAX_REPLICAS
 * (boxes hold table slots and are never evicted: three quarters stay for
 * threads of other profiles); 0 below 4 replicas.
 */
int	yx_config_pool_rule(const struct yx_config *cfg);
/*
 * Settle the automatic protections of cfg (YUXI_POOL_SIZE and
 * YUXI_THREAD_DISK_QUOTA "auto") against `can`, the YX_PROTECT_* this
 * host can give (yx_priv_probe), `why` saying what is missing (operator
 * text, may be NULL). An automatic protection the host gives gets its size
 * (yx_config_pool_rule, YX_DISK_QUOTA_AUTO); one it cannot give stays 0
 * (off) and is noted in cfg->protect_lost with why in cfg->protect_why.
 * Explicit values are left alone: the start refuses those the host cannot
 * give (yx_priv_start). A front (YUXI_MODE=front) runs no sandboxes: both
 * stay 0, nothing lost. The daemon settles at start and at each reload
 * (with the start's `can`), the CLI as the running service did; loaded
 * but unsettled, an automatic protection is 0 (tests, benchmarks).
 */
void	yx_config_settle(struct yx_config *cfg, unsigned can, const char *why);
/*
 * After yx_config_settle: YX_OK, or YX_E_FORBIDDEN with "YUXI_X: why" in
 * eb (el bytes) when an explicit YUXI_POOL_SIZE or YUXI_THREAD_DISK_QUOTA
 * asks for what the settled host cannot give (the start and a reload
 * refuse it).
 */
int	yx_config_protect_check(const struct yx_config *cfg, char *eb, size_t el);

/* A container runtime the service knows: "runc" or "runsc" (gVisor). */
bool	yx_runtime_valid(const char *s);

/*
 * Read the front<->provisioner credential of cfg (YUXI_PROVISIONER_TOKEN_FILE:
 * one line, 32-256 bytes of [A-Za-z0-9._~+/=-], the file not readable by
 * others) into out (size outlen >= 257). YX_OK; YX_E_BAD_REQUEST with the
 * reason in why (never the secret). The secret is never logged.
 */
int	yx_config_read_token(const struct yx_config *cfg, char *out, size_t outlen,
    char *why, size_t whylen);

/*
 * The host path of the in-sandbox agent binary: YUXI_AGENT_PATH, else
 * yuxi-agent beside the runner; "" when neither can be named. Writes at
 * most outlen bytes (NUL included) to out.
 */
void	yx_config_agent_path(const struct yx_config *cfg, char *out, size_t outlen);

/* Parse "512m", "1g", "65536" (bytes, k/m/g suffixes). YX_OK or YX_E_BAD_REQUEST. */
int	yx_parse_size(const char *s, int64_t *out);

#endif /* YUXI_CONFIG_H */
