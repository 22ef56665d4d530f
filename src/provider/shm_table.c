/* SPDX-License-Identifier: MIT */
/*
 * shm_table.c - the shared provider table: create/attach with format
 * validation, the one timed lock wrapper that repairs the table when the
 * previous holder died (EOWNERDEAD) before pthread_mutex_consistent(), the
 * start-up robustness self-test, and process identity (pid + start time)
 * so that holds and claims of dead processes are recognised even after the
 * pid was reused. See include/yuxi/shm_table.h and yuxi/shm_layout.h.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/log.h"
#include "yuxi/shm_table.h"

#define YX_TABLE_ATTACH_WAIT_MS	1000	/* see table_attach_map */

/*
 * Start time of `pid` from /proc/<pid>/stat. The command name (field 2) may
 * hold spaces and parentheses, so fields are counted after the last ')'.
 * Returns YX_OK, or YX_E_NOT_FOUND for a missing or zombie process.
 */
int
yx_proc_starttime(pid_t pid, uint64_t *start)
{
	char	 path[64], buf[1024], *p, *tok, *save = NULL;
	int	 fd = -1, rc = YX_E_NOT_FOUND, field;
	ssize_t	 n;

	if (pid <= 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		goto out;
	if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		goto out;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		goto out;
	/* token 1 after ')' is field 3 (state); field 22 is token 20. */
	for (field = 3, tok = strtok_r(p + 1, " ", &save); tok != NULL;
	     field++, tok = strtok_r(NULL, " ", &save)) {
		if (field == 3 && (tok[0] == 'Z' || tok[0] == 'X'))
			goto out;
		if (field == 22) {
			*start = strtoull(tok, NULL, 10);
			rc = YX_OK;
			break;
		}
	}
out:
	if (fd != -1)
		close(fd);
	return rc;
}

void
yx_proc_self(struct yx_shm_pid *me)
{
	static pid_t	 cpid;
	static uint64_t	 cstart;
	pid_t		 pid = getpid();

	if (pid != cpid) {
		cstart = 0;
		(void)yx_proc_starttime(pid, &cstart);
		cpid = pid;
	}
	me->pid = pid;
	me->pad = 0;
	me->start = cstart;
}

bool
yx_proc_alive(const struct yx_shm_pid *p)
{
	uint64_t start;

	if (p->pid <= 0)
		return false;
	if (yx_proc_starttime(p->pid, &start) != YX_OK)
		return false;
	return start == p->start;
}

static void
table_init_header(struct yx_shm_header *h, uint32_t capacity)
{
	pthread_mutexattr_t a;

	memset(h, 0, YX_SHM_SIZE(capacity));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&h->lock, &a);
	pthread_mutexattr_destroy(&a);
	h->version = YX_SHM_LAYOUT_VERSION;
	h->header_size = sizeof(struct yx_shm_header);
	h->slot_size = sizeof(struct yx_shm_slot);
	h->capacity = capacity;
	h->created_at = yx_now_ms();
	h->nstate[YX_SLOT_FREE] = capacity;
	/* Attachers check the magic: publish it after everything else. */
	__atomic_store_n(&h->magic, YX_SHM_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Check a mapped table against this binary's layout. Returns YX_OK or
 * YX_E_INTERNAL with the mismatch described in err.
 */
static int
table_validate(const struct yx_shm_header *h, size_t len,
    uint32_t capacity, struct yx_errctx *err)
{
	if (len < sizeof(*h))
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table too small (%zu bytes)", len);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != YX_SHM_MAGIC)
		return yx_fail(err, YX_E_INTERNAL, "shared table: bad magic");
	if (h->version != YX_SHM_LAYOUT_VERSION)
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table: layout version %u, expected %u",
		    h->version, YX_SHM_LAYOUT_VERSION);
	if (h->header_size != sizeof(struct yx_shm_header) ||
	    h->slot_size != sizeof(struct yx_shm_slot))
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table: size fingerprints %u/%u, expected %zu/%zu",
		    h->header_size, h->slot_size,
		    sizeof(struct yx_shm_header), sizeof(struct yx_shm_slot));
	if (capacity != 0 && h->capacity != capacity)
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table: capacity %u, expected %u",
		    h->capacity, capacity);
	if (len != YX_SHM_SIZE(h->capacity))
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table: size %zu does not match capacity %u",
		    len, h->capacity);
	return YX_OK;
}

/*
 * Map an existing table. A process that attaches while another is still
 * creating it (between its shm_open(O_EXCL) and publishing the magic, a
 * few microseconds) would see a short or blank table: such a table is
 * waited for, up to YX_TABLE_ATTACH_WAIT_MS, before it counts as bad.
 * YX_OK with the mapping in *mp, its length in *lenp; or an error
 * (nothing mapped).
 */
static int
table_attach_map(int fd, void **mp, size_t *lenp, struct yx_errctx *err)
{
	const struct timespec	 step = { 0, 10 * 1000 * 1000 };
	struct stat		 st;
	size_t			 len = 0;
	void			*m = MAP_FAILED;
	int			 waited;

	for (waited = 0;; waited += 10) {
		if (fstat(fd, &st) == -1)
			return yx_fail(err, yx_err_from_errno(errno),
			    "shared table: fstat: %s", strerror(errno));
		len = (size_t)st.st_size;
		if (len >= sizeof(struct yx_shm_header)) {
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    fd, 0);
			if (m == MAP_FAILED)
				return yx_fail(err, yx_err_from_errno(errno),
				    "shared table: mmap: %s", strerror(errno));
			if (__atomic_load_n(&((struct yx_shm_header *)m)->magic,
				__ATOMIC_ACQUIRE) != 0 ||
			    waited >= YX_TABLE_ATTACH_WAIT_MS)
				break;	/* published (or never will be) */
			munmap(m, len);
		} else if (waited >= YX_TABLE_ATTACH_WAIT_MS)
			return yx_fail(err, YX_E_INTERNAL,
			    "shared table too small (%zu bytes)", len);
		nanosleep(&step, NULL);
	}
	*mp = m;
	*lenp = len;
	return YX_OK;
}

/*
 * Map an open shm descriptor. create: size and initialise it. Returns
 * YX_OK with t->hdr set, or an error (nothing mapped).
 */
static int
table_map(struct yx_table *t, int fd, uint32_t capacity, bool create,
    struct yx_errctx *err)
{
	size_t		 len = 0;
	void		*m = NULL;
	int		 rc;

	if (create) {
		len = YX_SHM_SIZE(capacity);
		if (ftruncate(fd, (off_t)len) == -1)
			return yx_fail(err, yx_err_from_errno(errno),
			    "shared table: ftruncate: %s", strerror(errno));
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return yx_fail(err, yx_err_from_errno(errno),
			    "shared table: mmap: %s", strerror(errno));
	} else if ((rc = table_attach_map(fd, &m, &len, err)) != YX_OK)
		return rc;
	if (create)
		table_init_header(m, capacity);
	else if ((rc = table_validate(m, len, capacity, err)) != YX_OK) {
		munmap(m, len);
		return rc;
	}
	t->hdr = m;
	t->slots = (struct yx_shm_slot *)((char *)m +
	    sizeof(struct yx_shm_header));
	t->maplen = len;
	return YX_OK;
}

/*
 * One attempt at opening: create exclusively if allowed, else attach.
 * Returns YX_OK, or an error; *incompatible is set when an existing table
 * failed validation (so the caller may recreate it).
 */
static int
table_try_open(struct yx_table *t, uint32_t capacity, int flags,
    bool *incompatible, struct yx_errctx *err)
{
	int fd = -1, rc;

	*incompatible = false;
	if (flags & YX_TABLE_CREATE) {
		fd = shm_open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
		    0600);
		if (fd != -1) {
			rc = table_map(t, fd, capacity, true, err);
			if (rc != YX_OK)
				shm_unlink(t->name);
			goto out;
		}
		if (errno != EEXIST) {
			rc = yx_fail(err, yx_err_from_errno(errno),
			    "shm_open %s: %s", t->name, strerror(errno));
			goto out;
		}
	}
	if ((fd = shm_open(t->name, O_RDWR | O_CLOEXEC, 0600)) == -1) {
		rc = yx_fail(err, yx_err_from_errno(errno), "shm_open %s: %s",
		    t->name, strerror(errno));
		goto out;
	}
	rc = table_map(t, fd, capacity, false, err);
	*incompatible = rc == YX_E_INTERNAL;
out:
	if (fd != -1)
		close(fd);
	return rc;
}

int
yx_table_open(struct yx_table **tp, const char *name, uint32_t capacity,
    int flags, struct yx_errctx *err)
{
	struct yx_table	*t = NULL;
	bool		 incompatible;
	int		 rc;

	*tp = NULL;
	if (name == NULL || name[0] != '/' || strlen(name) >= sizeof(t->name) ||
	    strchr(name + 1, '/') != NULL) {
		rc = yx_fail(err, YX_E_BAD_REQUEST,
		    "shared table name must look like /name");
		goto fail;
	}
	if ((flags & YX_TABLE_CREATE) && capacity == 0) {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "shared table capacity 0");
		goto fail;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto fail;
	}
	t->lock_timeout_ms = YX_TABLE_LOCK_TIMEOUT_MS;
	snprintf(t->name, sizeof(t->name), "%s", name);
	rc = table_try_open(t, capacity, flags, &incompatible, err);
	if (rc != YX_OK && incompatible && (flags & YX_TABLE_CREATE) &&
	    (flags & YX_TABLE_RECREATE)) {
		log_warnx("shared table %s incompatible (%s): recreating",
		    t->name, err != NULL ? err->msg : "");
		shm_unlink(t->name);
		rc = table_try_open(t, capacity, flags, &incompatible, err);
	}
	if (rc != YX_OK)
		goto fail;
	*tp = t;
	return YX_OK;
fail:
	free(t);
	return rc;
}

void
yx_table_close(struct yx_table *t)
{
	if (t == NULL)
		return;
	if (t->hdr != NULL)
		munmap(t->hdr, t->maplen);
	free(t);
}

int
yx_table_unlink(const char *name)
{
	if (shm_unlink(name) == -1 && errno != ENOENT)
		return yx_err_from_errno(errno);
	return YX_OK;
}

void
yx_table_set_state(struct yx_table *t, struct yx_shm_slot *s,
    enum yx_slot_state st)
{
	uint32_t old = s->state < YX_SLOT_NSTATES ? s->state : YX_SLOT_FREE;

	if (t->hdr->nstate[old] > 0)
		t->hdr->nstate[old]--;
	t->hdr->nstate[st]++;
	s->state = st;
}

/* Free a slot; the generation survives so that reuse can bump it. */
void
yx_table_slot_clear(struct yx_table *t, struct yx_shm_slot *s)
{
	uint64_t gen = s->generation;

	yx_table_set_state(t, s, YX_SLOT_FREE);
	memset(s, 0, sizeof(*s));
	s->generation = gen;
}

int
yx_table_find_thread(const struct yx_table *t, const char *thread_id)
{
	uint32_t i;

	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state != YX_SLOT_FREE &&
		    strcmp(t->slots[i].thread_id, thread_id) == 0)
			return (int)i;
	return -1;
}

int
yx_table_find_sandbox(const struct yx_table *t, const char *sandbox_id)
{
	uint32_t i;

	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state != YX_SLOT_FREE &&
		    strcmp(t->slots[i].sandbox_id, sandbox_id) == 0)
			return (int)i;
	return -1;
}

uint32_t
yx_table_used(const struct yx_table *t)
{
	return t->hdr->capacity - t->hdr->nstate[YX_SLOT_FREE];
}

int
yx_table_hold_add(struct yx_shm_slot *s, const struct yx_shm_pid *who)
{
	if (s->nholds >= YX_SHM_HOLDS_MAX)
		return YX_E_BUSY;
	s->holds[s->nholds++] = *who;
	return YX_OK;
}

static void
table_hold_remove_at(struct yx_shm_slot *s, uint32_t i)
{
	s->holds[i] = s->holds[s->nholds - 1];
	memset(&s->holds[s->nholds - 1], 0, sizeof(s->holds[0]));
	s->nholds--;
}

bool
yx_table_hold_del(struct yx_shm_slot *s, const struct yx_shm_pid *who)
{
	uint32_t i;

	for (i = 0; i < s->nholds; i++)
		if (s->holds[i].pid == who->pid &&
		    s->holds[i].start == who->start) {
			table_hold_remove_at(s, i);
			return true;
		}
	return false;
}

unsigned
yx_table_slot_drop_dead(struct yx_shm_slot *s)
{
	unsigned	 n = 0;
	uint32_t	 i = 0;

	if (s->nholds > YX_SHM_HOLDS_MAX)	/* torn write by a dead holder */
		s->nholds = YX_SHM_HOLDS_MAX;
	while (i < s->nholds) {
		if (!yx_proc_alive(&s->holds[i])) {
			table_hold_remove_at(s, i);
			n++;
		} else
			i++;
	}
	return n;
}

/* Repair one slot; returns the number of fixes. */
static unsigned
table_repair_slot(struct yx_table *t, struct yx_shm_slot *s)
{
	unsigned n = 0;

	if (s->state >= YX_SLOT_NSTATES) {
		yx_table_slot_clear(t, s);
		return 1;
	}
	if (s->state == YX_SLOT_FREE)
		return 0;
	if ((n = yx_table_slot_drop_dead(s)) > 0)
		__atomic_fetch_add(&t->hdr->metrics.holds_dropped, n,
		    __ATOMIC_RELAXED);
	/* A CREATING claim without a live owner (or torn before the owner
	 * was stamped) is void; a DESTROYING one is orphaned (pid 0) so the
	 * reaper finishes the removal. */
	if (s->state == YX_SLOT_CREATING && !yx_proc_alive(&s->owner)) {
		yx_table_slot_clear(t, s);
		n++;
	} else if (s->state == YX_SLOT_DESTROYING && s->owner.pid != 0 &&
	    !yx_proc_alive(&s->owner)) {
		memset(&s->owner, 0, sizeof(s->owner));
		n++;
	}
	return n;
}

unsigned
yx_table_repair(struct yx_table *t)
{
	uint32_t	 i, cnt[YX_SLOT_NSTATES] = { 0 };
	unsigned	 n = 0;

	for (i = 0; i < t->hdr->capacity; i++)
		n += table_repair_slot(t, &t->slots[i]);
	for (i = 0; i < t->hdr->capacity; i++)
		cnt[t->slots[i].state]++;
	memcpy(t->hdr->nstate, cnt, sizeof(cnt));
	return n;
}

int
yx_table_lock(struct yx_table *t, struct yx_errctx *err)
{
	struct timespec	 ts;
	unsigned	 fixed;
	int		 rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += t->lock_timeout_ms / 1000;
	ts.tv_nsec += (long)(t->lock_timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	rc = pthread_mutex_timedlock(&t->hdr->lock, &ts);
	switch (rc) {
	case 0:
		return YX_OK;
	case EOWNERDEAD:
		/* Repair first: consistent() declares the data sound. */
		fixed = yx_table_repair(t);
		__atomic_fetch_add(&t->hdr->metrics.lock_repairs, 1,
		    __ATOMIC_RELAXED);
		if (pthread_mutex_consistent(&t->hdr->lock) != 0) {
			pthread_mutex_unlock(&t->hdr->lock);
			return yx_fail(err, YX_E_INTERNAL,
			    "shared table: mutex_consistent failed");
		}
		log_warnx("shared table %s: previous lock holder died, "
			  "%u repairs",
		    t->name, fixed);
		return YX_OK;
	case ETIMEDOUT:
		return yx_fail(err, YX_E_BUSY,
		    "shared table lock not obtained within %d ms",
		    t->lock_timeout_ms);
	case ENOTRECOVERABLE:
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table lock unrecoverable: restart the service");
	default:
		return yx_fail(err, YX_E_INTERNAL,
		    "shared table lock: %s", strerror(rc));
	}
}

void
yx_table_unlock(struct yx_table *t)
{
	pthread_mutex_unlock(&t->hdr->lock);
}

/*
 * Parent side of the self-test: the child has exited holding m. Returns
 * YX_OK when the lock reports EOWNERDEAD and can be made consistent.
 */
static int
table_selftest_check(pthread_mutex_t *m, struct yx_errctx *err)
{
	int rc;

	rc = pthread_mutex_lock(m);
	if (rc != EOWNERDEAD) {
		if (rc == 0)
			pthread_mutex_unlock(m);
		return yx_fail(err, YX_E_INTERNAL, "robust mutex self-test: "
						   "lock after owner death gave %d, not EOWNERDEAD",
		    rc);
	}
	if (pthread_mutex_consistent(m) != 0) {
		pthread_mutex_unlock(m);
		return yx_fail(err, YX_E_INTERNAL,
		    "robust mutex self-test: consistent failed");
	}
	pthread_mutex_unlock(m);
	if ((rc = pthread_mutex_lock(m)) != 0)
		return yx_fail(err, YX_E_INTERNAL,
		    "robust mutex self-test: relock gave %d", rc);
	pthread_mutex_unlock(m);
	return YX_OK;
}

int
yx_table_selftest(struct yx_errctx *err)
{
	pthread_mutexattr_t	 a;
	pthread_mutex_t		*m = MAP_FAILED;
	pid_t			 pid;
	int			 rc, status;

	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		rc = yx_fail(err, YX_E_INTERNAL, "self-test mmap: %s",
		    strerror(errno));
		goto out;
	}
	pthread_mutexattr_init(&a);
	if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) != 0 ||
	    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) != 0 ||
	    pthread_mutex_init(m, &a) != 0) {
		pthread_mutexattr_destroy(&a);
		rc = yx_fail(err, YX_E_INTERNAL,
		    "robust process-shared mutexes are not supported");
		goto out;
	}
	pthread_mutexattr_destroy(&a);
	if ((pid = fork()) == -1) {
		rc = yx_fail(err, YX_E_INTERNAL, "self-test fork: %s",
		    strerror(errno));
		goto out;
	}
	if (pid == 0)
		_exit(pthread_mutex_lock(m) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = yx_fail(err, YX_E_INTERNAL,
		    "robust mutex self-test: child could not lock");
	else
		rc = table_selftest_check(m, err);
	pthread_mutex_destroy(m);
out:
	if (m != MAP_FAILED)
		munmap(m, sizeof(*m));
	return rc;
}
