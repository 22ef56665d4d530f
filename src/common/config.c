/* SPDX-License-Identifier: MIT */
/*
 * config.c - configuration from the configuration file and the
 * environment; see include/yuxi/config.h.
 *
 * Every setting is one row of CFG_SETTINGS below: its name, the field of
 * struct yx_config it fills, its default and how it is read. The rows
 * generate yx_config_defaults() and the reading in yx_config_load_file(),
 * in the order they stand. Each variable has one parser and one validity
 * rule; the first failure stops loading with "NAME: reason"
 * ("FILE:LINE: NAME: reason" for a value from the file), which the master
 * prints before exiting. Every read goes through cfg_get(): the
 * environment first, then the file.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/hostlist.h"

/*
 * The settings, in the order they are read: a later row may use an earlier
 * one (YUXI_SANDBOX_UID_RANGE must not contain YUXI_SANDBOX_USER; YUXI_MODE
 * checks the provisioner's URL and token file). A row is
 *   X(kind, "NAME", field, default, a, b)
 * and the kind says how NAME is read into c->field:
 *   STR   a string of at most sizeof(field) - 1 bytes, no CR or LF
 *   PATH  the same, absolute or empty
 *   INT   an integer in [a, b]
 *   SIZE  a size such as 512m, in [a, b] bytes
 *   BOOL  1/0, true/false, yes/no, on/off
 *   ENUM  one of the words of table a, else the message b
 *   FN    by the parser a(x, c), which reads and checks it (and may set
 *         more fields); FNS for a string field
 * Defaults the rows cannot say stand in yx_config_defaults() (the uid and
 * gid of the default user, the size of the default uid range, the runner
 * found beside the program).
 */
#define CFG_SETTINGS(X)                                                                     \
	X(STR, "YUXI_SANDBOX_IMAGE", image, "yuxi-sandbox:latest", 0, 0)                    \
	X(INT, "YUXI_SANDBOX_BASE_PORT", base_port, 0, 0, 65000)                            \
	X(FNS, "YUXI_INSTANCE", instance, "", cfg_instance, 0)                              \
	X(STR, "YUXI_SANDBOX_CONTAINER_PREFIX", container_prefix, "yuxi-sandbox-", 0, 0)    \
	X(INT, "YUXI_SANDBOX_IDLE_TIMEOUT", idle_timeout, 600, 1, 86400 * 30)               \
	X(INT, "YUXI_SANDBOX_IDLE_CHECK_INTERVAL", idle_check_interval, 60, 1, 86400)       \
	X(INT, "YUXI_SANDBOX_IDLE_TIMEOUT_MAX", idle_timeout_max, 86400, 1, 86400 * 30)     \
	X(STR, "YUXI_REAP_ORPHANS", reap_orphans, "", 0, 0)                                 \
	X(INT, "YUXI_SANDBOX_MAX_REPLICAS", max_replicas, 100, 1, 4096)                     \
	X(STR, "YUXI_SANDBOX_HOST", sandbox_host, "127.0.0.1", 0, 0)                        \
	X(STR, "YUXI_SANDBOX_PROVISIONER_URL", provisioner_url, "", 0, 0)                   \
	X(STR, "YUXI_SANDBOX_SECURITY_OPTS", security_opts, "", 0, 0)                       \
	X(PATH, "YUXI_HOST_PROJECT_DIR", host_project_dir, "", 0, 0)                        \
	X(STR, "YUXI_DOCKER_API_BASE", docker_api_base, "http://localhost/v1.41", 0, 0)     \
	X(PATH, "YUXI_DOCKER_API_SOCKET", docker_api_socket, "/var/run/docker.sock", 0, 0)  \
	X(ENUM, "YUXI_DOCKER_DRIVER", driver, YX_DRIVER_AUTO, cfg_drivers,                  \
	    "expected auto, api or cli")                                                    \
	X(ENUM, "YUXI_COMMAND_PATH_POLICY", cmd_policy, YX_CMD_POLICY_STRICT, cfg_policies, \
	    "expected strict or off")                                                       \
	X(ENUM, "YUXI_EXEC_AGENT", exec_agent, YX_EXEC_AGENT_AUTO, cfg_agent_modes,         \
	    "expected auto, off or only")                                                   \
	X(FN, "YUXI_SANDBOX_CPUS", cpus, 1.0, cfg_cpus, 0)                                  \
	X(SIZE, "YUXI_SANDBOX_MEMORY", memory_bytes, 512LL << 20, 6LL << 20, 1LL << 40)     \
	X(INT, "YUXI_SANDBOX_PIDS", pids, 256, 16, 1 << 20)                                 \
	X(STR, "YUXI_SANDBOX_NETWORK", network, "none", 0, 0)                               \
	X(STR, "YUXI_SANDBOX_RUNTIME", runtime, "runc", 0, 0)                               \
	X(INT, "YUXI_SHIM_GROUP_SIZE", shim_group_size, 16, 0, 256)                         \
	X(BOOL, "YUXI_SANDBOX_READONLY_ROOTFS", readonly_rootfs, true, 0, 0)                \
	X(FNS, "YUXI_SANDBOX_USER", user, "1000:1000", cfg_user, 0)                         \
	X(FN, "YUXI_SANDBOX_UID_RANGE", uid_base, YX_UID_RANGE_BASE, cfg_uid_range, 0)      \
	X(INT, "YUXI_SANDBOX_EXEC_TIMEOUT", exec_timeout, 120, 1, 600)                      \
	X(SIZE, "YUXI_SANDBOX_OUTPUT_LIMIT", output_limit, 256 << 10, 1024, 64LL << 20)     \
	X(SIZE, "YUXI_SANDBOX_TMP_SIZE", tmp_size, 64LL << 20, 1LL << 20, 16LL << 30)       \
	X(FN, "YUXI_THREAD_DISK_QUOTA", thread_disk_quota, 0, cfg_disk_quota, 0)            \
	X(ENUM, "YUXI_THREAD_DISK_FS", disk_fs, YX_DISK_FS_EXT4, cfg_disk_fs,               \
	    "expected ext4 or btrfs")                                                       \
	X(INT, "YUXI_THREAD_SNAPSHOTS_MAX", snapshots_max, 16, 0, 1024)                     \
	X(PATH, "YUXI_SAVES_DIR", saves_dir, YX_STATE_DIR, 0, 0)                            \
	X(PATH, "YUXI_SKILLS_DIR", skills_dir, "", 0, 0)                                    \
	X(PATH, "YUXI_AGENTS_FILE", agents_file, "", 0, 0)                                  \
	X(INT, "YUXI_WORKERS", workers, 4, 1, 256)                                          \
	X(PATH, "YUXI_FCGI_SOCKET", fcgi_socket, YX_RUN_DIR "/fcgi.sock", 0, 0)             \
	X(FN, "YUXI_FCGI_SOCKET_GROUP", fcgi_socket_gid, -1, cfg_socket_group, 0)           \
	X(FN, "YUXI_FCGI_SOCKET_MODE", fcgi_socket_mode, 0660, cfg_socket_mode, 0)          \
	X(FNS, "YUXI_URL_PREFIX", url_prefix, "", cfg_url_prefix, 0)                        \
	X(STR, "YUXI_SHM_NAME", shm_name, "/yuxi-sandbox", 0, 0)                            \
	X(SIZE, "YUXI_UPLOAD_LIMIT", upload_limit, 64 << 20, 1024, 16LL << 30)              \
	X(SIZE, "YUXI_VIEWER_FILE_LIMIT", viewer_file_limit, 1 << 20, 1024, 64LL << 20)     \
	X(SIZE, "YUXI_BODY_LIMIT", body_limit, 8 << 20, 4096, 1LL << 30)                    \
	X(INT, "YUXI_REQUEST_BUDGET_MS", request_budget_ms, 5000, 0, 3600 * 1000)           \
	X(SIZE, "YUXI_WALK_READ_BUDGET", walk_read_budget, 256 << 20, 0, 1LL << 50)         \
	X(PATH, "YUXI_RUNNER_PATH", runner_path, "", 0, 0)                                  \
	X(PATH, "YUXI_AGENT_PATH", agent_path, "", 0, 0)                                    \
	X(PATH, "YUXI_EGRESS_HOSTS", egress_hosts, "", 0, 0)                                \
	X(INT, "YUXI_MAX_THREADS_PER_USER", max_threads_per_user, 1000, 0, 1000000)         \
	X(INT, "YUXI_MAX_SANDBOXES_PER_USER", max_sandboxes_per_user, 0, 0, 4096)           \
	X(FN, "YUXI_POOL_SIZE", pool_size, 0, cfg_pool_size, 0)                             \
	X(PATH, "YUXI_PROVISIONER_TOKEN_FILE", provisioner_token_file, "", 0, 0)            \
	X(PATH, "YUXI_PROVISIONER_CA", provisioner_ca, "", 0, 0)                            \
	X(FN, "YUXI_MODE", mode, YX_MODE_STANDALONE, cfg_remote, 0)                         \
	X(FN, "YUXI_READY_MIN_FREE", ready_min_free, 1LL << 30, cfg_min_free, 0)            \
	X(FNS, "YUXI_AUDIT_LOG", audit_log, YX_LOG_DIR "/audit.jsonl", cfg_audit, 0)        \
	X(BOOL, "YUXI_TRUST_REQUEST_ID", trust_request_id, false, 0, 0)                     \
	X(INT, "YUXI_PROCESS_MAX", proc_max, 4, 1, 64)                                      \
	X(INT, "YUXI_PROCESS_LIFETIME", proc_lifetime, 3600, 1, 86400)                      \
	X(SIZE, "YUXI_PROCESS_OUTPUT_KEEP", proc_output_keep, 1 << 20, 4096, 64LL << 20)    \
	X(INT, "YUXI_PROCESS_KEEPALIVE", proc_keepalive, 3600, 0, 86400 * 30)               \
	X(INT, "YUXI_PROCESS_WAITERS", proc_waiters, 0, 0, 256)                             \
	X(INT, "YUXI_SESSION_MAX", session_max, 4, 1, 64)                                   \
	X(INT, "YUXI_SESSION_USER_MAX", session_user_max, 16, 1, 4096)                      \
	X(INT, "YUXI_SESSION_IDLE", session_idle, 1800, 0, 86400)                           \
	X(INT, "YUXI_USER_COMMANDS", user_commands, 0, 0, 256)                              \
	X(FNS, "YUXI_PREVIEW_DOMAIN", preview_domain, "", cfg_preview_domain, 0)            \
	X(INT, "YUXI_PREVIEW_TTL_MAX", preview_ttl_max, 86400, 60, 86400 * 30)              \
	X(FN, "YUXI_PREVIEW_TTL", preview_ttl, 3600, cfg_preview_ttl, 0)                    \
	X(FN, "YUXI_PREVIEW_PORTS", preview_port_min, 1, cfg_preview_ports, 0)              \
	X(INT, "YUXI_PREVIEW_MAX", preview_max, 16, 1, 256)                                 \
	X(INT, "YUXI_PREVIEW_CONNECTIONS", preview_connections, 256, 1, 4096)               \
	X(FN, "YUXI_DEBUG", verbose, 0, cfg_debug, 0)

/*
 * The runner binary (src/guest/yuxi-run) is bind-mounted into every sandbox.
 * Default: beside our own executable or up to two levels above it (build
 * tree: tests live in tests/<subsys>/), else the installed libexec path.
 */
static void
config_default_runner(char *out, size_t outlen)
{
	static const char *const ups[] = { "", "/..", "/../.." };
	char	exe[PATH_MAX], cand[PATH_MAX + 32], *slash;
	ssize_t	n;
	size_t	i;

	snprintf(out, outlen, "%s", YX_RUNNER_INSTALLED);
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return;
	*slash = '\0';
	for (i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s/yuxi-run", exe, ups[i]);
		if (access(cand, X_OK) == 0 && realpath(cand, exe) != NULL &&
		    strlen(exe) < outlen) {
			memcpy(out, exe, strlen(exe) + 1);
			return;
		}
	}
}

void
yx_config_agent_path(const struct yx_config *cfg, char *out, size_t outlen)
{
	const char *slash;

	if (outlen == 0)
		return;
	out[0] = '\0';
	if (cfg->agent_path[0] != '\0')
		snprintf(out, outlen, "%s", cfg->agent_path);
	else if ((slash = strrchr(cfg->runner_path, '/')) != NULL)
		snprintf(out, outlen, "%.*s/yuxi-agent",
		    (int)(slash - cfg->runner_path), cfg->runner_path);
}

bool
yx_runtime_valid(const char *s)
{
	return s != NULL && (strcmp(s, "runc") == 0 || strcmp(s, "runsc") == 0);
}

int
yx_parse_size(const char *s, int64_t *out)
{
	char		*end;
	long long	 v;
	int64_t		 mul = 1;

	errno = 0;
	if (s == NULL || !isdigit((unsigned char)*s))
		return YX_E_BAD_REQUEST;
	v = strtoll(s, &end, 10);
	if (errno != 0 || v < 0)
		return YX_E_BAD_REQUEST;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'k':
		mul = 1LL << 10;
		end++;
		break;
	case 'm':
		mul = 1LL << 20;
		end++;
		break;
	case 'g':
		mul = 1LL << 30;
		end++;
		break;
	default: return YX_E_BAD_REQUEST;
	}
	if (tolower((unsigned char)*end) == 'b' || tolower((unsigned char)*end) == 'i')
		end++;
	if (*end != '\0' || v > INT64_MAX / mul)
		return YX_E_BAD_REQUEST;
	*out = v * mul;
	return YX_OK;
}

#define CFG_FILE_MAX	(64 << 10)	/* bytes of a configuration file */
#define CFG_LINES_MAX	512		/* settings in it */

/* One KEY=value line of the file. */
struct cfg_line {
	char	*key;
	char	*val;
	int	 line;
	bool	 used;		/* read by a parser: a known setting */
};

/* Where the settings come from: the environment, then the file. */
struct cfg_ctx {
	const char	*file;		/* path, NULL: none */
	char		*text;		/* the file, split in place */
	struct cfg_line	 v[CFG_LINES_MAX];
	size_t		 n;
	int		 line;		/* of the value being parsed; 0: env */
	char		*eb;
	size_t		 el;
};

/* The value of `name` (NULL when unset or empty); records its origin. */
static const char *
cfg_get(struct cfg_ctx *x, const char *name)
{
	const char	*s = getenv(name);
	struct cfg_line	*last = NULL;
	size_t		 i;

	x->line = 0;
	for (i = 0; i < x->n; i++)	/* known, even when overridden */
		if (strcmp(x->v[i].key, name) == 0) {
			x->v[i].used = true;
			last = &x->v[i];	/* the last one wins */
		}
	if (s != NULL && *s != '\0')
		return s;
	if (last == NULL)
		return NULL;
	x->line = last->line;
	return last->val[0] != '\0' ? last->val : NULL;
}

static int
cfg_fail(struct cfg_ctx *x, const char *name, const char *why)
{
	if (x->eb != NULL && x->el > 0) {
		if (x->line > 0)
			snprintf(x->eb, x->el, "%s:%d: %s: %s", x->file, x->line,
			    name, why);
		else
			snprintf(x->eb, x->el, "%s: %s", name, why);
	}
	return YX_E_BAD_REQUEST;
}

/* Whitespace trimmed in place; a value in double quotes loses them. */
static char *
cfg_trim(char *s, bool unquote)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	if (unquote && e - s >= 2 && s[0] == '"' && e[-1] == '"') {
		e[-1] = '\0';
		s++;
	}
	return s;
}

/*
 * Read the file into x: "KEY=value" lines, '#' comments and blank lines.
 * A missing file is no error when `optional`. YX_OK or YX_E_BAD_REQUEST
 * with "FILE:LINE: why" in x->eb.
 */
static int
cfg_read_file(struct cfg_ctx *x, const char *path, bool optional)
{
	char	*p, *nl, *eq, *k;
	ssize_t	 n;
	int	 fd, line = 0;

	x->file = path;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (optional && errno == ENOENT) {
			x->file = NULL;
			return YX_OK;
		}
		snprintf(x->eb, x->el, "%s: %s", path, strerror(errno));
		return YX_E_BAD_REQUEST;
	}
	if ((x->text = malloc(CFG_FILE_MAX + 1)) == NULL) {
		close(fd);
		snprintf(x->eb, x->el, "%s: out of memory", path);
		return YX_E_NOMEM;
	}
	n = read(fd, x->text, CFG_FILE_MAX + 1);
	close(fd);
	if (n < 0 || n > CFG_FILE_MAX) {
		snprintf(x->eb, x->el, "%s: %s", path,
		    n < 0 ? strerror(errno) : "larger than 64 KiB");
		return YX_E_BAD_REQUEST;
	}
	x->text[n] = '\0';
	for (p = x->text; *p != '\0'; p = nl) {
		line++;
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		else
			nl = p + strlen(p);
		p = cfg_trim(p, false);
		if (*p == '\0' || *p == '#')
			continue;
		if ((eq = strchr(p, '=')) == NULL || x->n == CFG_LINES_MAX) {
			snprintf(x->eb, x->el, "%s:%d: %s", path, line,
			    eq == NULL ? "expected KEY=value" : "too many settings");
			return YX_E_BAD_REQUEST;
		}
		*eq = '\0';
		k = cfg_trim(p, false);
		if (strncmp(k, "YUXI_", 5) != 0 || strpbrk(k, " \t") != NULL) {
			snprintf(x->eb, x->el, "%s:%d: %s: not a YUXI_* setting",
			    path, line, k);
			return YX_E_BAD_REQUEST;
		}
		x->v[x->n].key = k;
		x->v[x->n].val = cfg_trim(eq + 1, true);
		x->v[x->n].line = line;
		x->v[x->n++].used = false;
	}
	return YX_OK;
}

/* Every line of the file names a known setting (a typo is an error). */
static int
cfg_check_unused(struct cfg_ctx *x)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		if (!x->v[i].used) {
			x->line = x->v[i].line;
			return cfg_fail(x, x->v[i].key, "unknown setting");
		}
	return YX_OK;
}

static int
cfg_int(struct cfg_ctx *x, const char *name, int *out, long lo, long hi)
{
	const char	*s = cfg_get(x, name);
	char		*end;
	long		 v;

	if (s == NULL || *s == '\0')
		return YX_OK;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < lo || v > hi) {
		char why[96];

		snprintf(why, sizeof(why), "expected an integer in [%ld, %ld]", lo, hi);
		return cfg_fail(x, name, why);
	}
	*out = (int)v;
	return YX_OK;
}

static int
cfg_str(struct cfg_ctx *x, const char *name, char *out, size_t outlen)
{
	const char *s = cfg_get(x, name);

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (strlen(s) >= outlen)
		return cfg_fail(x, name, "value too long");
	if (strpbrk(s, "\r\n") != NULL)
		return cfg_fail(x, name, "control characters not allowed");
	memcpy(out, s, strlen(s) + 1);
	return YX_OK;
}

static int
cfg_abspath(struct cfg_ctx *x, const char *name, char *out, size_t outlen)
{
	int rc;

	if ((rc = cfg_str(x, name, out, outlen)) != YX_OK)
		return rc;
	if (out[0] != '\0' && out[0] != '/')
		return cfg_fail(x, name, "must be an absolute path");
	return YX_OK;
}

static int
cfg_size(struct cfg_ctx *x, const char *name, int64_t *out, int64_t lo, int64_t hi)
{
	const char	*s = cfg_get(x, name);
	int64_t		 v;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (yx_parse_size(s, &v) != YX_OK || v < lo || v > hi)
		return cfg_fail(x, name, "expected a size such as 512m within limits");
	*out = v;
	return YX_OK;
}

/*
 * YUXI_THREAD_DISK_QUOTA: "auto" (the default, also an empty value):
 * YX_DISK_QUOTA_AUTO where this host can give it (yx_config_settle); 0 or
 * "off": off; else a size within bounds, which the start requires.
 */
static int
cfg_disk_quota(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = cfg_get(x, "YUXI_THREAD_DISK_QUOTA");
	int64_t		 v = 0;
	int		 rc;

	c->disk_quota_auto = s == NULL || *s == '\0' || strcmp(s, "auto") == 0;
	c->thread_disk_quota = 0;
	if (c->disk_quota_auto || strcmp(s, "off") == 0)
		return YX_OK;
	if ((rc = cfg_size(x, "YUXI_THREAD_DISK_QUOTA", &v, 0,
		 YX_DISK_QUOTA_MAX)) != YX_OK)
		return cfg_fail(x, "YUXI_THREAD_DISK_QUOTA",
		    "expected auto, 0 (off) or a size such as 2g (8m-16384g)");
	if (v != 0 && v < YX_DISK_QUOTA_MIN)
		return cfg_fail(x, "YUXI_THREAD_DISK_QUOTA",
		    "expected auto, 0 (off) or a size of at least 8m");
	c->thread_disk_quota = v;
	return YX_OK;
}

/*
 * YUXI_POOL_SIZE: "auto" (the default, also an empty value): the size
 * yx_config_pool_rule gives, where this host can run a pool
 * (yx_config_settle); else 0 (off) to YX_POOL_SIZE_MAX, which the start
 * requires.
 */
static int
cfg_pool_size(struct cfg_ctx *x, struct yx_config *c)
{
	const char *s = cfg_get(x, "YUXI_POOL_SIZE");

	c->pool_auto = s == NULL || *s == '\0' || strcmp(s, "auto") == 0;
	c->pool_size = 0;
	if (c->pool_auto)
		return YX_OK;
	if (cfg_int(x, "YUXI_POOL_SIZE", &c->pool_size, 0, YX_POOL_SIZE_MAX) != YX_OK)
		return cfg_fail(x, "YUXI_POOL_SIZE",
		    "expected auto or an integer in [0, 64]");
	return YX_OK;
}

static int
cfg_bool(struct cfg_ctx *x, const char *name, bool *out)
{
	const char *s = cfg_get(x, name);

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
		*out = true;
	else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
		*out = false;
	else
		return cfg_fail(x, name, "expected 1/0, true/false, yes/no or on/off");
	return YX_OK;
}

/* A word of an ENUM setting and the value it stands for. */
struct cfg_word {
	const char	*word;
	int		 value;
};

static const struct cfg_word cfg_drivers[] = { { "auto", YX_DRIVER_AUTO },
	{ "api", YX_DRIVER_API }, { "cli", YX_DRIVER_CLI }, { NULL, 0 } };
static const struct cfg_word cfg_policies[] = { { "strict", YX_CMD_POLICY_STRICT },
	{ "off", YX_CMD_POLICY_OFF }, { NULL, 0 } };
static const struct cfg_word cfg_disk_fs[] = { { "ext4", YX_DISK_FS_EXT4 },
	{ "btrfs", YX_DISK_FS_BTRFS }, { NULL, 0 } };
static const struct cfg_word cfg_agent_modes[] = { { "auto", YX_EXEC_AGENT_AUTO },
	{ "1", YX_EXEC_AGENT_AUTO }, { "off", YX_EXEC_AGENT_OFF },
	{ "0", YX_EXEC_AGENT_OFF }, { "only", YX_EXEC_AGENT_ONLY }, { NULL, 0 } };

/* name as one of the words w (*out untouched when unset), else `why`. */
static int
cfg_enum(struct cfg_ctx *x, const char *name, const struct cfg_word *w,
    const char *why, int *out)
{
	const char *s = cfg_get(x, name);

	if (s == NULL || *s == '\0')
		return YX_OK;
	for (; w->word != NULL; w++)
		if (strcmp(s, w->word) == 0) {
			*out = w->value;
			return YX_OK;
		}
	return cfg_fail(x, name, why);
}

static int
cfg_cpus(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = cfg_get(x, "YUXI_SANDBOX_CPUS");
	char		*end;

	if (s == NULL || *s == '\0')
		return YX_OK;
	errno = 0;
	c->cpus = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(c->cpus) || c->cpus < 0.01 || c->cpus > 256)
		return cfg_fail(x, "YUXI_SANDBOX_CPUS", "expected a number in [0.01, 256]");
	return YX_OK;
}

/* YUXI_SANDBOX_USER: UID or UID:GID, numeric, not root. */
static int
cfg_user(struct cfg_ctx *x, struct yx_config *c)
{
	unsigned	uid, gid;
	char		tail;
	int		rc;

	if ((rc = cfg_str(x, "YUXI_SANDBOX_USER", c->user, sizeof(c->user))) != YX_OK)
		return rc;
	if (sscanf(c->user, "%u:%u%c", &uid, &gid, &tail) == 2) {
		c->uid = uid;
		c->gid = gid;
	} else if (sscanf(c->user, "%u%c", &uid, &tail) == 1) {
		c->uid = uid;
		c->gid = uid;
	} else
		return cfg_fail(x, "YUXI_SANDBOX_USER", "expected UID or UID:GID (numeric)");
	if (c->uid == 0)
		return cfg_fail(x, "YUXI_SANDBOX_USER", "the sandbox user must not be root");
	return YX_OK;
}

/*
 * s as "LO-HI" or, with one_ok, as one number (LO = HI), into *lo and *hi,
 * bounds unchecked (the caller's). true when it is of that form.
 */
static bool
cfg_range(const char *s, bool one_ok, unsigned long *lo, unsigned long *hi)
{
	char tail;

	if (sscanf(s, "%lu-%lu%c", lo, hi, &tail) == 2)
		return true;
	if (!one_ok || sscanf(s, "%lu%c", lo, &tail) != 1)
		return false;
	*hi = *lo;
	return true;
}

/*
 * YUXI_SANDBOX_UID_RANGE: "FIRST-LAST" host uids, one per thread (each
 * thread's sandbox and files get their own uid and gid), or "off": every
 * thread runs as YUXI_SANDBOX_USER. The range must hold at least 16 ids,
 * stay below 2^31 (software that keeps uids in a signed int) and not
 * contain 0 or the shared sandbox user.
 */
static int
cfg_uid_range(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = cfg_get(x, "YUXI_SANDBOX_UID_RANGE");
	unsigned long	 lo, hi;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (strcmp(s, "off") == 0) {
		c->uid_base = c->uid_count = 0;
		return YX_OK;
	}
	if (!cfg_range(s, false, &lo, &hi) || lo == 0 ||
	    hi < lo + 15 || hi >= (1UL << 31) ||
	    (c->uid >= lo && c->uid <= hi))
		return cfg_fail(x, "YUXI_SANDBOX_UID_RANGE",
		    "expected FIRST-LAST (at least 16 uids, 1..2147483647, "
		    "not containing YUXI_SANDBOX_USER) or off");
	c->uid_base = (unsigned)lo;
	c->uid_count = (unsigned)(hi - lo + 1);
	return YX_OK;
}

/*
 * The socket's group (a name or a number) and mode. Whoever can connect to
 * the socket can name any user in the FastCGI params, so "other" never gets
 * access: 0600 or 0660 only.
 */
static int
cfg_socket_group(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s;
	struct group	*gr;
	char		*end;
	long		 v;

	if ((s = cfg_get(x, "YUXI_FCGI_SOCKET_GROUP")) == NULL)
		return YX_OK;
	errno = 0;
	v = strtol(s, &end, 10);
	if (isdigit((unsigned char)*s) && *end == '\0' && errno == 0 && v >= 0 &&
	    v < INT32_MAX)
		c->fcgi_socket_gid = (int)v;
	else if ((gr = getgrnam(s)) != NULL)
		c->fcgi_socket_gid = (int)gr->gr_gid;
	else
		return cfg_fail(x, "YUXI_FCGI_SOCKET_GROUP", "no such group");
	return YX_OK;
}

static int
cfg_socket_mode(struct cfg_ctx *x, struct yx_config *c)
{
	const char *s;

	if ((s = cfg_get(x, "YUXI_FCGI_SOCKET_MODE")) == NULL)
		return YX_OK;
	if (strcmp(s, "0600") == 0 || strcmp(s, "600") == 0)
		c->fcgi_socket_mode = 0600;
	else if (strcmp(s, "0660") == 0 || strcmp(s, "660") == 0)
		c->fcgi_socket_mode = 0660;
	else
		return cfg_fail(x, "YUXI_FCGI_SOCKET_MODE",
		    "0600 or 0660 (whoever connects can claim any user)");
	return YX_OK;
}

/* "" or "/seg[/seg...]": no trailing slash, no empty, "." or ".." segment. */
static int
cfg_url_prefix(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = c->url_prefix, *p;
	int		 rc;

	if ((rc = cfg_str(x, "YUXI_URL_PREFIX", c->url_prefix,
		 sizeof(c->url_prefix))) != YX_OK)
		return rc;
	if (s[0] == '\0')
		return YX_OK;
	if (s[0] != '/' || s[strlen(s) - 1] == '/' || strstr(s, "//") != NULL ||
	    strstr(s, "/./") != NULL || strstr(s, "/../") != NULL ||
	    strcmp(strrchr(s, '/'), "/.") == 0 || strcmp(strrchr(s, '/'), "/..") == 0)
		return cfg_fail(x, "YUXI_URL_PREFIX",
		    "expected \"\" or a path such as /sandbox (no trailing /)");
	for (p = s; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("/-._~", *p) == NULL)
			return cfg_fail(x, "YUXI_URL_PREFIX",
			    "only [A-Za-z0-9/._~-] allowed");
	return YX_OK;
}

static int
cfg_names(struct cfg_ctx *x, struct yx_config *c)
{
	const char *p;

	for (p = c->container_prefix; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return cfg_fail(x, "YUXI_SANDBOX_CONTAINER_PREFIX", "only [A-Za-z0-9_.-] allowed");
	if (c->container_prefix[0] == '\0' || !isalnum((unsigned char)c->container_prefix[0]))
		return cfg_fail(x, "YUXI_SANDBOX_CONTAINER_PREFIX", "must start with a letter or digit");
	if (c->shm_name[0] != '/' || strchr(c->shm_name + 1, '/') != NULL)
		return cfg_fail(x, "YUXI_SHM_NAME", "must be /name without further slashes");
	for (p = c->network; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return cfg_fail(x, "YUXI_SANDBOX_NETWORK", "only [A-Za-z0-9_.-] allowed");
	if (!yx_runtime_valid(c->runtime))
		return cfg_fail(x, "YUXI_SANDBOX_RUNTIME", "expected runc or runsc");
	return YX_OK;
}

#define CFG_TOKEN_MIN	32	/* bytes of the front<->provisioner credential */
#define CFG_TOKEN_MAX	256

int
yx_config_read_token(const struct yx_config *c, char *out, size_t outlen,
    char *why, size_t whylen)
{
	struct stat	 sb;
	char		 buf[CFG_TOKEN_MAX + 2];
	ssize_t		 n;
	size_t		 i;
	int		 fd, rc = YX_E_BAD_REQUEST;

	out[0] = '\0';
	if (c->provisioner_token_file[0] == '\0') {
		snprintf(why, whylen, "not set (needed with YUXI_MODE=front or provisioner)");
		return rc;
	}
	if ((fd = open(c->provisioner_token_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(why, whylen, "%s: %s", c->provisioner_token_file, strerror(errno));
		return rc;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) || (sb.st_mode & 0007) != 0) {
		snprintf(why, whylen, "%s: not a regular file, or readable by others",
		    c->provisioner_token_file);
		goto done;
	}
	if ((n = read(fd, buf, sizeof(buf) - 1)) < 0)
		n = 0;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	for (i = 0; i < (size_t)n; i++)
		if (!isalnum((unsigned char)buf[i]) && strchr("._~+/=-", buf[i]) == NULL)
			break;
	if (n < CFG_TOKEN_MIN || n > CFG_TOKEN_MAX || i != (size_t)n ||
	    (size_t)n >= outlen) {
		snprintf(why, whylen, "%s: expected one line of 32-256 bytes of "
				      "[A-Za-z0-9._~+/=-]",
		    c->provisioner_token_file);
		goto done;
	}
	memcpy(out, buf, (size_t)n + 1);
	rc = YX_OK;
done:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

/*
 * YUXI_MODE and what each mode needs (docs/scaling.md): a front its
 * provisioners, the credential it presents and the calls one host may
 * hold at once, a provisioner the credential it expects.
 */
static int
cfg_remote(struct cfg_ctx *x, struct yx_config *c)
{
	struct yx_hostlist	 hl;
	const char		*s;
	char			 why[200], tok[CFG_TOKEN_MAX + 1];
	int			 rc;

	if ((rc = cfg_int(x, "YUXI_HOST_CALLS", &c->host_calls, 0, 256)) != YX_OK)
		return rc;
	if ((s = cfg_get(x, "YUXI_MODE")) != NULL) {
		if (strcmp(s, "standalone") == 0)
			c->mode = YX_MODE_STANDALONE;
		else if (strcmp(s, "front") == 0)
			c->mode = YX_MODE_FRONT;
		else if (strcmp(s, "provisioner") == 0)
			c->mode = YX_MODE_PROVISIONER;
		else
			return cfg_fail(x, "YUXI_MODE", "expected standalone, front or provisioner");
	}
	if (yx_hostlist_parse(c->provisioner_url, &hl, why, sizeof(why)) != YX_OK) {
		cfg_get(x, "YUXI_SANDBOX_PROVISIONER_URL");	/* its line */
		return cfg_fail(x, "YUXI_SANDBOX_PROVISIONER_URL", why);
	}
	if (c->mode == YX_MODE_FRONT && hl.n == 0) {
		cfg_get(x, "YUXI_MODE");
		return cfg_fail(x, "YUXI_MODE",
		    "front needs YUXI_SANDBOX_PROVISIONER_URL (one or more hosts)");
	}
	if (c->mode != YX_MODE_STANDALONE) {
		cfg_get(x, "YUXI_PROVISIONER_TOKEN_FILE");
		if (yx_config_read_token(c, tok, sizeof(tok), why, sizeof(why)) != YX_OK)
			return cfg_fail(x, "YUXI_PROVISIONER_TOKEN_FILE", why);
		explicit_bzero(tok, sizeof(tok));
	}
	return YX_OK;
}

/* YUXI_DEBUG: a boolean into the int verbose. */
static int
cfg_debug(struct cfg_ctx *x, struct yx_config *c)
{
	bool	debug = false;
	int	rc;

	if ((rc = cfg_bool(x, "YUXI_DEBUG", &debug)) == YX_OK)
		c->verbose = debug;
	return rc;
}

/*
 * YUXI_READY_MIN_FREE: free space the saves directory's filesystem needs
 * for /readyz, as a size ("1g") or a percentage ("5%"); "0" turns the
 * check off.
 */
static int
cfg_min_free(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = cfg_get(x, "YUXI_READY_MIN_FREE");
	char		*end;
	long		 v;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (s[strlen(s) - 1] == '%') {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno != 0 || end == s || *end != '%' || end[1] != '\0' ||
		    v < 0 || v > 99)
			return cfg_fail(x, "YUXI_READY_MIN_FREE",
			    "expected a size such as 1g or a percentage 0%..99%");
		c->ready_min_free = 0;
		c->ready_min_free_pct = (int)v;
		return YX_OK;
	}
	if (yx_parse_size(s, &c->ready_min_free) != YX_OK)
		return cfg_fail(x, "YUXI_READY_MIN_FREE",
		    "expected a size such as 1g or a percentage 0%..99%");
	c->ready_min_free_pct = 0;
	return YX_OK;
}

/*
 * YUXI_PREVIEW_DOMAIN: "" (previews off), or the DNS name under which each
 * preview gets a host of its own (docs/api.md "Previews"), optionally with
 * the port the browser uses: "preview.example.org", "preview.localhost:8443".
 * Lower case: labels of [a-z0-9-], not starting or ending with '-', at
 * least two of them; port 1..65535.
 */
static int
cfg_preview_domain(struct cfg_ctx *x, struct yx_config *c)
{
	static const char	 why[] = "expected \"\" or a DNS name in lower case "
				  "with at least two labels, optionally :PORT "
				  "(preview.example.org, preview.localhost:8443)";
	char			*s = c->preview_domain, *p, *colon;
	size_t			 label = 0, labels = 1;
	long			 port;
	int			 rc;

	if ((rc = cfg_str(x, "YUXI_PREVIEW_DOMAIN", c->preview_domain,
		 sizeof(c->preview_domain))) != YX_OK ||
	    s[0] == '\0')
		return rc;
	if ((colon = strchr(s, ':')) != NULL) {
		errno = 0;
		port = strtol(colon + 1, &p, 10);
		if (colon[1] < '1' || colon[1] > '9' || *p != '\0' || errno != 0 ||
		    port > 65535)
			return cfg_fail(x, "YUXI_PREVIEW_DOMAIN", why);
	}
	for (p = s; p != colon && *p != '\0'; p++) {
		if (*p == '.') {
			if (label == 0 || p[-1] == '-')
				return cfg_fail(x, "YUXI_PREVIEW_DOMAIN", why);
			label = 0;
			labels++;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
			(*p == '-' && label > 0)) ||
		    ++label > 63)
			return cfg_fail(x, "YUXI_PREVIEW_DOMAIN", why);
	}
	if (label == 0 || p[-1] == '-' || labels < 2 || p - s > 200)
		return cfg_fail(x, "YUXI_PREVIEW_DOMAIN", why);
	return YX_OK;
}

/* YUXI_PREVIEW_TTL: seconds, 60..YUXI_PREVIEW_TTL_MAX (read before it). */
static int
cfg_preview_ttl(struct cfg_ctx *x, struct yx_config *c)
{
	int rc;

	if ((rc = cfg_int(x, "YUXI_PREVIEW_TTL", &c->preview_ttl, 60, 86400 * 30)) != YX_OK)
		return rc;
	if (c->preview_ttl > c->preview_ttl_max)
		return cfg_fail(x, "YUXI_PREVIEW_TTL",
		    "must not exceed YUXI_PREVIEW_TTL_MAX");
	return YX_OK;
}

/* YUXI_PREVIEW_PORTS: "LOW-HIGH" (1..65535) or one port: the ports a
 * preview may name. */
static int
cfg_preview_ports(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*s = cfg_get(x, "YUXI_PREVIEW_PORTS");
	unsigned long	 lo, hi;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (!cfg_range(s, true, &lo, &hi) || strspn(s, "0123456789-") != strlen(s) ||
	    lo < 1 || hi > 65535 || lo > hi)
		return cfg_fail(x, "YUXI_PREVIEW_PORTS",
		    "expected LOW-HIGH (1..65535) or one port");
	c->preview_port_min = (int)lo;
	c->preview_port_max = (int)hi;
	return YX_OK;
}

/*
 * YUXI_AUDIT_LOG: an absolute path, or "off" / an explicitly empty value
 * for no audit log (unset: the default under the log directory).
 */
static int
cfg_audit(struct cfg_ctx *x, struct yx_config *c)
{
	const char *s = cfg_get(x, "YUXI_AUDIT_LOG");

	if (s == NULL) {
		/* set but empty, in the environment or on a file line */
		if (getenv("YUXI_AUDIT_LOG") != NULL || x->line > 0)
			c->audit_log[0] = '\0';
		return YX_OK;
	}
	if (strcmp(s, "off") == 0) {
		c->audit_log[0] = '\0';
		return YX_OK;
	}
	return cfg_abspath(x, "YUXI_AUDIT_LOG", c->audit_log, sizeof(c->audit_log));
}

/*
 * YUXI_INSTANCE: the name of one of several instances on a host, from
 * which the shared table's and the containers' names default to their
 * own: /yuxi-sandbox.NAME and yuxi-sandbox.NAME- (an explicit
 * YUXI_SHM_NAME or YUXI_SANDBOX_CONTAINER_PREFIX still wins). No '-' or
 * '.' in NAME: no instance's prefix can then begin another's, nor the
 * default yuxi-sandbox- (a reconcile removes what its prefix matches).
 * Read before those two settings.
 */
static int
cfg_instance(struct cfg_ctx *x, struct yx_config *c)
{
	const char	*p;
	int		 rc;

	if ((rc = cfg_str(x, "YUXI_INSTANCE", c->instance,
		 sizeof(c->instance))) != YX_OK)
		return rc;
	if (c->instance[0] == '\0')
		return YX_OK;
	for (p = c->instance; *p != '\0'; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) &&
		    (*p != '_' || p == c->instance))
			return cfg_fail(x, "YUXI_INSTANCE",
			    "expected [a-z0-9][a-z0-9_]{0,31}");
	snprintf(c->shm_name, sizeof(c->shm_name), "/yuxi-sandbox.%s", c->instance);
	snprintf(c->container_prefix, sizeof(c->container_prefix),
	    "yuxi-sandbox.%s-", c->instance);
	return YX_OK;
}

bool
yx_config_source_tree(char *out, size_t outlen)
{
	char	 exe[PATH_MAX], path[PATH_MAX + 32], line[PATH_MAX + 64], *slash;
	FILE	*f;
	ssize_t	 n;
	size_t	 len;
	bool	 found = false;

	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return false;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return false;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/config.status", exe);
	if (access(path, F_OK) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/Makefile", exe);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "abs_top_srcdir = /", 18) != 0)
			continue;
		len = strcspn(line + 17, "\n");
		if (len < outlen) {
			memcpy(out, line + 17, len);
			out[len] = '\0';
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * The development run's file (scripts/run-service.sh) for a program run
 * from a build tree: var/yuxi-sandbox.conf of its source tree. Its path
 * into out (PATH_MAX bytes); false when there is none.
 */
static bool
cfg_dev_file(char *out)
{
	char top[PATH_MAX];

	if (!yx_config_source_tree(top, sizeof(top)) ||
	    (size_t)snprintf(out, PATH_MAX, "%s/var/yuxi-sandbox.conf", top) >=
		PATH_MAX)
		return false;
	return access(out, F_OK) == 0;
}

/*
 * The configuration file to read: YUXI_CONFIG when set ("none": no file;
 * a path: that file, which must exist), else a development run's
 * (cfg_dev_file), else the installed default when it exists. *optional
 * says whether a missing file is fine; dev is the storage of the second.
 */
static const char *
cfg_file_path(const char *file, bool *optional, char *dev)
{
	const char *env = getenv("YUXI_CONFIG");

	*optional = false;
	if (file != NULL)
		return file;
	if (env != NULL && *env != '\0')
		return strcmp(env, "none") == 0 ? NULL : env;
	if (cfg_dev_file(dev))
		return dev;
	*optional = true;
	return YX_CONF_FILE;
}

/* What one row of CFG_SETTINGS sets in yx_config_defaults(). */
#define CFG_DEFAULT(kind, name, field, dflt, a, b)	CFG_DEFAULT_##kind(c->field, dflt);
#define CFG_DEFAULT_STR(f, d)				snprintf(f, sizeof(f), "%s", d)
#define CFG_DEFAULT_PATH(f, d)				CFG_DEFAULT_STR(f, d)
#define CFG_DEFAULT_FNS(f, d)				CFG_DEFAULT_STR(f, d)
#define CFG_DEFAULT_INT(f, d)				(f) = (d)
#define CFG_DEFAULT_SIZE(f, d)				(f) = (d)
#define CFG_DEFAULT_BOOL(f, d)				(f) = (d)
#define CFG_DEFAULT_ENUM(f, d)				(f) = (d)
#define CFG_DEFAULT_FN(f, d)				(f) = (d)

void
yx_config_defaults(struct yx_config *c)
{
	memset(c, 0, sizeof(*c));
	CFG_SETTINGS(CFG_DEFAULT)
	c->pool_auto = c->disk_quota_auto = true;	/* unsettled: 0 */
	c->uid = c->gid = 1000;			/* of YUXI_SANDBOX_USER's */
	c->uid_count = YX_UID_RANGE_COUNT;	/* with YUXI_SANDBOX_UID_RANGE's */
	c->preview_port_max = 65535;		/* with YUXI_PREVIEW_PORTS's */
	config_default_runner(c->runner_path, sizeof(c->runner_path));
}

/* What one row of CFG_SETTINGS reads in cfg_settings(), while rc is YX_OK. */
#define CFG_READ(kind, name, field, dflt, a, b) \
	if (rc == YX_OK) {                      \
		CFG_READ_##kind(name, field, a, b)  \
	}
#define CFG_READ_STR(name, f, a, b)	rc = cfg_str(x, name, c->f, sizeof(c->f));
#define CFG_READ_PATH(name, f, a, b)	rc = cfg_abspath(x, name, c->f, sizeof(c->f));
#define CFG_READ_INT(name, f, lo, hi)	rc = cfg_int(x, name, &c->f, lo, hi);
#define CFG_READ_BOOL(name, f, a, b)	rc = cfg_bool(x, name, &c->f);
#define CFG_READ_FN(name, f, fn, b)	rc = fn(x, c);
#define CFG_READ_FNS(name, f, fn, b)	rc = fn(x, c);
#define CFG_READ_SIZE(name, f, lo, hi)                          \
	int64_t v = (int64_t)c->f;                              \
	if ((rc = cfg_size(x, name, &v, lo, hi)) == YX_OK)      \
		c->f = v;
#define CFG_READ_ENUM(name, f, words, why)                      \
	int v = (int)c->f;                                      \
	if ((rc = cfg_enum(x, name, words, why, &v)) == YX_OK)  \
		c->f = v;

/* Every setting, in the order of CFG_SETTINGS; the first failure stops. */
static int
cfg_settings(struct cfg_ctx *x, struct yx_config *c)
{
	int rc = YX_OK;

	CFG_SETTINGS(CFG_READ)
	return rc;
}

int
yx_config_pool_rule(const struct yx_config *c)
{
	int n = c->workers;

	if (n < 2)
		n = 2;
	if (n > YX_POOL_SIZE_MAX)
		n = YX_POOL_SIZE_MAX;
	if (n > c->max_replicas / 4)
		n = c->max_replicas / 4;
	return n;
}

void
yx_config_settle(struct yx_config *c, unsigned can, const char *why)
{
	c->protect_can = can & YX_PROTECT_ALL;
	c->protect_lost = 0;
	c->protect_why[0] = '\0';
	if (c->mode == YX_MODE_FRONT) {
		if (c->pool_auto)
			c->pool_size = 0;
		if (c->disk_quota_auto)
			c->thread_disk_quota = 0;
		return;
	}
	if (c->pool_auto) {
		c->pool_size = (can & YX_PROTECT_POOL) ? yx_config_pool_rule(c) : 0;
		if (!(can & YX_PROTECT_POOL) && yx_config_pool_rule(c) > 0)
			c->protect_lost |= YX_PROTECT_POOL;
	}
	if (c->disk_quota_auto) {
		c->thread_disk_quota = (can & YX_PROTECT_QUOTA) ? YX_DISK_QUOTA_AUTO : 0;
		if (!(can & YX_PROTECT_QUOTA))
			c->protect_lost |= YX_PROTECT_QUOTA;
	}
	if (c->protect_can != YX_PROTECT_ALL)
		snprintf(c->protect_why, sizeof(c->protect_why), "%s",
		    why != NULL && *why != '\0' ? why : "the privileges are missing");
}

int
yx_config_protect_check(const struct yx_config *c, char *eb, size_t el)
{
	if (c->mode == YX_MODE_FRONT)
		return YX_OK;
	if (!c->pool_auto && c->pool_size > 0 &&
	    !(c->protect_can & YX_PROTECT_POOL)) {
		snprintf(eb, el, "YUXI_POOL_SIZE=%d: this host does not give what "
				 "a pool needs: %s (YUXI_POOL_SIZE=auto turns it "
				 "off where the host cannot have it)",
		    c->pool_size, c->protect_why);
		return YX_E_FORBIDDEN;
	}
	if (!c->disk_quota_auto && c->thread_disk_quota > 0 &&
	    !(c->protect_can & YX_PROTECT_QUOTA)) {
		snprintf(eb, el, "YUXI_THREAD_DISK_QUOTA: this host does not give "
				 "what a disk quota needs: %s "
				 "(YUXI_THREAD_DISK_QUOTA=auto turns it off where "
				 "the host cannot have it)",
		    c->protect_why);
		return YX_E_FORBIDDEN;
	}
	return YX_OK;
}

int
yx_config_load(struct yx_config *c, char *eb, size_t el)
{
	return yx_config_load_file(c, NULL, eb, el);
}

int
yx_config_load_file(struct yx_config *c, const char *file, char *eb,
    size_t el)
{
	char		 dev[PATH_MAX];
	struct cfg_ctx	 x;
	const char	*path;
	bool		 optional;
	int		 rc;

	memset(&x, 0, sizeof(x));
	x.eb = eb;
	x.el = el;
	yx_config_defaults(c);
	if ((path = cfg_file_path(file, &optional, dev)) != NULL &&
	    (rc = cfg_read_file(&x, path, optional)) != YX_OK)
		goto done;
	if (x.file != NULL)
		snprintf(c->config_file, sizeof(c->config_file), "%s", x.file);
	if ((rc = cfg_settings(&x, c)) == YX_OK && (rc = cfg_names(&x, c)) == YX_OK)
		rc = cfg_check_unused(&x);
done:
	free(x.text);
	return rc;
}
