/* SPDX-License-Identifier: MIT */
/*
 * yuxi-sandbox - the operator CLI.
 *
 * Works on the same shared provider table and engine as the service (it
 * attaches to the table yuxi-sandboxd created, or creates it when the
 * service is not running and removes it again when done), so an operator
 * can inspect and act on live sandboxes. It reads the service's
 * configuration (yuxi/config.h: YUXI_CONFIG, a development run's file, the
 * installed one) and, run as root on an installed host, acts as the
 * service's user (cli_host.c) for everything but nginx-conf and image:
 *   doctor [--json]        the readiness checks of /readyz (engine, image,
 *                          runner, agent, table, disk; yuxi/ready.h) and
 *                          the robust-mutex self-test; exit 1 when one
 *                          fails, naming it
 *   list [--json]          sandboxes in the table
 *   acquire THREAD         make sure THREAD has a running sandbox
 *   exec THREAD -- CMD...  run CMD in THREAD's sandbox; exit status of CMD
 *                          (acquire and exec act on existing threads; with
 *                          --owner USER a missing thread is created for
 *                          USER, exactly as POST /api/threads would)
 *   release THREAD|ID      move a sandbox to the warm pool
 *   destroy THREAD|ID      remove the container (user data is kept)
 *   gc [--all] [--json]    drop dead holds, reconcile with the engine,
 *                          recover interrupted transactions
 *                          (orphan containers adopted or removed), reap idle;
 *                          --all: then every sandbox (the package's prerm
 *                          on removal; refused while the service runs)
 *   nginx-conf [OPTIONS]   render the nginx snippets for an existing server
 *                          (cli_nginx.c; touches neither table nor engine)
 *   image build [default|test|browser] [NAME]
 *                          build a sandbox image offline with the installed
 *                          recipe ($(pkgdatadir)/images/<recipe>/build.sh)
 * Exit codes: 0 success, 1 failure, 2 usage; exec returns the command's code.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli_int.h"
#include "yuxi/agents.h"
#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/executor.h"
#include "yuxi/http.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/priv.h"
#include "yuxi/provider.h"
#include "yuxi/ready.h"
#include "yuxi/shm_table.h"
#include "yuxi/tablelock.h"
#include "yuxi/threads.h"

struct cli {
	struct yx_config	 cfg;
	struct yx_table		*table;
	struct yx_driver	*drv;
	struct yx_executor	*ex;
	struct yx_thread_store	 store;
	bool			 store_ok;
	struct yx_agents	*agents;
	bool			 json;
	bool			 created;	/* the table is ours: removed at the end */
	struct yx_tablelock	 lock;		/* gc --all, and that removal */
	/* doctor's shim-groups check, made as root before dropping to the
	 * service user (containerd's environment is root's to read) */
	bool			 shim_ok;
	char			 shim[YX_CFG_PATH + 256];
};

struct cli_cmd {
	const char	*name;
	const char	*usage;
	const char	*help;
	int		(*fn)(struct cli *, int, char **);
};

static const struct cli_cmd *cli_find(const char *name);

static int
cli_err(const char *what, int rc, const struct yx_errctx *e)
{
	fprintf(stderr, "yuxi-sandbox: %s: %s\n", what,
	    e != NULL && e->msg[0] != '\0' ? e->msg : yx_strerror(rc));
	return 1;
}

/* Attach to (or create) the table, make the driver and the executor. */
static int
cli_open(struct cli *c)
{
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	/* the service's table; else one of our own, while it is stopped */
	rc = yx_table_open(&c->table, c->cfg.shm_name, 0, 0, &e);
	if (rc != YX_OK) {
		yx_errctx_clear(&e);
		rc = yx_table_open(&c->table, c->cfg.shm_name,
		    (uint32_t)c->cfg.max_replicas, YX_TABLE_CREATE, &e);
		if (rc != YX_OK)
			return cli_err("shared table", rc, &e);
		c->created = true;
	}
	if ((c->drv = yx_driver_new(&c->cfg, &e)) == NULL)
		return cli_err("driver", e.code, &e);
	if ((c->ex = yx_executor_new(&c->cfg, c->table, c->drv, &e)) == NULL)
		return cli_err("executor", e.code, &e);
	/* a table of our own starts empty: adopt the running sandboxes of this
	 * instance (labels and prefix), as the service does at start, so that
	 * list, release and destroy see what an earlier command made */
	if (c->created &&
	    yx_provider_discover_all(yx_executor_provider(c->ex), &e) != YX_OK)
		log_warnx("discover: %s", e.msg);
	if ((rc = yx_thread_store_init(&c->store, &c->cfg, &e)) != YX_OK)
		return cli_err("thread store", rc, &e);
	c->store_ok = true;
	/* a thread made here (exec --owner) gets its disk image too */
	if (c->cfg.thread_disk_quota > 0 &&
	    (rc = yx_priv_start(&c->cfg, &e)) != YX_OK)
		return cli_err("privileged helper", rc, &e);
	if ((rc = yx_agents_load(&c->agents, c->cfg.agents_file,
		 c->cfg.skills_dir, &e)) != YX_OK)
		return cli_err("agents", rc, &e);
	return 0;
}

/*
 * Take the table's lock (yuxi/tablelock.h) unless held already: YX_OK, or
 * YX_E_BUSY when a service (or another CLI) holds it, its holder in
 * holder.
 */
static int
cli_lock(struct cli *c, char *holder, size_t holderlen)
{
	if (c->lock.fd != -1)
		return YX_OK;
	return yx_tablelock_take(&c->lock, c->cfg.shm_name,
	    "yuxi-sandbox (the CLI)", holder, holderlen);
}

/*
 * A table this command made while no service ran goes again, so the CLI
 * never leaves one behind (nor one a later service could not replace):
 * removed only under the table's lock, which a service that started
 * meanwhile holds - its own table is then under the name, and stays.
 */
static void
cli_close(struct cli *c)
{
	char holder[256];

	yx_agents_free(c->agents);
	if (c->store_ok)
		yx_thread_store_fini(&c->store);
	yx_executor_free(c->ex);
	yx_driver_free(c->drv);
	yx_table_close(c->table);
	if (c->created && cli_lock(c, holder, sizeof(holder)) == YX_OK)
		(void)yx_table_unlink(c->cfg.shm_name);
	yx_tablelock_drop(&c->lock);
	yx_priv_stop();
}

/*
 * The protections the running service settled (yx_config_settle): what
 * this process could mount, and nothing when the service runs without its
 * privileged helper (it fell back); without a service, what this process
 * could mount. Quiet: doctor reports it.
 */
static void
cli_settle(struct yx_config *cfg)
{
	struct yx_table		*t = NULL;
	struct yx_errctx	 e;
	char			 why[YX_CFG_STR];
	unsigned		 can;

	can = yx_priv_probe(cfg->disk_fs, why, sizeof(why));
	yx_errctx_clear(&e);
	if (yx_table_open(&t, cfg->shm_name, 0, 0, &e) == YX_OK) {
		if (yx_provider_comp_state(t, YX_COMP_PRIV, NULL) == YX_COMP_UNUSED) {
			can = 0;
			snprintf(why, sizeof(why), "the service runs without a "
						   "privileged helper");
		}
		yx_table_close(t);
	}
	yx_config_settle(cfg, can, why);
}

/* One doctor check, printed or added to the JSON array; 1 when it failed. */
static int
doctor_line(struct json_object *arr, const char *name, int rc, const char *detail,
    bool json)
{
	if (json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "check", json_object_new_string(name));
		json_object_object_add(o, "ok", json_object_new_boolean(rc == YX_OK));
		json_object_object_add(o, "detail", json_object_new_string(detail));
		json_object_array_add(arr, o);
	} else
		printf("%-8s %-22s %s\n", rc == YX_OK ? "ok" : "FAIL", name, detail);
	return rc != YX_OK;
}

/* The protections line: "ok", or "WARN" for one the defaults asked for
 * and the service does not have; the capacity line: "WARN" when the
 * kernel's task limits leave no room for YUXI_SANDBOX_MAX_REPLICAS
 * sandboxes. Never a failure. */
/* A warning-only doctor line (never a failure): printed, or its object
 * (check, ok, warning, detail) added to arr and returned for more keys. */
static struct json_object *
doctor_warn(struct json_object *arr, const char *name, bool warn,
    const char *detail, bool json)
{
	struct json_object *o;

	if (!json) {
		printf("%-8s %-22s %s\n", warn ? "WARN" : "ok", name, detail);
		return NULL;
	}
	o = json_object_new_object();
	json_object_object_add(o, "check", json_object_new_string(name));
	json_object_object_add(o, "ok", json_object_new_boolean(true));
	json_object_object_add(o, "warning", json_object_new_boolean(warn));
	json_object_object_add(o, "detail", json_object_new_string(detail));
	json_object_array_add(arr, o);
	return o;
}

static void
doctor_protect(struct json_object *arr, const struct cli *c, bool json)
{
	struct yx_ready_protect	 p;
	struct json_object	*o;
	char			 cap[256], capo[512];
	bool			 capok;

	yx_ready_protect(&c->cfg, &p);
	capok = yx_ready_capacity(&c->cfg, cap, sizeof(cap), capo, sizeof(capo));
	if ((o = doctor_warn(arr, "protections", p.lost != 0, p.oper, json)) != NULL) {
		json_object_object_add(o, "pool", json_object_new_int(p.pool_size));
		json_object_object_add(o, "disk_quota", json_object_new_int64(p.disk_quota));
	}
	(void)doctor_warn(arr, "capacity", !capok,
	    capok ? "the kernel leaves room for YUXI_SANDBOX_MAX_REPLICAS sandboxes" : capo,
	    json);
	(void)doctor_warn(arr, "shim-groups", !c->shim_ok, c->shim, json);
}

/*
 * The checks of GET /readyz, with the operator's details (host paths
 * included), the protections on (a warning, never a failure, for one the
 * defaults asked for and the service does not have), then the
 * robust-mutex self-test. Exit 1 when a check fails.
 */
/*
 * Opens what it checks itself, without cli_open(): a check that cannot
 * run fails as that check. The table is the running service's (attached,
 * never made: without a service, "table" fails); the agents file is
 * loaded as the service loads it (a line "agents" when it does not load).
 */
static int
cmd_doctor(struct cli *c, int argc, char **argv)
{
	struct json_object	*arr = json_object_new_array();
	struct yx_ready_result	 res[YX_READY_N + YX_COMP_N];
	struct yx_ready		 rd;
	unsigned		 n;
	struct yx_table		*t = NULL;
	struct yx_errctx	 e;
	char			 failed[256] = "";
	int			 i, rc, bad = 0;

	yx_errctx_clear(&e);
	if ((rc = yx_agents_load(&c->agents, c->cfg.agents_file,
		 c->cfg.skills_dir, &e)) != YX_OK) {
		bad += doctor_line(arr, "agents", rc, e.msg, c->json);
		snprintf(failed, sizeof(failed), " agents");
	}
	yx_errctx_clear(&e);
	c->drv = yx_driver_new(&c->cfg, &e);	/* NULL: the engine's checks fail */
	yx_errctx_clear(&e);
	(void)yx_table_open(&t, c->cfg.shm_name, 0, 0, &e);
	yx_ready_init(&rd, &c->cfg, c->drv, t);
	if (yx_agents_uses_runtime(c->agents, "runsc"))
		yx_ready_need_runtime(&rd, "runsc");
	(void)yx_ready_run(&rd, res);
	/* the helper and the egress proxy, as the running master says */
	n = YX_READY_N + yx_ready_components(&rd, yx_agents_profile(c->agents, NULL, NULL), res + YX_READY_N);
	yx_table_close(t);
	for (i = 0; i < (int)n; i++) {
		bad += doctor_line(arr, res[i].name, res[i].rc, res[i].oper, c->json);
		if (res[i].rc != YX_OK && strlen(failed) + strlen(res[i].name) + 2 < sizeof(failed))
			snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed),
			    " %s", res[i].name);
	}
	doctor_protect(arr, c, c->json);
	yx_errctx_clear(&e);
	rc = yx_table_selftest(&e);
	bad += doctor_line(arr, "robust-mutex", rc,
	    rc == YX_OK ? "EOWNERDEAD seen after owner death; repaired" : e.msg,
	    c->json);
	if (rc != YX_OK)
		snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed),
		    " robust-mutex");
	if (c->json)
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(arr);
	if (bad)
		fprintf(stderr, "yuxi-sandbox: doctor: %d check(s) failed:%s\n",
		    bad, failed);
	return bad ? 1 : 0;
}

static int
cmd_list(struct cli *c, int argc, char **argv)
{
	struct yx_provider_snapshot	 snap;
	struct yx_errctx		 e;
	struct json_object		*arr;
	size_t				 i;
	int				 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_provider_list(yx_executor_provider(c->ex), &snap, &e)) != YX_OK)
		return cli_err("list", rc, &e);
	arr = json_object_new_array();
	if (!c->json)
		printf("%-12s %-10s %-5s %-14s %s\n", "SANDBOX", "STATE", "HOLDS",
		    "CONTAINER", "THREAD");
	for (i = 0; i < snap.nslots; i++) {
		const struct yx_shm_slot *s = &snap.slots[i];

		if (c->json) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "sandbox_id", json_object_new_string(s->sandbox_id));
			json_object_object_add(o, "thread_id", json_object_new_string(s->thread_id));
			json_object_object_add(o, "state", json_object_new_string(yx_slot_state_name((int)s->state)));
			json_object_object_add(o, "container", json_object_new_string(s->container_name));
			json_object_object_add(o, "container_id", json_object_new_string(s->container_id));
			json_object_object_add(o, "holds", json_object_new_int((int)s->nholds));
			json_object_object_add(o, "last_used_ms", json_object_new_int64(s->last_used_at));
			json_object_array_add(arr, o);
		} else
			printf("%-12s %-10s %-5u %-14.12s %s\n", s->sandbox_id,
			    yx_slot_state_name((int)s->state), s->nholds,
			    s->container_id, s->thread_id);
	}
	if (c->json)
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(arr);
	yx_provider_snapshot_fini(&snap);
	return 0;
}

/*
 * THREAD [--owner USER] from argv (argv[0] is the command); *next gets the
 * index after them. 0, or 2 for a usage error (message printed).
 */
static int
cli_thread_arg(int argc, char **argv, const char **tid, const char **owner,
    int *next)
{
	int i = 1;

	*owner = NULL;
	if (argc > 2 && strcmp(argv[1], "--owner") == 0) {
		*owner = argv[2];
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "yuxi-sandbox: %s: missing THREAD\n", argv[0]);
		return 2;
	}
	if (!yx_thread_id_valid(argv[i], strlen(argv[i]))) {
		fprintf(stderr, "yuxi-sandbox: invalid thread id: %s\n", YX_THREAD_ID_RULE);
		return 2;
	}
	*tid = argv[i++];
	if (*owner == NULL && i + 1 < argc && strcmp(argv[i], "--owner") == 0) {
		*owner = argv[i + 1];
		i += 2;
	}
	if (*owner != NULL && !yx_user_valid(*owner)) {
		fprintf(stderr, "yuxi-sandbox: invalid user name for --owner\n");
		return 2;
	}
	*next = i;
	return 0;
}

/*
 * The thread `tid`: its record when it exists (an --owner must then be its
 * owner), else - only with an owner - a new thread of that owner. Never a
 * directory without a record: a thread nobody owns cannot be seen or
 * deleted through the API. 0 with *t, or 1 (message printed).
 */
static int
cli_thread(struct cli *c, const char *tid, const char *owner, struct yx_thread *t)
{
	struct yx_thread	want;
	struct yx_errctx	e;
	bool			created;
	int			rc;

	yx_errctx_clear(&e);
	rc = yx_thread_find(&c->store, tid, t, &e);
	if (rc == YX_OK) {
		if (owner != NULL && strcmp(owner, t->owner) != 0) {
			fprintf(stderr, "yuxi-sandbox: thread %s belongs to %s, "
					"not %s\n",
			    tid, t->owner, owner);
			return 1;
		}
		return 0;
	}
	if (rc != YX_E_NOT_FOUND)
		return cli_err("thread", rc, &e);
	if (owner == NULL) {
		fprintf(stderr, "yuxi-sandbox: no thread %s (create it through "
				"the API, or name its owner with --owner USER)\n",
		    tid);
		return 1;
	}
	memset(&want, 0, sizeof(want));
	snprintf(want.thread_id, sizeof(want.thread_id), "%s", tid);
	snprintf(want.owner, sizeof(want.owner), "%s", owner);
	if ((rc = yx_thread_create(&c->store, &want, t, &created, &e)) != YX_OK)
		return cli_err("thread", rc, &e);
	return 0;
}

/* Run `command` in thread t's sandbox with its skills. */
static int
cli_run(struct cli *c, const struct yx_thread *t, const char *command,
    struct yx_exec_output *out, struct yx_errctx *e)
{
	struct yx_exec_request	req;
	struct yx_skill_set	skills;
	int			rc;

	if ((rc = yx_agents_skills(c->agents, t->agent_id, t->agent_config_id,
		 &skills)) != YX_OK)
		return yx_fail(e, rc, "skills of agent %s", t->agent_id);
	memset(&req, 0, sizeof(req));
	yx_exec_request_thread(&req, t);
	req.skills = &skills;
	req.command = command;
	return yx_executor_run(c->ex, &req, out, e);
}

static int
cmd_acquire(struct cli *c, int argc, char **argv)
{
	struct yx_exec_output	 out;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*tid, *owner;
	int			 rc, next;

	if ((rc = cli_thread_arg(argc, argv, &tid, &owner, &next)) != 0 ||
	    (rc = cli_thread(c, tid, owner, &t)) != 0)
		return rc;
	/* acquiring = running a no-op: lays out user-data, creates the box */
	yx_errctx_clear(&e);
	if ((rc = cli_run(c, &t, "true", &out, &e)) != YX_OK)
		return cli_err("acquire", rc, &e);
	yx_exec_output_fini(&out);
	return cmd_list(c, 0, NULL);
}

/* Join argv into one shell command, single-quoting every word. */
static int
cli_join(int argc, char **argv, struct yx_buf *b)
{
	const char	*p;
	int		 i, rc = YX_OK;

	for (i = 0; i < argc && rc == YX_OK; i++) {
		if (i > 0)
			rc = yx_buf_puts(b, " ");
		if (rc == YX_OK)
			rc = yx_buf_puts(b, "'");
		for (p = argv[i]; *p != '\0' && rc == YX_OK; p++)
			rc = *p == '\'' ? yx_buf_puts(b, "'\\''") : yx_buf_append(b, p, 1);
		if (rc == YX_OK)
			rc = yx_buf_puts(b, "'");
	}
	return rc;
}

static int
cmd_exec(struct cli *c, int argc, char **argv)
{
	struct yx_exec_output	 out;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	struct yx_buf		 cmd;
	const char		*tid, *owner;
	int			 rc, first;

	if ((rc = cli_thread_arg(argc, argv, &tid, &owner, &first)) != 0)
		return rc;
	if (first < argc && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc) {
		fprintf(stderr, "yuxi-sandbox: exec: missing command\n");
		return 2;
	}
	if ((rc = cli_thread(c, tid, owner, &t)) != 0)
		return rc;
	yx_buf_init(&cmd, 1 << 20);
	/* one word after "--": a shell command line as-is; several: quoted */
	rc = argc - first == 1 ? yx_buf_puts(&cmd, argv[first]) :
				 cli_join(argc - first, argv + first, &cmd);
	if (rc != YX_OK) {
		yx_buf_fini(&cmd);
		return cli_err("exec", rc, NULL);
	}
	yx_errctx_clear(&e);
	rc = cli_run(c, &t, cmd.data, &out, &e);
	yx_buf_fini(&cmd);
	if (rc != YX_OK)
		return cli_err("exec", rc, &e);
	fwrite(out.output, 1, out.len, stdout);
	fflush(stdout);
	if (out.truncated)
		fprintf(stderr, "yuxi-sandbox: output truncated; full output in %s\n",
		    out.full_output_path[0] ? out.full_output_path : "(not saved)");
	if (out.timed_out)
		fprintf(stderr, "yuxi-sandbox: command timed out\n");
	rc = out.exit_code;
	yx_exec_output_fini(&out);
	return rc;
}

/* Accept a thread id or a sandbox id; prefer a slot's sandbox id. */
static int
cli_sandbox_arg(struct cli *c, const char *arg, char *sid, size_t sidlen)
{
	struct yx_shm_slot	slot;
	int			rc;

	if ((rc = yx_provider_slot(c->table, arg,
		 YX_SLOT_BY_SANDBOX | YX_SLOT_BY_THREAD, &slot, NULL)) == YX_OK)
		(void)yx_strlcpy(sid, slot.sandbox_id, sidlen);
	return rc;
}

/*
 * release/destroy THREAD|SANDBOX_ID: the sandbox of the slot named by the
 * argument; destroy also removes a thread's labelled containers that have
 * no slot.
 */
static int
cli_sandbox_op(struct cli *c, int argc, char **argv, bool destroy)
{
	struct yx_provider	*p = yx_executor_provider(c->ex);
	struct yx_errctx	 e;
	char			 sid[YX_SHM_SANDBOX_ID_MAX];
	int			 rc;

	if (argc < 2) {
		fprintf(stderr, "yuxi-sandbox: %s: missing THREAD or SANDBOX_ID\n",
		    argv[0]);
		return 2;
	}
	yx_errctx_clear(&e);
	rc = cli_sandbox_arg(c, argv[1], sid, sizeof(sid));
	if (rc == YX_OK)
		rc = destroy ? yx_provider_destroy(p, sid, NULL, &e) :
			       yx_provider_release(p, sid, &e);
	else if (destroy && yx_thread_id_valid(argv[1], strlen(argv[1])))
		rc = yx_provider_destroy(p, NULL, argv[1], &e);
	if (rc != YX_OK)
		return cli_err(argv[0], rc, &e);
	printf("%s %s\n", destroy ? "destroyed" : "released",
	    destroy ? argv[1] : sid);
	return 0;
}

static int
cmd_release(struct cli *c, int argc, char **argv)
{
	return cli_sandbox_op(c, argc, argv, false);
}

static int
cmd_destroy(struct cli *c, int argc, char **argv)
{
	return cli_sandbox_op(c, argc, argv, true);
}

/*
 * gc --all, after the gc: destroy every sandbox left in the table (the
 * reconcile put each container of this instance's prefix there or removed
 * it). The table's lock is held throughout, so no service starts
 * meanwhile. *n gets the number destroyed; YX_OK or the first error.
 */
static int
cli_gc_all(struct cli *c, unsigned *n, struct yx_errctx *e)
{
	struct yx_provider		*p = yx_executor_provider(c->ex);
	struct yx_provider_snapshot	 snap;
	size_t				 i;
	int				 rc;

	*n = 0;
	if ((rc = yx_provider_list(p, &snap, e)) != YX_OK)
		return rc;
	for (i = 0; i < snap.nslots && rc == YX_OK; i++) {
		rc = yx_provider_destroy(p, snap.slots[i].sandbox_id, NULL, e);
		if (rc == YX_E_NOT_FOUND)
			rc = YX_OK;	/* gone meanwhile */
		else if (rc == YX_OK)
			(*n)++;
	}
	yx_provider_snapshot_fini(&snap);
	return rc;
}

/*
 * gc --orphans [--remove] [--prefix P]: the sandboxes no live instance on
 * this host owns (yx_orphans_find), listed (a line or a JSON object each),
 * and removed with --remove. --prefix: only those whose name starts with P.
 * Needs the engine, not the table.
 */
static int
cli_gc_orphans(struct cli *c, int argc, char **argv)
{
	struct yx_container_info	*v = NULL;
	struct json_object		*arr = NULL, *o;
	struct yx_errctx		 e;
	const char			*only = NULL;
	unsigned			 removed = 0;
	size_t				 n = 0, i;
	bool				 rm = false;
	int				 k, rc;

	for (k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--orphans") == 0)
			continue;
		if (strcmp(argv[k], "--remove") == 0)
			rm = true;
		else if (strcmp(argv[k], "--prefix") == 0 && k + 1 < argc && argv[k + 1][0] != '\0')
			only = argv[++k];
		else {
			fprintf(stderr, "yuxi-sandbox: gc --orphans: unexpected argument '%s'\n",
			    argv[k]);
			return 2;
		}
	}
	yx_errctx_clear(&e);
	if ((rc = yx_orphans_find(&c->cfg, only, &v, &n, &e)) != YX_OK)
		return cli_err("gc --orphans", rc, &e);
	if (rm && n > 0 && (rc = yx_orphans_remove(&c->cfg, v, n, &removed, &e)) != YX_OK)
		fprintf(stderr, "yuxi-sandbox: gc --orphans: %s\n", e.msg);
	if (c->json)
		arr = json_object_new_array();
	for (i = 0; i < n; i++) {
		if (!c->json) {
			printf("%s %.12s thread=%s %s\n", v[i].name, v[i].id,
			    v[i].thread_id[0] != '\0' ? v[i].thread_id : "-",
			    v[i].running ? "running" : "stopped");
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "container", json_object_new_string(v[i].name));
		json_object_object_add(o, "id", json_object_new_string(v[i].id));
		json_object_object_add(o, "thread_id", json_object_new_string(v[i].thread_id));
		json_object_object_add(o, "running", json_object_new_boolean(v[i].running));
		json_object_array_add(arr, o);
	}
	if (c->json) {
		o = json_object_new_object();
		json_object_object_add(o, "orphans", arr);
		json_object_object_add(o, "removed", json_object_new_int((int)removed));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else
		printf("%zu orphaned sandbox(es)%s\n", n,
		    rm ? (removed == n ? ", removed" : ", not all removed") : "");
	free(v);
	return rc == YX_OK ? 0 : 1;
}

static int
cmd_gc(struct cli *c, int argc, char **argv)
{
	struct yx_provider	*p = yx_executor_provider(c->ex);
	struct yx_errctx	 e;
	unsigned		 dropped = 0, reaped = 0, all = 0, txn = 0;
	char			 holder[256];
	bool			 everything = argc > 1 && strcmp(argv[1], "--all") == 0;
	int			 rc;

	if (argc > (everything ? 2 : 1)) {
		fprintf(stderr, "yuxi-sandbox: gc: unexpected argument '%s'\n",
		    argv[everything ? 2 : 1]);
		return 2;
	}
	if (everything && cli_lock(c, holder, sizeof(holder)) != YX_OK) {
		fprintf(stderr, "yuxi-sandbox: gc --all: the table %s is in use by "
				"%s: stop the service first\n",
		    c->cfg.shm_name, holder);
		return 1;
	}
	yx_errctx_clear(&e);
	if ((rc = yx_provider_drop_dead_holds(p, &dropped, &e)) != YX_OK ||
	    (rc = yx_provider_reconcile(p, &e)) != YX_OK ||
	    (rc = yx_provider_reap(p, yx_now_ms(), &reaped, &e)) != YX_OK ||
	    (everything && (rc = cli_gc_all(c, &all, &e)) != YX_OK))
		return cli_err("gc", rc, &e);
	if (c->store_ok)
		(void)yx_exec_tx_recover_all(c->ex, &c->store, &txn);
	if (c->json && everything)
		printf("{\"dead_holds_dropped\":%u,\"idle_destroyed\":%u,"
		       "\"all_destroyed\":%u,\"transactions_recovered\":%u}\n",
		    dropped, reaped, all, txn);
	else if (c->json)
		printf("{\"dead_holds_dropped\":%u,\"idle_destroyed\":%u,"
		       "\"transactions_recovered\":%u}\n",
		    dropped, reaped, txn);
	else if (everything)
		printf("dead holds dropped: %u; idle sandboxes destroyed: %u; "
		       "others destroyed: %u; interrupted transactions recovered: %u\n",
		    dropped, reaped, all, txn);
	else
		printf("dead holds dropped: %u; idle sandboxes destroyed: %u; "
		       "interrupted transactions recovered: %u\n",
		    dropped, reaped, txn);
	return 0;
}

/*
 * image build [default|test|browser] [NAME] [--recipes DIR]: run the
 * offline build script of a sandbox image, DIR/<recipe>/build.sh (DIR: the
 * installed recipes, $(pkgdatadir)/images; a checkout's images/ for a
 * build tree), for NAME (default: YUXI_SANDBOX_IMAGE for the default
 * recipe, yuxi-sandbox-<recipe>:latest for the others: the browser
 * profile's image, docs/browser.md). This process becomes the
 * script: its exit status is the command's. Needs no table or engine
 * connection of ours; the script talks to the engine through `docker`.
 */
static int
cmd_image(struct cli *c, int argc, char **argv)
{
	const char	*dir, *recipe = "default", *name = NULL;
	char		 script[PATH_MAX], buf[PATH_MAX];
	int		 i, nargs = 0;

	dir = cli_datadir(YX_IMAGES_DIR, "images", buf, sizeof(buf));
	if (argc < 2 || strcmp(argv[1], "build") != 0) {
		fprintf(stderr, "usage: yuxi-sandbox image build "
				"[default|test|browser] [NAME] [--recipes DIR]\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--recipes") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (argv[i][0] == '-' || nargs == 2) {
			fprintf(stderr, "yuxi-sandbox: image build: unexpected "
					"argument '%s'\n",
			    argv[i]);
			return 2;
		} else if (nargs++ == 0)
			recipe = argv[i];
		else
			name = argv[i];
	}
	if (strcmp(recipe, "default") != 0 && strcmp(recipe, "test") != 0 &&
	    strcmp(recipe, "browser") != 0) {
		fprintf(stderr, "yuxi-sandbox: image build: no recipe '%s' "
				"(default, test or browser)\n",
		    recipe);
		return 2;
	}
	if (name == NULL)
		name = strcmp(recipe, "default") == 0 ? c->cfg.image :
		    strcmp(recipe, "test") == 0	      ? "yuxi-sandbox-test:latest" :
							"yuxi-sandbox-browser:latest";
	if ((size_t)snprintf(script, sizeof(script), "%s/%s/build.sh", dir,
		recipe) >= sizeof(script)) {
		fprintf(stderr, "yuxi-sandbox: image build: --recipes: path too long\n");
		return 2;
	}
	if (access(script, R_OK) == -1) {
		fprintf(stderr, "yuxi-sandbox: image build: %s: %s\n", script,
		    strerror(errno));
		return 1;
	}
	fflush(stdout);
	execl("/bin/sh", "sh", script, name, (char *)NULL);
	fprintf(stderr, "yuxi-sandbox: image build: /bin/sh: %s\n",
	    strerror(errno));
	return 1;
}

static int
cmd_nginx_conf(struct cli *c, int argc, char **argv)
{
	return cli_nginx_conf(&c->cfg, argc, argv);
}

/*
 * routes [--json]: the daemon's route table with what each route needs
 * (src/daemon/router.c); the suites build their endpoint lists from it.
 */
static int
cmd_routes(struct cli *c, int argc, char **argv)
{
	struct json_object	*o, *v, *n;
	struct yx_buf		 b;
	char			*line, *save = NULL;
	size_t			 i;
	int			 rc = 0;

	(void)argc;
	(void)argv;
	yx_buf_init(&b, 1 << 20);
	if (yx_router_describe(&b) != YX_OK || yx_buf_append(&b, "", 1) != YX_OK) {
		fprintf(stderr, "yuxi-sandbox: routes: out of memory\n");
		rc = 1;
		goto done;
	}
	if (c->json)
		printf("[");
	for (i = 0, line = strtok_r(b.data, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save), i++) {
		if (c->json) {
			printf("%s%s", i > 0 ? ",\n" : "\n", line);
			continue;
		}
		if ((o = json_tokener_parse(line)) == NULL)
			continue;
		printf("%-7s %-36s %-16s", json_object_get_string(json_object_object_get(o, "method")),
		    json_object_get_string(json_object_object_get(o, "path")),
		    json_object_get_string(json_object_object_get(o, "op")));
		v = json_object_object_get(o, "needs");
		for (size_t k = 0; v != NULL && k < json_object_array_length(v); k++) {
			n = json_object_array_get_idx(v, k);
			printf("%s%s", k > 0 ? "," : " ", json_object_get_string(n));
		}
		printf("\n");
		json_object_put(o);
	}
	if (c->json)
		printf("\n]\n");
done:
	yx_buf_fini(&b);
	return rc;
}

static int
cmd_help(struct cli *c, int argc, char **argv);

static const struct cli_cmd cli_cmds[] = {
	{ "doctor", "doctor [--json]", "check what serving needs (engine, image, runtime, runner, agent, table, disk; as /readyz) and robust mutexes; exit 1 when a check fails", cmd_doctor },
	{ "list", "list [--json]", "list sandboxes in the shared table", cmd_list },
	{ "acquire", "acquire THREAD [--owner USER]", "make sure THREAD has a running sandbox", cmd_acquire },
	{ "exec", "exec THREAD [--owner USER] -- CMD [ARG...]", "run a command in THREAD's sandbox (exit status of the command); --owner creates a missing thread for USER", cmd_exec },
	{ "release", "release THREAD|SANDBOX_ID", "move a sandbox to the warm pool", cmd_release },
	{ "destroy", "destroy THREAD|SANDBOX_ID", "remove a sandbox's container (user data is kept)", cmd_destroy },
	{ "gc", "gc [--all] [--json] | gc --orphans [--remove] [--prefix P] [--json]", "drop dead holds, adopt or remove orphan containers, reap idle ones; --all: then remove every sandbox of this instance (refused while the service runs); --orphans: list the sandboxes of this service that no live instance on this host owns (a killed sandbox host's), --remove: and remove them, --prefix: only those whose name starts with P", cmd_gc },
	{ "nginx-conf", "nginx-conf [--auth basic|request|header] [--htpasswd FILE] [--auth-url URL] [--trusted-proxy ADDR[,ADDR...]] [--user-header NAME] [--admin USER[,USER...]] [--web-root DIR] [--templates DIR] [--out DIR]", "render the nginx snippets for an existing server (docs/nginx.md)", cmd_nginx_conf },
	{ "routes", "routes [--json]", "print the service's route table: method, path, operation and what each route needs (identity, JSON body, a user's slot, ...; docs/architecture.md)", cmd_routes },
	{ "image", "image build [default|test|browser] [NAME]", "build a sandbox image offline from the installed recipe (NAME: YUXI_SANDBOX_IMAGE, or yuxi-sandbox-test:latest for test, yuxi-sandbox-browser:latest for browser; --recipes DIR: another recipe directory)", cmd_image },
	{ "help", "help [COMMAND]", "show help", cmd_help },
};

static const struct cli_cmd *
cli_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	return NULL;
}

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: yuxi-sandbox [--json] COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-30s %s\n", cli_cmds[i].usage, cli_cmds[i].help);
	fprintf(f, "\nConfiguration: %s (or $YUXI_CONFIG), overridden by YUXI_*\n"
		   "environment variables; see yuxi-sandbox.conf(5). yuxi-sandbox --version\n"
		   "prints the version.\n",
	    YX_CONF_FILE);
}

static int
cmd_help(struct cli *c, int argc, char **argv)
{
	const struct cli_cmd *cmd;

	if (argc > 1 && (cmd = cli_find(argv[1])) != NULL) {
		printf("usage: yuxi-sandbox %s\n\n%s\n", cmd->usage, cmd->help);
		return 0;
	}
	usage(stdout);
	return 0;
}

/* A command that acts as the service: its protections settled first. */
static int
cli_dispatch(struct cli *c, const struct cli_cmd *cmd, int argc, char **argv)
{
	int rc;

	cli_settle(&c->cfg);
	if (cmd->fn == cmd_doctor)
		return cmd_doctor(c, argc, argv);	/* opens what it checks */
	if (cmd->fn == cmd_gc && argc > 1 && strcmp(argv[1], "--orphans") == 0)
		return cli_gc_orphans(c, argc, argv);	/* the engine only */
	if ((rc = cli_open(c)) == 0)
		rc = cmd->fn(c, argc, argv);
	return rc;
}

/* Strip --json/--help from a subcommand's arguments (before "--"). */
static int
cli_flags(struct cli *c, const struct cli_cmd *cmd, int *argcp, char **argv)
{
	int i, o = 0;

	for (i = 0; i < *argcp; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argcp)
				argv[o++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			c->json = true;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: yuxi-sandbox %s\n\n%s\n", cmd->usage, cmd->help);
			return 1;
		} else
			argv[o++] = argv[i];
	}
	*argcp = o;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct cli	 c;
	const struct cli_cmd	*cmd;
	char			 errbuf[256];
	int			 rc;

	log_init("yuxi-sandbox", 0);
	if (argc > 1 && strcmp(argv[1], "--json") == 0) {
		c.json = true;
		argv++;
		argc--;
	}
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("yuxi-sandbox %s\n", YX_VERSION);
		return 0;
	}
	if ((cmd = cli_find(argv[1])) == NULL) {
		fprintf(stderr, "yuxi-sandbox: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	argc--;
	argv++;
	if (cli_flags(&c, cmd, &argc, argv))
		return 0;
	if (cmd->fn == cmd_help)
		return cmd_help(&c, argc, argv);
	if (yx_config_load(&c.cfg, errbuf, sizeof(errbuf)) != YX_OK) {
		fprintf(stderr, "yuxi-sandbox: %s\n", errbuf);
		return 2;
	}
	log_setverbose(c.cfg.verbose);
	yx_tablelock_init(&c.lock);
	if (cmd->fn == cmd_nginx_conf || cmd->fn == cmd_image || cmd->fn == cmd_routes)
		rc = cmd->fn(&c, argc, argv);	/* no table, no engine; as root */
	else {
		if (cmd->fn == cmd_doctor)
			c.shim_ok = yx_ready_shim_groups(&c.cfg, c.shim, sizeof(c.shim));
		if ((rc = cli_become_service_user(&c.cfg)) == 0)
			rc = cli_dispatch(&c, cmd, argc, argv);
	}
	cli_close(&c);
	return rc;
}
