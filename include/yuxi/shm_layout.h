/* SPDX-License-Identifier: MIT */
/*
 * yuxi/shm_layout.h - the on-memory format of the shared provider table
 * (docs/design.md §2).
 *
 * One POSIX shared memory object (shm_open + ftruncate + mmap) holds a
 * header followed by `capacity` fixed-size slots. Every process of the
 * service maps it: the master creates it, workers and the reaper inherit or
 * attach to it. The format is versioned: the header carries a magic, a
 * layout version and sizeof fingerprints of the header and of a slot, so a
 * binary built with a different layout (or a different libc mutex size)
 * refuses to attach instead of misreading the slots.
 *
 * Change anything below => bump YX_SHM_LAYOUT_VERSION.
 *
 * Concurrency: every field of the header and of the slots is read and
 * written only under `lock` (a process-shared robust mutex), except the
 * reaper's unlocked pre-scan, which re-checks everything under the lock.
 * Times are unix milliseconds (CLOCK_REALTIME). A process is identified by
 * its pid AND its start time (/proc/<pid>/stat field 22, clock ticks since
 * boot), so a reused pid is never mistaken for the original process.
 */
#ifndef YUXI_SHM_LAYOUT_H
#define YUXI_SHM_LAYOUT_H

#include <pthread.h>
#include <stdint.h>

#define YX_SHM_MAGIC		UINT64_C(0x3154534958555559)	/* "YUXISTS1" LE */
#define YX_SHM_LAYOUT_VERSION	4	/* 4: slot.idle_s, slot.stalled_until, hdr.comp_* */

#define YX_SHM_HOLDS_MAX	32	/* in-flight operations per sandbox */
#define YX_SHM_THREAD_ID_MAX	129	/* YX_THREAD_ID_SIZE (yuxi/ident.h) */
#define YX_SHM_SANDBOX_ID_MAX	65	/* up to 64 hex + NUL */
#define YX_SHM_CONTAINER_ID_MAX	65	/* 64 hex + NUL */
#define YX_SHM_CONTAINER_NAME_MAX 128
#define YX_SHM_USER_MAX		65
#define YX_SHM_AGENT_ID_MAX	129
#define YX_SHM_SKILLS_FP_MAX	65	/* 64 hex + NUL */

/* Slot states. FREE must stay 0: a zero-filled table is all free. */
enum yx_slot_state {
	YX_SLOT_FREE = 0,
	YX_SLOT_CREATING,	/* claimed by owner: discovering/creating */
	YX_SLOT_ACTIVE,		/* container running, in use */
	YX_SLOT_WARM,		/* container running, released to the pool */
	YX_SLOT_DESTROYING,	/* claimed by owner: removing the container */
	YX_SLOT_POOLED,		/* pool box: running, never used, no thread */
	YX_SLOT_NSTATES
};

/* A process identity: pid plus its start time, to detect pid reuse. */
struct yx_shm_pid {
	int32_t		pid;		/* 0 = nobody */
	uint32_t	pad;
	uint64_t	start;		/* /proc/<pid>/stat field 22 */
};

struct yx_shm_slot {
	uint32_t		state;		/* enum yx_slot_state */
	uint32_t		nholds;		/* valid entries of holds[] */
	uint64_t		generation;	/* bumped each time the slot is reused */
	struct yx_shm_pid	owner;		/* claimer while CREATING/DESTROYING */
	struct yx_shm_pid	holds[YX_SHM_HOLDS_MAX];
	int64_t			claimed_at;	/* ms: when owner claimed it */
	int64_t			created_at;	/* ms: container published/adopted */
	int64_t			last_used_at;	/* ms: last acquire/unhold */
	int32_t			port;		/* published host port, 0 = none */
	uint32_t		uid;		/* a pool box's own uid; 0 = none */
	int32_t			idle_s;		/* the thread's idle timeout, s;
						 * 0 = YUXI_SANDBOX_IDLE_TIMEOUT */
	uint32_t		pad2;
	int64_t			stalled_until;	/* ms (monotonic): its process keepers did
						 * not answer; asked again after this */
	char	thread_id[YX_SHM_THREAD_ID_MAX];
	char	sandbox_id[YX_SHM_SANDBOX_ID_MAX];
	char	container_id[YX_SHM_CONTAINER_ID_MAX];	/* "" until known */
	char	container_name[YX_SHM_CONTAINER_NAME_MAX]; /* set at claim */
	char	owner_user[YX_SHM_USER_MAX];
	char	agent_id[YX_SHM_AGENT_ID_MAX];
	char	skills_fp[YX_SHM_SKILLS_FP_MAX];
};

/* Service counters (GET /metrics). Monotonic since the table was created. */
struct yx_shm_metrics {
	uint64_t	acquire_hit;		/* active slot reused */
	uint64_t	acquire_warm;		/* warm slot made active */
	uint64_t	acquire_discovered;	/* running container adopted */
	uint64_t	acquire_created;	/* new container created */
	uint64_t	reaper_destroys;	/* idle sandboxes destroyed */
	uint64_t	engine_errors;		/* driver calls that failed */
	uint64_t	evictions;		/* LRU evictions at capacity */
	uint64_t	lock_repairs;		/* EOWNERDEAD recoveries */
	uint64_t	holds_dropped;		/* holds of dead processes dropped */
	uint64_t	reconcile_adopted;
	uint64_t	reconcile_removed;
	uint64_t	acquire_pooled;		/* pool box assigned to a thread */
	uint64_t	pool_made;		/* pool boxes started */
};

struct yx_shm_header {
	uint64_t		magic;		/* YX_SHM_MAGIC, written last */
	uint32_t		version;	/* YX_SHM_LAYOUT_VERSION */
	uint32_t		header_size;	/* sizeof(struct yx_shm_header) */
	uint32_t		slot_size;	/* sizeof(struct yx_shm_slot) */
	uint32_t		capacity;	/* number of slots */
	int64_t			created_at;	/* ms */
	uint64_t		generation;	/* source of slot generations */
	uint32_t		nstate[YX_SLOT_NSTATES]; /* slots per state */
	uint32_t		pad;
	struct yx_shm_metrics	metrics;
	pthread_mutex_t		lock;		/* PSHARED + ROBUST */
	/* the master's children besides workers and reaper (enum yx_comp,
	 * yuxi/provider.h), written by the master alone, read without the
	 * lock (__atomic): /readyz, /metrics, doctor */
	int32_t			comp_state[4];	/* enum yx_comp_state */
	uint64_t		comp_restarts[4];
	char			reserved[16];
};

/* Bytes of a table of `capacity` slots. */
#define YX_SHM_SIZE(capacity) \
	(sizeof(struct yx_shm_header) + \
	    (size_t)(capacity) * sizeof(struct yx_shm_slot))

#endif /* YUXI_SHM_LAYOUT_H */
