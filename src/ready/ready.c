/* SPDX-License-Identifier: MIT */
/*
 * ready.c - the readiness checks shared by /readyz, the master's start-up
 * and `yuxi-sandbox doctor`; see include/yuxi/ready.h.
 *
 * A check never blocks longer than the driver's own bounds (a ping, an
 * image inspect and, when runsc is named, GET /info; 2 s to connect) or the
 * table's lock timeout, and touches
 * nothing: it stats files, asks the engine and reads the table.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/agents.h"
#include "yuxi/clock.h"
#include "yuxi/driver.h"
#include "yuxi/provider.h"
#include "yuxi/ready.h"

static const char *const ready_names[YX_READY_N] = {
	[YX_READY_ENGINE] = "engine",
	[YX_READY_IMAGE] = "image",
	[YX_READY_RUNTIME] = "runtime",
	[YX_READY_RUNNER] = "runner",
	[YX_READY_AGENT] = "agent",
	[YX_READY_TABLE] = "table",
	[YX_READY_DISK] = "disk",
};

const char *
yx_ready_name(int id)
{
	return id >= 0 && id < YX_READY_N ? ready_names[id] : "?";
}

void
yx_ready_init(struct yx_ready *rd, const struct yx_config *cfg,
    struct yx_driver *drv, struct yx_table *table)
{
	memset(rd, 0, sizeof(*rd));
	rd->cfg = cfg;
	rd->drv = drv;
	rd->table = table;
	rd->runsc = strcmp(cfg->runtime, "runsc") == 0;
}

void
yx_ready_need_runtime(struct yx_ready *rd, const char *runtime)
{
	if (runtime != NULL && strcmp(runtime, "runsc") == 0 && !rd->runsc) {
		rd->runsc = true;
		rd->runtime_at_ms = 0;	/* not the cached answer */
	}
}

/* Fill one result; returns rc. */
static int
ready_set(struct yx_ready_result *res, int id, int rc, const char *detail,
    const char *oper)
{
	res->name = ready_names[id];
	res->rc = rc;
	snprintf(res->detail, sizeof(res->detail), "%s", detail);
	snprintf(res->oper, sizeof(res->oper), "%s", oper);
	return rc;
}

/*
 * The runtimes sandboxes may run under, asked of an engine that answers (rc:
 * the engine check's), at most once per YX_READY_CACHE_MS; not part of
 * ready_engine, which /healthz calls too.
 */
static void
ready_runtime(struct yx_ready *rd, int rc)
{
	struct yx_errctx	e;
	char			oper[sizeof(rd->runtime.oper)];

	if (rd->runtime_at_ms != 0 &&
	    yx_mono_ms() - rd->runtime_at_ms < YX_READY_CACHE_MS)
		return;
	rd->runtime_at_ms = yx_mono_ms();
	if (!rd->runsc) {
		ready_set(&rd->runtime, YX_READY_RUNTIME, YX_OK, "runc only",
		    "runc only: nothing to ask the engine");
		return;
	}
	yx_errctx_clear(&e);
	if (rc == YX_OK)
		rc = yx_driver_runtime_check(rd->drv, "runsc", &e);
	else {
		/* not the engine's answer: ask as soon as it is back */
		rd->runtime_at_ms = 0;
		yx_fail(&e, rc, "engine not reachable");
	}
	snprintf(oper, sizeof(oper), "runsc: %s", rc == YX_OK ? "usable" : e.msg);
	ready_set(&rd->runtime, YX_READY_RUNTIME, rc,
	    rc == YX_OK ? "runsc usable" : "runsc not usable", oper);
}

/* The engine ping and the image, at most once per YX_READY_CACHE_MS. */
static void
ready_engine(struct yx_ready *rd)
{
	struct yx_errctx	 e;
	const char		*detail;
	char			 oper[sizeof(rd->engine.oper)];
	int			 rc;

	if (rd->engine_at_ms != 0 &&
	    yx_mono_ms() - rd->engine_at_ms < YX_READY_CACHE_MS)
		return;
	yx_errctx_clear(&e);
	rc = rd->drv != NULL ? rd->drv->ops->ping(rd->drv, &e) :
			       yx_fail(&e, YX_E_BACKEND_UNAVAILABLE, "no driver");
	snprintf(oper, sizeof(oper), "%s driver: %s",
	    rd->drv != NULL ? rd->drv->ops->name : "no",
	    rc == YX_OK ? "engine answers" : e.msg);
	ready_set(&rd->engine, YX_READY_ENGINE, rc,
	    rc == YX_OK ? "engine answers" : "engine not reachable", oper);
	yx_errctx_clear(&e);
	if (rc == YX_OK)
		rc = rd->drv->ops->image_present(rd->drv, rd->cfg->image, &e);
	else
		yx_fail(&e, rc, "engine not reachable");
	snprintf(oper, sizeof(oper), "%s: %s", rd->cfg->image,
	    rc == YX_OK ? "present" : e.msg);
	if (rc == YX_OK)
		detail = "sandbox image present";
	else if (rc == YX_E_IMAGE_MISSING)
		detail = "sandbox image missing";
	else
		detail = "sandbox image not checked";
	ready_set(&rd->image, YX_READY_IMAGE, rc, detail, oper);
	rd->engine_at_ms = yx_mono_ms();
}

bool
yx_ready_engine_up(struct yx_ready *rd)
{
	ready_engine(rd);
	return rd->engine.rc == YX_OK;
}

/* A helper binary the engine bind-mounts: a regular executable file. */
static void
ready_helper(struct yx_ready_result *res, int id, const char *what,
    const char *path, const char *setting)
{
	struct stat	sb;
	char		detail[96], oper[YX_CFG_PATH + 128];
	int		en = 0;

	if (path[0] == '\0')
		en = ENOENT;
	else if (stat(path, &sb) == -1)
		en = errno;
	else if (!S_ISREG(sb.st_mode))
		en = EINVAL;
	else if (access(path, X_OK) == -1)
		en = errno;
	if (en == 0) {
		snprintf(detail, sizeof(detail), "%s present", what);
		ready_set(res, id, YX_OK, detail, path);
		return;
	}
	snprintf(detail, sizeof(detail), "%s missing or not executable", what);
	snprintf(oper, sizeof(oper), "%s: %s (set %s)",
	    path[0] != '\0' ? path : "(no path)",
	    en == EINVAL ? "not a regular file" : strerror(en), setting);
	ready_set(res, id, YX_E_BACKEND_UNAVAILABLE, detail, oper);
}

static void
ready_agent(struct yx_ready *rd, struct yx_ready_result *res)
{
	char path[YX_CFG_PATH];

	if (rd->cfg->exec_agent == YX_EXEC_AGENT_OFF) {
		ready_set(res, YX_READY_AGENT, YX_OK, "agent not used",
		    "not used (YUXI_EXEC_AGENT=off)");
		return;
	}
	yx_config_agent_path(rd->cfg, path, sizeof(path));
	ready_helper(res, YX_READY_AGENT, "in-sandbox agent", path,
	    "YUXI_AGENT_PATH, or YUXI_EXEC_AGENT=off");
}

static void
ready_table(struct yx_ready *rd, struct yx_ready_result *res)
{
	struct yx_errctx	 e;
	const char		*detail;
	char			 oper[sizeof(e.msg) + 80];
	int			 rc;

	yx_errctx_clear(&e);
	rc = yx_provider_check(rd->table, &e);
	snprintf(oper, sizeof(oper), "%s: %s", rd->cfg->shm_name,
	    rc == YX_OK ? "consistent" : e.msg);
	if (rc == YX_OK)
		detail = "shared table consistent";
	else if (rc == YX_E_BUSY)
		detail = "shared table lock not obtained";
	else if (rc == YX_E_BACKEND_UNAVAILABLE)
		detail = "no shared table";
	else
		detail = "shared table inconsistent";
	ready_set(res, YX_READY_TABLE, rc, detail, oper);
}

/* Free space of the saves directory's filesystem (for unprivileged users). */
static void
ready_disk(struct yx_ready *rd, struct yx_ready_result *res)
{
	const struct yx_config	*c = rd->cfg;
	struct statvfs		 vf;
	char			 detail[96], oper[YX_CFG_PATH + 128];
	unsigned long long	 avail, total, need;
	int			 rc = YX_OK;

	if (c->ready_min_free == 0 && c->ready_min_free_pct == 0) {
		ready_set(res, YX_READY_DISK, YX_OK, "not checked",
		    "not checked (YUXI_READY_MIN_FREE=0)");
		return;
	}
	if (statvfs(c->saves_dir, &vf) == -1) {
		snprintf(oper, sizeof(oper), "%s: %s", c->saves_dir, strerror(errno));
		ready_set(res, YX_READY_DISK, YX_E_IO, "saves directory unavailable",
		    oper);
		return;
	}
	avail = (unsigned long long)vf.f_bavail * vf.f_frsize;
	total = (unsigned long long)vf.f_blocks * vf.f_frsize;
	need = c->ready_min_free_pct > 0 ?
	    total / 100 * (unsigned long long)c->ready_min_free_pct :
	    (unsigned long long)c->ready_min_free;
	if (avail < need)
		rc = YX_E_NOSPACE;
	snprintf(detail, sizeof(detail), "%llu MiB free, %llu MiB needed",
	    avail >> 20, need >> 20);
	snprintf(oper, sizeof(oper), "%s: %s", c->saves_dir, detail);
	ready_set(res, YX_READY_DISK, rc, detail, oper);
}

unsigned
yx_ready_run(struct yx_ready *rd, struct yx_ready_result *res)
{
	unsigned	n = 0;
	int		i;

	ready_engine(rd);
	ready_runtime(rd, rd->engine.rc);
	res[YX_READY_ENGINE] = rd->engine;
	res[YX_READY_IMAGE] = rd->image;
	res[YX_READY_RUNTIME] = rd->runtime;
	ready_helper(&res[YX_READY_RUNNER], YX_READY_RUNNER, "in-sandbox runner",
	    rd->cfg->runner_path, "YUXI_RUNNER_PATH");
	ready_agent(rd, &res[YX_READY_AGENT]);
	ready_table(rd, &res[YX_READY_TABLE]);
	ready_disk(rd, &res[YX_READY_DISK]);
	for (i = 0; i < YX_READY_N; i++)
		n += res[i].rc != YX_OK;
	return n;
}

unsigned
yx_ready_components(struct yx_ready *rd, const struct yx_profile *dflt,
    struct yx_ready_result *res)
{
	unsigned	n = 0;
	bool		need;
	int		k, st;

	for (k = 0; k < YX_COMP_N; k++) {
		if ((st = yx_provider_comp_state(rd->table, k, NULL)) == YX_COMP_UNUSED)
			continue;
		/* the helper with a disk quota or a pool, the egress proxy for a
		 * default profile with network, the preview ingress whenever it
		 * runs (previews are on) */
		need = k == YX_COMP_PRIV ?
		    rd->cfg->thread_disk_quota > 0 || rd->cfg->pool_size > 0 :
		    k == YX_COMP_EGRESS ? dflt != NULL && dflt->net.nallow > 0 :
					  true;
		memset(&res[n], 0, sizeof(res[n]));
		res[n].name = yx_comp_name(k);
		res[n].rc = st == YX_COMP_UP || !need ? YX_OK : YX_E_BACKEND_UNAVAILABLE;
		snprintf(res[n].detail, sizeof(res[n].detail), "%s",
		    st == YX_COMP_UP ? "up" :
			need	     ? "down: the master is starting it again" :
				       "down (not needed by the default profile): the master is "
				       "starting it again");
		snprintf(res[n].oper, sizeof(res[n].oper), "%s", res[n].detail);
		n++;
	}
	return n;
}

/* "2 GiB", "512 MiB" of n bytes (a whole number of MiB). */
static void
ready_size(int64_t n, char *out, size_t len)
{
	if (n % (1LL << 30) == 0)
		snprintf(out, len, "%lld GiB", (long long)(n >> 30));
	else
		snprintf(out, len, "%lld MiB", (long long)(n >> 20));
}

/* The pool's part of the texts into pool (API) and why (operator). */
static void
ready_protect_pool(const struct yx_config *c, struct yx_ready_protect *p,
    char *pool, size_t len)
{
	if (p->pool_size > 0)
		snprintf(pool, len, "pool of %d pre-started sandboxes%s%s",
		    p->pool_size, p->own_uids ? ", each its own uid" : "",
		    c->pool_auto ? " (auto)" : "");
	else if (p->lost & YX_PROTECT_POOL) {
		snprintf(pool, len, "pool OFF: this host does not give the "
				    "privileges it needs");
		snprintf(p->warn[p->nwarn++], sizeof(p->warn[0]),
		    "the pool of pre-started sandboxes is off: this host does not "
		    "give the service CAP_SYS_ADMIN in the engine's mount "
		    "namespace; a new thread's first command waits for a "
		    "container to start");
	} else if (c->pool_auto)
		snprintf(pool, len, "pool off (YUXI_SANDBOX_MAX_REPLICAS below 4 "
				    "leaves no room for one)");
	else
		snprintf(pool, len, "pool off (YUXI_POOL_SIZE=0)");
}

static void
ready_protect_quota(const struct yx_config *c, struct yx_ready_protect *p,
    char *quota, size_t len)
{
	char sz[32];

	if (p->disk_quota > 0) {
		ready_size(p->disk_quota, sz, sizeof(sz));
		snprintf(quota, len, "disk quota %s per thread%s", sz,
		    c->disk_quota_auto ? " (auto)" : "");
	} else if (p->lost & YX_PROTECT_QUOTA) {
		snprintf(quota, len, "disk quota OFF: this host does not give "
				     "what it needs");
		snprintf(p->warn[p->nwarn++], sizeof(p->warn[0]),
		    "the per-thread disk quota is off: this host does not give "
		    "the service CAP_SYS_ADMIN in the engine's mount namespace, "
		    "loop devices and the images' mkfs; one thread can fill "
		    "the host's disk");
	} else
		snprintf(quota, len, "disk quota off (YUXI_THREAD_DISK_QUOTA=0): "
				     "one thread can fill the host's disk");
}

void
yx_ready_protect(const struct yx_config *c, struct yx_ready_protect *p)
{
	char pool[160], quota[160];

	memset(p, 0, sizeof(*p));
	p->pool_size = c->pool_size;
	p->own_uids = c->uid_count > 0;
	p->disk_quota = c->thread_disk_quota;
	p->lost = c->protect_lost;
	if (c->mode == YX_MODE_FRONT) {
		snprintf(p->detail, sizeof(p->detail), "a front runs no "
						       "sandboxes: each host's own");
		snprintf(p->oper, sizeof(p->oper), "%s", p->detail);
		return;
	}
	ready_protect_pool(c, p, pool, sizeof(pool));
	ready_protect_quota(c, p, quota, sizeof(quota));
	snprintf(p->detail, sizeof(p->detail), "%s; %s", pool, quota);
	if (p->lost != 0)
		snprintf(p->oper, sizeof(p->oper), "%s; %s (%s)", pool, quota,
		    c->protect_why);
	else
		snprintf(p->oper, sizeof(p->oper), "%s", p->detail);
}

/* A number from a /proc/sys file; -1 when it cannot be read. */
static long long
ready_sysctl(const char *path)
{
	long long	 v = -1;
	FILE		*f;

	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Tasks (threads) on the host now: the total of /proc/loadavg. */
static long long
ready_tasks(void)
{
	long long	 run = 0, all = -1;
	FILE		*f;

	if ((f = fopen("/proc/loadavg", "re")) == NULL)
		return -1;
	if (fscanf(f, "%*s %*s %*s %lld/%lld", &run, &all) != 2)
		all = -1;
	fclose(f);
	return all;
}

bool
yx_ready_capacity(const struct yx_config *c, char *warn, size_t warnlen,
    char *oper, size_t operlen)
{
	long long	pid_max, thr_max, lim, now, need, room;
	const char	*name;

	warn[0] = oper[0] = '\0';
	if (c->mode == YX_MODE_FRONT)
		return true;
	pid_max = ready_sysctl("/proc/sys/kernel/pid_max");
	thr_max = ready_sysctl("/proc/sys/kernel/threads-max");
	if ((now = ready_tasks()) < 0 || (pid_max < 0 && thr_max < 0))
		return true;
	lim = pid_max;
	name = "kernel.pid_max";
	if (pid_max < 0 || (thr_max >= 0 && thr_max < pid_max)) {
		lim = thr_max;
		name = "kernel.threads-max";
	}
	need = (long long)c->max_replicas * YX_READY_TASKS_PER_SANDBOX;
	room = lim - now;
	if (need <= room)
		return true;
	snprintf(warn, warnlen, "YUXI_SANDBOX_MAX_REPLICAS=%d needs about %lld "
				"tasks, and %s leaves room for %lld: sandboxes "
				"past about %lld fail to start",
	    c->max_replicas, need, name, room > 0 ? room : 0,
	    room > 0 ? room / YX_READY_TASKS_PER_SANDBOX : 0);
	snprintf(oper, operlen, "%s (%s=%lld, %lld tasks running); raise it "
				"(sysctl -w %s=4194304) or lower "
				"YUXI_SANDBOX_MAX_REPLICAS",
	    warn, name, lim, now, name);
	return false;
}

/* The pid of the host's containerd (dockerd's or the system's), or -1. */
static pid_t
ready_containerd(void)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300], comm[32];
	ssize_t		 n;
	pid_t		 pid = -1;
	int		 fd;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while (pid < 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0 && (size_t)n == strlen("containerd\n") &&
		    memcmp(comm, "containerd\n", (size_t)n) == 0)
			pid = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return pid;
}

/* Whether the file at path is the grouping shim (it names the variable). */
static bool
ready_is_group_shim(const char *path)
{
	static const char	 mark[] = "YUXI_SHIM_GROUP=";
	struct stat		 st;
	void			*m;
	bool			 yes = false;
	int			 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    st.st_size < (64 << 20) &&
	    (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) !=
		MAP_FAILED) {
		yes = memmem(m, (size_t)st.st_size, mark, sizeof(mark) - 1) != NULL;
		munmap(m, (size_t)st.st_size);
	}
	close(fd);
	return yes;
}

bool
yx_ready_shim_groups(const struct yx_config *c, char *oper, size_t operlen)
{
	char	 env[16384], path[4096], cand[4200] = "";
	char	*p, *end, *v = NULL;
	ssize_t	 n;
	pid_t	 pid;
	int	 fd;
	bool	 found = false;

	oper[0] = '\0';
	if (c->mode == YX_MODE_FRONT) {
		snprintf(oper, operlen, "not used by a front (its sandbox hosts' "
					"engines run the shims)");
		return true;
	}
	if (c->shim_group_size <= 0) {
		snprintf(oper, operlen, "off (YUXI_SHIM_GROUP_SIZE=0): one engine "
					"shim per sandbox");
		return true;
	}
	if ((pid = ready_containerd()) < 0) {
		snprintf(oper, operlen, "no containerd process found on this host: "
					"cannot tell whether the engine groups sandboxes");
		return false;
	}
	/* containerd looks in its working directory first, then on PATH */
	snprintf(cand, sizeof(cand), "/proc/%ld/cwd/containerd-shim-runc-v2",
	    (long)pid);
	found = access(cand, X_OK) == 0;
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	if (!found && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(oper, operlen, "cannot read containerd's environment (%s): "
					"run doctor as root",
		    strerror(errno));
		return false;
	}
	if (!found) {
		n = read(fd, env, sizeof(env) - 1);
		close(fd);
		env[n > 0 ? n : 0] = '\0';
		for (p = env; n > 0 && p < env + n; p += strlen(p) + 1) {
			if (strncmp(p, "PATH=", 5) == 0) {
				v = p + 5;
				break;
			}
		}
		snprintf(path, sizeof(path), "%s", v != NULL ? v : "/usr/bin");
		for (p = path; !found && *p != '\0'; p = *end ? end + 1 : end) {
			if ((end = strchr(p, ':')) == NULL)
				end = p + strlen(p);
			snprintf(cand, sizeof(cand), "%.*s/containerd-shim-runc-v2",
			    (int)(end - p), p);
			found = end != p && access(cand, X_OK) == 0;
		}
	}
	if (found && ready_is_group_shim(cand)) {
		snprintf(oper, operlen, "on: about %d sandboxes per engine shim on "
					"a full host (%s)",
		    c->shim_group_size, cand);
		return true;
	}
	snprintf(oper, operlen, "off: the engine's containerd (pid %ld) runs %s, "
				"one shim (about 3 MiB) per sandbox; put the "
				"grouping shim's directory first on its PATH "
				"(docs/configuration.md \"Shim groups\")",
	    (long)pid, found ? cand : "no containerd-shim-runc-v2 it can find");
	return false;
}
