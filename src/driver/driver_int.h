/* SPDX-License-Identifier: MIT */
/*
 * driver_int.h - private helpers shared by the engine drivers (src/driver).
 *
 * The API driver (api.c, api_exec.c) and the CLI driver (docker_cli.c, spawn.c)
 * share: the incremental demultiplexer of Docker's attach stream (demux.c),
 * the translation of a container spec into an Engine API create body or a
 * `docker run` argument vector (spec.c), and the parsing of the inspect JSON
 * that both `GET /containers/{id}/json` and `docker inspect` produce
 * (driver.c). Nothing here is part of the public contract.
 */
#ifndef YUXI_DRIVER_INT_H
#define YUXI_DRIVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "yuxi/driver.h"

struct json_object;

/* Grace added to an exec's timeout before the host-side safety net fires. */
#define YX_EXEC_GRACE_SEC	5
/* Bound for an exec whose request carries no timeout. */
#define YX_EXEC_MAX_SEC		600
/* Largest frame accepted in the attach stream (the engine sends <= 32 KiB). */
#define YX_DEMUX_FRAME_MAX	(1U << 20)

/*
 * Incremental demultiplexer of the engine's attach stream (Engine API
 * "Attach to a container", stream format): 8-byte header {stream, 0, 0, 0,
 * size32be} then `size` bytes of payload; stream 1 = stdout, 2 = stderr
 * (0 = stdin is accepted too). Feed it bytes as they arrive, split anywhere.
 */
struct yx_demux {
	unsigned char	 hdr[8];
	size_t		 hlen;		/* header bytes collected so far */
	size_t		 remaining;	/* payload bytes left in this frame */
	bool		 failed;
	yx_output_fn	 fn;
	void		*arg;
};

void	yx_demux_init(struct yx_demux *dm, yx_output_fn fn, void *arg);
/*
 * Consume `len` bytes. Returns YX_OK; YX_E_IO for a corrupt header (unknown
 * stream id, non-zero padding, frame over YX_DEMUX_FRAME_MAX) after which
 * every call fails; or the sink's own error, returned unchanged.
 */
int	yx_demux_feed(struct yx_demux *dm, const char *data, size_t len);
/* True when the stream stopped on a frame boundary (a clean end). */
bool	yx_demux_idle(const struct yx_demux *dm);

/* driver.c */
/* Fill `err` with IMAGE_MISSING naming the image and its build script. */
int	yx_driver_image_missing(struct yx_errctx *err, const char *image);
/*
 * Fill `info` from one object of `docker inspect` / GET /containers/{}/json.
 * Returns YX_OK, or YX_E_IO when the object lacks an Id.
 */
int	yx_driver_info_from_inspect(struct json_object *obj,
    struct yx_container_info *info, struct yx_errctx *err);
/*
 * The engine's name filter for a container list, "^/<prefix>" with the
 * prefix's dots escaped (the engine matches names as regular expressions;
 * a prefix is [A-Za-z0-9_.-], at most 63 bytes), into re[size]: size
 * YX_DRIVER_NAME_RE_MAX holds any prefix. Only this instance's containers
 * then cross the socket, so a host running thousands of other labelled
 * containers does not fill the reply; yx_driver_list_filter still decides.
 */
#define YX_DRIVER_NAME_RE_MAX	(2 * 64 + 3)
void	yx_driver_name_regex(const char *prefix, char *re, size_t size);
/*
 * Keep only the containers named as cfg->container_prefix's
 * (yx_driver_name_ours; compacting v in place; an empty prefix keeps all);
 * returns the new count. Two services, or a service and a test, that share
 * one engine under different prefixes then never see (and never reconcile
 * away) each other's sandboxes.
 */
size_t	yx_driver_list_filter(const struct yx_config *cfg,
    struct yx_container_info *v, size_t n);
/* Copy our labels (thread, id, skills) of a Labels object into info. */
void	yx_driver_info_labels(struct json_object *labels,
    struct yx_container_info		      *info);
/*
 * Host-side safety net: SIGTERM `pid` (the in-sandbox runner then kills its
 * command's group), then SIGKILL its process group and itself. Nothing is
 * signalled unless /proc/<pid>/cgroup names container `cid` (full id): an
 * exec's Pid can be stale (the engine keeps Running=true when the container
 * died) and reused by an unrelated host process. pid <= 1 is ignored.
 */
void	yx_driver_kill_host_pid(pid_t pid, const char *cid);
/* Escape an engine message for a log line (bounded, printable). */
const char *yx_driver_escape(char *dst, size_t dstlen, const char *s, size_t n);
/*
 * Record a failed engine call of class `code` (an enum yx_err). The engine's
 * own text (`text`, n bytes; NULL allowed) is its wording and can name host
 * paths ("bind source path does not exist: /srv/..."): it goes to the server
 * log only, escaped and bounded (debug level for NOT_FOUND and FILE_EXISTS,
 * which callers expect and handle; else a warning). The caller-safe message
 * in err is ours: "<what>: <how>: <our words for code> (details in the
 * server log)", `what` naming the operation and `how` the status or exit
 * code. Returns code.
 */
int	yx_driver_fail(struct yx_errctx *err, int code, const char *what,
    const char *how, const char *text, size_t n);

/* spec.c */
/*
 * Build the POST /containers/create body for `spec` (docs/design.md §3
 * hardening). Returns a new json object the caller puts, or NULL with
 * YX_E_NOMEM / YX_E_BAD_REQUEST in err.
 */
struct json_object *yx_spec_create_body(const struct yx_container_spec *spec,
    struct yx_errctx						       *err);
/*
 * Build `docker run -d ...` arguments for `spec` into a heap argv of heap
 * strings (NULL-terminated, free with yx_spec_argv_free). YX_OK, YX_E_NOMEM,
 * or YX_E_BAD_REQUEST (a mount path the -v syntax cannot carry).
 */
int	yx_spec_run_argv(const struct yx_container_spec *spec, char ***argvp,
     struct yx_errctx *err);
void	yx_spec_argv_free(char **argv);
/* "rw,nosuid,nodev,size=N" options of the /tmp and /home/yuxi tmpfs. */
int	yx_spec_tmpfs_opts(const struct yx_container_spec *s, bool home,
    char *dst, size_t dstlen);
/* The host pids limit for cfg->pids under cfg->runtime (scaled for
 * runsc, whose own tasks count there; spec.c). */
int64_t	yx_spec_pids(const struct yx_config *c);
/* The spec's "UID:GID" (its own user, else cfg->user) into dst. */
void	yx_spec_user(const struct yx_container_spec *s, char *dst, size_t dstlen);
bool	yx_spec_shim_group(const struct yx_container_spec *s, char *dst,
    size_t dstlen);

/* spawn.c: run a program (no shell), see the function comments there. */
struct yx_spawn_out {
	int	 status;	/* exit status, 128+N when killed by signal N */
	bool	 timed_out;	/* killed at the deadline */
};
/*
 * Run argv[0] (PATH lookup) with extra environment `envadd` ("K=V" list or
 * NULL) and stdin from /dev/null. Stdout goes to `out_fn` (or into `out`),
 * stderr into `errbuf` (or, when merge is true, to the same sink as stdout,
 * in write order). Kills the child with SIGKILL at `timeout_ms`.
 * Returns YX_OK (see so->status), YX_E_BACKEND_UNAVAILABLE when argv[0]
 * cannot be executed (message in err), YX_E_NOMEM/YX_E_IO, or the error of
 * out_fn (the child is then killed).
 */
struct yx_buf;
int	yx_spawn_run(char *const argv[], const char *const envadd[],
    struct yx_buf *out, yx_output_fn out_fn, void *arg,
    struct yx_buf *errbuf, bool merge, int timeout_ms,
    struct yx_spawn_out *so, struct yx_errctx *err);

#endif /* YUXI_DRIVER_INT_H */
