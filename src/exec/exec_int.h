/* SPDX-License-Identifier: MIT */
/*
 * exec_int.h - executor internals (private to src/exec; docs/agent.md
 * "Transport selection"): what tests and benchmarks may use, then what the
 * executor's four files share.
 *
 * The executor runs a command through the in-sandbox agent when it answers
 * and through the engine exec path (driver exec of the runner) otherwise.
 * The environment picks the default (YUXI_EXEC_AGENT=auto|off|only, read by
 * yx_executor_new); tests force one path with yx_executor_set_transport()
 * and read the counters to prove which path ran.
 *
 * The executor's files, each one step of a command (executor.c calls the
 * others; exec_acquire.c calls exec_lease.c and exec_prepare.c;
 * exec_lease.c calls exec_prepare.c; nothing calls back up):
 *   executor.c      the public calls: new/free, run, spawn, the result
 *                   (kept bytes, masked), the pool's fill;
 *   exec_prepare.c  preparing a run: the sandbox user, profile and
 *                   environment, the host layout, the agent directory
 *                   (opened; emptied for a new container), the egress
 *                   socket, the output masking rules;
 *   exec_acquire.c  acquiring a box: the container spec and its
 *                   fingerprint, the extra mounts, the pool's fit and
 *                   adoption, the provider's before-create checks; then
 *                   acquire, run, unhold, retried once on a vanished one;
 *   exec_lease.c    running in a lease: through the agent (asked, started
 *                   when it does not answer), else the engine exec; a
 *                   sandbox that died under a command.
 */
#ifndef YUXI_EXEC_INT_H
#define YUXI_EXEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/broker.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/hash.h"
#include "yuxi/procs.h"
#include "yuxi/provider.h"
#include "exec/agent_client.h"
#include "exec/outcap.h"

struct json_object;

enum yx_exec_transport {
	YX_EXEC_TRANSPORT_AUTO,		/* agent, else the engine path */
	YX_EXEC_TRANSPORT_ENGINE,	/* never the agent (no agent mounts) */
	YX_EXEC_TRANSPORT_AGENT,	/* agent only: fail instead of falling back */
};

struct yx_exec_stats {
	uint64_t	agent_runs;	/* commands answered by the agent */
	uint64_t	engine_runs;	/* commands run through the driver */
	uint64_t	agent_starts;	/* agent start execs that succeeded */
	uint64_t	agent_refused;	/* agent attempts that fell back */
};

/* Select the transport; AGENT/AUTO need the agent binary (see _new). */
void	yx_executor_set_transport(struct yx_executor *ex,
    enum yx_exec_transport			   t);
void	yx_executor_set_agent_opts(struct yx_executor *ex,
    const struct yx_agent_opts			   *o);
/* Copy the counters into *st. */
void	yx_executor_stats(const struct yx_executor *ex,
    struct yx_exec_stats			*st);
/*
 * Make sure <saves_dir>/etc/hosts holds the sandboxes' /etc/hosts
 * (etc_hosts.c); its path into path. YX_OK, or YX_E_IO with path "" (logged:
 * sandboxes are then made without it, with the engine's network setup).
 */
int	yx_exec_hosts_setup(const char *saves_dir, char *path, size_t len);
/*
 * Make sure <saves_dir>/mnt holds the sandboxes' /mnt (the symlinks
 * user-data and skills to the roots; etc_hosts.c); its path into path.
 * YX_OK, or YX_E_IO with path "" (logged: sandboxes then have no /mnt).
 */
int	yx_exec_mnt_setup(const char *saves_dir, char *path, size_t len);

/* What the executor's files share (not for tests). */
#define YX_RUNNER_TARGET	"/opt/yuxi/bin/yuxi-run"
#define YX_NOSTART_SLOTS	8	/* containers where the agent won't start */
#define YX_EXEC_ENV_MAX		(4 + YX_PROFILE_ENV_MAX + 4 + YX_EXEC_USER_ENV_MAX)	/* base, profile, proxy, request */

/* The output masking rules of one run (exec_prepare_mask_rules). */
#define EXEC_MASK_RULES		YX_EXEC_MASKS

struct exec_nostart {
	char	container_id[YX_SHM_CONTAINER_ID_MAX];
	int64_t	until_ms;
};

struct yx_executor {
	const struct yx_config	*cfg;
	struct yx_driver	*drv;
	struct yx_provider	 prov;
	enum yx_exec_transport	 transport;
	char			 agent_host[YX_CFG_PATH];	/* "" = none */
	char			 hosts[YX_CFG_PATH + 16];	/* /etc/hosts; "" = none */
	char			 mnt[YX_CFG_PATH + 16];	/* /mnt's links; "" = none */
	struct yx_agent_opts	 aopts;
	struct yx_exec_stats	 stats;
	struct exec_nostart	 nostart[YX_NOSTART_SLOTS];
	unsigned		 nostart_next;
	/* the pool's boxes: the default profile's settings, their spec
	 * string (exec_acquire_spec_str) and key; a thread takes a box only when its
	 * own settings give the same string */
	struct yx_config	 pool_eff;
	char			 pool_spec[2048];
	struct yx_pool_key	 pool_key;
};

/* Per-run state (exec_prepare.c fills it), shared by every step and with
 * the spill callback. */
#define EXEC_SVC_ARGV	10	/* the agent's command line (exec_svc.c) */

struct exec_run {
	struct yx_broker	 broker;
	unsigned		 uid, gid;	/* the thread's sandbox user */
	bool			 own_uid;	/* uid is the thread's own (range) */
	unsigned		 repaired;	/* layout folders made again */
	char			 user[32];	/* "uid:gid" */
	/* what its sandbox runs as: uid, or the own uid of the pool box
	 * serving the thread (its agent directory's owner, yx_uid_serves) */
	unsigned		 su;
	char			 suser[32];	/* "su:su" or user */
	const char		*saves, *tid;	/* borrowed: cfg's, the request's */
	char			 etc[2][YX_CFG_PATH + 200]; /* passwd, group; "" */
	char			 spill_name[96];
	bool			 spill_opened;
	char			 user_data[YX_CFG_PATH + 200];
	int			 rundir_fd;	/* -1: no agent this run */
	char			 rundir[YX_CFG_PATH + 200];
	/* a pool box's own user-data and skills directories, passwd and
	 * group files; "": none */
	char			 boxdir[4][YX_CFG_PATH + 200];
	const struct yx_profile	*prof;		/* never NULL */
	struct yx_config	 eff;		/* cfg with the profile's settings */
	const char		*env[YX_EXEC_ENV_MAX + 1];	/* of commands */
	const char		*workdir;	/* the request's cwd, or the workspace */
	char			 egress[YX_CFG_PATH + 200];	/* "": no network */
	char			 ro_rw[2][YX_CFG_PATH + 240];	/* ro: rw subfolders */
	/* where the output goes: yx_outcap_write(oc), or the stream sink */
	struct yx_outcap	*oc;
	yx_output_fn		 sink;
	int			(*tick)(void *);
	void			*sink_arg;
	struct yx_spawn		*bg;		/* a background process; NULL */
	/* the agent's command line in a new container (exec_svc.c) */
	const char		*agent_argv[EXEC_SVC_ARGV];
	/* a session's command (req->session_id; NULL: none) and its part
	 * of the outcome */
	const char		*sess;
	struct yx_exec_session	*sres;
};

/*
 * One command, for both paths (caller storage). The engine runs the runner,
 *   yuxi-run -t T -C WORKSPACE -- /bin/sh -c CMD
 * the agent gets "/bin/sh -c CMD" with the same workdir, timeout and
 * environment and runs it with the runner's own code (run_core.c).
 */
struct exec_cmd {
	char			 tbuf[16];
	const char		*argv[10];
	struct yx_exec_req	 xr;		/* engine path */
	struct yx_exec_req	 axr;		/* agent path */
};

#define EXEC_SH_ARGV	6	/* argv + 6 = "/bin/sh", "-c", CMD */

/*
 * exec_svc.c: a profile's services, the executor's part (docs/agent.md
 * "Services"). The agent's command line, `mode` "--init" (a new
 * container's command) or "--daemon" (started by an engine exec), with
 * the egress relay and the services as the profile has them, into argv
 * (EXEC_SVC_ARGV entries, NULL-terminated; static strings).
 */
void	exec_svc_agent_argv(const struct exec_run *run, const char *mode,
    const char **argv);
/*
 * Before a new container of a profile with services starts (its agent
 * directory just emptied): write services.conf there, what the agent's
 * supervisor runs. YX_OK; YX_E_IO (logged).
 */
int	exec_svc_write_conf(const struct exec_run *run);

/* exec_prepare.c: the base environment of commands (HOME, PATH, LANG, USER) */
extern const char *const exec_prepare_env[];
/*
 * The environment of profile p's commands before a request's own: the
 * base where p does not set the same name, p's variables, the proxy
 * variables when it has network; into env (YX_EXEC_ENV_MAX entries at
 * least), pointers borrowed from p and static storage. The count.
 */
size_t	exec_prepare_env_profile(const struct yx_profile *p, const char **env);
int	exec_prepare_init(struct yx_executor *ex,
       const struct yx_exec_request *req, struct exec_run *run,
       struct yx_errctx *err);
int	exec_prepare_run(struct yx_executor *ex,
       const struct yx_exec_request *req, struct exec_run *run,
       struct yx_errctx *err);
void	exec_prepare_note_su(struct exec_run *run);
void	exec_prepare_rundir_reset(const struct exec_run *run);
size_t	exec_prepare_mask_rules(const struct yx_executor *ex,
    const struct exec_run *run, struct yx_mask_rule rules[EXEC_MASK_RULES]);

/* exec_acquire.c: a new container's command when the agent is used */
extern const char *const exec_acquire_init_argv[];
void	exec_acquire_spec_str(const struct yx_executor *ex,
			const struct yx_config *c, const struct yx_profile *prof, char *spec,
			size_t len);
/* The mounts besides user-data and skills into extra[10] (extra[0]: the
 * runner, set by the caller); their count. */
size_t	exec_acquire_extra(const struct yx_executor *ex, const struct exec_run *run,
    struct yx_mount *extra);
/* exec_tx.c: a transactional command (req->tx), the outcome into out */
int	exec_tx_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, int timeout, struct yx_exec_result *res,
    struct yx_exec_output *out, struct yx_errctx *err);
int	exec_acquire_run(struct yx_executor *ex,
    const struct yx_exec_request *req, struct exec_run *run, int timeout,
    struct yx_exec_result *res, struct yx_errctx *err);

/*
 * Keepers (keeper_rec.c): the records of background processes (proc.c)
 * and sessions (session.c), one JSON file each in a directory of the
 * thread's, and the talk to their keepers in the sandbox.
 */
#define EXEC_REC_ID_SIZE	18	/* a prefix letter, 16 hex digits, NUL */

/* A keeper's 'Z' status, or its exit file (agent_proto.h). */
struct exec_kstatus {
	unsigned long long	from, to, total, written;
	long long		code, ended;
	int			run, timedout, killed, in_open, busy, idle;
};

/* The records' directory `name` of the thread at tdir (made with
 * `create`); -1 with errno. */
int	exec_rec_dir(int tdir, const char *name, bool create);
/* prefix and 16 lowercase hex digits. */
bool	exec_rec_id_valid(const char *id, char prefix);
int	exec_rec_new_id(char prefix, char id[EXEC_REC_ID_SIZE]);
/* Write record id: a new one (EXEC_REC_CREATE), else only over the
 * current one; durably (fsync before the rename) unless EXEC_REC_HINT,
 * for an update whose loss in a crash leaves an older state that is
 * still true enough (a session's last use). YX_OK, YX_E_NOT_FOUND (an
 * update of a gone record), YX_E_IO. */
#define EXEC_REC_UPDATE	0x0
#define EXEC_REC_CREATE	0x1
#define EXEC_REC_HINT	0x2
int	exec_rec_put(int dfd, const char *id, struct json_object *o,
    unsigned how);
/* Read record id: a JSON object (*out, caller puts). YX_OK;
 * YX_E_NOT_FOUND; YX_E_IO (unreadable, not an object). */
int	exec_rec_get(int dfd, const char *id, struct json_object **out);
int64_t	exec_rec_int(struct json_object *o, const char *key, int64_t dflt);
const char *exec_rec_str(struct json_object *o, const char *key);
/*
 * A kind of record (a process's, a session's): what exec_rec_all and
 * exec_rec_room need to know of it. load reads and refreshes one (c NULL:
 * the record as it is); key orders them (oldest first).
 */
struct exec_rec_kind {
	const char	*what;		/* "process", "session": for messages */
	char		 prefix;	/* of the ids */
	size_t		 size;		/* of one record in memory */
	size_t		 max;		/* kept per thread */
	int		 limit_err;	/* too many records */
	int		(*load)(const struct yx_proc_ctx *c, int dfd, const char *id,
	    void *rec);
	int64_t		(*key)(const void *rec);
	const char	*(*id)(const void *rec);
	bool		(*live)(const void *rec);
	void		(*fini)(void *rec);	/* may be NULL */
};
/* All records of dfd (at most k->max + 1), loaded by k->load, oldest
 * first: a heap array of k->size each in *out (caller finis and frees). */
int	exec_rec_all(const struct yx_proc_ctx *c, const struct exec_rec_kind *k,
    int dfd, void **out, size_t *n, struct yx_errctx *err);
/* Before a start (records locked): *live counts the live ones; the oldest
 * ended records go while there are k->max or more (k->limit_err when that
 * cannot be). */
int	exec_rec_room(const struct yx_proc_ctx *c, const struct exec_rec_kind *k,
    int dfd, size_t *live, struct yx_errctx *err);
/* Parse a keeper's status words. 0 or -1. */
int	exec_kstatus_parse(const char *s, struct exec_kstatus *ks);
/* The exit file a gone keeper left: 0 with *ks (run 0), or -1. */
int	exec_keeper_exit(const struct yx_proc_ctx *c, const char *id,
     struct exec_kstatus *ks);
void	exec_keeper_forget_exit(const struct yx_proc_ctx *c, const char *id);
/*
 * yx_agent_keeper_op within the request's budget (c->until). A keeper
 * that did not answer in time marks the box (*c->stalled) and answers
 * YX_E_BACKEND_UNAVAILABLE.
 */
int	exec_keeper_op(const struct yx_proc_ctx *c, const char *id, int op,
    const char *payload, size_t len, int wait_ms, yx_output_fn sink,
    void *arg, char *status, struct yx_errctx *err);

/*
 * proc.c: the output of keeper id from offset (yx_proc_output without the
 * record): out->data, offset, next_offset and dropped filled, *ks the
 * keeper's last status; *gone when the keeper is not there (nothing
 * filled). YX_OK, or the keeper operation's error.
 */
int	exec_keeper_output(const struct yx_proc_ctx *c, const char *id,
    uint64_t offset, int wait_ms, size_t max, struct yx_proc_chunk *out,
    struct exec_kstatus *ks, bool *gone, struct yx_errctx *err);

/* exec_lease.c */
void	exec_lease_cmd_init(struct exec_cmd *c, const struct exec_run *run,
    const char *command, int timeout);
int	exec_lease_agent_fast(struct yx_executor *ex,
     const struct yx_acquire_req *ar, struct exec_run *run,
     const struct yx_exec_req *xr, struct yx_exec_result *res, bool *done,
     struct yx_errctx *err);
int	exec_lease_run(struct yx_executor *ex, const struct yx_lease *lease,
     const struct exec_run *run, const struct exec_cmd *cmd,
     struct yx_exec_result *res, bool *started, struct yx_errctx *err);
bool	exec_lease_died(struct yx_executor *ex, const struct yx_lease *lease,
    const struct yx_exec_req *xr, struct yx_exec_result *res);
bool	exec_lease_gone(struct yx_executor *ex, const struct yx_lease *lease,
    int rc);
void	exec_lease_note_box(const struct yx_executor *ex, struct exec_run *run,
    const char *sandbox_id);
void	exec_lease_box_rundir(struct exec_run *run, const char *sandbox_id);

#endif /* YUXI_EXEC_INT_H */
