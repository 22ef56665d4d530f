/* SPDX-License-Identifier: MIT */
/*
 * spec.c - a container spec as an Engine API create body or `docker run` argv.
 *
 * Both forms carry the same hardening (docs/design.md §3): labels, the
 * sandbox user, no engine log, the runtime (runc, or runsc: gVisor), network mode, memory with swap equal to memory, CPU quota, pids limit,
 * every capability dropped, no-new-privileges plus the operator's extra
 * security options (the engine's default seccomp profile applies unless the
 * operator names another), read-only root with size-limited tmpfs at /tmp
 * and a writable HOME tmpfs beneath which the bind mounts sit, an init
 * process that reaps zombies, and no engine log (yx_spec_log_setting(): what
 * a command writes to the init's stdout through /proc/1/fd/1 is dropped, not
 * stored under the engine's data directory). The working directory is not
 * set here: it may not exist before the first exec creates it. With network
 * mode "none" and the caller's own /etc/hosts, the create body also asks
 * the engine to set up no network at all (spec_no_engine_net).
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "driver/driver_int.h"
#include "common/control_int.h"

#define SPEC_HOME	"/home/yuxi"
#define SPEC_PORT	"8080/tcp"
#define SPEC_LOG_DRIVER	"none"
/*
 * Under gVisor's ptrace platform (Debian's runsc; KVM does not run nested
 * here) every process of the sandbox costs host tasks in the container's
 * pids cgroup: measured 7.9 per sleeping process (1,640 for 200) plus 54
 * for the idle sandbox, and the whole sandbox dies when gVisor cannot make
 * one. So under runsc the limit of YUXI_SANDBOX_PIDS processes is
 * RLIMIT_NPROC, which gVisor enforces inside (fork fails with EAGAIN, as
 * the pids cgroup makes it fail under runc), and the host's pids limit is
 * that scaled, a backstop that still bounds the host's tasks.
 */
#define SPEC_RUNSC_TASKS	10	/* host tasks per sandboxed process */
#define SPEC_RUNSC_BASE		128	/* ... and of gVisor itself */

static bool
spec_runsc(const struct yx_config *c)
{
	return strcmp(c->runtime, "runsc") == 0;
}

int64_t
yx_spec_pids(const struct yx_config *c)
{
	if (c->pids > 0 && spec_runsc(c))
		return (int64_t)c->pids * SPEC_RUNSC_TASKS + SPEC_RUNSC_BASE;
	return c->pids;
}

void
yx_spec_user(const struct yx_container_spec *s, char *dst, size_t dstlen)
{
	if (s->uid != 0)
		snprintf(dst, dstlen, "%u:%u", s->uid, s->gid);
	else
		snprintf(dst, dstlen, "%s", s->cfg->user);
}

int
yx_spec_tmpfs_opts(const struct yx_container_spec *s, bool home, char *dst,
    size_t dstlen)
{
	const struct yx_config	*cfg = s->cfg;
	int			 n;

	if (home)
		n = snprintf(dst, dstlen, "rw,nosuid,nodev,size=64m,uid=%u,"
					  "gid=%u,mode=0755",
		    s->uid != 0 ? s->uid : cfg->uid,
		    s->uid != 0 ? s->gid : cfg->gid);
	else
		n = snprintf(dst, dstlen, "rw,nosuid,nodev,size=%" PRId64,
		    cfg->tmp_size);
	return (n < 0 || (size_t)n >= dstlen) ? YX_E_INTERNAL : YX_OK;
}

/*
 * Call fn(arg, opt) for each non-empty, space-trimmed entry of the
 * comma-separated cfg->security_opts other than no-new-privileges (always
 * present). Returns YX_OK or the first error of fn.
 */
static int
spec_each_secopt(const struct yx_config *cfg, int (*fn)(void *, const char *),
    void *arg)
{
	char	 tmp[YX_CFG_PATH], *p, *tok, *save = NULL, *e;
	int	 rc = YX_OK;

	snprintf(tmp, sizeof(tmp), "%s", cfg->security_opts);
	for (p = tmp; rc == YX_OK && (tok = strtok_r(p, ",", &save)) != NULL;
	     p = NULL) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		e = tok + strlen(tok);
		while (e > tok && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (*tok == '\0' || strcmp(tok, "no-new-privileges") == 0 ||
		    strcmp(tok, "no-new-privileges:true") == 0)
			continue;
		rc = fn(arg, tok);
	}
	return rc;
}

/*
 * The container's logging driver; NULL (the engine's default, json-file on a
 * stock engine) only in the control build with YX_CONTROL_OFF=enginelog.
 */
static const char *
spec_log_driver(void)
{
	if (YX_CONTROL_OFF("enginelog"))
		return NULL;
	return SPEC_LOG_DRIVER;
}

const char *
yx_spec_log_setting(void)
{
	return spec_log_driver() != NULL ? spec_log_driver() : "engine-default";
}

/*
 * The engine shim group of a sandbox (docs/configuration.md "Shim groups"):
 * "YUXI_SHIM_GROUP=<prefix>g<n>" in dst, n the sandbox id's FNV-1a hash
 * modulo max_replicas / YUXI_SHIM_GROUP_SIZE rounded up, so that a full host
 * has about that many sandboxes per shim and a lightly used one mostly one
 * each. False (nothing to add) when grouping is off, for gVisor (runsc has
 * its own per-sandbox processes and is left as the engine starts it), for
 * a container that asks for its own (a transaction's) and when the name
 * would not fit (the shim takes at most 128 characters).
 */
bool
yx_spec_shim_group(const struct yx_container_spec *s, char *dst, size_t dstlen)
{
	const struct yx_config	*c = s->cfg;
	const unsigned char	*p;
	uint32_t		 h = 2166136261u, groups;
	int			 n;

	if (c->shim_group_size <= 0 || spec_runsc(c) || s->sandbox_id == NULL ||
	    s->own_shim)
		return false;
	groups = (uint32_t)((c->max_replicas + c->shim_group_size - 1) /
	    c->shim_group_size);
	if (groups == 0)
		groups = 1;
	for (p = (const unsigned char *)s->sandbox_id; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	n = snprintf(dst, dstlen, "YUXI_SHIM_GROUP=%sg%" PRIu32,
	    c->container_prefix, h % groups);
	return n > 0 && (size_t)n < dstlen &&
	    (size_t)n - strlen("YUXI_SHIM_GROUP=") <= 128;
}

bool
yx_spec_grouped(const struct yx_container_spec *s)
{
	char g[256];

	return yx_spec_shim_group(s, g, sizeof(g));
}

/* json helpers: each returns YX_OK or YX_E_NOMEM. */
static int
jadd(struct json_object *o, const char *k, struct json_object *v)
{
	if (v == NULL)
		return YX_E_NOMEM;
	if (json_object_object_add(o, k, v) != 0) {
		json_object_put(v);
		return YX_E_NOMEM;
	}
	return YX_OK;
}

static int
jpush(struct json_object *a, struct json_object *v)
{
	if (v == NULL)
		return YX_E_NOMEM;
	if (json_object_array_add(a, v) != 0) {
		json_object_put(v);
		return YX_E_NOMEM;
	}
	return YX_OK;
}

static int
jpush_str(void *a, const char *s)
{
	return jpush(a, json_object_new_string(s));
}

/* Labels object of the spec. */
static int
spec_labels(const struct yx_container_spec *s, struct json_object *host)
{
	struct json_object *l = json_object_new_object();
	int rc;

	if ((rc = jadd(host, "Labels", l)) != YX_OK)
		return rc;
	if ((rc = jadd(l, YX_LABEL_SANDBOX, json_object_new_string("1"))) ||
	    (rc = jadd(l, YX_LABEL_THREAD,
		 json_object_new_string(s->thread_id ? s->thread_id : ""))) ||
	    (rc = jadd(l, YX_LABEL_ID,
		 json_object_new_string(s->sandbox_id ? s->sandbox_id : ""))) ||
	    (rc = jadd(l, YX_LABEL_SKILLS,
		 json_object_new_string(s->skills_fp ? s->skills_fp : ""))))
		return rc;
	return YX_OK;
}

/* One bind of HostConfig.Mounts into array a. */
static int
spec_mount(struct json_object *a, const struct yx_mount *mt, bool slave)
{
	struct json_object	*m, *o;
	int			 rc;

	if ((rc = jpush(a, m = json_object_new_object())) != YX_OK ||
	    (rc = jadd(m, "Type", json_object_new_string("bind"))) ||
	    (rc = jadd(m, "Source", json_object_new_string(mt->host))) ||
	    (rc = jadd(m, "Target", json_object_new_string(mt->target))) ||
	    (rc = jadd(m, "ReadOnly", json_object_new_boolean(mt->readonly))))
		return rc;
	if (slave &&
	    ((rc = jadd(m, "BindOptions", o = json_object_new_object())) ||
		(rc = jadd(o, "Propagation", json_object_new_string("rslave")))))
		return rc;
	return YX_OK;
}

/* HostConfig.Mounts: one bind per spec mount (the source must exist). */
static int
spec_mounts(const struct yx_container_spec *s, struct json_object *hc)
{
	struct json_object	*a = json_object_new_array();
	size_t			 i;
	int			 rc;

	if ((rc = jadd(hc, "Mounts", a)) != YX_OK)
		return rc;
	for (i = 0; i < s->nmounts; i++)
		if ((rc = spec_mount(a, &s->mounts[i], false)) != YX_OK)
			return rc;
	for (i = 0; i < s->nslave; i++)
		if ((rc = spec_mount(a, &s->slave[i], true)) != YX_OK)
			return rc;
	return YX_OK;
}

/* HostConfig.PortBindings and Config.ExposedPorts for host_port > 0. */
static int
spec_ports(const struct yx_container_spec *s, struct json_object *body,
    struct json_object *hc)
{
	struct json_object	*pb, *arr, *b, *ex;
	char			 port[16];
	int			 rc;

	snprintf(port, sizeof(port), "%d", s->host_port);
	if ((rc = jadd(body, "ExposedPorts", ex = json_object_new_object())) ||
	    (rc = jadd(ex, SPEC_PORT, json_object_new_object())) ||
	    (rc = jadd(hc, "PortBindings", pb = json_object_new_object())) ||
	    (rc = jadd(pb, SPEC_PORT, arr = json_object_new_array())) ||
	    (rc = jpush(arr, b = json_object_new_object())) ||
	    (rc = jadd(b, "HostIp",
		 json_object_new_string(s->cfg->sandbox_host))) ||
	    (rc = jadd(b, "HostPort", json_object_new_string(port))))
		return rc;
	return YX_OK;
}

/*
 * Network mode "none" with the caller's own /etc/hosts and no published
 * port: no network for the engine to set up (YX_SPEC_HOSTS in
 * include/yuxi/driver.h). Skipping it saves the engine's network sandbox
 * of each start: its prestart hook and two more runs of the engine's own
 * binary that configure an empty namespace (start 243 -> 114 ms median
 * here, docs/benchmarks.md).
 */
static bool
spec_no_engine_net(const struct yx_container_spec *s)
{
	size_t i;

	if (strcmp(s->cfg->network, "none") != 0 || s->host_port > 0)
		return false;
	for (i = 0; i < s->nmounts; i++)
		if (strcmp(s->mounts[i].target, YX_SPEC_HOSTS) == 0)
			return true;
	return false;
}

/* The HostConfig object: limits, hardening, tmpfs, mounts, log. */
static int
spec_hostconfig(const struct yx_container_spec *s, struct json_object *body)
{
	const struct yx_config	*c = s->cfg;
	struct json_object	*hc = json_object_new_object(), *a, *t, *lc;
	const char		*log = spec_log_driver();
	char			 opts[128];
	int			 rc;

	if ((rc = jadd(body, "HostConfig", hc)) ||
	    (rc = jadd(hc, "NetworkMode", json_object_new_string(c->network))) ||
	    (rc = jadd(hc, "Runtime", json_object_new_string(c->runtime))) ||
	    (rc = jadd(hc, "Init", json_object_new_boolean(1))) ||
	    (rc = jadd(hc, "ReadonlyRootfs",
		 json_object_new_boolean(c->readonly_rootfs))) ||
	    (rc = jadd(hc, "CapDrop", a = json_object_new_array())) ||
	    (rc = jpush_str(a, "ALL")) ||
	    (rc = jadd(hc, "SecurityOpt", a = json_object_new_array())) ||
	    (rc = jpush_str(a, "no-new-privileges")) ||
	    (rc = spec_each_secopt(c, jpush_str, a)) ||
	    (rc = jadd(hc, "Tmpfs", t = json_object_new_object())) ||
	    (rc = yx_spec_tmpfs_opts(s, false, opts, sizeof(opts))) ||
	    (rc = jadd(t, "/tmp", json_object_new_string(opts))) ||
	    (rc = yx_spec_tmpfs_opts(s, true, opts, sizeof(opts))) ||
	    (rc = jadd(t, SPEC_HOME, json_object_new_string(opts))) ||
	    (rc = spec_mounts(s, hc)))
		return rc;
	if (log != NULL &&
	    ((rc = jadd(hc, "LogConfig", lc = json_object_new_object())) ||
		(rc = jadd(lc, "Type", json_object_new_string(log)))))
		return rc;
	if (c->memory_bytes > 0 &&
	    ((rc = jadd(hc, "Memory", json_object_new_int64(c->memory_bytes))) ||
		(rc = jadd(hc, "MemorySwap",
		     json_object_new_int64(c->memory_bytes)))))
		return rc;
	if (c->cpus > 0 &&
	    (rc = jadd(hc, "NanoCpus",
		 json_object_new_int64((int64_t)(c->cpus * 1e9 + 0.5)))))
		return rc;
	if (c->pids > 0 &&
	    (rc = jadd(hc, "PidsLimit", json_object_new_int64(yx_spec_pids(c)))))
		return rc;
	if (c->pids > 0 && spec_runsc(c) &&
	    ((rc = jadd(hc, "Ulimits", a = json_object_new_array())) ||
		(rc = jpush(a, t = json_object_new_object())) ||
		(rc = jadd(t, "Name", json_object_new_string("nproc"))) ||
		(rc = jadd(t, "Soft", json_object_new_int64(c->pids))) ||
		(rc = jadd(t, "Hard", json_object_new_int64(c->pids)))))
		return rc;
	if (s->host_port > 0 && (rc = spec_ports(s, body, hc)))
		return rc;
	return YX_OK;
}

/*
 * Returns the create body (caller json_object_put()s it), or NULL with
 * YX_E_NOMEM in err.
 */
struct json_object *
yx_spec_create_body(const struct yx_container_spec *s, struct yx_errctx *err)
{
	struct json_object	*body = json_object_new_object(), *env, *cmd = NULL;
	char			 user[64], group[160];
	int			 rc = YX_E_NOMEM;
	size_t			 i;

	if (body == NULL)
		goto fail;
	yx_spec_user(s, user, sizeof(user));
	if ((rc = jadd(body, "Image", json_object_new_string(s->image))) ||
	    (rc = jadd(body, "User", json_object_new_string(user))) ||
	    (rc = jadd(body, "Env", env = json_object_new_array())) ||
	    (rc = jpush_str(env, "HOME=" SPEC_HOME)) ||
	    (yx_spec_shim_group(s, group, sizeof(group)) &&
		(rc = jpush_str(env, group))) ||
	    (rc = spec_labels(s, body)) ||
	    (rc = spec_hostconfig(s, body)))
		goto fail;
	if (spec_no_engine_net(s) &&
	    (rc = jadd(body, "NetworkDisabled", json_object_new_boolean(1))))
		goto fail;
	if (s->cmd != NULL &&
	    (rc = jadd(body, "Cmd", cmd = json_object_new_array())) != YX_OK)
		goto fail;
	for (i = 0; s->cmd != NULL && s->cmd[i] != NULL; i++)
		if ((rc = jpush_str(cmd, s->cmd[i])) != YX_OK)
			goto fail;
	return body;
fail:
	json_object_put(body);
	yx_fail(err, rc, "cannot build the container create request");
	return NULL;
}

/* A growable argv of heap strings. */
struct argv_vec {
	char	**v;
	size_t	  n, alloc;
};

/* Append a copy of s; YX_OK or YX_E_NOMEM. */
static int
argv_push(void *arg, const char *s)
{
	struct argv_vec	 *av = arg;
	char		**nv;

	if (av->n + 2 > av->alloc) {
		size_t na = av->alloc ? av->alloc * 2 : 64;

		if ((nv = realloc(av->v, na * sizeof(*nv))) == NULL)
			return YX_E_NOMEM;
		av->v = nv;
		av->alloc = na;
		av->v[av->n] = NULL;
	}
	if ((av->v[av->n] = strdup(s)) == NULL)
		return YX_E_NOMEM;
	av->v[++av->n] = NULL;
	return YX_OK;
}

/* Append "opt" then a formatted value; YX_OK or YX_E_NOMEM. */
static int
argv_pushf(struct argv_vec *av, const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int
argv_pushf(struct argv_vec *av, const char *opt, const char *fmt, ...)
{
	va_list	 ap;
	char	*s = NULL;
	int	 rc, n;

	if (opt != NULL && (rc = argv_push(av, opt)) != YX_OK)
		return rc;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return YX_E_NOMEM;
	rc = argv_push(av, s);
	free(s);
	return rc;
}

static int
secopt_push(void *arg, const char *s)
{
	return argv_pushf(arg, "--security-opt", "%s", s);
}

/* --mount for each spec mount; BAD_REQUEST for paths --mount cannot carry. */
static int
spec_argv_mounts(const struct yx_container_spec *s, struct argv_vec *av,
    struct yx_errctx *err)
{
	const struct yx_mount	*m;
	size_t			 i;
	int			 rc;

	for (i = 0; i < s->nmounts + s->nslave; i++) {
		m = i < s->nmounts ? &s->mounts[i] : &s->slave[i - s->nmounts];
		if (strpbrk(m->host, ",\"\n") != NULL ||
		    strpbrk(m->target, ",\"\n") != NULL)
			return yx_fail(err, YX_E_BAD_REQUEST,
			    "mount path not supported by the docker command");
		if ((rc = argv_pushf(av, "--mount",
			 "type=bind,source=%s,target=%s%s%s", m->host, m->target,
			 m->readonly ? ",readonly" : "",
			 i >= s->nmounts ? ",bind-propagation=rslave" : "")) !=
		    YX_OK)
			return rc;
	}
	return YX_OK;
}

/* The hardening options of `docker run`. */
static int
spec_argv_limits(const struct yx_container_spec *s, struct argv_vec *av)
{
	const struct yx_config	*c = s->cfg;
	char			 opts[128], user[64], group[160];
	int			 rc;

	yx_spec_user(s, user, sizeof(user));
	if ((rc = argv_pushf(av, "--user", "%s", user)) ||
	    (rc = argv_pushf(av, "--env", "HOME=%s", SPEC_HOME)) ||
	    (yx_spec_shim_group(s, group, sizeof(group)) &&
		(rc = argv_pushf(av, "--env", "%s", group))) ||
	    (rc = argv_pushf(av, "--network", "%s", c->network)) ||
	    (rc = argv_pushf(av, "--runtime", "%s", c->runtime)) ||
	    (rc = argv_pushf(av, "--cap-drop", "ALL")) ||
	    (rc = argv_pushf(av, "--security-opt", "no-new-privileges")) ||
	    (rc = spec_each_secopt(c, secopt_push, av)) ||
	    (rc = argv_push(av, "--init")) ||
	    (rc = yx_spec_tmpfs_opts(s, false, opts, sizeof(opts))) ||
	    (rc = argv_pushf(av, "--tmpfs", "/tmp:%s", opts)) ||
	    (rc = yx_spec_tmpfs_opts(s, true, opts, sizeof(opts))) ||
	    (rc = argv_pushf(av, "--tmpfs", SPEC_HOME ":%s", opts)))
		return rc;
	if (c->readonly_rootfs && (rc = argv_push(av, "--read-only")))
		return rc;
	if (spec_log_driver() != NULL &&
	    (rc = argv_pushf(av, "--log-driver", "%s", spec_log_driver())))
		return rc;
	if (c->memory_bytes > 0 &&
	    ((rc = argv_pushf(av, "--memory", "%" PRId64, c->memory_bytes)) ||
		(rc = argv_pushf(av, "--memory-swap", "%" PRId64, c->memory_bytes))))
		return rc;
	if (c->cpus > 0 && (rc = argv_pushf(av, "--cpus", "%.3f", c->cpus)))
		return rc;
	if (c->pids > 0 &&
	    (rc = argv_pushf(av, "--pids-limit", "%" PRId64, yx_spec_pids(c))))
		return rc;
	if (c->pids > 0 && spec_runsc(c) &&
	    (rc = argv_pushf(av, "--ulimit", "nproc=%d:%d", c->pids, c->pids)))
		return rc;
	return YX_OK;
}

/* Returns YX_OK with *argvp set (free with yx_spec_argv_free), or an error. */
int
yx_spec_run_argv(const struct yx_container_spec *s, char ***argvp,
    struct yx_errctx *err)
{
	struct argv_vec	av = { NULL, 0, 0 };
	size_t		i;
	int		rc;

	*argvp = NULL;
	if ((rc = argv_push(&av, "docker")) || (rc = argv_push(&av, "run")) ||
	    (rc = argv_push(&av, "-d")) ||
	    (rc = argv_pushf(&av, "--pull", "never")) ||
	    (rc = argv_pushf(&av, "--name", "%s", s->name)) ||
	    (rc = argv_pushf(&av, "--label", "%s=1", YX_LABEL_SANDBOX)) ||
	    (rc = argv_pushf(&av, "--label", "%s=%s", YX_LABEL_THREAD,
		 s->thread_id ? s->thread_id : "")) ||
	    (rc = argv_pushf(&av, "--label", "%s=%s", YX_LABEL_ID,
		 s->sandbox_id ? s->sandbox_id : "")) ||
	    (rc = argv_pushf(&av, "--label", "%s=%s", YX_LABEL_SKILLS,
		 s->skills_fp ? s->skills_fp : "")) ||
	    (rc = spec_argv_limits(s, &av)) ||
	    (rc = spec_argv_mounts(s, &av, err)))
		goto fail;
	if (s->host_port > 0 &&
	    (rc = argv_pushf(&av, "--publish", "%s:%d:8080",
		 s->cfg->sandbox_host, s->host_port)))
		goto fail;
	if ((rc = argv_push(&av, "--")) || (rc = argv_push(&av, s->image)))
		goto fail;
	for (i = 0; s->cmd != NULL && s->cmd[i] != NULL; i++)
		if ((rc = argv_push(&av, s->cmd[i])) != YX_OK)
			goto fail;
	*argvp = av.v;
	return YX_OK;
fail:
	yx_spec_argv_free(av.v);
	if (rc == YX_E_NOMEM)
		yx_fail(err, rc, "cannot build the docker command line");
	return rc;
}

void
yx_spec_argv_free(char **argv)
{
	size_t i;

	if (argv == NULL)
		return;
	for (i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}
