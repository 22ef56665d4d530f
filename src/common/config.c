/*
 * config.c - configuration from the environment; see include/yuxi/config.h.
 *
 * Each variable has one parser and one validity rule; the first failure stops
 * loading with "NAME: reason", which the master prints before exiting.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/config.h"
#include "yuxi/error.h"

/*
 * The runner binary (src/guest/yuxi-run) is bind-mounted into every sandbox.
 * Default: beside our own executable or up to two levels above it (build
 * tree: tests live in tests/<subsys>/), else the installed libexec path.
 */
static void
yx_config_default_runner(char *out, size_t outlen)
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
yx_config_defaults(struct yx_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->image, sizeof(c->image), "yuxi-sandbox:latest");
	snprintf(c->container_prefix, sizeof(c->container_prefix), "yuxi-sandbox-");
	c->idle_timeout = 600;
	c->idle_check_interval = 60;
	c->max_replicas = 100;
	snprintf(c->sandbox_host, sizeof(c->sandbox_host), "127.0.0.1");
	snprintf(c->docker_api_base, sizeof(c->docker_api_base), "http://localhost/v1.41");
	snprintf(c->docker_api_socket, sizeof(c->docker_api_socket), "/var/run/docker.sock");
	c->driver = YX_DRIVER_AUTO;
	c->memory_bytes = 512LL << 20;
	c->cpus = 1.0;
	c->pids = 256;
	snprintf(c->network, sizeof(c->network), "none");
	c->readonly_rootfs = true;
	snprintf(c->user, sizeof(c->user), "1000:1000");
	c->uid = 1000;
	c->gid = 1000;
	c->uid_base = YX_UID_RANGE_BASE;
	c->uid_count = YX_UID_RANGE_COUNT;
	c->exec_timeout = 120;
	c->output_limit = 256 << 10;
	c->tmp_size = 64LL << 20;
	snprintf(c->saves_dir, sizeof(c->saves_dir), "/var/lib/yuxi-sandbox");
	c->workers = 4;
	snprintf(c->fcgi_socket, sizeof(c->fcgi_socket), "/run/yuxi-sandbox/fcgi.sock");
	c->cmd_policy = YX_CMD_POLICY_STRICT;
	snprintf(c->shm_name, sizeof(c->shm_name), "/yuxi-sandbox");
	c->upload_limit = 64 << 20;
	c->viewer_file_limit = 1 << 20;
	c->body_limit = 8 << 20;
	c->request_budget_ms = 5000;
	c->walk_read_budget = 256 << 20;
	yx_config_default_runner(c->runner_path, sizeof(c->runner_path));
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
	case 'k': mul = 1LL << 10; end++; break;
	case 'm': mul = 1LL << 20; end++; break;
	case 'g': mul = 1LL << 30; end++; break;
	default: return YX_E_BAD_REQUEST;
	}
	if (tolower((unsigned char)*end) == 'b' || tolower((unsigned char)*end) == 'i')
		end++;
	if (*end != '\0' || v > INT64_MAX / mul)
		return YX_E_BAD_REQUEST;
	*out = v * mul;
	return YX_OK;
}

static int
cfg_fail(char *errbuf, size_t errlen, const char *name, const char *why)
{
	if (errbuf != NULL && errlen > 0)
		snprintf(errbuf, errlen, "%s: %s", name, why);
	return YX_E_BAD_REQUEST;
}

static int
cfg_int(const char *name, int *out, long lo, long hi, char *eb, size_t el)
{
	const char	*s = getenv(name);
	char		*end;
	long		 v;

	if (s == NULL || *s == '\0')
		return YX_OK;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < lo || v > hi) {
		char why[96];

		snprintf(why, sizeof(why), "expected an integer in [%ld, %ld]", lo, hi);
		return cfg_fail(eb, el, name, why);
	}
	*out = (int)v;
	return YX_OK;
}

static int
cfg_str(const char *name, char *out, size_t outlen, char *eb, size_t el)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (strlen(s) >= outlen)
		return cfg_fail(eb, el, name, "value too long");
	if (strpbrk(s, "\r\n") != NULL)
		return cfg_fail(eb, el, name, "control characters not allowed");
	memcpy(out, s, strlen(s) + 1);
	return YX_OK;
}

static int
cfg_abspath(const char *name, char *out, size_t outlen, char *eb, size_t el)
{
	int rc;

	if ((rc = cfg_str(name, out, outlen, eb, el)) != YX_OK)
		return rc;
	if (out[0] != '\0' && out[0] != '/')
		return cfg_fail(eb, el, name, "must be an absolute path");
	return YX_OK;
}

static int
cfg_size(const char *name, int64_t *out, int64_t lo, int64_t hi, char *eb, size_t el)
{
	const char	*s = getenv(name);
	int64_t		 v;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (yx_parse_size(s, &v) != YX_OK || v < lo || v > hi)
		return cfg_fail(eb, el, name, "expected a size such as 512m within limits");
	*out = v;
	return YX_OK;
}

static int
cfg_bool(const char *name, bool *out, char *eb, size_t el)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
		*out = true;
	else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
		*out = false;
	else
		return cfg_fail(eb, el, name, "expected 1/0, true/false, yes/no or on/off");
	return YX_OK;
}

static int
cfg_enums(struct yx_config *c, char *eb, size_t el)
{
	const char *s;

	if ((s = getenv("YUXI_DOCKER_DRIVER")) != NULL && *s != '\0') {
		if (!strcmp(s, "auto"))
			c->driver = YX_DRIVER_AUTO;
		else if (!strcmp(s, "api"))
			c->driver = YX_DRIVER_API;
		else if (!strcmp(s, "cli"))
			c->driver = YX_DRIVER_CLI;
		else
			return cfg_fail(eb, el, "YUXI_DOCKER_DRIVER", "expected auto, api or cli");
	}
	if ((s = getenv("YUXI_COMMAND_PATH_POLICY")) != NULL && *s != '\0') {
		if (!strcmp(s, "strict"))
			c->cmd_policy = YX_CMD_POLICY_STRICT;
		else if (!strcmp(s, "off"))
			c->cmd_policy = YX_CMD_POLICY_OFF;
		else
			return cfg_fail(eb, el, "YUXI_COMMAND_PATH_POLICY", "expected strict or off");
	}
	if ((s = getenv("YUXI_EXEC_AGENT")) != NULL && *s != '\0') {
		if (!strcmp(s, "auto") || !strcmp(s, "1"))
			c->exec_agent = YX_EXEC_AGENT_AUTO;
		else if (!strcmp(s, "off") || !strcmp(s, "0"))
			c->exec_agent = YX_EXEC_AGENT_OFF;
		else if (!strcmp(s, "only"))
			c->exec_agent = YX_EXEC_AGENT_ONLY;
		else
			return cfg_fail(eb, el, "YUXI_EXEC_AGENT", "expected auto, off or only");
	}
	if ((s = getenv("YUXI_SANDBOX_CPUS")) != NULL && *s != '\0') {
		char *end;

		errno = 0;
		c->cpus = strtod(s, &end);
		if (errno != 0 || *end != '\0' || !isfinite(c->cpus) || c->cpus < 0.01 || c->cpus > 256)
			return cfg_fail(eb, el, "YUXI_SANDBOX_CPUS", "expected a number in [0.01, 256]");
	}
	return YX_OK;
}

static int
cfg_user(struct yx_config *c, char *eb, size_t el)
{
	unsigned	uid, gid;
	char		tail;

	if (sscanf(c->user, "%u:%u%c", &uid, &gid, &tail) == 2) {
		c->uid = uid;
		c->gid = gid;
	} else if (sscanf(c->user, "%u%c", &uid, &tail) == 1) {
		c->uid = uid;
		c->gid = uid;
	} else
		return cfg_fail(eb, el, "YUXI_SANDBOX_USER", "expected UID or UID:GID (numeric)");
	if (c->uid == 0)
		return cfg_fail(eb, el, "YUXI_SANDBOX_USER", "the sandbox user must not be root");
	return YX_OK;
}

/*
 * YUXI_SANDBOX_UID_RANGE: "FIRST-LAST" host uids, one per thread (each
 * thread's sandbox and files get their own uid and gid), or "off": every
 * thread runs as YUXI_SANDBOX_USER. The range must hold at least 16 ids,
 * stay below 2^31 (software that keeps uids in a signed int) and not
 * contain 0 or the shared sandbox user.
 */
static int
cfg_uid_range(struct yx_config *c, char *eb, size_t el)
{
	const char	*s = getenv("YUXI_SANDBOX_UID_RANGE");
	unsigned long	 lo, hi;
	char		 tail;

	if (s == NULL || *s == '\0')
		return YX_OK;
	if (strcmp(s, "off") == 0) {
		c->uid_base = c->uid_count = 0;
		return YX_OK;
	}
	if (sscanf(s, "%lu-%lu%c", &lo, &hi, &tail) != 2 || lo == 0 ||
	    hi < lo + 15 || hi >= (1UL << 31) ||
	    (c->uid >= lo && c->uid <= hi))
		return cfg_fail(eb, el, "YUXI_SANDBOX_UID_RANGE",
		    "expected FIRST-LAST (at least 16 uids, 1..2147483647, "
		    "not containing YUXI_SANDBOX_USER) or off");
	c->uid_base = (unsigned)lo;
	c->uid_count = (unsigned)(hi - lo + 1);
	return YX_OK;
}

static int
cfg_names(struct yx_config *c, char *eb, size_t el)
{
	const char *p;

	for (p = c->container_prefix; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return cfg_fail(eb, el, "YUXI_SANDBOX_CONTAINER_PREFIX", "only [A-Za-z0-9_.-] allowed");
	if (c->container_prefix[0] == '\0' || !isalnum((unsigned char)c->container_prefix[0]))
		return cfg_fail(eb, el, "YUXI_SANDBOX_CONTAINER_PREFIX", "must start with a letter or digit");
	if (c->shm_name[0] != '/' || strchr(c->shm_name + 1, '/') != NULL)
		return cfg_fail(eb, el, "YUXI_SHM_NAME", "must be /name without further slashes");
	for (p = c->network; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return cfg_fail(eb, el, "YUXI_SANDBOX_NETWORK", "only [A-Za-z0-9_.-] allowed");
	return YX_OK;
}

int
yx_config_load(struct yx_config *c, char *eb, size_t el)
{
	int64_t	v;
	bool	debug = false;
	int	rc;

	yx_config_defaults(c);
#define TRY(x) do { if ((rc = (x)) != YX_OK) return rc; } while (0)
	TRY(cfg_str("YUXI_SANDBOX_IMAGE", c->image, sizeof(c->image), eb, el));
	TRY(cfg_int("YUXI_SANDBOX_BASE_PORT", &c->base_port, 0, 65000, eb, el));
	TRY(cfg_str("YUXI_SANDBOX_CONTAINER_PREFIX", c->container_prefix, sizeof(c->container_prefix), eb, el));
	TRY(cfg_int("YUXI_SANDBOX_IDLE_TIMEOUT", &c->idle_timeout, 1, 86400 * 30, eb, el));
	TRY(cfg_int("YUXI_SANDBOX_IDLE_CHECK_INTERVAL", &c->idle_check_interval, 1, 86400, eb, el));
	TRY(cfg_int("YUXI_SANDBOX_MAX_REPLICAS", &c->max_replicas, 1, 4096, eb, el));
	TRY(cfg_str("YUXI_SANDBOX_HOST", c->sandbox_host, sizeof(c->sandbox_host), eb, el));
	TRY(cfg_str("YUXI_SANDBOX_PROVISIONER_URL", c->provisioner_url, sizeof(c->provisioner_url), eb, el));
	TRY(cfg_str("YUXI_SANDBOX_SECURITY_OPTS", c->security_opts, sizeof(c->security_opts), eb, el));
	TRY(cfg_abspath("YUXI_HOST_PROJECT_DIR", c->host_project_dir, sizeof(c->host_project_dir), eb, el));
	TRY(cfg_str("YUXI_DOCKER_API_BASE", c->docker_api_base, sizeof(c->docker_api_base), eb, el));
	TRY(cfg_abspath("YUXI_DOCKER_API_SOCKET", c->docker_api_socket, sizeof(c->docker_api_socket), eb, el));
	TRY(cfg_enums(c, eb, el));
	v = c->memory_bytes;
	TRY(cfg_size("YUXI_SANDBOX_MEMORY", &v, 6LL << 20, 1LL << 40, eb, el));
	c->memory_bytes = v;
	TRY(cfg_int("YUXI_SANDBOX_PIDS", &c->pids, 16, 1 << 20, eb, el));
	TRY(cfg_str("YUXI_SANDBOX_NETWORK", c->network, sizeof(c->network), eb, el));
	TRY(cfg_bool("YUXI_SANDBOX_READONLY_ROOTFS", &c->readonly_rootfs, eb, el));
	TRY(cfg_str("YUXI_SANDBOX_USER", c->user, sizeof(c->user), eb, el));
	TRY(cfg_user(c, eb, el));
	TRY(cfg_uid_range(c, eb, el));
	TRY(cfg_int("YUXI_SANDBOX_EXEC_TIMEOUT", &c->exec_timeout, 1, 600, eb, el));
	v = (int64_t)c->output_limit;
	TRY(cfg_size("YUXI_SANDBOX_OUTPUT_LIMIT", &v, 1024, 64LL << 20, eb, el));
	c->output_limit = (size_t)v;
	v = c->tmp_size;
	TRY(cfg_size("YUXI_SANDBOX_TMP_SIZE", &v, 1LL << 20, 16LL << 30, eb, el));
	c->tmp_size = v;
	TRY(cfg_abspath("YUXI_SAVES_DIR", c->saves_dir, sizeof(c->saves_dir), eb, el));
	TRY(cfg_abspath("YUXI_SKILLS_DIR", c->skills_dir, sizeof(c->skills_dir), eb, el));
	TRY(cfg_abspath("YUXI_AGENTS_FILE", c->agents_file, sizeof(c->agents_file), eb, el));
	TRY(cfg_int("YUXI_WORKERS", &c->workers, 1, 256, eb, el));
	TRY(cfg_abspath("YUXI_FCGI_SOCKET", c->fcgi_socket, sizeof(c->fcgi_socket), eb, el));
	TRY(cfg_str("YUXI_SHM_NAME", c->shm_name, sizeof(c->shm_name), eb, el));
	v = (int64_t)c->upload_limit;
	TRY(cfg_size("YUXI_UPLOAD_LIMIT", &v, 1024, 16LL << 30, eb, el));
	c->upload_limit = (size_t)v;
	v = (int64_t)c->viewer_file_limit;
	TRY(cfg_size("YUXI_VIEWER_FILE_LIMIT", &v, 1024, 64LL << 20, eb, el));
	c->viewer_file_limit = (size_t)v;
	v = (int64_t)c->body_limit;
	TRY(cfg_size("YUXI_BODY_LIMIT", &v, 4096, 1LL << 30, eb, el));
	c->body_limit = (size_t)v;
	TRY(cfg_int("YUXI_REQUEST_BUDGET_MS", &c->request_budget_ms, 0, 3600 * 1000, eb, el));
	v = (int64_t)c->walk_read_budget;
	TRY(cfg_size("YUXI_WALK_READ_BUDGET", &v, 0, 1LL << 50, eb, el));
	c->walk_read_budget = (uint64_t)v;
	TRY(cfg_abspath("YUXI_RUNNER_PATH", c->runner_path, sizeof(c->runner_path), eb, el));
	TRY(cfg_abspath("YUXI_AGENT_PATH", c->agent_path, sizeof(c->agent_path), eb, el));
	TRY(cfg_bool("YUXI_DEBUG", &debug, eb, el));
	c->verbose = debug;
	TRY(cfg_names(c, eb, el));
#undef TRY
	return YX_OK;
}
