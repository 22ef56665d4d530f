/* SPDX-License-Identifier: MIT */
/*
 * test_profiles.c - sandbox profiles of the agents file (src/agentcfg):
 * selection (the config's, else the agent's, else "default", else the
 * built-in), every key parsed and checked, unknown keys and bad values
 * refused with the JSON path and key (line and column for a syntax
 * error), a fingerprint that changes with every field, and the settings
 * a profile gives a sandbox.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/agents.h"

static char base[64], file[128];

static void
write_file(const char *text)
{
	FILE *f = fopen(file, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	snprintf(base, sizeof(base), "/tmp/yx-profiles-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(file, sizeof(file), "%s/agents.json", base);
}

static void
teardown(void)
{
	unlink(file);
	rmdir(base);
}

TestSuite(profiles, .init = setup, .fini = teardown);

/* Load text; YX_OK asserted. */
static struct yx_agents *
load_ok(const char *text)
{
	struct yx_agents	*ag = NULL;
	struct yx_errctx	 e;

	write_file(text);
	yx_errctx_clear(&e);
	cr_assert_eq(yx_agents_load(&ag, file, NULL, &e), YX_OK, "%s: %s", text,
	    e.msg);
	return ag;
}

#define FULL                                                                        \
	"{\"profiles\":[{\"id\":\"default\",\"memory\":\"1g\"},"                    \
	"{\"id\":\"gv\",\"runtime\":\"runsc\",\"image\":\"img:1\",\"cpus\":0.5,"     \
	"\"pids\":64,\"tmp_size\":\"32m\",\"memory\":268435456,"                    \
	"\"exec_timeout\":{\"default\":30,\"max\":90},\"workspace\":\"ro\","       \
	"\"network\":{\"allow\":[\"Pypi.Example.:443\",\"*.github.example:*\"],"     \
	"\"allow_private\":[\"pypi.example\"]},"                                  \
	"\"env\":{\"FOO\":\"bar=baz\",\"PATH\":\"/x\"},\"_note\":1,"               \
	"\"description\":\"d\"},"                                                   \
	"{\"id\":\"ro\",\"workspace\":\"ro\",\"exec_timeout\":20}],"                \
	"\"agents\":[{\"id\":\"a\",\"profile\":\"gv\",\"configs\":[{\"id\":\"c\","   \
	"\"profile\":\"ro\"},{\"id\":\"d\"}]},{\"id\":\"b\"}]}"

Test(profiles, selection_rule)
{
	struct yx_agents	*ag = load_ok(FULL);

	cr_assert_str_eq(yx_agents_profile(ag, "a", "c")->id, "ro");	/* config */
	cr_assert_str_eq(yx_agents_profile(ag, "a", "d")->id, "gv");	/* agent */
	cr_assert_str_eq(yx_agents_profile(ag, "a", "")->id, "gv");
	cr_assert_str_eq(yx_agents_profile(ag, "b", NULL)->id, "default");
	cr_assert_str_eq(yx_agents_profile(ag, "", NULL)->id, "default");
	cr_assert_str_eq(yx_agents_profile(ag, "nobody", "x")->id, "default");
	cr_assert_eq(yx_agents_profile(ag, "b", NULL)->memory_bytes, 1LL << 30);
	yx_agents_free(ag);
	/* without a "default": the built-in one, every value from the service */
	ag = load_ok("{\"agents\":[{\"id\":\"b\"}]}");
	cr_assert_eq(yx_agents_profile(ag, "b", NULL), yx_profile_default());
	cr_assert_eq(yx_profile_default()->memory_bytes, 0);
	cr_assert_str_eq(yx_profile_default()->id, "default");
	yx_agents_free(ag);
}

Test(profiles, every_key)
{
	struct yx_agents	*ag = load_ok(FULL);
	const struct yx_profile	*p = yx_agents_profile(ag, "a", NULL);

	cr_assert_str_eq(p->runtime, "runsc");
	cr_assert_str_eq(p->image, "img:1");
	cr_assert_float_eq(p->cpus, 0.5, 1e-9);
	cr_assert_eq(p->pids, 64);
	cr_assert_eq(p->tmp_size, 32LL << 20);
	cr_assert_eq(p->memory_bytes, 268435456LL);
	cr_assert_eq(p->exec_timeout, 30);
	cr_assert_eq(p->exec_timeout_max, 90);
	cr_assert_eq(p->workspace, YX_WORKSPACE_RO);
	cr_assert_eq(p->net.nallow, 2);
	cr_assert_str_eq(p->net.allow[0].host, "pypi.example");
	cr_assert_eq(p->net.allow[0].port, 443);
	cr_assert_str_eq(p->net.allow[1].host, "*.github.example");
	cr_assert_eq(p->net.allow[1].port, 0);
	cr_assert_eq(p->net.nprivate, 1);
	cr_assert_eq(p->nenv, 2);
	cr_assert(strcmp(p->env[0], "FOO=bar=baz") == 0 || strcmp(p->env[1], "FOO=bar=baz") == 0);
	p = yx_agents_profile(ag, "a", "c");
	cr_assert_eq(p->exec_timeout, 20);
	cr_assert_eq(p->exec_timeout_max, 0);
	cr_assert_eq(p->net.nallow, 0);
	yx_agents_free(ag);
}

Test(profiles, refused_with_path_and_key)
{
	static const struct {
		const char	*text;
		const char	*want;	/* in the message */
	} bad[] = {
		{ "{\"profiles\":[{\"id\":\"p\",\"memroy\":\"1g\"}],\"agents\":[]}",
		    "profiles[0] (\"p\").memroy: unknown key" },
		{ "{\"profiles\":[{\"id\":\"p\",\"memory\":\"lots\"}],\"agents\":[]}",
		    "profiles[0] (\"p\").memory: expected a size" },
		{ "{\"profiles\":[{\"id\":\"p\",\"memory\":\"1m\"}],\"agents\":[]}",
		    ".memory: expected a size" },
		{ "{\"profiles\":[{\"id\":\"p\",\"runtime\":\"kata\"}],\"agents\":[]}",
		    ".runtime: expected \"runc\" or \"runsc\"" },
		{ "{\"profiles\":[{\"id\":\"p\",\"cpus\":\"1\"}],\"agents\":[]}", ".cpus:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"cpus\":1000}],\"agents\":[]}", ".cpus:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"pids\":8}],\"agents\":[]}", ".pids:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"tmp_size\":\"99g\"}],\"agents\":[]}",
		    ".tmp_size:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"image\":\"-x\"}],\"agents\":[]}", ".image:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"image\":\"a b\"}],\"agents\":[]}", ".image:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"exec_timeout\":601}],\"agents\":[]}",
		    ".exec_timeout:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"exec_timeout\":{\"default\":90,\"max\":30}}],"
		  "\"agents\":[]}",
		    ".exec_timeout: the default is above the max" },
		{ "{\"profiles\":[{\"id\":\"p\",\"exec_timeout\":{\"dflt\":9}}],\"agents\":[]}",
		    ".exec_timeout:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"workspace\":\"readonly\"}],\"agents\":[]}",
		    ".workspace: expected \"rw\" or \"ro\"" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":\"all\"}],\"agents\":[]}",
		    ".network: expected \"none\"" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[]}}],\"agents\":[]}",
		    ".network:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[\"a.example\"]}}],"
		  "\"agents\":[]}",
		    ".network: [0]: expected host:port" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[\"10.0.0.1:80\"]}}],"
		  "\"agents\":[]}",
		    ".network: [0]: IP literals are refused" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[\"a.example:0\"]}}],"
		  "\"agents\":[]}",
		    ".network: [0]: port must be" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[\"*:80\"]}}],"
		  "\"agents\":[]}",
		    ".network: [0]: a wildcard" },
		{ "{\"profiles\":[{\"id\":\"p\",\"network\":{\"allow\":[\"a.example:1\"],"
		  "\"deny\":[]}}],\"agents\":[]}",
		    ".network: deny: unknown key" },
		{ "{\"profiles\":[{\"id\":\"p\",\"env\":{\"HTTP_PROXY\":\"x\"}}],\"agents\":[]}",
		    ".env: HTTP_PROXY: not a variable name" },
		{ "{\"profiles\":[{\"id\":\"p\",\"env\":{\"1X\":\"x\"}}],\"agents\":[]}",
		    ".env: 1X:" },
		{ "{\"profiles\":[{\"id\":\"p\",\"env\":{\"X\":1}}],\"agents\":[]}",
		    ".env: X: expected a string" },
		{ "{\"profiles\":[{\"id\":\"p\"},{\"id\":\"p\"}],\"agents\":[]}",
		    "profiles[1].id: duplicate profile id p" },
		{ "{\"profiles\":[{\"memory\":\"1g\"}],\"agents\":[]}",
		    "profiles[0]: every profile needs a string \"id\"" },
		{ "{\"profiles\":{},\"agents\":[]}", "profiles: expected an array" },
		{ "{\"agents\":[{\"id\":\"a\",\"profile\":\"nope\"}]}",
		    "agents[0] (\"a\").profile: no profile \"nope\"" },
		{ "{\"agents\":[{\"id\":\"a\",\"configs\":[{\"id\":\"c\",\"profile\":\"x\"}]}]}",
		    "agents[0].configs[0] (\"c\").profile: no profile \"x\"" },
		{ "{\"agents\":[{\"id\":\"a\",\"profle\":\"x\"}]}",
		    "agents[0] (\"a\").profle: unknown key" },
		{ "{\"agents\":[{\"id\":\"a\",\"configs\":[{\"id\":\"c\",\"skils\":[]}]}]}",
		    "agents[0].configs[0] (\"c\").skils: unknown key" },
		{ "{\"agents\":[],\"extra\":1}", "$.extra: unknown key" },
		{ "{\"agents\":[],\n\"profiles\":[\n{\"id\" \"p\"}]}",
		    "line 3 column " },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":{}}],\"agents\":[]}",
		    ".services: expected an array" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\"}]}],"
		  "\"agents\":[]}",
		    ".services: [0]: expected {\"name\", \"command\"" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"Web\","
		  "\"command\":\"x\"}]}],\"agents\":[]}",
		    ".services: [0].name: must match [a-z][a-z0-9]{0,11}" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"abcdefghijklm\","
		  "\"command\":\"x\"}]}],\"agents\":[]}",
		    ".services: [0].name: must match" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"x\"},"
		  "{\"name\":\"a\",\"command\":\"y\"}]}],\"agents\":[]}",
		    ".services: [1].name: duplicate service a" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"\"}]}],"
		  "\"agents\":[]}",
		    ".services: [0].command: expected a string without NUL" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"x\\u0000y\"}]}],"
		  "\"agents\":[]}",
		    ".services: [0].command: expected a string without NUL" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"x\","
		  "\"ready\":{\"port\":0}}]}],\"agents\":[]}",
		    ".services: [0].ready: expected {\"port\": 1..65535}" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"x\","
		  "\"ready\":{\"port\":80,\"path\":\"/\"}}]}],\"agents\":[]}",
		    ".services: [0].ready: expected" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"x\","
		  "\"restart\":\"always\"}]}],\"agents\":[]}",
		    ".services: [0].restart: unknown key" },
		{ "{\"profiles\":[{\"id\":\"p\",\"services\":[{\"name\":\"a\",\"command\":\"1\"},"
		  "{\"name\":\"b\",\"command\":\"1\"},{\"name\":\"c\",\"command\":\"1\"},"
		  "{\"name\":\"d\",\"command\":\"1\"},{\"name\":\"e\",\"command\":\"1\"},"
		  "{\"name\":\"f\",\"command\":\"1\"},{\"name\":\"g\",\"command\":\"1\"},"
		  "{\"name\":\"h\",\"command\":\"1\"},{\"name\":\"i\",\"command\":\"1\"}]}],"
		  "\"agents\":[]}",
		    ".services: more than 8 services" },
		/* the line of a key, found after its object's id (the same key
		 * names a valid field of an earlier profile) */
		{ "{\"profiles\":[\n{\"id\":\"a\",\n\"memroy\":\"1g\"},\n"
		  "{\"id\":\"b\",\"memroy\":\"1g\"}],\"agents\":[]}",
		    "line 3: profiles[0] (\"a\").memroy: unknown key" },
		{ "{\"profiles\":[\n{\"id\":\"a\",\"memory\":\"1g\"},\n{\"id\":\"b\",\n\n"
		  "\"memory\":\"lots\"}],\"agents\":[]}",
		    "line 5: profiles[1] (\"b\").memory: expected a size" },
	};
	struct yx_agents	*ag;
	struct yx_errctx	 e;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(bad[i].text);
		ag = (struct yx_agents *)1;
		yx_errctx_clear(&e);
		cr_expect_eq(yx_agents_load(&ag, file, NULL, &e), YX_E_BAD_REQUEST, "%s",
		    bad[i].text);
		cr_expect_null(ag);
		cr_expect(strstr(e.msg, bad[i].want) != NULL, "%s: got \"%s\", want \"%s\"",
		    bad[i].text, e.msg, bad[i].want);
	}
}

/* Changing any one field changes the fingerprint; the id does not. */
Test(profiles, fingerprint_covers_every_field)
{
	static const char *const variants[] = {
		"\"image\":\"other:2\"",
		"\"runtime\":\"runc\"",
		"\"memory\":\"300m\"",
		"\"cpus\":2",
		"\"pids\":100",
		"\"tmp_size\":\"16m\"",
		"\"exec_timeout\":{\"default\":30,\"max\":91}",
		"\"exec_timeout\":31",
		"\"workspace\":\"rw\"",
		"\"network\":{\"allow\":[\"pypi.example:444\"]}",
		"\"network\":{\"allow\":[\"pypi.example:443\"],\"allow_private\":[\"pypi.example\"]}",
		"\"env\":{\"FOO\":\"baz\"}",
		"\"services\":[{\"name\":\"web\",\"command\":\"serve\",\"ready\":{\"port\":80}}]",
		"\"services\":[{\"name\":\"web\",\"command\":\"serve \",\"ready\":{\"port\":8080}}]",
		"\"services\":[{\"name\":\"web2\",\"command\":\"serve\",\"ready\":{\"port\":8080}}]",
		"\"services\":[{\"name\":\"web\",\"command\":\"serve\"}]",
	};
	const char *basep = "\"image\":\"img:1\",\"runtime\":\"runsc\",\"memory\":\"256m\","
				  "\"cpus\":1,\"pids\":64,\"tmp_size\":\"32m\","
				  "\"exec_timeout\":{\"default\":30,\"max\":90},\"workspace\":\"ro\","
				  "\"network\":{\"allow\":[\"pypi.example:443\"]},\"env\":{\"FOO\":\"bar\"},"
				  "\"services\":[{\"name\":\"web\",\"command\":\"serve\",\"ready\":{\"port\":8080}}]";
	char			 text[2048], fp0[YX_SHA256_HEX];
	struct yx_agents	*ag;
	size_t			 i;

	snprintf(text, sizeof(text), "{\"profiles\":[{\"id\":\"default\",%s}],"
				     "\"agents\":[]}",
	    basep);
	ag = load_ok(text);
	snprintf(fp0, sizeof(fp0), "%s", yx_agents_profile(ag, "", NULL)->fp);
	yx_agents_free(ag);
	/* another id, same fields: same fingerprint */
	snprintf(text, sizeof(text), "{\"profiles\":[{\"id\":\"other\",%s}],"
				     "\"agents\":[{\"id\":\"a\",\"profile\":\"other\"}]}",
	    basep);
	ag = load_ok(text);
	cr_assert_str_eq(yx_agents_profile(ag, "a", NULL)->fp, fp0);
	yx_agents_free(ag);
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		/* json-c keeps the last of a repeated key: the variant wins */
		snprintf(text, sizeof(text), "{\"profiles\":[{\"id\":\"default\",%s,%s}],"
					     "\"agents\":[]}",
		    basep, variants[i]);
		ag = load_ok(text);
		cr_expect_str_neq(yx_agents_profile(ag, "", NULL)->fp, fp0, "%s",
		    variants[i]);
		yx_agents_free(ag);
	}
	cr_expect_str_neq(yx_profile_default()->fp, fp0);
}

Test(profiles, settings_and_timeouts)
{
	struct yx_agents	*ag = load_ok(FULL);
	struct yx_config	 cfg, eff;

	yx_config_defaults(&cfg);
	cfg.exec_timeout = 120;
	yx_profile_apply(yx_agents_profile(ag, "a", NULL), &cfg, &eff);
	cr_assert_str_eq(eff.image, "img:1");
	cr_assert_str_eq(eff.runtime, "runsc");
	cr_assert_eq(eff.memory_bytes, 268435456LL);
	cr_assert_float_eq(eff.cpus, 0.5, 1e-9);
	cr_assert_eq(eff.pids, 64);
	cr_assert_eq(eff.tmp_size, 32LL << 20);
	cr_assert_eq(eff.exec_timeout, 30);
	cr_assert_str_eq(eff.saves_dir, cfg.saves_dir);	/* the rest is cfg's */
	cr_assert_eq(yx_profile_timeout(yx_agents_profile(ag, "a", NULL), &cfg, 0), 30);
	cr_assert_eq(yx_profile_timeout(yx_agents_profile(ag, "a", NULL), &cfg, 60), 60);
	cr_assert_eq(yx_profile_timeout(yx_agents_profile(ag, "a", NULL), &cfg, 500), 90);
	/* the default profile sets memory only: the rest stays */
	yx_profile_apply(yx_agents_profile(ag, "b", NULL), &cfg, &eff);
	cr_assert_str_eq(eff.image, cfg.image);
	cr_assert_str_eq(eff.runtime, "runc");
	cr_assert_eq(eff.memory_bytes, 1LL << 30);
	cr_assert_eq(yx_profile_timeout(yx_agents_profile(ag, "b", NULL), &cfg, 0), 120);
	cr_assert_eq(yx_profile_timeout(yx_agents_profile(ag, "b", NULL), &cfg, 999), 600);
	yx_agents_free(ag);
}

Test(profiles, example_file)
{
	struct yx_agents	*ag = NULL;
	const char		*top = getenv("top_srcdir");
	char			 f[1024];

	cr_assert_not_null(top);
	snprintf(f, sizeof(f), "%s/examples/agents.json", top);
	cr_assert_eq(yx_agents_load(&ag, f, NULL, NULL), YX_OK);
	cr_assert_str_eq(yx_agents_profile(ag, "untrusted", NULL)->runtime, "runsc");
	cr_assert_eq(yx_agents_profile(ag, "reviewer", NULL)->workspace, YX_WORKSPACE_RO);
	cr_assert_eq(yx_agents_profile(ag, "coder", "review")->workspace, YX_WORKSPACE_RO);
	/* named ports only: never host:* on a name of a private address */
	cr_assert_eq(yx_agents_profile(ag, "fetcher", NULL)->net.nallow, 2);
	cr_assert_str_eq(yx_agents_profile(ag, "fetcher", NULL)->net.allow[0].host,
	    "allowed.test");
	cr_assert_eq(yx_agents_profile(ag, "fetcher", NULL)->net.allow[0].port, 80);
	cr_assert_eq(yx_agents_profile(ag, "fetcher", NULL)->net.allow[1].port, 443);
	cr_assert_eq(yx_agents_profile(ag, "coder", NULL), yx_profile_default());
	/* the browser: its image and four services, Chromium ready on 9222 */
	cr_assert_str_eq(yx_agents_profile(ag, "browser", NULL)->image,
	    "yuxi-sandbox-browser:latest");
	cr_assert_eq(yx_agents_profile(ag, "browser", NULL)->nservices, 4);
	cr_assert_str_eq(yx_agents_profile(ag, "browser", NULL)->services[1].name,
	    "chromium");
	cr_assert_eq(yx_agents_profile(ag, "browser", NULL)->services[1].ready_port, 9222);
	cr_assert_eq(yx_agents_profile(ag, "browser", NULL)->services[3].ready_port, 6080);
	yx_agents_free(ag);
}

/* A profile's services as parsed: names, commands, ready ports, order. */
Test(profiles, services)
{
	struct yx_agents	*ag = load_ok(
	    "{\"profiles\":[{\"id\":\"p\",\"services\":["
	    "{\"name\":\"display\",\"command\":\"Xvfb :99\",\"_c\":1},"
	    "{\"name\":\"web8\",\"command\":\"exec srv --port 8080\","
	    "\"ready\":{\"port\":8080},\"description\":\"d\"}]},"
	    "{\"id\":\"none\",\"services\":[]}],"
	    "\"agents\":[{\"id\":\"a\",\"profile\":\"p\"},{\"id\":\"b\",\"profile\":\"none\"}]}");
	const struct yx_profile	*p = yx_agents_profile(ag, "a", NULL);

	cr_assert_eq(p->nservices, 2);
	cr_assert_str_eq(p->services[0].name, "display");
	cr_assert_str_eq(p->services[0].command, "Xvfb :99");
	cr_assert_eq(p->services[0].ready_port, 0);
	cr_assert_str_eq(p->services[1].name, "web8");
	cr_assert_str_eq(p->services[1].command, "exec srv --port 8080");
	cr_assert_eq(p->services[1].ready_port, 8080);
	cr_assert_eq(yx_agents_profile(ag, "b", NULL)->nservices, 0);
	cr_assert_eq(yx_profile_default()->nservices, 0);
	yx_agents_free(ag);
}
