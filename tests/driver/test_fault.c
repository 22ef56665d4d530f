/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c - failure paths of both drivers: engine socket missing,
 * docker binary missing, image missing and a bind source that does not
 * exist (real engine), and fault injection the real engine cannot do: a
 * fake engine on a unix socket answering 500, and one sending a corrupt
 * exec stream, and one whose runsc runtime lacks the arguments the service
 * needs (the readiness check "runtime"). Also the auto driver selection. The engine's own error text
 * never reaches err (it can name host paths): only the server log, escaped.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "yuxi/ready.h"
#include "../lib/tutil.h"

static struct yx_config	cfg;
static pid_t		fake_pid = -1;
static char		fake_dir[64];
static char		fake_sock[100];

static void
base_cfg(enum yx_driver_kind kind)
{
	yx_config_defaults(&cfg);
	cfg.driver = kind;
	snprintf(cfg.image, sizeof(cfg.image), "yuxi-sandbox-test:latest");
}

static struct yx_driver *
drv(void)
{
	struct yx_errctx	 err;
	struct yx_driver	*d = yx_driver_new(&cfg, &err);

	cr_assert(d != NULL, "%s", err.msg);
	return d;
}

/* Read one HTTP request from fd; returns the request line in line. */
static int
fake_read_request(int fd, char *line, size_t linelen)
{
	char	 buf[65536];
	size_t	 len = 0;
	ssize_t	 r;
	char	*end, *cl;
	long	 body = 0;

	for (;;) {
		if (len + 1 >= sizeof(buf))
			return -1;
		if ((r = read(fd, buf + len, sizeof(buf) - 1 - len)) <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			break;
	}
	if ((cl = strcasestr(buf, "Content-Length:")) != NULL && cl < end)
		body = strtol(cl + 15, NULL, 10);
	while ((long)(len - (size_t)(end + 4 - buf)) < body &&
	    (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	snprintf(line, linelen, "%.*s", (int)strcspn(buf, "\r\n"), buf);
	return 0;
}

static void
fake_reply(int fd, int status, const char *body)
{
	char hdr[256];

	snprintf(hdr, sizeof(hdr), "HTTP/1.1 %d X\r\nContent-Type: "
				   "application/json\r\nContent-Length: %zu\r\nConnection: close"
				   "\r\n\r\n",
	    status, strlen(body));
	(void)!write(fd, hdr, strlen(hdr));
	(void)!write(fd, body, strlen(body));
}

/* The engine's runtimes in modes 'n' (runsc without its arguments) and 'r'. */
#define FAKE_RUNTIMES_BARE \
	"{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"}}}"
#define FAKE_RUNTIMES_OK \
	"{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"," \
	"\"runtimeArgs\":[\"--network=none\",\"--host-uds=all\"]}}}"

/* One byte in <fake_dir>/info per GET /info the fake engine answered. */
static void
fake_count_info(void)
{
	char	path[sizeof(fake_dir) + 8];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/info", fake_dir);
	if ((f = fopen(path, "a")) != NULL) {
		fputc('i', f);
		fclose(f);
	}
}

/* How many GET /info the fake engine has answered. */
static long
fake_infos(void)
{
	char	path[sizeof(fake_dir) + 8];
	FILE	*f;
	long	 n = 0;

	snprintf(path, sizeof(path), "%s/info", fake_dir);
	if ((f = fopen(path, "r")) != NULL) {
		while (fgetc(f) != EOF)
			n++;
		fclose(f);
	}
	return n;
}

/*
 * mode 500: everything fails; mode 'c': exec with a corrupt stream; modes
 * 'n' and 'r': an engine with the image and a runsc runtime, bare ('n') or
 * with the arguments the service needs ('r').
 */
static void
fake_serve(int lfd, int mode)
{
	static const char corrupt[] = "HTTP/1.1 200 OK\r\nContent-Type: "
				      "application/vnd.docker.raw-stream\r\nConnection: close\r\n\r\n"
				      "\x01\0\0\0\0\0\0\x02ok\x07\0\0\0\0\0\0\x04"
				      "abcd";
	char	line[1024];
	int	fd;

	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (fake_read_request(fd, line, sizeof(line)) == 0) {
			if (mode == 500)
				fake_reply(fd, 500, "{\"message\":\"engine "
						    "exploded \\u001b[31m red\\n\"}");
			else if ((mode == 'n' || mode == 'r') && strstr(line, "/info")) {
				fake_count_info();
				fake_reply(fd, 200, mode == 'r' ? FAKE_RUNTIMES_OK : FAKE_RUNTIMES_BARE);
			} else if ((mode == 'n' || mode == 'r') && strstr(line, "/_ping"))
				fake_reply(fd, 200, "OK");
			else if ((mode == 'n' || mode == 'r') && strstr(line, "/images/"))
				fake_reply(fd, 200, "{\"Id\":\"sha256:0\"}");
			else if (strstr(line, "/exec/e1/start"))
				(void)!write(fd, corrupt, sizeof(corrupt) - 1);
			else if (strstr(line, "/exec/e1/json"))
				fake_reply(fd, 200, "{\"Running\":false,"
						    "\"ExitCode\":0,\"Pid\":0}");
			else if (strstr(line, "/exec"))
				fake_reply(fd, 201, "{\"Id\":\"e1\"}");
			else
				fake_reply(fd, 404, "{\"message\":\"nope\"}");
		}
		close(fd);
	}
}

static void
fake_start(int mode)
{
	int	lfd;

	snprintf(fake_dir, sizeof(fake_dir), "/tmp/yuxi-fake.XXXXXX");
	cr_assert(mkdtemp(fake_dir) != NULL);
	snprintf(fake_sock, sizeof(fake_sock), "%s/docker.sock", fake_dir);
	lfd = tutil_unix_listen(fake_sock, 0);
	if ((fake_pid = fork()) == 0)
		fake_serve(lfd, mode);
	close(lfd);
	snprintf(cfg.docker_api_socket, sizeof(cfg.docker_api_socket), "%s",
	    fake_sock);
}

static void
fake_stop(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGKILL);
		waitpid(fake_pid, NULL, 0);
		fake_pid = -1;
	}
	unlink(fake_sock);
	snprintf(fake_sock, sizeof(fake_sock), "%s/info", fake_dir);
	unlink(fake_sock);
	rmdir(fake_dir);
}

/*
 * Server log capture: stderr into a temporary file between log_begin()
 * and log_end(), which returns what was logged (static storage).
 */
static int	log_saved = -1;
static FILE	*log_file;

static void
log_begin(void)
{
	log_init("test_fault", 0);
	fflush(stderr);
	cr_assert((log_file = tmpfile()) != NULL);
	log_saved = dup(2);
	cr_assert(dup2(fileno(log_file), 2) == 2);
}

static const char *
log_end(void)
{
	static char	 text[8192];
	size_t		 n;

	fflush(stderr);
	dup2(log_saved, 2);
	close(log_saved);
	rewind(log_file);
	n = fread(text, 1, sizeof(text) - 1, log_file);
	text[n] = '\0';
	fclose(log_file);
	return text;
}

Test(fault, api_engine_500, .fini = fake_stop)
{
	struct yx_driver		*d;
	struct yx_errctx		 err;
	struct yx_container_info	 info, *v = NULL;
	size_t				 n;
	const char			*logged;

	base_cfg(YX_DRIVER_API);
	fake_start(500);
	d = drv();
	log_begin();
	cr_expect_eq(d->ops->ping(d, &err), YX_E_BACKEND_UNAVAILABLE);
	logged = log_end();
	/* our words to the caller, the engine's in the log, escaped */
	cr_expect_str_eq(err.msg, "ping: engine answered 500: failed "
				  "(details in the server log)");
	cr_expect(strstr(logged, "ping: engine answered 500: engine exploded "
				 "\\x1b[31m red") != NULL,
	    "log: %s", logged);
	cr_expect(strchr(logged, '\x1b') == NULL, "unescaped: %s", logged);
	cr_expect_eq(d->ops->inspect(d, "x", &info, &err),
	    YX_E_BACKEND_UNAVAILABLE);
	cr_expect_eq(d->ops->list(d, &v, &n, &err), YX_E_BACKEND_UNAVAILABLE);
	cr_expect_eq(d->ops->remove(d, "x", &err), YX_E_BACKEND_UNAVAILABLE);
	cr_expect_eq(d->ops->image_present(d, cfg.image, &err),
	    YX_E_BACKEND_UNAVAILABLE);
	yx_driver_free(d);
}

/*
 * The readiness check "runtime": runc only passes without asking; a profile
 * that names runsc (yx_ready_need_runtime) or YUXI_SANDBOX_RUNTIME=runsc
 * makes it ask the engine (GET /info, once per cache period, never from the
 * engine ping /healthz uses), and an engine whose runsc lacks
 * --network=none and --host-uds=all fails it with the fix for the operator;
 * an engine that does not answer is no answer: asked again next time.
 */
Test(fault, ready_runtime, .fini = fake_stop)
{
	struct yx_ready_result	 res[YX_READY_N];
	struct yx_ready		 rd;
	struct yx_driver	*d;

	base_cfg(YX_DRIVER_API);
	fake_start('n');
	d = drv();
	yx_ready_init(&rd, &cfg, d, NULL);
	(void)yx_ready_run(&rd, res);
	cr_expect_eq(res[YX_READY_ENGINE].rc, YX_OK, "%s", res[YX_READY_ENGINE].oper);
	cr_expect_eq(res[YX_READY_IMAGE].rc, YX_OK, "%s", res[YX_READY_IMAGE].oper);
	cr_expect_str_eq(res[YX_READY_RUNTIME].name, "runtime");
	cr_expect_eq(res[YX_READY_RUNTIME].rc, YX_OK);
	cr_expect_str_eq(res[YX_READY_RUNTIME].detail, "runc only");
	cr_expect_eq(fake_infos(), 0);
	yx_ready_need_runtime(&rd, "runsc");	/* a profile names it */
	cr_expect(yx_ready_engine_up(&rd));	/* /healthz: never GET /info */
	cr_expect_eq(fake_infos(), 0);
	(void)yx_ready_run(&rd, res);
	(void)yx_ready_run(&rd, res);		/* cached */
	cr_expect_eq(fake_infos(), 1);
	cr_expect_eq(res[YX_READY_RUNTIME].rc, YX_E_BACKEND_UNAVAILABLE);
	cr_expect_str_eq(res[YX_READY_RUNTIME].detail, "runsc not usable");
	cr_expect(strstr(res[YX_READY_RUNTIME].oper,
		      "--network=none and --host-uds=all") != NULL,
	    "%s", res[YX_READY_RUNTIME].oper);
	yx_driver_free(d);
	fake_stop();

	/* the engine gone: "not reachable" is not cached for the runtime */
	snprintf(cfg.runtime, sizeof(cfg.runtime), "runsc");
	snprintf(cfg.docker_api_socket, sizeof(cfg.docker_api_socket),
	    "/nonexistent/yx-docker.sock");
	d = drv();
	yx_ready_init(&rd, &cfg, d, NULL);
	(void)yx_ready_run(&rd, res);
	cr_expect_neq(res[YX_READY_ENGINE].rc, YX_OK);
	cr_expect_str_eq(res[YX_READY_RUNTIME].detail, "runsc not usable");
	cr_expect(strstr(res[YX_READY_RUNTIME].oper, "engine not reachable") != NULL,
	    "%s", res[YX_READY_RUNTIME].oper);
	cr_expect_eq(rd.runtime_at_ms, 0);
	yx_driver_free(d);

	fake_start('r');
	d = drv();
	yx_ready_init(&rd, &cfg, d, NULL);
	(void)yx_ready_run(&rd, res);
	cr_expect_eq(res[YX_READY_RUNTIME].rc, YX_OK, "%s", res[YX_READY_RUNTIME].oper);
	cr_expect_str_eq(res[YX_READY_RUNTIME].detail, "runsc usable");
	cr_expect_eq(fake_infos(), 1);
	yx_driver_free(d);
}

static int
sink(void *arg, const char *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return YX_OK;
}

Test(fault, api_corrupt_stream, .fini = fake_stop, .timeout = 30)
{
	struct yx_driver	*d;
	struct yx_errctx	 err;
	struct yx_exec_result	 res;
	const char		*argv[] = { "true", NULL };
	struct yx_exec_req	 req = { argv, NULL, NULL, NULL, 5, sink, NULL,
		   NULL };

	base_cfg(YX_DRIVER_API);
	fake_start('c');
	d = drv();
	cr_expect_eq(d->ops->exec(d, "box", &req, &res, &err), YX_E_IO);
	cr_expect(strstr(err.msg, "corrupt") != NULL, "%s", err.msg);
	yx_driver_free(d);
}

/* Engine socket missing: every call is BACKEND_UNAVAILABLE, quickly. */
static void
engine_down(enum yx_driver_kind kind)
{
	struct yx_driver		*d;
	struct yx_errctx		 err;
	struct yx_container_info	 info;
	const char			*argv[] = { "true", NULL };
	struct yx_exec_req		 req = { argv, NULL, NULL, NULL, 5, sink,
		      NULL, NULL };
	struct yx_exec_result		 res;
	struct yx_mount			 m = { "/tmp", "/x", true };
	struct yx_container_spec	 spec = { "yuxi-drvtest-down", cfg.image,
		"t", "s", "", &m, 1, 0, &cfg, 0, 0, NULL, NULL, 0, false };

	base_cfg(kind);
	snprintf(cfg.docker_api_socket, sizeof(cfg.docker_api_socket),
	    "/nonexistent/yuxi/docker.sock");
	d = drv();
	cr_expect_eq(d->ops->ping(d, &err), YX_E_BACKEND_UNAVAILABLE);
	cr_expect(err.msg[0] != '\0');
	/* the client names the socket; our message does not */
	cr_expect(strstr(err.msg, "/nonexistent") == NULL, "%s", err.msg);
	cr_expect_eq(d->ops->create(d, &spec, &info, &err),
	    YX_E_BACKEND_UNAVAILABLE, "%s", err.msg);
	cr_expect_eq(d->ops->inspect(d, "x", &info, &err),
	    YX_E_BACKEND_UNAVAILABLE, "%s", err.msg);
	cr_expect_eq(d->ops->exec(d, "x", &req, &res, &err),
	    YX_E_BACKEND_UNAVAILABLE, "%s", err.msg);
	cr_expect_eq(d->ops->remove(d, "x", &err), YX_E_BACKEND_UNAVAILABLE,
	    "%s", err.msg);
	yx_driver_free(d);
}

Test(fault, api_engine_down)
{
	engine_down(YX_DRIVER_API);
}
Test(fault, cli_engine_down)
{
	engine_down(YX_DRIVER_CLI);
}

Test(fault, cli_docker_missing)
{
	struct yx_driver	*d;
	struct yx_errctx	 err;

	base_cfg(YX_DRIVER_CLI);
	setenv("PATH", "/nonexistent-bin", 1);
	d = drv();
	cr_expect_eq(d->ops->ping(d, &err), YX_E_BACKEND_UNAVAILABLE);
	cr_expect(strstr(err.msg, "docker") != NULL, "%s", err.msg);
	yx_driver_free(d);
}

/* Real engine: a missing image is named with the script that builds it. */
static void
image_missing(enum yx_driver_kind kind)
{
	struct yx_driver		*d;
	struct yx_errctx		 err;
	struct yx_container_info	 info;
	struct yx_container_spec	 spec;
	char				 name[64];

	base_cfg(kind);
	d = drv();
	cr_expect_eq(d->ops->image_present(d, "yuxi-nosuch-test:latest", &err),
	    YX_E_IMAGE_MISSING, "%s", err.msg);
	cr_expect_str_eq(err.msg, "image yuxi-nosuch-test:latest is missing; "
				  "build it with images/test/build.sh");
	cr_expect_eq(d->ops->image_present(d, "yuxi-nosuch:latest", &err),
	    YX_E_IMAGE_MISSING, "%s", err.msg);
	cr_expect_str_eq(err.msg, "image yuxi-nosuch:latest is missing; "
				  "build it with images/default/build.sh");
	snprintf(name, sizeof(name), "yuxi-drvtest-%d-img", (int)getpid());
	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.image = "yuxi-nosuch-test:latest";
	spec.thread_id = "t";
	spec.sandbox_id = "s";
	spec.cfg = &cfg;
	cr_expect_eq(d->ops->create(d, &spec, &info, &err), YX_E_IMAGE_MISSING,
	    "%s", err.msg);
	cr_expect(strstr(err.msg, "images/test/build.sh") != NULL, "%s",
	    err.msg);
	cr_expect_eq(d->ops->inspect(d, name, &info, &err), YX_E_NOT_FOUND,
	    "a container was left behind");
	yx_driver_free(d);
}

Test(fault, api_image_missing)
{
	image_missing(YX_DRIVER_API);
}
Test(fault, cli_image_missing)
{
	image_missing(YX_DRIVER_CLI);
}

/*
 * Real engine: a bind source that does not exist (a removed skill, a
 * runner path that is wrong). The engine answers "bind source path does not
 * exist: <host path>"; the caller gets BACKEND_UNAVAILABLE and our words,
 * the path only reaches the server log; nothing is left behind.
 */
static void
bind_source_missing(enum yx_driver_kind kind)
{
	struct yx_driver		*d;
	struct yx_errctx		 err;
	struct yx_container_info	 info;
	struct yx_container_spec	 spec;
	struct yx_mount			 m;
	char				 name[64], src[96];
	const char			*logged;

	base_cfg(kind);
	d = drv();
	snprintf(name, sizeof(name), "yuxi-drvtest-%d-bind", (int)getpid());
	snprintf(src, sizeof(src), "/tmp/yuxi-drvtest-%d-hostsecret/yuxi-run",
	    (int)getpid());
	m = (struct yx_mount){ src, "/opt/yuxi/bin/yuxi-run", true };
	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.image = cfg.image;
	spec.thread_id = "t";
	spec.sandbox_id = "s";
	spec.mounts = &m;
	spec.nmounts = 1;
	spec.cfg = &cfg;
	log_begin();
	cr_expect_eq(d->ops->create(d, &spec, &info, &err),
	    YX_E_BACKEND_UNAVAILABLE, "%s", err.msg);
	logged = log_end();
	printf("%s create, bind source missing: caller sees \"%s\"\n",
	    d->ops->name, err.msg);
	cr_expect(strstr(err.msg, "hostsecret") == NULL, "host path in: %s",
	    err.msg);
	cr_expect(strstr(err.msg, "container create: ") == err.msg, "%s",
	    err.msg);
	cr_expect(strstr(logged, src) != NULL, "not in the log: %s", logged);
	cr_expect_eq(d->ops->inspect(d, name, &info, &err), YX_E_NOT_FOUND,
	    "a container was left behind");
	yx_driver_free(d);
}

Test(fault, api_bind_source_missing, .timeout = 60)
{
	bind_source_missing(YX_DRIVER_API);
}

Test(fault, cli_bind_source_missing, .timeout = 60)
{
	bind_source_missing(YX_DRIVER_CLI);
}

Test(fault, auto_selection)
{
	struct yx_driver *d;

	base_cfg(YX_DRIVER_AUTO);
	d = drv();
	cr_expect_str_eq(d->ops->name, "api");
	yx_driver_free(d);
	snprintf(cfg.docker_api_socket, sizeof(cfg.docker_api_socket),
	    "/nonexistent/yuxi/docker.sock");
	d = drv();
	cr_expect_str_eq(d->ops->name, "cli");
	yx_driver_free(d);
	setenv("PATH", "/nonexistent-bin", 1);
	d = drv();
	cr_expect_str_eq(d->ops->name, "api");
	yx_driver_free(d);
}
