/* SPDX-License-Identifier: MIT */
/*
 * cmd.c - the command path policy (validate_execute_command_paths from the
 * seeds, docs/design.md §4). A lexical, best-effort policy that keeps an
 * agent's shell command away from absolute paths outside the sandbox's own; the
 * container, not this check, is the security boundary. It errs on the side
 * of refusing.
 *
 * The rule. The command is scanned once, byte by byte, without trying to be a
 * shell. A "path candidate" starts at a '/' that sits at a word boundary:
 *   - the start of the command;
 *   - after whitespace, a shell operator or grouping byte ; & | ( ) < > ` { },
 *     a quote ' ", a backslash, or one of = , @ ! : - so redirections (>/x,
 *     2>/x, &>/x, </x, <<</x), NAME=/x, --opt=/x, a,/x (braces), @/x (curl)
 *     and PATH-like lists (a:/x) are all seen; text inside quotes, $(...) and
 *     backticks is scanned like the rest;
 *   - after a short option at a word start: -I/x, -L/x, -o/x;
 *   - ':' followed by "//" is a URL authority (https://host/x) and starts no
 *     candidate, unless a third slash follows (file:///etc/passwd).
 * A candidate runs to the next whitespace or ; & | < > ( ) ` byte, or to
 * where the next candidate starts after a separator (/a,/x and /a:/x are
 * two candidates, the separator dropped; a quote does not separate);
 * quotes and backslashes inside it are dropped (the shell concatenates
 * "/usr/bin"".."),
 * and a "$(" or an opening backtick (odd count) inside makes it dynamic.
 * A candidate is allowed when
 *   - it is exactly one of the harmless pseudo-devices /dev/null, /dev/zero,
 *     /dev/full, /dev/random, /dev/urandom, /dev/stdin, /dev/stdout,
 *     /dev/stderr, or /dev/fd/N with N decimal digits only; or
 *   - it has no ".." component (also across ',', '{', '}' for brace
 *     expansion), holds no command substitution ($( or a backtick), and
 *     either lies in /bin, /usr/bin, /usr/local/bin or /usr/lib (the
 *     directory itself or below), or lies under /home/yuxi/ or is one of
 *     seed 000's aliases /mnt/user-data and /mnt/skills (or below), and
 *     yx_path_resolve() accepts it (so it is in user-data or skills; the
 *     sandbox has both aliases, docs/design.md §3).
 * Home forms at a boundary, "~", "~/x", "$HOME", "$HOME/x", "${HOME}/x",
 * expand to /home/yuxi (the sandbox's writable HOME) and are allowed unless
 * the rest has a ".." component; "~name", "~+", "~-" (other users' homes,
 * $PWD, $OLDPWD) are refused. Everything else is refused.
 * Not covered (documented limits): relative paths (the working directory is
 * not tracked), values of other variables ($X/..), ANSI-C quoting ($'\057').
 */
#include "config.h"

#include <string.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

/* Bytes that end a path candidate. */
#define CMD_ENDS	" \t\n\r\v\f;&|<>()`"
/* Bytes after which a '/' (or '~', "$HOME") starts a candidate. */
#define CMD_BOUNDARY	" \t\n\r\v\f;&|<>()`{}'\"\\=,@!"

static const char *const cmd_dev_ok[] = {
	"/dev/null",
	"/dev/zero",
	"/dev/full",
	"/dev/random",
	"/dev/urandom",
	"/dev/stdin",
	"/dev/stdout",
	"/dev/stderr",
};

#define CMD_DEV_FD	"/dev/fd/"

static const char *const cmd_dir_ok[] = {
	"/bin",
	"/usr/bin",
	"/usr/local/bin",
	"/usr/lib",
};

static bool
cmd_in(char c, const char *set)
{
	return c != '\0' && strchr(set, c) != NULL;
}

/* True when p (n bytes) has a ".." component; '/', ',', '{', '}' separate. */
static bool
cmd_has_dotdot(const char *p, size_t n)
{
	size_t	 i;

	for (i = 0; i + 1 < n; i++) {
		if (p[i] != '.' || p[i + 1] != '.')
			continue;
		if ((i == 0 || cmd_in(p[i - 1], "/,{}")) &&
		    (i + 2 == n || cmd_in(p[i + 2], "/,{}")))
			return true;
	}
	return false;
}

/* True when the absolute path p (n bytes, no "..") is dir or below it. */
static bool
cmd_under(const char *p, size_t n, const char *dir)
{
	size_t	 dlen = strlen(dir);

	return n >= dlen && memcmp(p, dir, dlen) == 0 &&
	    (n == dlen || p[dlen] == '/');
}

/* True when p (n bytes) is exactly /dev/fd/N, N one or more digits. */
static bool
cmd_dev_fd(const char *p, size_t n)
{
	size_t	 i, plen = sizeof(CMD_DEV_FD) - 1;

	if (n <= plen || memcmp(p, CMD_DEV_FD, plen) != 0)
		return false;
	for (i = plen; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/*
 * Judge an unquoted absolute path p (n bytes, n < YX_VPATH_MAX). dynamic
 * says the raw text held a command substitution. True when allowed.
 */
static bool
cmd_path_ok(const char *p, size_t n, bool dynamic)
{
	struct yx_vpath	 vp;
	size_t		 i;

	for (i = 0; i < sizeof(cmd_dev_ok) / sizeof(cmd_dev_ok[0]); i++) {
		if (!dynamic && n == strlen(cmd_dev_ok[i]) &&
		    memcmp(p, cmd_dev_ok[i], n) == 0)
			return true;
	}
	if (!dynamic && cmd_dev_fd(p, n))
		return true;
	if (dynamic || cmd_has_dotdot(p, n))
		return false;
	for (i = 0; i < sizeof(cmd_dir_ok) / sizeof(cmd_dir_ok[0]); i++) {
		if (cmd_under(p, n, cmd_dir_ok[i]))
			return true;
	}
	if ((n > sizeof(YX_VROOT_HOME) && memcmp(p, YX_VROOT_HOME "/", sizeof(YX_VROOT_HOME)) == 0) ||
	    cmd_under(p, n, YX_MNT_USER_DATA) || cmd_under(p, n, YX_MNT_SKILLS))
		return yx_path_resolve(p, n, &vp) == YX_OK;
	return false;
}

/*
 * Length of a home form ("~" or "$HOME" or "${HOME}") starting at s, 0 when
 * s starts none ("$HOMEDIR" is another variable). *refuse is set when the
 * form is glued to more than a '/' or a quote: "~name", "~+", "~-", "$HOME.x"
 * (other homes, $PWD, $OLDPWD, siblings of /home/yuxi).
 */
static size_t
cmd_home_len(const char *s, bool *refuse)
{
	size_t	 n = 0;
	char	 c;

	*refuse = false;
	if (s[0] == '~')
		n = 1;
	else if (strncmp(s, "$HOME", 5) == 0)
		n = 5;
	else if (strncmp(s, "${HOME}", 7) == 0)
		n = 7;
	if (n == 0)
		return 0;
	c = s[n];
	if (n == 5 && (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
		return 0;
	if (c != '\0' && c != '/' && c != '\'' && c != '"' &&
	    !cmd_in(c, CMD_ENDS))
		*refuse = true;
	return n;
}

/* Where a candidate may start in cmd at i: the start or after a boundary. */
static bool
cmd_at_boundary(const char *cmd, size_t i)
{
	size_t	 j;

	if (i == 0 || cmd_in(cmd[i - 1], CMD_BOUNDARY))
		return true;
	/* ':' but not the "//" of a URL authority (a third '/' counts). */
	if (cmd[i - 1] == ':')
		return cmd[i] != '/' || cmd[i + 1] != '/';
	if (i >= 3 && cmd[i - 3] == ':' && cmd[i - 2] == '/' &&
	    cmd[i - 1] == '/')
		return cmd[i] == '/';
	/* A short or long option glued to its value: -I/x, --opt/x. */
	for (j = i; j > 0 && ((cmd[j - 1] >= 'a' && cmd[j - 1] <= 'z') || (cmd[j - 1] >= 'A' && cmd[j - 1] <= 'Z') || (cmd[j - 1] >= '0' && cmd[j - 1] <= '9') || cmd[j - 1] == '_');
	     j--)
		continue;
	if (j == i || j == 0 || cmd[j - 1] != '-')
		return false;
	j--;
	if (j > 0 && cmd[j - 1] == '-')
		j--;
	return j == 0 || cmd_in(cmd[j - 1], CMD_BOUNDARY);
}

static void
cmd_report(char *bad, size_t badlen, const char *s, size_t n)
{
	if (bad == NULL || badlen == 0)
		return;
	if (n >= badlen)
		n = badlen - 1;
	memcpy(bad, s, n);
	bad[n] = '\0';
}

/* True when a candidate starts at cmd[i]. */
static bool
cmd_starts(const char *cmd, size_t i)
{
	bool	 refuse;

	return (cmd[i] == '/' || cmd_home_len(cmd + i, &refuse) > 0) &&
	    cmd_at_boundary(cmd, i);
}

/*
 * Collect the candidate starting at cmd[*ip] into buf (YX_VPATH_MAX bytes),
 * dropping quotes and backslashes, and advance *ip past it. hlen is the
 * length of a leading home form (its braces start nothing). tick is the
 * backtick parity before *ip. Sets *dynamic when "$(" or an opening backtick
 * ends or occurs inside. Returns the unquoted length, or YX_VPATH_MAX when it
 * does not fit (the caller refuses it).
 */
static size_t
cmd_collect(const char *cmd, size_t *ip, size_t hlen, int tick, char *buf,
    bool *dynamic)
{
	size_t	 i = *ip, n = 0;
	bool	 over = false;

	*dynamic = false;
	for (; cmd[i] != '\0' && !cmd_in(cmd[i], CMD_ENDS); i++) {
		if (i > *ip + hlen && !cmd_in(cmd[i - 1], "'\"\\") &&
		    cmd_starts(cmd, i)) {
			/* a,/x: the separator belongs to neither path */
			if (n > 0 && cmd_in(buf[n - 1], ":,=@{}"))
				n--;
			break;
		}
		if (cmd[i] == '$' && cmd[i + 1] == '(')
			*dynamic = true;
		if (cmd[i] == '\'' || cmd[i] == '"' || cmd[i] == '\\')
			continue;
		if (n + 1 >= YX_VPATH_MAX)
			over = true;
		else
			buf[n++] = cmd[i];
	}
	if (cmd[i] == '`' && tick == 0)
		*dynamic = true;
	buf[n] = '\0';
	*ip = i;
	return over ? YX_VPATH_MAX : n;
}

/*
 * Check one candidate at cmd[*ip] (a '/' or a home form at a boundary) and
 * advance *ip past it. Returns YX_OK, or YX_E_PATH_NOT_ALLOWED with the
 * token reported in bad.
 */
static int
cmd_check_at(const char *cmd, size_t *ip, int tick, char *bad, size_t badlen)
{
	char	 buf[YX_VPATH_MAX];
	size_t	 start = *ip, hlen, n;
	bool	 dynamic, refuse, ok;

	hlen = cmd_home_len(cmd + start, &refuse);
	n = cmd_collect(cmd, ip, hlen, tick, buf, &dynamic);
	if (n >= YX_VPATH_MAX)
		ok = false;
	else if (hlen > 0)
		ok = !refuse && !dynamic && !cmd_has_dotdot(buf, n);
	else
		ok = cmd_path_ok(buf, n, dynamic);
	if (ok)
		return YX_OK;
	if (n >= YX_VPATH_MAX)
		cmd_report(bad, badlen, cmd + start, *ip - start);
	else
		cmd_report(bad, badlen, buf, n);
	return YX_E_PATH_NOT_ALLOWED;
}

/*
 * Check every absolute path in cmd (see the rule above). Returns YX_OK, or
 * YX_E_PATH_NOT_ALLOWED with the first refused token in bad (truncated,
 * NUL-terminated; bad may be NULL). A NULL cmd is refused as "".
 */
int
yx_cmd_check(const char *cmd, enum yx_cmd_policy policy, char *bad,
    size_t badlen)
{
	size_t	 i = 0;
	int	 rc = YX_OK, tick = 0;

	cmd_report(bad, badlen, "", 0);
	if (policy == YX_CMD_POLICY_OFF)
		return YX_OK;
	if (cmd == NULL)
		return YX_E_PATH_NOT_ALLOWED;
	while (cmd[i] != '\0' && rc == YX_OK) {
		if (cmd_starts(cmd, i))
			rc = cmd_check_at(cmd, &i, tick, bad, badlen);
		else if (cmd[i++] == '`')
			tick ^= 1;
	}
	return rc;
}
