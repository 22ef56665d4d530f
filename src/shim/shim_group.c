/* SPDX-License-Identifier: MIT */
/*
 * containerd-shim-runc-v2 in $(pkglibexecdir)/engine: the engine's runc shim
 * with sandboxes grouped, up to YUXI_SHIM_GROUP_SIZE of them in one shim
 * process (docs/configuration.md "Shim groups").
 *
 * containerd starts one shim process per container: a Go program of about
 * 3 MiB of private memory, most of what an idle sandbox costs the host. The
 * runc shim itself can serve many containers: `start` reads the bundle's
 * config.json and, when its annotations name a group
 * ("io.containerd.runc.v2.group", what Kubernetes uses for the containers of
 * one pod), joins the running shim of that group instead of starting one.
 * Docker 20.10 writes no annotations, so this wrapper, first in the engine's
 * PATH, copies the group the daemon put in the container's environment
 * (YUXI_SHIM_GROUP=<name>, spec.c) into that annotation, then runs the real
 * shim with the same arguments. It fails open: anything it cannot read or
 * write leaves the bundle as it was (one shim for the container, as
 * without it), and every other command (delete, the shim's own run) passes
 * through untouched.
 *
 * Runs as root, called by containerd in the bundle directory, which only
 * root can write; the only input from a tenant is nothing (the environment
 * is the daemon's, set at create time). libc and json-c only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#define SHIM_NAME	"containerd-shim-runc-v2"
#define SHIM_FALLBACK	"/usr/bin/" SHIM_NAME
#define GROUP_ENV	"YUXI_SHIM_GROUP="
#define GROUP_KEY	"io.containerd.runc.v2.group"
#define POD_KEY		"io.kubernetes.cri.sandbox-id"
#define SPEC_MAX	(16 * 1024 * 1024)

/* A group name: 1-128 of [A-Za-z0-9._-]. */
static bool
group_ok(const char *g)
{
	size_t	n = strlen(g);

	if (n == 0 || n > 128)
		return false;
	return strspn(g, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The group named in the spec's process environment, or NULL. */
static const char *
spec_group(struct json_object *spec)
{
	struct json_object	*proc, *env, *e;
	const char		*s;
	size_t			 i;

	if (!json_object_object_get_ex(spec, "process", &proc) ||
	    !json_object_object_get_ex(proc, "env", &env) ||
	    !json_object_is_type(env, json_type_array))
		return NULL;
	for (i = 0; i < json_object_array_length(env); i++) {
		e = json_object_array_get_idx(env, i);
		s = json_object_get_string(e);
		if (s != NULL && strncmp(s, GROUP_ENV, strlen(GROUP_ENV)) == 0)
			return group_ok(s + strlen(GROUP_ENV)) ?
			    s + strlen(GROUP_ENV) :
			    NULL;
	}
	return NULL;
}

/* Reads config.json of the current directory (NULL on any failure). */
static struct json_object *
spec_read(mode_t *mode)
{
	struct json_object	*spec = NULL;
	struct stat		 st;
	char			*text = NULL;
	ssize_t			 n;
	size_t			 got = 0;
	int			 fd;

	if ((fd = open("config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > SPEC_MAX ||
	    (text = malloc((size_t)st.st_size + 1)) == NULL)
		goto out;
	while (got < (size_t)st.st_size) {
		n = read(fd, text + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	text[got] = '\0';
	spec = json_tokener_parse(text);
	*mode = st.st_mode & 07777;
out:
	free(text);
	close(fd);
	return spec;
}

/* Writes spec as config.json, atomically (a temporary, then rename). */
static int
spec_write(struct json_object *spec, mode_t mode)
{
	const char	*tmp = "config.json.yuxi-shim";
	const char	*s;
	size_t		 len, off = 0;
	ssize_t		 n;
	int		 fd, rc = -1;

	s = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
	if (s == NULL)
		return -1;
	len = strlen(s);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    mode);
	if (fd < 0)
		return -1;
	while (off < len) {
		n = write(fd, s + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto out;
		off += (size_t)n;
	}
	if (fchmod(fd, mode) == 0 && fsync(fd) == 0)
		rc = 0;
out:
	if (close(fd) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, "config.json") != 0)
		rc = -1;
	if (rc != 0)
		(void)unlink(tmp);
	return rc;
}

/* `start`: names the group in the bundle's annotations. */
static void
group_bundle(void)
{
	struct json_object	*spec, *ann;
	const char		*g;
	mode_t			 mode = 0644;

	if ((spec = spec_read(&mode)) == NULL)
		return;
	if ((g = spec_group(spec)) == NULL)
		goto out;
	if (!json_object_object_get_ex(spec, "annotations", &ann) ||
	    !json_object_is_type(ann, json_type_object)) {
		if ((ann = json_object_new_object()) == NULL ||
		    json_object_object_add(spec, "annotations", ann) != 0)
			goto out;
	}
	if (json_object_object_get_ex(ann, GROUP_KEY, NULL) ||
	    json_object_object_get_ex(ann, POD_KEY, NULL))
		goto out;	/* grouped by its engine already: left alone */
	if (json_object_object_add(ann, GROUP_KEY,
		json_object_new_string(g)) != 0)
		goto out;
	if (spec_write(spec, mode) != 0)
		fprintf(stderr, "yuxi shim: cannot write the group into "
				"config.json (the container gets its own shim)\n");
out:
	json_object_put(spec);
}

/*
 * The real shim: the first regular, executable containerd-shim-runc-v2 on
 * PATH after this program's own directory (all of PATH when that is not on
 * it) that is not this program, else /usr/bin's. Searching after its own
 * directory only, two copies of the wrapper on PATH end at the real shim
 * instead of running each other.
 */
static const char *
real_shim(char *buf, size_t len)
{
	char		 self[PATH_MAX], dir[PATH_MAX], cand[PATH_MAX], *slash;
	const char	*path = getenv("PATH"), *p, *end;
	struct stat	 me, st;
	bool		 after = false, mine = false;
	int		 n, pass;

	if (realpath("/proc/self/exe", self) == NULL || stat(self, &me) != 0)
		return SHIM_FALLBACK;
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	/* pass 0: is our directory on PATH? pass 1: the search */
	for (pass = 0; pass < 2 && path != NULL; pass++) {
		after = pass == 1 && !mine;
		for (p = path; *p != '\0'; p = *end ? end + 1 : end) {
			if ((end = strchr(p, ':')) == NULL)
				end = p + strlen(p);
			n = snprintf(dir, sizeof(dir), "%.*s", (int)(end - p), p);
			if (end == p || n < 0 || (size_t)n >= sizeof(dir) ||
			    dir[0] != '/' || realpath(dir, cand) == NULL)
				continue;
			if (strcmp(cand, self) == 0) {
				mine = after = true;
				continue;
			}
			if (pass == 0 || !after)
				continue;
			n = snprintf(buf, len, "%s/" SHIM_NAME, dir);
			if (n < 0 || (size_t)n >= len || stat(buf, &st) != 0 ||
			    !S_ISREG(st.st_mode) || access(buf, X_OK) != 0 ||
			    (st.st_dev == me.st_dev && st.st_ino == me.st_ino))
				continue;
			return buf;
		}
	}
	return SHIM_FALLBACK;
}

int
main(int argc, char **argv)
{
	char		 buf[PATH_MAX];
	const char	*real;

	if (argc > 1 && strcmp(argv[argc - 1], "start") == 0)
		group_bundle();
	real = real_shim(buf, sizeof(buf));
	argv[0] = (char *)real;
	execv(real, argv);
	fprintf(stderr, "yuxi shim: cannot run %s: %s\n", real,
	    strerror(errno));
	return 127;
}
