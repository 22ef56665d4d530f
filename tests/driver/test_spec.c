/* SPDX-License-Identifier: MIT */
/*
 * test_spec.c - the container spec as an Engine API create body and as a
 * `docker run` command line (spec.c): every hardening field from the
 * configuration, operator security options, mounts, port publishing only
 * when asked, no engine log, the runtime (runsc: the process limit as
 * RLIMIT_NPROC, the host's pids limit scaled), no engine network setup
 * for mode "none" with the caller's /etc/hosts, and the list prefix filter.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "driver/driver_int.h"

static struct yx_config			cfg;
static const struct yx_mount		mounts[] = {
	{ "/srv/t/user-data", "/home/yuxi/user-data", false },
	{ "/srv/skills/pdf", "/home/yuxi/skills/pdf", true },
};
static struct yx_container_spec		spec;

static void
setup(void)
{
	yx_config_defaults(&cfg);
	spec = (struct yx_container_spec){ "yuxi-sandbox-abcd1234",
		"yuxi-sandbox:latest", "thread-1", "abcd1234", "fp1", mounts, 2,
		0, &cfg, 0, 0, NULL, NULL, 0, false };
}

/* Value at a dotted path ("HostConfig.Memory"); NULL if absent. */
static struct json_object *
at(struct json_object *o, const char *path)
{
	char	 buf[256], *p, *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; o != NULL && (tok = strtok_r(p, ".", &save)) != NULL;
	     p = NULL)
		if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	return o;
}

static const char *
str_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? json_object_get_string(v) : "(absent)";
}

/* The string member key of o: for keys with dots (labels, tmpfs paths). */
static const char *
member(struct json_object *o, const char *key)
{
	return json_object_get_string(json_object_object_get(o, key));
}

Test(spec, create_body_hardening, .init = setup)
{
	struct yx_errctx	 err;
	struct json_object	*b = yx_spec_create_body(&spec, &err), *v;

	cr_assert(b != NULL, "%s", err.msg);
	cr_expect_str_eq(str_at(b, "Image"), "yuxi-sandbox:latest");
	cr_expect_str_eq(str_at(b, "User"), "1000:1000");
	cr_expect(at(b, "WorkingDir") == NULL);
	v = at(b, "Labels");
	cr_assert(v != NULL);
	cr_expect_str_eq(member(v, "io.yuxi.sandbox"), "1");
	cr_expect_str_eq(member(v, "io.yuxi.sandbox.thread"), "thread-1");
	cr_expect_str_eq(member(v, "io.yuxi.sandbox.id"), "abcd1234");
	cr_expect_str_eq(member(v, "io.yuxi.sandbox.skills"), "fp1");
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(
			     at(b, "Env"), 0)),
	    "HOME=/home/yuxi");
	cr_expect_str_eq(str_at(b, "HostConfig.NetworkMode"), "none");
	cr_expect_str_eq(str_at(b, "HostConfig.Runtime"), "runc");
	cr_expect(at(b, "HostConfig.Ulimits") == NULL);
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.Memory")),
	    512LL << 20);
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.MemorySwap")),
	    512LL << 20);
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.NanoCpus")),
	    1000000000LL);
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.PidsLimit")), 256);
	cr_expect(json_object_get_boolean(at(b, "HostConfig.Init")));
	cr_expect(json_object_get_boolean(at(b, "HostConfig.ReadonlyRootfs")));
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.CapDrop"),
			     JSON_C_TO_STRING_PLAIN),
	    "[\"ALL\"]");
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.SecurityOpt"),
			     JSON_C_TO_STRING_PLAIN),
	    "[\"no-new-privileges\"]");
	v = at(b, "HostConfig.Tmpfs");
	cr_assert(v != NULL);
	cr_expect_str_eq(member(v, "/tmp"), "rw,nosuid,nodev,size=67108864");
	cr_expect_str_eq(member(v, "/home/yuxi"),
	    "rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0755");
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.Mounts"),
			     JSON_C_TO_STRING_PLAIN |
				 JSON_C_TO_STRING_NOSLASHESCAPE),
	    "[{\"Type\":\"bind\",\"Source\":\"/srv/t/user-data\",\"Target\":"
	    "\"/home/yuxi/user-data\",\"ReadOnly\":false},{\"Type\":\"bind\","
	    "\"Source\":\"/srv/skills/pdf\",\"Target\":\"/home/yuxi/skills/pdf\","
	    "\"ReadOnly\":true}]");
	cr_expect(at(b, "HostConfig.PortBindings") == NULL);
	cr_expect(at(b, "ExposedPorts") == NULL);
	/* no engine log: /proc/1/fd/1 leads nowhere a command can fill */
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.LogConfig"),
			     JSON_C_TO_STRING_PLAIN),
	    "{\"Type\":\"none\"}");
	json_object_put(b);
}

Test(spec, operator_options_and_port, .init = setup)
{
	struct yx_errctx	 err;
	struct json_object	*b;

	snprintf(cfg.security_opts, sizeof(cfg.security_opts),
	    " seccomp=/etc/yuxi/seccomp.json ,, no-new-privileges, "
	    "apparmor=yuxi ");
	cfg.readonly_rootfs = false;
	cfg.cpus = 1.5;
	spec.host_port = 18080;
	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.SecurityOpt"),
			     JSON_C_TO_STRING_PLAIN |
				 JSON_C_TO_STRING_NOSLASHESCAPE),
	    "[\"no-new-privileges\","
	    "\"seccomp=/etc/yuxi/seccomp.json\",\"apparmor=yuxi\"]");
	cr_expect(!json_object_get_boolean(at(b, "HostConfig.ReadonlyRootfs")));
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.NanoCpus")),
	    1500000000LL);
	cr_expect_str_eq(json_object_to_json_string_ext(at(b,
							    "HostConfig.PortBindings"),
			     JSON_C_TO_STRING_PLAIN),
	    "{\"8080\\/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":"
	    "\"18080\"}]}");
	cr_expect(at(b, "ExposedPorts") != NULL);
	json_object_put(b);
}

/* The argv as one space-joined string. */
static void
joined(char **argv, char *dst, size_t len)
{
	size_t i;

	dst[0] = '\0';
	for (i = 0; argv[i] != NULL; i++) {
		strncat(dst, argv[i], len - strlen(dst) - 1);
		strncat(dst, " ", len - strlen(dst) - 1);
	}
}

/*
 * Network mode "none" with the caller's own /etc/hosts: the engine is asked
 * to set up no network at all (Config.NetworkDisabled); not without that
 * mount, not for another mode, not with a published port, never in the
 * `docker run` form (which cannot say it).
 */
Test(spec, no_engine_network, .init = setup)
{
	static const struct yx_mount	 hm[] = {
		{ "/srv/t/user-data", "/home/yuxi/user-data", false },
		{ "/srv/etc/hosts", YX_SPEC_HOSTS, true },
	};
	struct yx_errctx		 err;
	struct json_object		*b;
	char				**argv = NULL, s[4096];

	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect(at(b, "NetworkDisabled") == NULL);
	json_object_put(b);
	spec.mounts = hm;
	spec.nmounts = 2;
	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect(json_object_get_boolean(at(b, "NetworkDisabled")));
	cr_expect_str_eq(str_at(b, "HostConfig.NetworkMode"), "none");
	json_object_put(b);
	cr_assert_eq(yx_spec_run_argv(&spec, &argv, &err), YX_OK);
	joined(argv, s, sizeof(s));
	cr_expect(strstr(s, " --network none ") != NULL, "%s", s);
	cr_expect(strstr(s, "target=/etc/hosts,readonly") != NULL, "%s", s);
	yx_spec_argv_free(argv);
	spec.host_port = 18080;
	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect(at(b, "NetworkDisabled") == NULL);
	json_object_put(b);
	spec.host_port = 0;
	snprintf(cfg.network, sizeof(cfg.network), "bridge");
	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect(at(b, "NetworkDisabled") == NULL);
	cr_expect_str_eq(str_at(b, "HostConfig.NetworkMode"), "bridge");
	json_object_put(b);
}

Test(spec, run_argv, .init = setup)
{
	struct yx_errctx	 err;
	char			**argv = NULL, s[4096];

	cr_assert_eq(yx_spec_run_argv(&spec, &argv, &err), YX_OK);
	joined(argv, s, sizeof(s));
	cr_expect_str_eq(s, "docker run -d --pull never --name "
			    "yuxi-sandbox-abcd1234 --label io.yuxi.sandbox=1 --label "
			    "io.yuxi.sandbox.thread=thread-1 --label io.yuxi.sandbox.id=abcd1234 "
			    "--label io.yuxi.sandbox.skills=fp1 --user 1000:1000 --env "
			    "HOME=/home/yuxi --env YUXI_SHIM_GROUP=yuxi-sandbox-g2 "
			    "--network none --runtime runc --cap-drop ALL "
			    "--security-opt "
			    "no-new-privileges --init --tmpfs /tmp:rw,nosuid,nodev,size=67108864 "
			    "--tmpfs /home/yuxi:rw,nosuid,nodev,size=64m,uid=1000,gid=1000,"
			    "mode=0755 --read-only --log-driver none --memory 536870912 "
			    "--memory-swap 536870912 "
			    "--cpus 1.000 --pids-limit 256 --mount type=bind,source=/srv/t/"
			    "user-data,target=/home/yuxi/user-data --mount type=bind,source="
			    "/srv/skills/pdf,target=/home/yuxi/skills/pdf,readonly -- "
			    "yuxi-sandbox:latest ");
	yx_spec_argv_free(argv);
	spec.host_port = 18080;
	cr_assert_eq(yx_spec_run_argv(&spec, &argv, &err), YX_OK);
	joined(argv, s, sizeof(s));
	cr_expect(strstr(s, " --publish 127.0.0.1:18080:8080 ") != NULL, "%s",
	    s);
	yx_spec_argv_free(argv);
}

Test(spec, run_argv_refuses_comma_path, .init = setup)
{
	struct yx_errctx		 err;
	char				**argv = NULL;
	static const struct yx_mount	 bad[] = {
		{ "/srv/a,b", "/home/yuxi/user-data", false }
	};

	spec.mounts = bad;
	spec.nmounts = 1;
	cr_expect_eq(yx_spec_run_argv(&spec, &argv, &err), YX_E_BAD_REQUEST);
	cr_expect(argv == NULL);
}

Test(spec, list_filter, .init = setup)
{
	struct yx_container_info v[6];

	memset(v, 0, sizeof(v));
	snprintf(v[0].name, sizeof(v[0].name), "yuxi-sandbox-0123abcd");
	snprintf(v[1].name, sizeof(v[1].name), "other-0123abcd");
	snprintf(v[2].name, sizeof(v[2].name), "yuxi-sandbox-0123456789ab");
	/* another instance whose prefix starts with ours */
	snprintf(v[3].name, sizeof(v[3].name), "yuxi-sandbox-e2e-0123abcd");
	snprintf(v[4].name, sizeof(v[4].name), "yuxi-sandbox-0123");	/* too short */
	snprintf(v[5].name, sizeof(v[5].name), "yuxi-sandbox-0123ABCD");	/* not ours */
	cr_assert_eq(yx_driver_list_filter(&cfg, v, 6), 2);
	cr_expect_str_eq(v[0].name, "yuxi-sandbox-0123abcd");
	cr_expect_str_eq(v[1].name, "yuxi-sandbox-0123456789ab");
}

Test(spec, name_regex)
{
	char	re[YX_DRIVER_NAME_RE_MAX], p[64];

	yx_driver_name_regex("yuxi-sandbox-", re, sizeof(re));
	cr_expect_str_eq(re, "^/yuxi-sandbox-");
	yx_driver_name_regex("a.b_c.", re, sizeof(re));
	cr_expect_str_eq(re, "^/a\\.b_c\\.", "dots escaped: %s", re);
	yx_driver_name_regex("", re, sizeof(re));
	cr_expect_str_eq(re, "^/");
	/* the longest prefix, all dots, fits whole */
	memset(p, '.', sizeof(p) - 1);
	p[sizeof(p) - 1] = '\0';
	yx_driver_name_regex(p, re, sizeof(re));
	cr_expect_eq(strlen(re), 2 + 2 * 63);
	/* a short buffer truncates between characters, never mid-escape */
	yx_driver_name_regex("a.b", re, 5);
	cr_expect_str_eq(re, "^/a");
}

Test(spec, command_after_the_image, .init = setup)
{
	static const char *const cmd[] = { "/opt/yuxi/bin/yuxi-agent",
		"--init", "--socket", "/opt/yuxi/run/agent.sock", NULL };
	struct yx_errctx	  err;
	struct json_object	 *b, *c;
	char			**argv = NULL, s[4096];

	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_expect(at(b, "Cmd") == NULL, "no command: the image's");
	json_object_put(b);
	spec.cmd = cmd;
	cr_assert((b = yx_spec_create_body(&spec, &err)) != NULL);
	cr_assert((c = at(b, "Cmd")) != NULL);
	cr_expect_eq(json_object_array_length(c), 4);
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(c, 1)),
	    "--init");
	json_object_put(b);
	cr_assert_eq(yx_spec_run_argv(&spec, &argv, &err), YX_OK);
	joined(argv, s, sizeof(s));
	cr_expect(strstr(s, " -- yuxi-sandbox:latest /opt/yuxi/bin/yuxi-agent "
			    "--init --socket /opt/yuxi/run/agent.sock ") != NULL,
	    "%s", s);
	yx_spec_argv_free(argv);
}

/* gVisor: the runtime, the process limit inside (RLIMIT_NPROC) and the
 * host's pids limit scaled for gVisor's own tasks, in both forms. */
Test(spec, runsc, .init = setup)
{
	struct yx_errctx	 err;
	struct json_object	*b;
	char			**argv = NULL, s[4096];
	size_t			 i, n = 0;

	snprintf(cfg.runtime, sizeof(cfg.runtime), "runsc");
	cfg.pids = 100;
	cr_assert_not_null(b = yx_spec_create_body(&spec, &err), "%s", err.msg);
	cr_expect_str_eq(str_at(b, "HostConfig.Runtime"), "runsc");
	cr_expect_str_eq(str_at(b, "HostConfig.NetworkMode"), "none");
	cr_expect_eq(json_object_get_int64(at(b, "HostConfig.PidsLimit")), 100 * 10 + 128);
	cr_expect_str_eq(json_object_to_json_string_ext(at(b, "HostConfig.Ulimits"),
			     JSON_C_TO_STRING_PLAIN),
	    "[{\"Name\":\"nproc\",\"Soft\":100,\"Hard\":100}]");
	json_object_put(b);
	cr_assert_eq(yx_spec_run_argv(&spec, &argv, &err), YX_OK);
	for (i = 0; argv[i] != NULL; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, "%s ", argv[i]);
	cr_expect(strstr(s, "--runtime runsc ") != NULL, "%s", s);
	cr_expect(strstr(s, "--pids-limit 1128 --ulimit nproc=100:100 ") != NULL, "%s", s);
	cr_expect(strstr(s, "YUXI_SHIM_GROUP") == NULL, "gVisor is not grouped: %s", s);
	yx_spec_argv_free(argv);
}

/* The engine shim group (docs/configuration.md "Shim groups"): the sandbox
 * id's hash modulo max_replicas / YUXI_SHIM_GROUP_SIZE, in the container's
 * environment; none when off. */
Test(spec, shim_group, .init = setup)
{
	struct yx_errctx	 err;
	struct json_object	*b, *env;
	char			 g[160];
	bool			 seen[7] = { false };
	char			 id[16];
	int			 i, k, n = 0;

	cr_assert_not_null(b = yx_spec_create_body(&spec, &err), "%s", err.msg);
	env = at(b, "Env");
	cr_assert_eq(json_object_array_length(env), 2);
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(env, 1)),
	    "YUXI_SHIM_GROUP=yuxi-sandbox-g2");
	json_object_put(b);
	/* 100 replicas, 16 per shim: 7 groups, each used by some ids */
	for (i = 0; i < 200; i++) {
		snprintf(id, sizeof(id), "%08x", (unsigned)i * 2654435761u);
		spec.sandbox_id = id;
		cr_assert(yx_spec_shim_group(&spec, g, sizeof(g)));
		cr_assert_eq(sscanf(g, "YUXI_SHIM_GROUP=yuxi-sandbox-g%d", &k), 1, "%s", g);
		cr_assert(k >= 0 && k < 7, "%s", g);
		seen[k] = true;
	}
	for (k = 0; k < 7; k++)
		n += seen[k];
	cr_expect_eq(n, 7);
	spec.own_shim = true;	/* a transaction's container */
	cr_expect_not(yx_spec_shim_group(&spec, g, sizeof(g)));
	cr_expect_not(yx_spec_grouped(&spec));
	spec.own_shim = false;
	cr_expect(yx_spec_grouped(&spec));
	/* a prefix too long for the shim's 128 characters: not grouped */
	memset(cfg.container_prefix, 'p', 63);
	cfg.container_prefix[63] = '\0';
	cr_expect(yx_spec_shim_group(&spec, g, sizeof(g)), "63 + g + n fits");
	cfg.shim_group_size = 0;
	cr_expect_not(yx_spec_shim_group(&spec, g, sizeof(g)));
	cr_assert_not_null(b = yx_spec_create_body(&spec, &err), "%s", err.msg);
	cr_expect_eq(json_object_array_length(at(b, "Env")), 1);
	json_object_put(b);
}
