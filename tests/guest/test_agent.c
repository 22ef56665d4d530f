/* SPDX-License-Identifier: MIT */
/*
 * test_agent.c - the in-sandbox agent in real sandboxes (Engine API driver,
 * transport auto: agent first, engine exec as fallback).
 *
 *  - the agent answers, started with the container (no engine exec);
 *  - killed mid-command (from the host, SIGKILL to every yuxi-agent process
 *    of the container): that command fails cleanly and is not run twice,
 *    its process group dies, the next command works (agent restarted);
 *  - the socket replaced from inside the sandbox by a symlink to a host
 *    socket that records connections, to /var/run/docker.sock, to another
 *    thread's socket: the host refuses it, nothing connects, the command
 *    runs in the right sandbox through the fallback;
 *  - a fake agent put in place from the host that lies about sizes: the
 *    command still runs correctly;
 *  - a latency sanity check (printed, not asserted).
 * Container names carry this process's pid; every container is removed.
 * With YUXI_TEST_RUNTIME=runsc the same tests run under gVisor (the agent
 * processes are then killed from inside, with an engine exec).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "guest/agent_proto.h"
#include "../lib/exectest.h"
#include "../lib/tutil.h"

/* The agent's own sandboxes: auto transport (agent first, engine exec as
 * fallback), the Engine API driver, one shared sandbox uid. */
static void
setup(void)
{
	exectest_config("yxagent", "yuxi-sandbox-test:latest");
	xt.cfg.driver = YX_DRIVER_API;
	xt.cfg.cmd_policy = YX_CMD_POLICY_OFF;	/* tests reach /opt/yuxi/run */
	xt.cfg.uid_count = 0;	/* one shared sandbox uid: the traps below use it */
	exectest_open(YX_EXEC_TRANSPORT_AUTO);
}

TestSuite(agent, .init = setup, .fini = exectest_close, .timeout = 120);

static void
run(const char *tid, const char *cmd, struct yx_exec_output *out)
{
	exectest_run(tid, cmd, 0, out);
}

static struct yx_exec_stats
stats(void)
{
	struct yx_exec_stats st;

	yx_executor_stats(xt.ex, &st);
	return st;
}

/*
 * Under gVisor (YUXI_TEST_RUNTIME=runsc) the sandbox's processes are not
 * host processes: SIGKILL them with an engine exec as the sandbox user.
 */
static int
kill_agents_inside(const char *cid)
{
	char	 cmd[512];
	FILE	*p;
	int	 killed = 0;

	/* by comm, as from the host: the container's command (yuxi-agent
	 * --init, named yuxi-agent-init) stays, or the container would end */
	snprintf(cmd, sizeof(cmd), "docker exec -u %u:%u %s sh -c 'n=0; for d in "
				   "/proc/[1-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = "
				   "yuxi-agent ] && kill -9 ${d#/proc/} && n=$((n+1)); "
				   "done; echo $n'",
	    xt.cfg.uid, xt.cfg.gid, cid);
	cr_assert_not_null(p = popen(cmd, "r"));
	if (fscanf(p, "%d", &killed) != 1)
		killed = 0;
	pclose(p);
	return killed;
}

/* SIGKILL every yuxi-agent process in container cid, from the host. */
static int
kill_agents(const char *cid)
{
	char		 p[300], buf[4096];
	struct dirent	*de;
	DIR		*d;
	FILE		*f;
	size_t		 n;
	int		 killed = 0;

	if (strcmp(xt.cfg.runtime, "runsc") == 0)
		return kill_agents_inside(cid);

	cr_assert_not_null(d = opendir("/proc"));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/comm", de->d_name);
		if ((f = fopen(p, "r")) == NULL)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		if (strcmp(buf, "yuxi-agent\n") != 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cgroup", de->d_name);
		if ((f = fopen(p, "r")) == NULL)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		if (strstr(buf, cid) != NULL &&
		    kill((pid_t)atoi(de->d_name), SIGKILL) == 0)
			killed++;
	}
	closedir(d);
	return killed;
}

/* A non-blocking listener on the host that records connections. */
static int
trap_listen(const char *path)
{
	int fd = tutil_unix_listen(path, SOCK_NONBLOCK);

	cr_assert_eq(chown(path, xt.cfg.uid, xt.cfg.gid), 0);	/* owner looks right */
	return fd;
}

static bool
trap_contacted(int fd)
{
	int c = accept(fd, NULL, NULL);

	if (c != -1)
		close(c);
	return c != -1;
}

Test(agent, answers_and_starts_with_the_container)
{
	struct yx_exec_output	out;
	struct yx_exec_stats	st;

	run("t-up", "echo one; echo two >&2; exit 5", &out);
	cr_assert_str_eq(out.output, "one\ntwo\n");
	cr_assert_eq(out.exit_code, 5);
	yx_exec_output_fini(&out);
	/* the agent ran the shell itself: no runner in between */
	run("t-up", "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
		    "ps -o args | grep -c '^/opt/yuxi/bin/yuxi-[r]un'",
	    &out);
	cr_assert_eq(strncmp(out.output, "/opt/yuxi/bin/yuxi-agent ", 25), 0,
	    "parent: %s", out.output);
	cr_assert(strstr(out.output, "\n0\n") != NULL, "%s", out.output);
	yx_exec_output_fini(&out);
	st = stats();
	cr_assert_eq(st.agent_starts, 0, "the container's command started it");
	cr_assert_eq(st.agent_runs, 2);
	cr_assert_eq(st.engine_runs, 0);
}

Test(agent, killed_mid_command_then_next_works)
{
	struct yx_exec_output	out;
	struct yx_errctx	e;
	char			cid[128];
	pid_t			k;
	int			rc;

	exectest_expect("t-kill", "echo warm", NULL);
	exectest_container_of("t-kill", cid, sizeof(cid));
	if ((k = fork()) == 0) {
		usleep(700 * 1000);
		_exit(kill_agents(cid) >= 2 ? 0 : 1);	/* daemon + handler */
	}
	rc = exectest_try_run("t-kill", "echo started > killed.txt; sleep 5; echo late >> killed.txt",
	    0, &out, &e);
	cr_assert_eq(rc, YX_E_BACKEND_UNAVAILABLE, "got %s (%s)", yx_strerror(rc), e.msg);
	cr_assert_not(out.output != NULL);
	waitpid(k, &rc, 0);
	cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "agents not found to kill");
	run("t-kill", "ps -o args | grep -c '^sleep 5'; sleep 6; cat killed.txt", &out);
	/* ran once, and its process group died with the agent */
	cr_assert_str_eq(out.output, "0\nstarted\n", "%s", out.output);
	yx_exec_output_fini(&out);
	/* restarted with one engine exec; the container kept running */
	cr_assert_eq(stats().agent_starts, 1);
	cr_assert_eq(stats().engine_runs, 0);
}

/* Replace the socket (agent still alive, so a restart cannot fix it) by a
 * symlink to target; then a command must run via the engine path. */
static void
symlink_case(const char *tid, const char *target, int trap)
{
	struct yx_exec_output	out;
	struct yx_exec_stats	before;
	struct yx_errctx	e;
	char			cmd[1024], cid[128];
	unsigned		su = xt.cfg.uid;
	int			rc, fd = -1, rdfd;
	char			rd[600];

	snprintf(cmd, sizeof(cmd), "ln -sf '%s' " YX_AGENT_SOCK_TARGET " && echo linked",
	    target);
	exectest_expect(tid, cmd, "linked\n");
	/* the host refuses the link itself, before any connect */
	cr_assert_eq(yx_agent_rundir_open(xt.saves, tid, &su, xt.cfg.gid, rd,
			 sizeof(rd), &rdfd, NULL),
	    YX_OK);
	yx_errctx_clear(&e);
	cr_assert_eq(yx_agent_connect(rdfd, xt.cfg.uid, &fd, &e), YX_E_BACKEND_UNAVAILABLE);
	cr_assert(strstr(e.msg, "symbolic") != NULL ||
		strstr(e.msg, "not a socket") != NULL,
	    "%s", e.msg);
	close(rdfd);
	before = stats();
	rc = exectest_try_run(tid, "hostname", 0, &out, &e);
	cr_assert_eq(rc, YX_OK, "%s", e.msg);
	exectest_container_of(tid, cid, sizeof(cid));
	cr_assert_eq(strncmp(out.output, cid, 12), 0,
	    "ran in the wrong sandbox: %s vs %s", out.output, cid);
	yx_exec_output_fini(&out);
	cr_assert_eq(stats().engine_runs, before.engine_runs + 1);
	cr_assert_eq(stats().agent_refused, before.agent_refused + 1);
	if (trap != -1)
		cr_assert_not(trap_contacted(trap), "the host followed the symlink");
}

Test(agent, socket_symlink_to_host_socket_refused)
{
	char	path[300];
	int	trap;

	snprintf(path, sizeof(path), "%s/trap.sock", xt.saves);
	trap = trap_listen(path);
	symlink_case("t-trap", path, trap);
	close(trap);
}

Test(agent, socket_symlink_to_docker_sock_refused)
{
	symlink_case("t-dock", "/var/run/docker.sock", -1);
}

Test(agent, socket_symlink_to_other_thread_refused)
{
	struct yx_exec_output	out;
	char			other[600];
	int			trap;

	run("t-a", "hostname", &out);	/* t-a's agent now listens */
	yx_exec_output_fini(&out);
	snprintf(other, sizeof(other), "%s/run/t-a/" YX_AGENT_SOCK_NAME, xt.saves);
	/* put a recording listener in the place of t-a's socket */
	(void)unlink(other);
	trap = trap_listen(other);
	symlink_case("t-b", other, trap);
	symlink_case("t-c", "../t-a/" YX_AGENT_SOCK_NAME, trap);
	close(trap);
}

Test(agent, fake_agent_lying_about_sizes)
{
	struct yx_exec_output	out;
	char			cid[128], path[600];
	unsigned char		lie[5] = { 'O', 0xff, 0xff, 0xff, 0xff };
	pid_t			pid;
	int			lfd, c;

	exectest_expect("t-fake", "echo warm", NULL);
	exectest_container_of("t-fake", cid, sizeof(cid));
	cr_assert_geq(kill_agents(cid), 1);
	usleep(100 * 1000);
	snprintf(path, sizeof(path), "%s/run/t-fake/" YX_AGENT_SOCK_NAME, xt.saves);
	(void)unlink(path);
	lfd = trap_listen(path);	/* owned by the sandbox uid */
	(void)fcntl(lfd, F_SETFL, 0);
	if ((pid = fork()) == 0) {
		while ((c = accept(lfd, NULL, NULL)) != -1) {
			(void)!write(c, lie, sizeof(lie));
			close(c);
		}
		_exit(0);
	}
	close(lfd);
	run("t-fake", "echo real", &out);
	cr_assert_str_eq(out.output, "real\n");
	cr_assert_eq(out.exit_code, 0);
	yx_exec_output_fini(&out);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(agent, latency_sanity)
{
	struct yx_exec_output	out;
	int64_t			t[21], t0, tmp;
	int			i, j;

	exectest_expect("t-lat", "echo warm", NULL);
	for (i = 0; i < 21; i++) {
		t0 = yx_mono_us();
		run("t-lat", "echo hi", &out);
		t[i] = yx_mono_us() - t0;
		cr_assert_str_eq(out.output, "hi\n");
		yx_exec_output_fini(&out);
	}
	for (i = 0; i < 21; i++)
		for (j = i + 1; j < 21; j++)
			if (t[j] < t[i]) {
				tmp = t[i];
				t[i] = t[j];
				t[j] = tmp;
			}
	cr_log_info("agent echo hi: median %.2f ms, max %.2f ms", t[10] / 1000.0,
	    t[20] / 1000.0);
	fprintf(stderr, "agent echo hi: median %.2f ms, max %.2f ms\n",
	    t[10] / 1000.0, t[20] / 1000.0);
	cr_assert_eq(stats().agent_runs, 22);
}
