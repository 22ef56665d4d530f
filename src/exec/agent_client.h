/* SPDX-License-Identifier: MIT */
/*
 * agent_client.h - the host side of the in-sandbox exec agent (private to
 * src/exec; docs/agent.md).
 *
 * Each sandbox gets a run directory <saves>/run/<thread_id>/ (mode 0700,
 * owned by the sandbox uid) bind-mounted at /opt/yuxi/run; the agent listens
 * on agent.sock in it. Everything in that directory is controlled by the
 * sandbox, so the host never follows a path in it: the directory is opened
 * once from trusted parents (O_PATH, O_NOFOLLOW), the socket is resolved
 * beneath it with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) as an O_PATH fd, checked to be a
 * socket owned by the sandbox uid, and connected through
 * /proc/self/fd/<that fd>, which names exactly that inode. Every byte the
 * agent sends is untrusted: frames are bounded (agent_proto.h), every wait
 * has a deadline, output goes straight to the caller's bounded sink.
 *
 * Ownership: plain functions; fds returned through pointers belong to the
 * caller (close them).
 */
#ifndef YUXI_EXEC_AGENT_CLIENT_H
#define YUXI_EXEC_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/executor.h"
#include "guest/agent_proto.h"

struct yx_agent_opts {
	int	start_wait_ms;	/* connect, request, until 'S' (default 3000) */
	int	grace_ms;	/* host deadline past the command's timeout (5000) */
	/* the sandbox runs as a uid of its own (the range): its command's
	 * output pipe may be opened anew through /proc (primed shells,
	 * docs/agent.md); false: only the descriptor passed writes to it */
	bool	own_uid;
};

/*
 * Create (when absent) and open <saves_dir>/run/<thread_id> as an O_PATH
 * directory fd in *fdp, its host path in host_path (size hlen). The "run"
 * level must belong to us, the thread level to *uid (the thread's sandbox
 * user), neither a symlink; or to the own uid of a pool box serving the
 * thread (yx_uid_serves), which *uid then names: the uid the agent's files
 * belong to. YX_OK; YX_E_BAD_REQUEST for a path that does not fit;
 * YX_E_IO / YX_E_PERMISSION_DENIED style errno translations otherwise.
 */
int	yx_agent_rundir_open(const char *saves_dir, const char *thread_id,
    unsigned *uid, unsigned gid, char *host_path, size_t hlen, int *fdp,
    struct yx_errctx *err);
/* The same for a sandbox about to be created as uid: a directory of any
 * other uid, a pool box's included, is replaced by one of uid's. */
int	yx_agent_rundir_own(const char *saves_dir, const char *thread_id,
    unsigned uid, unsigned gid, char *host_path, size_t hlen, int *fdp,
    struct yx_errctx *err);

/*
 * Connect to agent.sock beneath rundir_fd (see above). YX_OK with a
 * non-blocking socket in *sockp (caller closes); YX_E_BACKEND_UNAVAILABLE
 * when there is no such socket, it is a symlink or not a socket or not
 * owned by uid, or nobody accepts at once.
 */
int	yx_agent_connect(int rundir_fd, unsigned uid, int *sockp,
    struct yx_errctx *err);

/*
 * Run xr (argv, env, workdir; user is ignored: the agent runs as the
 * sandbox user) through the agent; output goes to xr->on_output.
 * YX_OK with res filled (exit status; timed_out as the engine driver sets
 * it; the host deadline timeout + grace gives exit 124, timed_out).
 * Otherwise *started says whether the agent acknowledged starting the
 * command: false -> nothing ran and no output was delivered, the caller may
 * use another path (YX_E_BACKEND_UNAVAILABLE); true -> the command may have
 * run: YX_E_BACKEND_UNAVAILABLE (agent died or broke the protocol) or the
 * sink's own error.
 */
int	yx_agent_run(int rundir_fd, unsigned uid, const struct yx_agent_opts *o,
    const struct yx_exec_req *xr, struct yx_exec_result *res,
    bool *started, struct yx_errctx *err);

/* yx_agent_connect() to another socket of the run directory (a keeper's
 * proc.<id>.sock), with the same checks. */
int	yx_agent_connect_to(int rundir_fd, const char *name, unsigned uid,
    int *sockp, struct yx_errctx *err);

/*
 * Read the small regular file `name` of the run directory (resolved as the
 * sockets are, owned by uid, shorter than len) into buf, NUL-terminated.
 * Its length, or -1 (absent, not such a file, too long).
 */
ssize_t	yx_agent_read_small(int rundir_fd, const char *name, unsigned uid,
    char *buf, size_t len);

/*
 * Start xr (argv, env, workdir, timeout = the process's lifetime) as the
 * background process bg->id keeping bg->ring bytes of its output
 * (docs/agent.md "Background processes"), on a terminal or as a session's
 * shell by bg->mode. YX_OK once the agent's keeper said it started
 * (*started true; what it said in bg->started, e.g. "shell=bash").
 * Otherwise YX_E_BACKEND_UNAVAILABLE; *started false: nothing ran.
 */
int	yx_agent_spawn(int rundir_fd, unsigned uid, const struct yx_agent_opts *o,
    const struct yx_exec_req *xr, struct yx_spawn *bg, bool *started,
    struct yx_errctx *err);

/*
 * One operation on process id's keeper (agent_proto.h: op 'Q', 'R', 'W',
 * 'K' with its payload). The 'D' output frames go to sink (may be NULL),
 * the 'Z' status text into status (YX_AGENT_STATUS_MAX + 1 bytes). The
 * deadline is wait_ms (the keeper's own wait) + 2 s, and never past
 * `until` (yx_mono_ms(); 0: none), the caller's whole budget. YX_OK;
 * YX_E_NOT_FOUND
 * when no keeper answers on its socket (it left, or the container is
 * gone), or when the keeper stays silent for 300 ms and the agent says it
 * died ('L', docs/agent.md "Is the keeper alive?"; its socket's name is
 * then removed); YX_E_TIMEOUT when it did not answer by the deadline;
 * YX_E_BACKEND_UNAVAILABLE for a refusal or a broken reply; the sink's
 * error.
 */
int	yx_agent_keeper_op(int rundir_fd, unsigned uid, const char *id, int op,
    const char *payload, size_t len, int wait_ms, int64_t until,
    yx_output_fn sink, void *arg, char *status, struct yx_errctx *err);

/* What a session's command came to (yx_agent_session_run): the session's
 * part, and the command's status. */
struct yx_agent_sess_res {
	struct yx_exec_session	 s;
	int			 code;	/* its status; the shell's when ended */
	bool			 timed_out;
};

/*
 * Run cmd (at most YX_AGENT_OUT_MAX - 16 bytes) in the shell of session
 * id (docs/agent.md "Sessions"; its keeper's 'U'), its output into
 * xr->on_output as it comes, xr->on_tick on its period (an error from
 * either stops the command: the keeper kills it, the session stays).
 * timeout: seconds (the keeper enforces it; 0: none, our deadline is then
 * 600 s). YX_OK with *res (busy or ended: nothing ran); YX_E_NOT_FOUND when
 * the keeper is gone; YX_E_PAYLOAD_TOO_LARGE; YX_E_TIMEOUT;
 * YX_E_BACKEND_UNAVAILABLE; the sink's or tick's error.
 */
int	yx_agent_session_run(int rundir_fd, unsigned uid, const char *id,
    const char *cmd, int timeout, const struct yx_exec_req *xr,
    struct yx_agent_sess_res *res, struct yx_errctx *err);

#endif /* YUXI_EXEC_AGENT_CLIENT_H */
