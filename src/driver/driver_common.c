/* SPDX-License-Identifier: MIT */
/*
 * driver_common.c - what the API and CLI drivers share: the inspect parser
 * (`docker inspect` prints exactly the Engine API's container JSON), label
 * reading, the listing filter, the host-pid kill of an exec, and
 * yx_driver_fail(), the one place where an engine's own error text is
 * handled: server log only.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "driver/driver_int.h"
#include "common/control_int.h"

int
yx_driver_image_missing(struct yx_errctx *err, const char *image)
{
	char esc[YX_CFG_STR * 4];

	log_escape(esc, sizeof(esc), image, strlen(image));
	return yx_fail(err, YX_E_IMAGE_MISSING,
	    "image %s is missing; build it with images/%s/build.sh", esc,
	    strstr(image, "-test") != NULL ? "test" : "default");
}

const char *
yx_driver_escape(char *dst, size_t dstlen, const char *s, size_t n)
{
	/* Engine messages end in a newline more often than not. */
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return log_escape(dst, dstlen, s, n);
}

/* Our words for a failed engine call of class `code`. */
static const char *
driver_fail_text(int code)
{
	switch (code) {
	case YX_E_NOT_FOUND:
		return "no such container";
	case YX_E_FILE_EXISTS:
		return "conflict";
	case YX_E_IMAGE_MISSING:
		return "no such image";
	case YX_E_BACKEND_UNAVAILABLE:
		return "failed";
	default:
		return "request refused";
	}
}

int
yx_driver_fail(struct yx_errctx *err, int code, const char *what,
    const char *how, const char *text, size_t n)
{
	char esc[512];

	yx_driver_escape(esc, sizeof(esc), text != NULL ? text : "",
	    text != NULL ? n : 0);
	/* the outcomes callers expect and handle are no news */
	if (code == YX_E_NOT_FOUND || code == YX_E_FILE_EXISTS)
		log_debug("engine: %s: %s: %s", what, how, esc);
	else
		log_warnx("engine: %s: %s: %s", what, how, esc);
	if (YX_CONTROL_OFF("enginemsg"))
		return yx_fail(err, code, "%s: %s: %s", what, how, esc);
	return yx_fail(err, code, "%s: %s: %s (details in the server log)",
	    what, how, driver_fail_text(code));
}

/* Copy label `key` of `labels` into dst ("" when absent or too long). */
static void
info_label(struct json_object *labels, const char *key, char *dst,
    size_t dstlen)
{
	struct json_object	*v;
	const char		*s;

	dst[0] = '\0';
	if (labels == NULL || !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return;
	s = json_object_get_string(v);
	if (strlen(s) < dstlen)
		memcpy(dst, s, strlen(s) + 1);
}

void
yx_driver_info_labels(struct json_object *labels,
    struct yx_container_info *info)
{
	info_label(labels, YX_LABEL_THREAD, info->thread_id,
	    sizeof(info->thread_id));
	info_label(labels, YX_LABEL_ID, info->sandbox_id,
	    sizeof(info->sandbox_id));
	info_label(labels, YX_LABEL_SKILLS, info->skills_fp,
	    sizeof(info->skills_fp));
}

/* Parse RFC 3339 "2024-05-01T10:20:30.123Z" into unix seconds (0 if not). */
static int64_t
info_time(const char *s)
{
	struct tm	tm;
	int		y, mo, d, h, mi, sec;

	if (s == NULL || sscanf(s, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6)
		return 0;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	return (int64_t)timegm(&tm);
}

/* Returns YX_OK, or YX_E_IO (message in err) when obj has no usable Id. */
int
yx_driver_info_from_inspect(struct json_object *obj,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct json_object	*v, *cfg, *labels = NULL, *state;
	const char		*s;

	memset(info, 0, sizeof(*info));
	if (!json_object_object_get_ex(obj, "Id", &v) ||
	    (s = json_object_get_string(v)) == NULL ||
	    strlen(s) >= sizeof(info->id) || *s == '\0')
		return yx_fail(err, YX_E_IO, "engine sent a container without Id");
	memcpy(info->id, s, strlen(s) + 1);
	if (json_object_object_get_ex(obj, "Name", &v) &&
	    (s = json_object_get_string(v)) != NULL) {
		if (*s == '/')
			s++;
		if (strlen(s) < sizeof(info->name))
			memcpy(info->name, s, strlen(s) + 1);
	}
	if (json_object_object_get_ex(obj, "Config", &cfg))
		json_object_object_get_ex(cfg, "Labels", &labels);
	yx_driver_info_labels(labels, info);
	if (json_object_object_get_ex(obj, "State", &state) &&
	    json_object_object_get_ex(state, "Running", &v))
		info->running = json_object_get_boolean(v);
	if (json_object_object_get_ex(obj, "Created", &v))
		info->created = info_time(json_object_get_string(v));
	return YX_OK;
}

bool
yx_driver_name_ours(const char *prefix, const char *name)
{
	size_t plen = strlen(prefix), hl;

	/* ours: exactly <prefix><8..64 lowercase hex>, so an instance whose
	 * prefix merely starts with ours ("yx" vs "yxe2e1-") is not ours; or
	 * a pool box, <prefix>pool-<16 lowercase hex> (yuxi/priv.h) */
	if (strncmp(name, prefix, plen) != 0)
		return false;
	if (strncmp(name + plen, "pool-", 5) == 0 &&
	    strspn(name + plen + 5, "0123456789abcdef") == 16 && name[plen + 21] == '\0')
		return true;
	hl = strspn(name + plen, "0123456789abcdef");
	return hl >= 8 && hl <= 64 && name[plen + hl] == '\0';
}

bool
yx_driver_name_tx(const char *prefix, const char *name)
{
	size_t plen = strlen(prefix);

	/* <prefix>tx-<16 lowercase hex>: a transaction's (provider_tx.c) */
	return strncmp(name, prefix, plen) == 0 && strncmp(name + plen, "tx-", 3) == 0 &&
	    strspn(name + plen + 3, "0123456789abcdef") == 16 && name[plen + 19] == '\0';
}

void
yx_driver_name_regex(const char *prefix, char *re, size_t size)
{
	size_t i, k = 0;

	re[k++] = '^';
	re[k++] = '/';
	for (i = 0; prefix[i] != '\0' && k + 3 <= size; i++) {
		if (prefix[i] == '.')
			re[k++] = '\\';
		re[k++] = prefix[i];
	}
	re[k] = '\0';
}

size_t
yx_driver_list_filter(const struct yx_config *cfg,
    struct yx_container_info *v, size_t n)
{
	size_t i, k = 0;

	/* an empty prefix (never a configuration's): every labelled
	 * container, for the orphans' search (provider_orphans.c) */
	if (cfg->container_prefix[0] == '\0')
		return n;
	for (i = 0; i < n; i++)
		if (yx_driver_name_ours(cfg->container_prefix, v[i].name))
			v[k++] = v[i];
	return k;
}

/*
 * True when host process pid runs in the container whose full id is `cid`
 * (its cgroup path names the id). Guards the kill below against a stale
 * exec Pid that the host has since given to an unrelated process.
 */
static bool
pid_in_container(pid_t pid, const char *cid)
{
	char	 path[64], line[1024];
	FILE	*f;
	bool	 in = false;

	if (cid == NULL || strlen(cid) < 12)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (!in && fgets(line, sizeof(line), f) != NULL)
		in = strstr(line, cid) != NULL;
	fclose(f);
	return in;
}

/* SIGKILL the process group of each direct child of pid that runs in the
 * container cid (the runner's command is such a group leader). */
static void
kill_child_groups(pid_t pid, const char *cid)
{
	char	 path[64];
	FILE	*f;
	long	 c;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fscanf(f, "%ld", &c) == 1)
		if (c > 1 && pid_in_container((pid_t)c, cid) &&
		    getpgid((pid_t)c) == (pid_t)c)
			(void)kill(-(pid_t)c, SIGKILL);
	fclose(f);
}

void
yx_driver_kill_host_pid(pid_t pid, const char *cid)
{
	pid_t	pgid;
	int	i;

	if (pid <= 1 || !pid_in_container(pid, cid))
		return;
	/* The runner puts its command in a process group of its own: kill
	 * those groups first, so nothing survives even when the runner is
	 * stuck (e.g. blocked writing to a stream nobody reads any more). */
	kill_child_groups(pid, cid);
	/* The runner traps SIGTERM and kills its command's process group. */
	if (kill(pid, SIGTERM) == -1)
		return;
	for (i = 0; i < 20 && pid_in_container(pid, cid); i++)
		usleep(10 * 1000);
	pgid = getpgid(pid);
	if (pgid == pid && pid_in_container(pid, cid))
		(void)kill(-pgid, SIGKILL);
	if (pid_in_container(pid, cid))
		(void)kill(pid, SIGKILL);
}

/* Does the JSON array a hold the string s? */
static bool
runtime_has_arg(struct json_object *a, const char *s)
{
	const char	*v;
	size_t		 i;

	if (!json_object_is_type(a, json_type_array))	/* engine data: never trusted */
		return false;
	for (i = 0; i < json_object_array_length(a); i++)
		if ((v = json_object_get_string(json_object_array_get_idx(a, i))) != NULL &&
		    strcmp(v, s) == 0)
			return true;
	return false;
}

int
yx_driver_runtime_check(struct yx_driver *d, const char *runtime,
    struct yx_errctx *err)
{
	struct json_object	*j = NULL, *rt, *args = NULL;
	char			*text = NULL;
	int			 rc = YX_OK;

	if (strcmp(runtime, "runc") == 0)
		return YX_OK;
	if (d->ops->runtimes == NULL)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the %s driver cannot list the engine's runtimes", d->ops->name);
	if ((rc = d->ops->runtimes(d, &text, err)) != YX_OK)
		return rc;
	if ((j = json_tokener_parse(text)) == NULL ||
	    !json_object_is_type(j, json_type_object)) {
		rc = yx_fail(err, YX_E_IO, "docker engine sent unexpected runtimes");
		goto done;
	}
	if (!json_object_object_get_ex(j, runtime, &rt)) {
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the engine has no runtime \"%s\": install it and add it to "
		    "/etc/docker/daemon.json (scripts/setup.sh does), then SIGHUP "
		    "dockerd",
		    runtime);
		goto done;
	}
	if (!json_object_object_get_ex(rt, "runtimeArgs", &args))
		(void)json_object_object_get_ex(rt, "RuntimeArgs", &args);
	if (strcmp(runtime, "runsc") == 0 &&
	    (!runtime_has_arg(args, "--network=none") ||
		!runtime_has_arg(args, "--host-uds=all")))
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the engine's runtime \"runsc\" needs the arguments "
		    "--network=none and --host-uds=all in /etc/docker/daemon.json "
		    "(scripts/setup.sh), then SIGHUP dockerd");
done:
	json_object_put(j);
	free(text);
	return rc;
}
