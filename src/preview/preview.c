/* SPDX-License-Identifier: MIT */
/*
 * preview.c - preview tokens and records (include/yuxi/preview.h).
 *
 * Two files per preview, each one line of text written through a
 * temporary and a rename (yx_replace_at):
 *   <saves>/threads/<tid>/previews/<port>:
 *       "v1 <sha256 of the token> <token> <created ms> <expires ms>"
 *   <saves>/preview/idx/<sha256 of the token>:
 *       "v1 <tid> <port> <expires ms>"
 * The thread's record is the truth: it goes with a revoke, a replacement
 * (another hash) and with the thread's directory; an index entry only
 * says where to look, and one whose record no longer matches is a miss
 * (swept later by the reaper, yx_preview_sweep). The token is kept in the
 * thread's record only (0600, in the thread's directory, which no sandbox
 * sees), so that its owner can list the URL again; the index, the logs and
 * the audit lines carry its hash or its first YX_PREVIEW_PREFIX_LEN
 * characters.
 *
 * The check of a presented token: hash it, open the index entry of that
 * hash (a name lookup reveals nothing of the token: finding the entry
 * needs a preimage), read the thread's record and compare its hash with
 * the presented token's hash in constant time (CRYPTO_memcmp).
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "yuxi/clock.h"
#include "yuxi/hash.h"
#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/replace.h"
#include "yuxi/threads.h"

#define PV_THREAD_DIR	"previews"	/* <saves>/threads/<tid>/previews */
#define PV_IDX_DIR	"idx"		/* <saves>/preview/idx */
#define PV_LINE_MAX	512
/* An index entry younger than this may be a create under way (its record
 * is written next, after the index's): the sweep leaves it. */
#define PV_CREATE_GRACE_MS	60000
#define PV_B32		"abcdefghijklmnopqrstuvwxyz234567"

bool
yx_preview_token_valid(const char *s, size_t len)
{
	size_t i;

	if (s == NULL || len != YX_PREVIEW_TOKEN_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '2' && s[i] <= '7')))
			return false;
	return true;
}

/* A new token: 20 random bytes in base32, 32 characters. YX_OK or
 * YX_E_INTERNAL (no randomness: never a weak token). */
static int
pv_token_new(char *out)
{
	unsigned char	rnd[20];
	unsigned	acc = 0, bits = 0;
	size_t		i, n = 0;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return YX_E_INTERNAL;
	for (i = 0; i < sizeof(rnd); i++) {
		acc = (acc << 8) | rnd[i];
		bits += 8;
		while (bits >= 5) {
			out[n++] = PV_B32[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	out[n] = '\0';
	return YX_OK;
}

void
yx_preview_sock_name(const char *tid, int port, char *name)
{
	char h[YX_SHA256_HEX];

	if (yx_sha256_hex(tid, strlen(tid), h) != YX_OK)
		memset(h, '0', sizeof(h));
	snprintf(name, YX_PREVIEW_NAME_MAX, "%.16s-%d.sock", h, port);
}

void
yx_preview_url(const struct yx_config *cfg, const char *token, char *url,
    size_t len)
{
	snprintf(url, len, "https://%s.%s/", token, cfg->preview_domain);
}

/* The domain's name without ":port" into out (YX_PREVIEW_DOMAIN_MAX). */
static void
pv_domain_name(const struct yx_config *cfg, char *out)
{
	size_t n = strcspn(cfg->preview_domain, ":");

	memcpy(out, cfg->preview_domain, n);
	out[n] = '\0';
}

/* <saves>/preview/<sub> opened as a directory (made 0700 when asked). */
static int
pv_dir_open(const struct yx_config *cfg, const char *sub, bool create)
{
	char	path[YX_CFG_PATH + 32];
	int	fd;

	snprintf(path, sizeof(path), "%s/" YX_PREVIEW_DIR, cfg->saves_dir);
	if (create && mkdir(path, 0711) == -1 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/" YX_PREVIEW_DIR "/%s", cfg->saves_dir, sub);
	if (create && mkdir(path, 0700) == -1 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

/* The thread's previews directory (made when asked); -1 with errno. */
static int
pv_thread_dir(struct yx_thread_store *st, const char *tid, bool create)
{
	int tfd, fd;

	if ((tfd = yx_thread_dirfd(st, tid)) == -1)
		return -1;
	fd = openat(tfd, PV_THREAD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT && create &&
	    (mkdirat(tfd, PV_THREAD_DIR, 0700) == 0 || errno == EEXIST))
		fd = openat(tfd, PV_THREAD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(tfd);
	return fd;
}

/* Read the one-line file name of dfd into buf (PV_LINE_MAX). 0 or -1. */
static int
pv_read_line(int dfd, const char *name, char *buf)
{
	ssize_t	n;
	int	fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, PV_LINE_MAX - 1);
	close(fd);
	if (n <= 0 || buf[n - 1] != '\n')
		return -1;
	buf[n - 1] = '\0';
	return 0;
}

/* Parse a thread record of port into *p. 0 or -1. */
static int
pv_record_parse(const char *line, int port, struct yx_preview *p)
{
	long long	c, e;
	char		h[YX_SHA256_HEX + 1], tok[YX_PREVIEW_TOKEN_LEN + 2], tail;

	if (sscanf(line, "v1 %65s %33s %lld %lld%c", h, tok, &c, &e, &tail) != 4 ||
	    strlen(h) != YX_SHA256_HEX - 1 ||
	    !yx_preview_token_valid(tok, strlen(tok)))
		return -1;
	memset(p, 0, sizeof(*p));
	p->port = port;
	p->created_ms = c;
	p->expires_ms = e;
	memcpy(p->token, tok, sizeof(p->token));
	memcpy(p->prefix, tok, YX_PREVIEW_PREFIX_LEN);
	memcpy(p->hash, h, sizeof(p->hash));
	return 0;
}

/* A port as a record's name: decimal 1..65535, no leading zero. */
static int
pv_port_of(const char *name)
{
	char	*end;
	long	 v;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	v = strtol(name, &end, 10);
	return *end == '\0' && v <= 65535 ? (int)v : 0;
}

static int
pv_write(int dfd, const char *name, const char *line, bool sync)
{
	struct yx_replace r = { .data = line, .len = strlen(line), .mode = 0600, .flags = sync ? 0 : YX_REPLACE_HINT };

	return yx_replace_at(dfd, name, &r);
}

/* Drop the index entry of hash (when it still names tid and port). */
static void
pv_unindex(const struct yx_config *cfg, const char *hash)
{
	int fd;

	if ((fd = pv_dir_open(cfg, PV_IDX_DIR, false)) == -1)
		return;
	(void)unlinkat(fd, hash, 0);
	close(fd);
}

/* Records of dfd that have not expired; expired ones are removed. The
 * count (at most max into v, which may be NULL). */
static size_t
pv_scan(const struct yx_config *cfg, int dfd, int64_t now, int skip_port,
    struct yx_preview *v, size_t max)
{
	struct yx_preview	 p;
	struct dirent		*de;
	char			 line[PV_LINE_MAX];
	size_t			 n = 0;
	DIR			*d;
	int			 fd, port;

	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if ((port = pv_port_of(de->d_name)) == 0 || port == skip_port ||
		    pv_read_line(dfd, de->d_name, line) == -1 ||
		    pv_record_parse(line, port, &p) == -1)
			continue;
		if (p.expires_ms <= now) {
			(void)unlinkat(dfd, de->d_name, 0);
			pv_unindex(cfg, p.hash);
			continue;
		}
		if (v != NULL && n < max)
			v[n] = p;
		n++;
	}
	closedir(d);
	return n;
}

int
yx_preview_create(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, int port, int ttl, char *token, struct yx_preview *out,
    struct yx_errctx *err)
{
	struct yx_preview	old;
	char			line[PV_LINE_MAX], name[16], oldline[PV_LINE_MAX];
	int64_t			now = yx_now_ms();
	int			dfd = -1, ifd = -1, rc;
	bool			had;

	memset(out, 0, sizeof(*out));
	if ((dfd = pv_thread_dir(st, tid, true)) == -1) {
		rc = errno == ENOENT ? YX_E_NOT_FOUND : YX_E_IO;
		yx_fail(err, rc, rc == YX_E_NOT_FOUND ? "thread not found" : "cannot keep the preview");
		goto done;
	}
	if (pv_scan(cfg, dfd, now, port, NULL, 0) >= (size_t)cfg->preview_max) {
		rc = yx_fail(err, YX_E_PREVIEW_LIMIT,
		    "%d previews of this thread exist already (YUXI_PREVIEW_MAX)",
		    cfg->preview_max);
		goto done;
	}
	if ((rc = pv_token_new(token)) != YX_OK) {
		yx_fail(err, rc, "no randomness for a token");
		goto done;
	}
	if ((rc = yx_sha256_hex(token, YX_PREVIEW_TOKEN_LEN, out->hash)) != YX_OK)
		goto done;
	out->port = port;
	out->created_ms = now;
	out->expires_ms = now + (int64_t)ttl * 1000;
	memcpy(out->prefix, token, YX_PREVIEW_PREFIX_LEN);
	out->prefix[YX_PREVIEW_PREFIX_LEN] = '\0';
	snprintf(name, sizeof(name), "%d", port);
	had = pv_read_line(dfd, name, oldline) == 0 &&
	    pv_record_parse(oldline, port, &old) == 0;
	/* the index first: a record without its entry could never be found */
	snprintf(line, sizeof(line), "v1 %s %d %lld\n", tid, port,
	    (long long)out->expires_ms);
	rc = YX_E_IO;
	if ((ifd = pv_dir_open(cfg, PV_IDX_DIR, true)) == -1 ||
	    pv_write(ifd, out->hash, line, false) != YX_OK) {
		yx_fail(err, rc, "cannot keep the preview");
		goto done;
	}
	memcpy(out->token, token, sizeof(out->token));
	snprintf(line, sizeof(line), "v1 %s %s %lld %lld\n", out->hash, out->token,
	    (long long)out->created_ms, (long long)out->expires_ms);
	if (pv_write(dfd, name, line, true) != YX_OK) {
		(void)unlinkat(ifd, out->hash, 0);
		yx_fail(err, rc, "cannot keep the preview");
		goto done;
	}
	if (had)
		(void)unlinkat(ifd, old.hash, 0);
	rc = YX_OK;
done:
	if (rc != YX_OK && token != NULL)
		memset(token, 0, YX_PREVIEW_TOKEN_LEN + 1);
	if (ifd != -1)
		close(ifd);
	if (dfd != -1)
		close(dfd);
	return rc;
}

static int
pv_cmp(const void *a, const void *b)
{
	return ((const struct yx_preview *)a)->port - ((const struct yx_preview *)b)->port;
}

int
yx_preview_list(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, struct yx_preview **out, size_t *n)
{
	size_t	max = (size_t)cfg->preview_max + 8;
	int	dfd;

	*out = NULL;
	*n = 0;
	if ((dfd = pv_thread_dir(st, tid, false)) == -1)
		return YX_OK;	/* none yet */
	if ((*out = calloc(max, sizeof(**out))) == NULL) {
		close(dfd);
		return YX_E_NOMEM;
	}
	*n = pv_scan(cfg, dfd, yx_now_ms(), 0, *out, max);
	if (*n > max)
		*n = max;
	close(dfd);
	qsort(*out, *n, sizeof(**out), pv_cmp);
	return YX_OK;
}

int
yx_preview_delete(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, int port, struct yx_preview *old)
{
	struct yx_preview	p;
	char			line[PV_LINE_MAX], name[16];
	int			dfd, rc = YX_E_NOT_FOUND;

	if ((dfd = pv_thread_dir(st, tid, false)) == -1)
		return YX_E_NOT_FOUND;
	snprintf(name, sizeof(name), "%d", port);
	if (pv_read_line(dfd, name, line) == 0 && pv_record_parse(line, port, &p) == 0 &&
	    unlinkat(dfd, name, 0) == 0) {
		pv_unindex(cfg, p.hash);
		if (p.expires_ms > yx_now_ms())
			rc = YX_OK;
		if (old != NULL)
			*old = p;
	}
	close(dfd);
	return rc;
}

/* Parse an index entry: tid and port. 0 or -1. */
static int
pv_index_parse(const char *line, char *tid, int *port)
{
	char	t[YX_THREAD_ID_SIZE + 1], tail;
	int	p;

	if (sscanf(line, "v1 %129s %d %*d%c", t, &p, &tail) != 2 ||
	    !yx_thread_id_valid(t, strlen(t)) || p < 1 || p > 65535)
		return -1;
	memcpy(tid, t, strlen(t) + 1);
	*port = p;
	return 0;
}

int
yx_preview_index_put(const struct yx_config *cfg, const char *token,
    const char *tid, int port, int64_t expires_ms)
{
	char	hash[YX_SHA256_HEX], line[PV_LINE_MAX];
	int	ifd, rc = YX_E_IO;

	if (!yx_preview_token_valid(token, strlen(token)) ||
	    yx_sha256_hex(token, YX_PREVIEW_TOKEN_LEN, hash) != YX_OK)
		return YX_E_BAD_REQUEST;
	snprintf(line, sizeof(line), "v1 %s %d %lld\n", tid, port, (long long)expires_ms);
	if ((ifd = pv_dir_open(cfg, PV_IDX_DIR, true)) != -1) {
		rc = pv_write(ifd, hash, line, false);
		close(ifd);
	}
	return rc;
}

/* The token a host names ("<token>.<domain>") into hash; false when the
 * host is anything else. */
static bool
pv_host_hash(const struct yx_config *cfg, const char *host, char *hash)
{
	char	dom[YX_PREVIEW_DOMAIN_MAX];
	size_t	hl, dl;

	if (cfg->preview_domain[0] == '\0' || host == NULL)
		return false;
	pv_domain_name(cfg, dom);
	hl = strlen(host);
	dl = strlen(dom);
	return hl == YX_PREVIEW_TOKEN_LEN + 1 + dl && host[YX_PREVIEW_TOKEN_LEN] == '.' &&
	    strcmp(host + YX_PREVIEW_TOKEN_LEN + 1, dom) == 0 &&
	    yx_preview_token_valid(host, YX_PREVIEW_TOKEN_LEN) &&
	    yx_sha256_hex(host, YX_PREVIEW_TOKEN_LEN, hash) == YX_OK;
}

int
yx_preview_route(const struct yx_config *cfg, const char *host, char *tid)
{
	char		 hash[YX_SHA256_HEX], line[PV_LINE_MAX];
	long long	 exp = 0;
	int		 ifd, port, rc = YX_E_NOT_FOUND;

	tid[0] = '\0';
	if (!pv_host_hash(cfg, host, hash) ||
	    (ifd = pv_dir_open(cfg, PV_IDX_DIR, false)) == -1)
		return YX_E_NOT_FOUND;
	if (pv_read_line(ifd, hash, line) == 0 && pv_index_parse(line, tid, &port) == 0 &&
	    sscanf(line, "v1 %*s %*d %lld", &exp) == 1) {
		if (exp > yx_now_ms())
			rc = YX_OK;
		else
			(void)unlinkat(ifd, hash, 0);
	}
	close(ifd);
	if (rc != YX_OK)
		tid[0] = '\0';
	return rc;
}

int
yx_preview_lookup(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *host, char *tid, struct yx_preview *out)
{
	char	hash[YX_SHA256_HEX], line[PV_LINE_MAX], name[16];
	int	ifd = -1, dfd = -1, port, rc = YX_E_NOT_FOUND;

	tid[0] = '\0';
	if (!pv_host_hash(cfg, host, hash))
		return YX_E_NOT_FOUND;
	if ((ifd = pv_dir_open(cfg, PV_IDX_DIR, false)) == -1 ||
	    pv_read_line(ifd, hash, line) == -1 || pv_index_parse(line, tid, &port) == -1)
		goto done;
	snprintf(name, sizeof(name), "%d", port);
	if ((dfd = pv_thread_dir(st, tid, false)) == -1 ||
	    pv_read_line(dfd, name, line) == -1 ||
	    pv_record_parse(line, port, out) == -1 ||
	    CRYPTO_memcmp(out->hash, hash, YX_SHA256_HEX - 1) != 0)
		goto done;	/* revoked, replaced, or its thread gone */
	if (out->expires_ms <= yx_now_ms()) {
		(void)unlinkat(dfd, name, 0);
		(void)unlinkat(ifd, hash, 0);
		goto done;
	}
	rc = YX_OK;
done:
	if (rc != YX_OK)
		tid[0] = '\0';
	if (dfd != -1)
		close(dfd);
	if (ifd != -1)
		close(ifd);
	return rc;
}

/*
 * True when index entry name of ifd was written less than
 * PV_CREATE_GRACE_MS before now_ms: a create writes the index first and
 * its record next, so until then "no record" is no orphan (removing the
 * entry then would kill the preview being made: its URL 404 forever).
 */
static bool
pv_fresh(int ifd, const char *name, int64_t now_ms)
{
	struct stat sb;

	if (fstatat(ifd, name, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return false;
	return (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000 >
	    now_ms - PV_CREATE_GRACE_MS;
}

unsigned
yx_preview_sweep(struct yx_thread_store *st, const struct yx_config *cfg,
    int64_t now_ms, int budget_ms)
{
	struct yx_preview	 p;
	struct dirent		*de;
	char			 line[PV_LINE_MAX], tid[YX_THREAD_ID_SIZE], name[16];
	int64_t			 until = yx_mono_ms() + budget_ms;
	unsigned		 n = 0;
	DIR			*d;
	int			 ifd, fd, dfd, port;
	bool			 live;

	if ((ifd = pv_dir_open(cfg, PV_IDX_DIR, false)) == -1)
		return 0;
	if ((fd = dup(ifd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		close(ifd);
		return 0;
	}
	while ((de = readdir(d)) != NULL && yx_mono_ms() < until) {
		if (de->d_name[0] == '.')
			continue;
		live = false;
		p.hash[0] = '\0';
		if (cfg->mode == YX_MODE_FRONT) {	/* routes only: the host has the records */
			long long exp = 0;

			live = pv_read_line(ifd, de->d_name, line) == 0 &&
			    sscanf(line, "v1 %*s %*d %lld", &exp) == 1 && exp > now_ms;
		} else if (pv_read_line(ifd, de->d_name, line) == 0 &&
		    pv_index_parse(line, tid, &port) == 0 &&
		    (dfd = pv_thread_dir(st, tid, false)) != -1) {
			snprintf(name, sizeof(name), "%d", port);
			live = pv_read_line(dfd, name, line) == 0 &&
			    pv_record_parse(line, port, &p) == 0 &&
			    strcmp(p.hash, de->d_name) == 0 && p.expires_ms > now_ms;
			if (!live && strcmp(p.hash, de->d_name) == 0)
				(void)unlinkat(dfd, name, 0);	/* expired */
			close(dfd);
		}
		if (!live && !pv_fresh(ifd, de->d_name, now_ms) &&
		    unlinkat(ifd, de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	close(ifd);
	return n;
}
