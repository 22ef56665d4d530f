/* SPDX-License-Identifier: MIT */
/*
 * cli_htpasswd.c - `yuxi-sandbox nginx-conf --auth basic --htpasswd FILE
 * --htpasswd-user NAME`: add NAME to nginx's password file, or give it a
 * new password, without any other tool (docs/nginx.md "basic").
 *
 * The password comes from standard input: asked twice without echo on a
 * terminal, else the first line (so a script pipes it in; never an
 * argument, which every user sees in ps). The entry is SHA-512-crypt
 * (yuxi/passwd.h), which nginx hands to crypt(3). The file keeps every
 * other line as it was (other users, comments); NAME's line is replaced or
 * added. It is written whole through a temporary renamed into place, and
 * always ends up owned by the caller (root) and nginx's group - the
 * FastCGI socket's, YUXI_FCGI_SOCKET_GROUP, else www-data - mode 0640:
 * nginx's workers read it on every request, nobody else may.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli_int.h"
#include "yuxi/buf.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"
#include "yuxi/passwd.h"

#define HT_FILE_MAX	(1 << 20)	/* bytes of an existing file */
#define HT_PW_MAX	1024		/* bytes of a password */

static int
ht_err(const char *what, const char *why)
{
	fprintf(stderr, "yuxi-sandbox: nginx-conf: %s: %s\n", what, why);
	return 1;
}

/* One line of fd into buf (size len), without its end; -1 at EOF/error. */
static ssize_t
ht_line(FILE *f, char *buf, size_t len)
{
	size_t n;

	if (fgets(buf, (int)len, f) == NULL)
		return -1;
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	return (ssize_t)n;
}

/* Ask on the terminal (no echo); the answer in buf; -1 on failure. */
static ssize_t
ht_ask(const char *prompt, char *buf, size_t len)
{
	struct termios	old, quiet;
	ssize_t		n;

	fprintf(stderr, "%s", prompt);
	if (tcgetattr(STDIN_FILENO, &old) == -1)
		return -1;
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == -1)
		return -1;
	n = ht_line(stdin, buf, len);
	(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	fprintf(stderr, "\n");
	return n;
}

/* The password from stdin into pw (HT_PW_MAX + 2 bytes); 0, or 1/2. */
static int
ht_password(const char *user, char *pw, size_t len)
{
	char	again[HT_PW_MAX + 2], prompt[128];
	ssize_t	n;
	int	rc = 0;

	if (isatty(STDIN_FILENO)) {
		snprintf(prompt, sizeof(prompt), "New password for %s: ", user);
		if ((n = ht_ask(prompt, pw, len)) >= 0 &&
		    ht_ask("Again: ", again, sizeof(again)) >= 0 &&
		    strcmp(pw, again) != 0)
			rc = ht_err("--htpasswd-user", "the two passwords differ");
		explicit_bzero(again, sizeof(again));
	} else
		n = ht_line(stdin, pw, len);
	if (rc == 0 && n <= 0)
		rc = ht_err("--htpasswd-user",
		    "no password on standard input (one line, not empty)");
	else if (rc == 0 && (size_t)n > HT_PW_MAX)
		rc = ht_err("--htpasswd-user", "password longer than 1024 bytes");
	return rc;
}

/*
 * The file's lines but user's into out (a missing file is empty); 0, or 1
 * with the message. *had says whether user had a line.
 */
static int
ht_others(const char *file, const char *user, struct yx_buf *out, bool *had)
{
	char	 line[4096];
	size_t	 ulen = strlen(user);
	FILE	*f;
	ssize_t	 n;
	int	 rc = 0;

	*had = false;
	if ((f = fopen(file, "re")) == NULL)
		return errno == ENOENT ? 0 : ht_err(file, strerror(errno));
	while (rc == 0 && (n = ht_line(f, line, sizeof(line))) >= 0) {
		if (strncmp(line, user, ulen) == 0 && line[ulen] == ':') {
			*had = true;
			continue;
		}
		if (yx_buf_append(out, line, (size_t)n) != YX_OK ||
		    yx_buf_puts(out, "\n") != YX_OK)
			rc = ht_err(file, "larger than 1 MiB");
	}
	if (rc == 0 && ferror(f))
		rc = ht_err(file, strerror(errno));
	fclose(f);
	return rc;
}

/* The group nginx's workers run in; -1 with the message printed. */
static gid_t
ht_group(const struct yx_config *cfg)
{
	struct group *gr;

	if (cfg->fcgi_socket_gid != -1)
		return (gid_t)cfg->fcgi_socket_gid;
	if ((gr = getgrnam("www-data")) != NULL)
		return gr->gr_gid;
	ht_err("--htpasswd-user", "no group for nginx: set YUXI_FCGI_SOCKET_GROUP "
				  "to the group nginx's workers run in");
	return (gid_t)-1;
}

/* b into file through a temporary beside it, group gid, mode 0640; 0 or 1. */
static int
ht_write(const char *file, const struct yx_buf *b, gid_t gid)
{
	char	tmp[PATH_MAX];
	int	fd = -1, rc = 1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", file) >= sizeof(tmp))
		return ht_err(file, "path too long");
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1)
		return ht_err(tmp, strerror(errno));
	if (fchown(fd, (uid_t)-1, gid) == -1 || fchmod(fd, 0640) == -1 ||
	    write(fd, b->data, b->len) != (ssize_t)b->len || fsync(fd) == -1) {
		ht_err(tmp, strerror(errno));
		goto done;
	}
	if (close(fd) == -1 || rename(tmp, file) == -1) {
		fd = -1;
		ht_err(file, strerror(errno));
		goto done;
	}
	fd = -1;
	rc = 0;
done:
	if (fd != -1)
		close(fd);
	if (rc != 0)
		(void)unlink(tmp);
	return rc;
}

int
cli_htpasswd_set(const struct yx_config *cfg, const char *file, const char *user)
{
	char		pw[HT_PW_MAX + 2], hash[YX_PASSWD_MAX];
	struct yx_buf	b;
	struct group	*gr;
	gid_t		gid;
	bool		had;
	int		rc;

	if (!yx_user_valid(user)) {
		ht_err("--htpasswd-user", "expected a user name "
					  "([A-Za-z0-9._@+-]{1,64}, not starting with '.')");
		return 2;
	}
	if ((gid = ht_group(cfg)) == (gid_t)-1)
		return 2;
	yx_buf_init(&b, HT_FILE_MAX);
	if ((rc = ht_others(file, user, &b, &had)) != 0 ||
	    (rc = ht_password(user, pw, sizeof(pw))) != 0)
		goto done;
	if (yx_passwd_hash(pw, strlen(pw), hash, sizeof(hash)) != YX_OK) {
		rc = ht_err("--htpasswd-user", "libcrypto could not hash the password");
		goto done;
	}
	if (yx_buf_puts(&b, user) != YX_OK || yx_buf_puts(&b, ":") != YX_OK ||
	    yx_buf_puts(&b, hash) != YX_OK || yx_buf_puts(&b, "\n") != YX_OK) {
		rc = ht_err(file, "larger than 1 MiB");
		goto done;
	}
	if ((rc = ht_write(file, &b, gid)) == 0) {
		gr = getgrgid(gid);
		printf("%s %s: %s (SHA-512-crypt; group %s, mode 0640)\n", file,
		    had ? "updated" : "added", user,
		    gr != NULL ? gr->gr_name : "?");
	}
done:
	explicit_bzero(pw, sizeof(pw));
	yx_buf_fini(&b);
	return rc;
}
