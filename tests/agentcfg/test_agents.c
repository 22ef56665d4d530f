/* SPDX-License-Identifier: MIT */
/*
 * test_agents.c - the agents registry rules (src/agentcfg): config selection,
 * else agent selection, else none; only existing skill directories (never
 * symlinks); sorted, unique; fingerprint = sha256 of names joined by '\n'.
 */
#include "config.h"

#include <sys/stat.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/agents.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"

static char base[256], skills[300], file[300];

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	char p[400];

	snprintf(base, sizeof(base), "/tmp/yx-agents-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(skills, sizeof(skills), "%s/skills", base);
	cr_assert_eq(mkdir(skills, 0755), 0);
	snprintf(p, sizeof(p), "%s/zeta", skills);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/alpha", skills);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/plainfile", skills);
	write_file(p, "x");
	snprintf(p, sizeof(p), "%s/linked", skills);
	cr_assert_eq(symlink("/tmp", p), 0);
	snprintf(file, sizeof(file), "%s/agents.json", base);
	write_file(file,
	    "{\"agents\":[{\"id\":\"coder\",\"skills\":[\"zeta\",\"alpha\",\"zeta\",\"missing\","
	    "\"plainfile\",\"linked\"],\"configs\":[{\"id\":\"none\",\"skills\":[]},"
	    "{\"id\":\"one\",\"skills\":[\"alpha\"]},{\"id\":\"inherit\"}]},"
	    "{\"id\":\"bare\"}], \"_extra\": true}");
}

static void
teardown(void)
{
	int fd = open("/tmp", O_RDONLY | O_DIRECTORY);

	yx_tree_remove(fd, base + 5);
	close(fd);
}

TestSuite(agents, .init = setup, .fini = teardown);

static struct yx_agents *
load(void)
{
	struct yx_agents *ag = NULL;
	struct yx_errctx e;

	yx_errctx_clear(&e);
	cr_assert_eq(yx_agents_load(&ag, file, skills, &e), YX_OK, "%s", e.msg);
	return ag;
}

Test(agents, selection_rules)
{
	struct yx_agents *ag = load();
	struct yx_skill_set s;

	cr_assert_eq(yx_agents_count(ag), 2);
	/* the agent's selection, filtered to real directories, sorted, unique */
	cr_assert_eq(yx_agents_skills(ag, "coder", "", &s), YX_OK);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.names[0], "alpha");
	cr_assert_str_eq(s.names[1], "zeta");
	/* a config without "skills" inherits the agent's */
	cr_assert_eq(yx_agents_skills(ag, "coder", "inherit", &s), YX_OK);
	cr_assert_eq(s.n, 2);
	/* a config's own selection wins, even when empty */
	cr_assert_eq(yx_agents_skills(ag, "coder", "one", &s), YX_OK);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.names[0], "alpha");
	cr_assert_eq(yx_agents_skills(ag, "coder", "none", &s), YX_OK);
	cr_assert_eq(s.n, 0);
	/* no selection anywhere, unknown agents, no agent: none */
	cr_assert_eq(yx_agents_skills(ag, "bare", "", &s), YX_OK);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(yx_agents_skills(ag, "ghost", "", &s), YX_OK);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(yx_agents_skills(ag, "", "", &s), YX_OK);
	cr_assert_eq(s.n, 0);
	yx_agents_free(ag);
}

Test(agents, fingerprint)
{
	struct yx_skill_set s;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(yx_skill_set_finish(&s), YX_OK);
	/* sha256("") */
	cr_assert_str_eq(s.fp, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	s.n = 3;
	strcpy(s.names[0], "b");
	strcpy(s.names[1], "a");
	strcpy(s.names[2], "b");
	cr_assert_eq(yx_skill_set_finish(&s), YX_OK);
	cr_assert_eq(s.n, 2);
	/* printf 'a\nb' | sha256sum */
	cr_assert_str_eq(s.fp, "7e18f737311b2dc3b2f269dd78396b0351f14fb66efa879f768cb23181883c78");
}

Test(agents, check)
{
	struct yx_agents *ag = load();

	cr_assert_eq(yx_agents_check(ag, "", "", NULL), YX_OK);
	cr_assert_eq(yx_agents_check(ag, "coder", "", NULL), YX_OK);
	cr_assert_eq(yx_agents_check(ag, "coder", "one", NULL), YX_OK);
	cr_assert_eq(yx_agents_check(ag, "coder", "nope", NULL), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_agents_check(ag, "ghost", "", NULL), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_agents_check(ag, "", "one", NULL), YX_E_BAD_REQUEST);
	yx_agents_free(ag);
}

Test(agents, refuses_bad_files)
{
	static const char *const bad[] = {
		"not json",
		"[]",
		"{\"agents\":{}}",
		"{\"agents\":[{\"skills\":[]}]}",
		"{\"agents\":[{\"id\":\"a b\"}]}",
		"{\"agents\":[{\"id\":\"a\"},{\"id\":\"a\"}]}",
		"{\"agents\":[{\"id\":\"a\",\"skills\":[\"../etc\"]}]}",
		"{\"agents\":[{\"id\":\"a\",\"skills\":\"x\"}]}",
		"{\"agents\":[{\"id\":\"a\",\"configs\":[{\"id\":\"c\"},{\"id\":\"c\"}]}]}",
		"{\"agents\":[]} trailing",
	};
	struct yx_agents *ag;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(file, bad[i]);
		ag = (struct yx_agents *)1;
		cr_assert_eq(yx_agents_load(&ag, file, skills, NULL), YX_E_BAD_REQUEST, "%s", bad[i]);
		cr_assert_null(ag);
	}
	cr_assert_eq(yx_agents_load(&ag, "", skills, NULL), YX_OK);
	cr_assert_eq(yx_agents_count(ag), 0);
	yx_agents_free(ag);
	yx_agents_free(NULL);
}

Test(agents, example_file_loads)
{
	struct yx_agents *ag = NULL;
	struct yx_skill_set s;
	char f[1024], d[1024];
	const char *top = getenv("top_srcdir");

	cr_assert_not_null(top);
	snprintf(f, sizeof(f), "%s/examples/agents.json", top);
	snprintf(d, sizeof(d), "%s/examples/skills", top);
	cr_assert_eq(yx_agents_load(&ag, f, d, NULL), YX_OK);
	cr_assert_eq(yx_agents_skills(ag, "coder", "", &s), YX_OK);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.names[0], "python-basics");
	cr_assert_str_eq(s.names[1], "shell-tips");
	yx_agents_free(ag);
}
