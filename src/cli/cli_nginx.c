/* SPDX-License-Identifier: MIT */
/*
 * cli_nginx.c - `yuxi-sandbox nginx-conf`: the nginx snippets that put
 * yuxi-sandbox into a server an operator already runs (docs/nginx.md).
 *
 * Renders the templates yuxi-sandbox-http.conf.in (http {} level: the
 * upstream, the identity maps, the limit zones; --conf-d writes it as a
 * conf.d file, which Debian's nginx.conf includes in http {} itself),
 * yuxi-sandbox-server.conf.in (server {} level: only our locations, all
 * under YUXI_URL_PREFIX), yuxi-sandbox-settings.conf.in (the
 * recommended server-level settings a location cannot hold) and, with
 * YUXI_PREVIEW_DOMAIN, yuxi-sandbox-preview.conf.in (the locations of the
 * server {} that serves *.<domain> with a wildcard certificate) from
 * $(pkgdatadir)/nginx (a build tree: the checkout's), or --templates DIR, with
 * the configuration every command reads (YUXI_URL_PREFIX, YUXI_FCGI_SOCKET,
 * YUXI_SAVES_DIR, YUXI_SKILLS_DIR, YUXI_UPLOAD_LIMIT) and one identity
 * recipe (--auth request|basic|header). The template language is described
 * at the top of nginx/yuxi-sandbox-http.conf.in.
 *
 * Every value that lands in nginx syntax is checked before anything is
 * rendered: bytes that could end a directive, open or close a block, quote,
 * escape, start a comment or expand a variable (whitespace, control bytes,
 * ; { } " ' \ $ #) are refused, and so are relative paths, so no option can
 * add a directive. Directories nginx serves from (alias, disable_symlinks
 * from=) are written as their real paths when they exist: nginx refuses
 * every file below a symlinked component. Output files are written whole
 * (a temporary renamed into place) or not at all.
 *
 * --htpasswd-user NAME sets NAME's password in the --htpasswd file
 * (cli_htpasswd.c). --check runs `nginx -t` twice: first on a throw-away
 * nginx.conf that includes the rendered files (nothing is written when it
 * fails), then, once they are written, on nginx's own configuration
 * (--nginx-conf FILE, default nginx's), which now includes them.
 */
#include "config.h"

#include <sys/stat.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_int.h"
#include "yuxi/buf.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"
#include "yuxi/preview.h"
#include "yuxi/sig.h"
#include "yuxi/tree.h"

#define NGX_LIST_MAX	32		/* items of --trusted-proxy, --admin */
#define NGX_ITEM_MAX	80		/* bytes of one item, NUL included */
#define NGX_HEADER_MAX	64		/* bytes of a --user-header name */
#define NGX_OUT_MAX	(1 << 20)	/* bytes of one rendered file */
#define NGX_WORD_RULE	"no whitespace, control characters, quotes or any of ; { } \\ $ #"
#define NGX_DEFAULT_AUTH_URL	"http://127.0.0.1:9000/verify"
#define NGX_DEFAULT_HEADER	"X-Forwarded-User"
#define NGX_NGINX		"/usr/sbin/nginx"	/* else nginx on PATH */
#define NGX_CONFD_NAME		"yuxi-sandbox.conf"	/* --conf-d's file */
#define NGX_PREVIEW_LOG		"/var/log/nginx/yuxi-preview.access.log"
#define NGX_PREVIEW_ERRLOG	"/var/log/nginx/yuxi-preview.error.log"

enum ngx_auth {
	NGX_AUTH_REQUEST,
	NGX_AUTH_BASIC,
	NGX_AUTH_HEADER,
};

static const char *const ngx_auth_names[] = { "request", "basic", "header" };

struct ngx_list {
	char	item[NGX_LIST_MAX][NGX_ITEM_MAX];
	size_t	n;
};

/* One run: the options, the configuration and what is derived from them. */
struct ngx_ctx {
	const struct yx_config	*cfg;
	enum ngx_auth		 auth;
	const char		*htpasswd;	/* --htpasswd (basic) */
	const char		*auth_url;	/* --auth-url (request) */
	const char		*user_header;	/* --user-header (header) */
	const char		*web;		/* --web-root as given */
	const char		*templates;	/* --templates */
	const char		*out;		/* --out; NULL: stdout */
	const char		*confd;		/* --conf-d: the http part there */
	const char		*htuser;	/* --htpasswd-user */
	const char		*nginx_conf;	/* --nginx-conf (--check) */
	const char		*pv_log;	/* --preview-access-log */
	const char		*pv_errlog;	/* --preview-error-log */
	bool			 check;		/* --check */
	struct ngx_list		 trusted;	/* --trusted-proxy (header) */
	struct ngx_list		 admins;	/* --admin */
	char			 templates_buf[PATH_MAX];	/* the checkout's */
	char			 web_buf[PATH_MAX];		/* likewise */
	char			 web_root[PATH_MAX];
	char			 files[PATH_MAX];	/* <saves>/threads */
	char			 skills[PATH_MAX];	/* "" = no skills */
	char			 header_var[NGX_ITEM_MAX];	/* http_x_forwarded_user */
	char			 header_param[NGX_ITEM_MAX];	/* X_FORWARDED_USER */
	char			 upload[32];	/* client_max_body_size */
	char			 pv_sockets[PATH_MAX];	/* <saves>/preview/s; "" = off */
	char			 pv_domain[YX_PREVIEW_DOMAIN_MAX];	/* its name */
	/* while rendering */
	const char		*tmpl;		/* template path, for messages */
	unsigned		 line;		/* its line number */
	const char		*list;		/* the list placeholder of the line */
	const char		*item;		/* its current value */
};

static int
ngx_bad(const char *what, const char *why)
{
	fprintf(stderr, "yuxi-sandbox: nginx-conf: %s: %s\n", what, why);
	return 2;
}

/*
 * Can nginx read s as one plain word that adds nothing but itself? No
 * whitespace or control byte (ends the word or the line), no ; { } (ends a
 * directive, opens or closes a block), no quote or backslash (changes how
 * the rest is read), no $ (variable expansion), no # (a comment).
 */
static bool
ngx_word_ok(const char *s)
{
	const unsigned char *p;

	if (s == NULL || *s == '\0')
		return false;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p <= ' ' || *p == 0x7f || strchr(";{}\"'\\$#", *p) != NULL)
			return false;
	return true;
}

/* An absolute path nginx reads as one word; 0, or 2 with the message. */
static int
ngx_check_path(const char *what, const char *s)
{
	if (s[0] != '/')
		return ngx_bad(what, "must be an absolute path");
	if (!ngx_word_ok(s))
		return ngx_bad(what, NGX_WORD_RULE);
	return 0;
}

/* An IPv4 or IPv6 address, with an optional /prefix length (for geo). */
static bool
ngx_addr_ok(const char *s)
{
	unsigned char	 bin[16];
	char		 a[NGX_ITEM_MAX], *bits, *end;
	long		 n;
	int		 max;

	if (yx_strlcpy(a, s, sizeof(a)) >= sizeof(a))
		return false;
	if ((bits = strchr(a, '/')) != NULL)
		*bits++ = '\0';
	if (inet_pton(AF_INET, a, bin) == 1)
		max = 32;
	else if (inet_pton(AF_INET6, a, bin) == 1)
		max = 128;
	else
		return false;
	if (bits == NULL)
		return true;
	if (!isdigit((unsigned char)bits[0]))
		return false;
	errno = 0;
	n = strtol(bits, &end, 10);
	return errno == 0 && *end == '\0' && n >= 0 && n <= max;
}

/* A header name: [A-Za-z0-9-]{1,64}. */
static bool
ngx_header_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return i > 0 && i <= NGX_HEADER_MAX;
}

/* An http:// or https:// URL with a host, one word. */
static bool
ngx_url_ok(const char *s)
{
	const char *h;

	if (strncmp(s, "http://", 7) == 0)
		h = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		h = s + 8;
	else
		return false;
	return *h != '\0' && *h != '/' && ngx_word_ok(s);
}

/*
 * Append the comma-separated items of arg to l, each checked by ok();
 * 0, or 2 with the message naming opt and rule.
 */
static int
ngx_list_add(struct ngx_list *l, const char *opt, const char *arg,
    bool (*ok)(const char *), const char *rule)
{
	const char	*p = arg, *e;
	size_t		 n;

	for (;;) {
		e = strchr(p, ',');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (l->n >= NGX_LIST_MAX)
			return ngx_bad(opt, "too many items (at most 32)");
		if (n == 0 || n >= NGX_ITEM_MAX)
			return ngx_bad(opt, rule);
		memcpy(l->item[l->n], p, n);
		l->item[l->n][n] = '\0';
		if (!ok(l->item[l->n]))
			return ngx_bad(opt, rule);
		l->n++;
		if (e == NULL)
			return 0;
		p = e + 1;
	}
}

static const struct option ngx_options[] = {
	{ "auth", required_argument, NULL, 'a' },
	{ "htpasswd", required_argument, NULL, 'p' },
	{ "auth-url", required_argument, NULL, 'u' },
	{ "trusted-proxy", required_argument, NULL, 't' },
	{ "user-header", required_argument, NULL, 'H' },
	{ "admin", required_argument, NULL, 'A' },
	{ "web-root", required_argument, NULL, 'w' },
	{ "templates", required_argument, NULL, 'T' },
	{ "out", required_argument, NULL, 'o' },
	{ "conf-d", required_argument, NULL, 'D' },
	{ "htpasswd-user", required_argument, NULL, 'P' },
	{ "check", no_argument, NULL, 'C' },
	{ "nginx-conf", required_argument, NULL, 'N' },
	{ "preview-access-log", required_argument, NULL, 'L' },
	{ "preview-error-log", required_argument, NULL, 'E' },
	{ NULL, 0, NULL, 0 },
};

/* --auth NAME; 0, or 2 with the message. */
static int
ngx_auth_opt(struct ngx_ctx *x, const char *arg)
{
	size_t i;

	for (i = 0; i < sizeof(ngx_auth_names) / sizeof(ngx_auth_names[0]); i++)
		if (strcmp(arg, ngx_auth_names[i]) == 0) {
			x->auth = (enum ngx_auth)i;
			return 0;
		}
	return ngx_bad("--auth", "expected basic, request or header");
}

/* The command line into x; 0, or 2 with the message. */
static int
ngx_parse(struct ngx_ctx *x, int argc, char **argv)
{
	int c, rc = 0;

	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "", ngx_options, NULL)) != -1) {
		switch (c) {
		case 'a': rc = ngx_auth_opt(x, optarg); break;
		case 'p': x->htpasswd = optarg; break;
		case 'u': x->auth_url = optarg; break;
		case 't':
			rc = ngx_list_add(&x->trusted, "--trusted-proxy", optarg,
			    ngx_addr_ok, "expected IP addresses or CIDR ranges, comma separated");
			break;
		case 'H': x->user_header = optarg; break;
		case 'A':
			rc = ngx_list_add(&x->admins, "--admin", optarg, yx_user_valid,
			    "expected user names ([A-Za-z0-9._@+-]{1,64}, not starting with '.'), comma separated");
			break;
		case 'w': x->web = optarg; break;
		case 'T': x->templates = optarg; break;
		case 'o': x->out = optarg; break;
		case 'D': x->confd = optarg; break;
		case 'P': x->htuser = optarg; break;
		case 'C': x->check = true; break;
		case 'N': x->nginx_conf = optarg; break;
		case 'L': x->pv_log = optarg; break;
		case 'E': x->pv_errlog = optarg; break;
		default: rc = 2; break;	/* getopt said why */
		}
	}
	if (rc == 0 && optind < argc)
		rc = ngx_bad(argv[optind], "unexpected argument");
	return rc;
}

/*
 * The real path of dir, or of dir/sub when sub is not NULL, into out
 * (PATH_MAX bytes): resolved as far as it exists (dir/sub, else dir), else
 * as given without trailing slashes; then checked as an absolute one-word
 * path. 0, or 2 with the message naming what.
 */
static int
ngx_realpath(const char *what, const char *dir, const char *sub, char *out)
{
	char		 given[PATH_MAX], real[PATH_MAX];
	const char	*base;
	size_t		 n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n >= sizeof(given))
		return ngx_bad(what, "path too long");
	memcpy(given, dir, n);
	given[n] = '\0';
	base = realpath(given, real) != NULL ? real : given;
	if (snprintf(out, PATH_MAX, "%s%s%s", base,
		sub != NULL && strcmp(base, "/") != 0 ? "/" : "",
		sub != NULL ? sub : "") >= PATH_MAX)
		return ngx_bad(what, "path too long");
	if (sub != NULL && realpath(out, real) != NULL)
		(void)yx_strlcpy(out, real, PATH_MAX);
	return ngx_check_path(what, out);
}

/* client_max_body_size for n bytes: the largest exact unit. */
static void
ngx_size(size_t n, char *out, size_t outlen)
{
	if (n != 0 && n % (1UL << 30) == 0)
		snprintf(out, outlen, "%zug", n >> 30);
	else if (n != 0 && n % (1UL << 20) == 0)
		snprintf(out, outlen, "%zum", n >> 20);
	else if (n != 0 && n % 1024 == 0)
		snprintf(out, outlen, "%zuk", n >> 10);
	else
		snprintf(out, outlen, "%zu", n);
}

/* Options that belong to another recipe; 0, or 2 with the message. */
static int
ngx_check_recipe(const struct ngx_ctx *x)
{
	if (x->htpasswd != NULL && x->auth != NGX_AUTH_BASIC)
		return ngx_bad("--htpasswd", "only with --auth basic");
	if (x->htuser != NULL && x->htpasswd == NULL)
		return ngx_bad("--htpasswd-user", "only with --auth basic --htpasswd FILE");
	if (x->confd != NULL && x->out == NULL)
		return ngx_bad("--conf-d", "needs --out DIR (for the server's files)");
	if (x->nginx_conf != NULL && !x->check)
		return ngx_bad("--nginx-conf", "only with --check");
	if (x->confd != NULL && x->confd[0] != '/')
		return ngx_bad("--conf-d", "must be an absolute path");
	if (x->auth_url != NULL && x->auth != NGX_AUTH_REQUEST)
		return ngx_bad("--auth-url", "only with --auth request");
	if (x->trusted.n > 0 && x->auth != NGX_AUTH_HEADER)
		return ngx_bad("--trusted-proxy", "only with --auth header");
	if (x->user_header != NULL && x->auth != NGX_AUTH_HEADER)
		return ngx_bad("--user-header", "only with --auth header");
	if (x->auth == NGX_AUTH_BASIC && x->htpasswd == NULL)
		return ngx_bad("--auth basic", "needs --htpasswd FILE");
	if (x->auth == NGX_AUTH_HEADER && x->trusted.n == 0)
		return ngx_bad("--auth header", "needs --trusted-proxy ADDR[,ADDR...]");
	return 0;
}

/* The identity recipe's values; 0, or 2 with the message. */
static int
ngx_settle_auth(struct ngx_ctx *x)
{
	size_t i;

	if (x->auth == NGX_AUTH_BASIC)
		return ngx_check_path("--htpasswd", x->htpasswd);
	if (x->auth == NGX_AUTH_REQUEST) {
		if (x->auth_url == NULL)
			x->auth_url = NGX_DEFAULT_AUTH_URL;
		if (!ngx_url_ok(x->auth_url))
			return ngx_bad("--auth-url", "expected http://HOST[:PORT]/PATH or https://..., " NGX_WORD_RULE);
		return 0;
	}
	if (x->user_header == NULL)
		x->user_header = NGX_DEFAULT_HEADER;
	if (!ngx_header_ok(x->user_header))
		return ngx_bad("--user-header", "expected a header name, [A-Za-z0-9-]{1,64}");
	/* X-Forwarded-User: $http_x_forwarded_user, HTTP_X_FORWARDED_USER */
	snprintf(x->header_var, sizeof(x->header_var), "http_%s", x->user_header);
	snprintf(x->header_param, sizeof(x->header_param), "%s", x->user_header);
	for (i = 5; x->header_var[i] != '\0'; i++)
		x->header_var[i] = x->header_var[i] == '-' ? '_' : (char)tolower((unsigned char)x->header_var[i]);
	for (i = 0; x->header_param[i] != '\0'; i++)
		x->header_param[i] = x->header_param[i] == '-' ? '_' : (char)toupper((unsigned char)x->header_param[i]);
	return 0;
}

/* Previews (YUXI_PREVIEW_DOMAIN): the ingress's socket directory and the
 * logs; 0, or 2 with the message. */
static int
ngx_settle_preview(struct ngx_ctx *x)
{
	const char	*d = x->cfg->preview_domain;
	size_t		 n = strcspn(d, ":");
	int		 rc;

	if (d[0] == '\0') {
		if (x->pv_log != NULL || x->pv_errlog != NULL)
			return ngx_bad("--preview-access-log, --preview-error-log",
			    "only with YUXI_PREVIEW_DOMAIN set");
		return 0;
	}
	memcpy(x->pv_domain, d, n);	/* checked by the configuration: [a-z0-9.-] */
	x->pv_domain[n] = '\0';
	if (x->pv_log == NULL)
		x->pv_log = NGX_PREVIEW_LOG;
	if (x->pv_errlog == NULL)
		x->pv_errlog = NGX_PREVIEW_ERRLOG;
	if ((rc = ngx_check_path("--preview-access-log", x->pv_log)) != 0 ||
	    (rc = ngx_check_path("--preview-error-log", x->pv_errlog)) != 0)
		return rc;
	return ngx_realpath("YUXI_SAVES_DIR", x->cfg->saves_dir, YX_PREVIEW_DIR "/" YX_PREVIEW_SOCK_DIR,
	    x->pv_sockets);
}

/*
 * Check the options against each other and the configuration's values
 * that land in nginx syntax, and derive the rest; 0, or 2 with the message.
 */
static int
ngx_settle(struct ngx_ctx *x)
{
	const struct yx_config	*c = x->cfg;
	int			 rc;

	if ((rc = ngx_check_recipe(x)) != 0 || (rc = ngx_settle_auth(x)) != 0)
		return rc;
	if (c->url_prefix[0] != '\0' && !ngx_word_ok(c->url_prefix))
		return ngx_bad("YUXI_URL_PREFIX", NGX_WORD_RULE);
	if ((rc = ngx_check_path("YUXI_FCGI_SOCKET", c->fcgi_socket)) != 0)
		return rc;
	if (c->saves_dir[0] == '\0')
		return ngx_bad("YUXI_SAVES_DIR", "must be set");
	if ((rc = ngx_realpath("YUXI_SAVES_DIR", c->saves_dir, "threads", x->files)) != 0)
		return rc;
	if (c->skills_dir[0] != '\0' &&
	    (rc = ngx_realpath("YUXI_SKILLS_DIR", c->skills_dir, NULL, x->skills)) != 0)
		return rc;
	if (x->web == NULL)
		x->web = cli_datadir(YX_WEB_ROOT, "web", x->web_buf, sizeof(x->web_buf));
	if ((rc = ngx_realpath("--web-root", x->web, NULL, x->web_root)) != 0)
		return rc;
	ngx_size(c->upload_limit, x->upload, sizeof(x->upload));
	return ngx_settle_preview(x);
}

/* ---- rendering ---------------------------------------------------------- */

static int
ngx_tmpl_err(const struct ngx_ctx *x, const char *why)
{
	fprintf(stderr, "yuxi-sandbox: nginx-conf: %s:%u: %s\n", x->tmpl, x->line, why);
	return 1;
}

/* Is the condition c (n bytes, "!" negates) true: 1, 0, or -1 when unknown. */
static int
ngx_cond(const struct ngx_ctx *x, const char *c, size_t n)
{
	bool neg = n > 0 && c[0] == '!', v;

	if (neg) {
		c++;
		n--;
	}
#define NGX_IS(name) (n == sizeof(name) - 1 && memcmp(c, name, n) == 0)
	if (NGX_IS("basic"))
		v = x->auth == NGX_AUTH_BASIC;
	else if (NGX_IS("request"))
		v = x->auth == NGX_AUTH_REQUEST;
	else if (NGX_IS("header"))
		v = x->auth == NGX_AUTH_HEADER;
	else if (NGX_IS("prefix"))
		v = x->cfg->url_prefix[0] != '\0';
	else if (NGX_IS("skills"))
		v = x->skills[0] != '\0';
	else if (NGX_IS("preview"))
		v = x->pv_sockets[0] != '\0';
	else
		return -1;
#undef NGX_IS
	return v != neg;
}

/* The value of placeholder name (n bytes); NULL when it has none here. */
static const char *
ngx_value(const struct ngx_ctx *x, const char *name, size_t n)
{
	const bool	 header = x->auth == NGX_AUTH_HEADER;
	const struct {
		const char	*name;
		const char	*value;
	} vars[] = {
		{ "PREFIX", x->cfg->url_prefix },
		{ "SOCKET", x->cfg->fcgi_socket },
		{ "FILES", x->files },
		{ "SKILLS", x->skills[0] != '\0' ? x->skills : NULL },
		{ "WEB_ROOT", x->web_root },
		{ "UPLOAD_LIMIT", x->upload },
		{ "AUTH", ngx_auth_names[x->auth] },
		{ "HTPASSWD", x->auth == NGX_AUTH_BASIC ? x->htpasswd : NULL },
		{ "AUTH_URL", x->auth == NGX_AUTH_REQUEST ? x->auth_url : NULL },
		{ "USER_HEADER", header ? x->user_header : NULL },
		{ "USER_HEADER_VAR", header ? x->header_var : NULL },
		{ "USER_HEADER_PARAM", header ? x->header_param : NULL },
		{ "PREVIEW_SOCKETS", x->pv_sockets[0] != '\0' ? x->pv_sockets : NULL },
		{ "PREVIEW_DOMAIN", x->pv_sockets[0] != '\0' ? x->pv_domain : NULL },
		{ "PREVIEW_ACCESS_LOG", x->pv_log },
		{ "PREVIEW_ERROR_LOG", x->pv_errlog },
		{ x->list != NULL ? x->list : "", x->item },
	};
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (strlen(vars[i].name) == n && memcmp(vars[i].name, name, n) == 0)
			return vars[i].value;
	return NULL;
}

/* Append line (n bytes) to out with every @NAME@ replaced; 0 or 1. */
static int
ngx_subst(const struct ngx_ctx *x, const char *line, size_t n, struct yx_buf *out)
{
	const char	*v;
	size_t		 i = 0, j;
	int		 rc = YX_OK;

	while (i < n && rc == YX_OK) {
		j = i + 1;
		if (line[i] == '@')
			while (j < n && (isupper((unsigned char)line[j]) || line[j] == '_'))
				j++;
		if (j == i + 1 || j >= n || line[j] != '@') {
			rc = yx_buf_append(out, line + i, 1);
			i++;
			continue;
		}
		if ((v = ngx_value(x, line + i + 1, j - i - 1)) == NULL)
			return ngx_tmpl_err(x, "a placeholder unknown or without a value for these options");
		rc = yx_buf_puts(out, v);
		i = j + 1;
	}
	if (rc != YX_OK)
		return ngx_tmpl_err(x, yx_strerror(rc));
	return 0;
}

/* A user name as a regex matching exactly it ("a.b+c" -> "a\.b\+c"). */
static const char *
ngx_regex_quote(const char *user, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; user[i] != '\0' && o + 3 < outlen; i++) {
		if (user[i] == '.' || user[i] == '+')
			out[o++] = '\\';
		out[o++] = user[i];
	}
	out[o] = '\0';
	return out;
}

/* One template line (n bytes, NUL-terminated) into out; 0 or 1. */
static int
ngx_line(struct ngx_ctx *x, char *line, size_t n, struct yx_buf *out)
{
	const struct ngx_list	*l = NULL;
	char			 q[2 * NGX_ITEM_MAX], *e;
	size_t			 i;
	int			 c, rc = 0;

	if (n >= 2 && line[0] == '#' && line[1] == '#')
		return 0;
	if (n >= 2 && line[0] == '#' && line[1] == '[') {
		if ((e = memchr(line, ']', n)) == NULL ||
		    (c = ngx_cond(x, line + 2, (size_t)(e - line - 2))) < 0)
			return ngx_tmpl_err(x, "unknown #[condition]");
		if (c == 0)
			return 0;
		n -= (size_t)(e + 1 - line);
		line = e + 1;
	}
	x->list = x->item = NULL;
	if (strstr(line, "@TRUSTED_PROXY@") != NULL) {
		l = &x->trusted;
		x->list = "TRUSTED_PROXY";
	} else if (strstr(line, "@ADMIN_RE@") != NULL) {
		l = &x->admins;
		x->list = "ADMIN_RE";
	}
	if (l == NULL)
		return ngx_subst(x, line, n, out);
	for (i = 0; i < l->n && rc == 0; i++) {
		x->item = l == &x->admins ? ngx_regex_quote(l->item[i], q, sizeof(q)) : l->item[i];
		rc = ngx_subst(x, line, n, out);
	}
	return rc;
}

/* Render template <templates>/<name>.in into out; 0 or 1 (message printed). */
static int
ngx_render(struct ngx_ctx *x, const char *name, struct yx_buf *out)
{
	char	 path[PATH_MAX], *line = NULL;
	FILE	*f = NULL;
	size_t	 cap = 0;
	ssize_t	 n;
	int	 rc = 1;

	if (snprintf(path, sizeof(path), "%s/%s.in", x->templates, name) >= (int)sizeof(path)) {
		ngx_bad("--templates", "path too long");
		goto done;
	}
	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: %s: %s (--templates DIR)\n", path,
		    strerror(errno));
		goto done;
	}
	x->tmpl = path;
	x->line = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		x->line++;
		if (ngx_line(x, line, (size_t)n, out) != 0)
			goto done;
	}
	if (ferror(f)) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: %s: %s\n", path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	free(line);
	if (f != NULL)
		fclose(f);
	x->tmpl = NULL;
	return rc;
}

/* ---- output --------------------------------------------------------------- */

/* The rendered files (preview: empty when previews are off). */
struct ngx_out {
	struct yx_buf	http, server, settings, preview;
};

/*
 * Write b to dir/name through a temporary renamed into place, saying so
 * unless quiet; 0 or 1.
 */
static int
ngx_write(const char *dir, const char *name, const struct yx_buf *b, bool quiet)
{
	char	 path[PATH_MAX], tmp[PATH_MAX];
	FILE	*f = NULL;
	int	 fd = -1, rc;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
		return ngx_bad("--out", "path too long") != 0;
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		goto fail;
	if (fchmod(fd, 0644) != 0 || (f = fdopen(fd, "w")) == NULL)
		goto fail;
	fd = -1;	/* f owns it */
	/* an empty buffer may have no data at all: fwrite's is nonnull */
	if ((b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len) || fflush(f) != 0 ||
	    fsync(fileno(f)) != 0)
		goto fail;
	rc = fclose(f);
	f = NULL;
	if (rc != 0 || rename(tmp, path) != 0)
		goto fail;
	if (!quiet)
		printf("wrote %s\n", path);
	return 0;
fail:
	fprintf(stderr, "yuxi-sandbox: nginx-conf: %s: %s\n", path, strerror(errno));
	if (f != NULL)
		fclose(f);
	if (fd >= 0)
		close(fd);
	(void)unlink(tmp);
	return 1;
}

/* realpath of dir (an option's) into out (PATH_MAX); 0 or 1. */
static int
ngx_dir(const char *opt, const char *dir, char *out)
{
	if (realpath(dir, out) == NULL) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: %s %s: %s\n", opt, dir,
		    strerror(errno));
		return 1;
	}
	return 0;
}

/* The files into --out (and --conf-d), then what to include where; 0 or 1. */
static int
ngx_save(const struct ngx_ctx *x, const struct ngx_out *o)
{
	char dir[PATH_MAX], confd[PATH_MAX];

	if (ngx_dir("--out", x->out, dir) != 0 ||
	    (x->confd != NULL && ngx_dir("--conf-d", x->confd, confd) != 0))
		return 1;
	if ((x->confd != NULL ? ngx_write(confd, NGX_CONFD_NAME, &o->http, false) :
				ngx_write(dir, "yuxi-sandbox-http.conf", &o->http, false)) != 0 ||
	    ngx_write(dir, "yuxi-sandbox-server.conf", &o->server, false) != 0 ||
	    ngx_write(dir, "yuxi-sandbox-settings.conf", &o->settings, false) != 0 ||
	    (o->preview.len > 0 &&
		ngx_write(dir, "yuxi-sandbox-preview.conf", &o->preview, false) != 0))
		return 1;
	if (x->confd != NULL)
		printf("in nginx's http {}:      %s/%s, where nginx.conf includes conf.d "
		       "files (Debian: include /etc/nginx/conf.d/*.conf;)\n",
		    confd, NGX_CONFD_NAME);
	else
		printf("in nginx's http {}:      include %s/yuxi-sandbox-http.conf;\n", dir);
	printf("in the site's server {}: include %s/yuxi-sandbox-server.conf;\n"
	       "                         include %s/yuxi-sandbox-settings.conf;  "
	       "(unless it sets client_header_timeout, keepalive_timeout)\n"
	       "in nginx.conf:           worker_rlimit_nofile 20000; and "
	       "events { worker_connections 8192; }\n",
	    dir, dir);
	if (o->preview.len > 0)
		printf("in the server {} of *.%s (its wildcard certificate):\n"
		       "                         include %s/yuxi-sandbox-preview.conf;\n",
		    x->pv_domain, dir);
	return 0;
}

/* The files on stdout, separated by comment lines; 0 or 1. */
static int
ngx_print(const struct ngx_out *o)
{
	fwrite(o->http.data, 1, o->http.len, stdout);
	printf("\n# ==== yuxi-sandbox-server.conf: include it in the site's server {} ====\n\n");
	fwrite(o->server.data, 1, o->server.len, stdout);
	printf("\n# ==== yuxi-sandbox-settings.conf: include it in the same server {} ====\n\n");
	fwrite(o->settings.data, 1, o->settings.len, stdout);
	if (o->preview.len > 0) {
		printf("\n# ==== yuxi-sandbox-preview.conf: include it in the server {} of the "
		       "previews' wildcard name ====\n\n");
		fwrite(o->preview.data, 1, o->preview.len, stdout);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: stdout: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* ---- --check: nginx -t ------------------------------------------------------ */

/*
 * Run nginx -t -q with the arguments extra (NULL-terminated, at most 6),
 * its messages on our stderr; 0 when it accepts, else 1.
 */
static int
ngx_nginx_t(const char *const *extra)
{
	const char	*argv[10];
	pid_t		 pid;
	int		 i, ws;

	argv[0] = access(NGX_NGINX, X_OK) == 0 ? NGX_NGINX : "nginx";
	argv[1] = "-t";
	argv[2] = "-q";
	for (i = 0; extra[i] != NULL && i < 6; i++)
		argv[3 + i] = extra[i];
	argv[3 + i] = NULL;
	fflush(stdout);
	if ((pid = fork()) == -1) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		yx_signals_default();
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "yuxi-sandbox: nginx-conf: --check: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &ws, 0) == -1)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : 1;
}

/*
 * nginx -t on a throw-away nginx.conf in a temporary directory that
 * includes the three files where they belong, as a site would; 0 when
 * nginx accepts them, else 1 (nginx said why).
 */
static int
ngx_check_alone(const struct ngx_out *o)
{
	char		dir[] = "/tmp/yuxi-nginx-conf.XXXXXX", conf[PATH_MAX], log[PATH_MAX];
	struct yx_buf	b;
	const char	*extra[7];
	int		rc = 1;

	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "yuxi-sandbox: nginx-conf: --check: %s: %s\n", dir,
		    strerror(errno));
		return 1;
	}
	yx_buf_init(&b, NGX_OUT_MAX);
	snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
	snprintf(log, sizeof(log), "%s/error.log", dir);
	/* the temp paths: the directory itself, so nginx makes none */
	if (yx_buf_printf(&b, "pid %s/nginx.pid;\nerror_log %s;\nevents {}\nhttp {\n"
			      "client_body_temp_path %s;\nproxy_temp_path %s;\n"
			      "fastcgi_temp_path %s;\nuwsgi_temp_path %s;\n"
			      "scgi_temp_path %s;\ninclude %s/http.conf;\nserver {\n"
			      "listen 127.0.0.1:8080;\ninclude %s/settings.conf;\n"
			      "include %s/server.conf;\n}\n%s%s%s}\n",
		dir, log, dir, dir, dir, dir, dir, dir, dir, dir,
		o->preview.len > 0 ? "server {\nlisten 127.0.0.1:8080;\n"
				     "server_name *.preview.invalid;\ninclude " :
				     "",
		o->preview.len > 0 ? dir : "",
		o->preview.len > 0 ? "/preview.conf;\n}\n" : "") != YX_OK ||
	    ngx_write(dir, "nginx.conf", &b, true) != 0 ||
	    ngx_write(dir, "http.conf", &o->http, true) != 0 ||
	    ngx_write(dir, "server.conf", &o->server, true) != 0 ||
	    ngx_write(dir, "settings.conf", &o->settings, true) != 0 ||
	    ngx_write(dir, "preview.conf", &o->preview, true) != 0)
		goto done;
	extra[0] = "-p";
	extra[1] = dir;
	extra[2] = "-c";
	extra[3] = conf;
	extra[4] = "-e";
	extra[5] = log;
	extra[6] = NULL;
	if ((rc = ngx_nginx_t(extra)) != 0)
		fprintf(stderr, "yuxi-sandbox: nginx-conf: --check: nginx -t refuses the "
				"rendered files (above); nothing was written\n");
done:
	yx_buf_fini(&b);
	(void)yx_tree_remove(AT_FDCWD, dir);
	return rc;
}

/* nginx -t on nginx's own configuration (or --nginx-conf); 0 or 1. */
static int
ngx_check_site(const struct ngx_ctx *x)
{
	const char	*extra[3] = { NULL, NULL, NULL };
	int		 rc;

	if (x->nginx_conf != NULL) {
		extra[0] = "-c";
		extra[1] = x->nginx_conf;
	}
	if ((rc = ngx_nginx_t(extra)) != 0)
		fprintf(stderr, "yuxi-sandbox: nginx-conf: --check: the files are written, "
				"but nginx -t refuses %s (above)\n",
		    x->nginx_conf != NULL ? x->nginx_conf : "nginx's configuration");
	else
		printf("nginx -t: %s is valid with them\n",
		    x->nginx_conf != NULL ? x->nginx_conf : "nginx's configuration");
	return rc;
}

int
cli_nginx_conf(const struct yx_config *cfg, int argc, char **argv)
{
	static struct ngx_ctx	x;
	struct ngx_out		o;
	int			rc;

	memset(&x, 0, sizeof(x));
	x.cfg = cfg;
	x.auth = NGX_AUTH_REQUEST;
	x.templates = cli_datadir(YX_NGINX_TEMPLATES, "nginx", x.templates_buf,
	    sizeof(x.templates_buf));
	yx_buf_init(&o.http, NGX_OUT_MAX);
	yx_buf_init(&o.server, NGX_OUT_MAX);
	yx_buf_init(&o.settings, NGX_OUT_MAX);
	yx_buf_init(&o.preview, NGX_OUT_MAX);
	if ((rc = ngx_parse(&x, argc, argv)) == 0 && (rc = ngx_settle(&x)) == 0 &&
	    (rc = ngx_render(&x, "yuxi-sandbox-http.conf", &o.http)) == 0 &&
	    (rc = ngx_render(&x, "yuxi-sandbox-server.conf", &o.server)) == 0 &&
	    (rc = ngx_render(&x, "yuxi-sandbox-settings.conf", &o.settings)) == 0 &&
	    (x.pv_sockets[0] == '\0' ||
		(rc = ngx_render(&x, "yuxi-sandbox-preview.conf", &o.preview)) == 0) &&
	    (!x.check || (rc = ngx_check_alone(&o)) == 0) &&
	    (x.htuser == NULL || (rc = cli_htpasswd_set(cfg, x.htpasswd, x.htuser)) == 0))
		rc = x.out != NULL ? ngx_save(&x, &o) : ngx_print(&o);
	if (rc == 0 && x.check && x.out != NULL)
		rc = ngx_check_site(&x);
	yx_buf_fini(&o.http);
	yx_buf_fini(&o.server);
	yx_buf_fini(&o.settings);
	yx_buf_fini(&o.preview);
	return rc;
}
