# SPDX-License-Identifier: MIT
# tests/e2e: end-to-end tests against the real service (nginx + yuxi-sandboxd
# + dockerd), driven by pytest; the .sh test uses the plain driver.
TESTS += tests/e2e/run-e2e-1.sh tests/e2e/run-e2e-2.sh
EXTRA_DIST += tests/e2e/run-e2e.sh tests/e2e/run-e2e-1.sh tests/e2e/run-e2e-2.sh \
	tests/e2e/conftest.py \
	tests/e2e/test_service.py tests/e2e/test_threads.py tests/e2e/test_fs.py \
	tests/e2e/test_namespace.py \
	tests/e2e/test_lifecycle.py tests/e2e/test_capacity.py tests/e2e/test_downloads.py \
	tests/e2e/test_quota.py tests/e2e/test_limits.py tests/e2e/test_observe.py \
	tests/e2e/test_snapshots.py tests/e2e/test_tx.py tests/e2e/test_tx_kill.py \
	tests/e2e/test_tx_tiers.py \
	tests/e2e/test_pool.py tests/e2e/test_pool_killloop.py \
	tests/e2e/test_nginx_conf.py tests/e2e/test_recipes.py tests/e2e/test_site.py \
	tests/e2e/test_profiles.py tests/e2e/test_network.py tests/e2e/test_primed.py \
	tests/e2e/test_valgrind.py tests/e2e/vg_canary.c tests/e2e/test_cli_dev.py tests/e2e/test_fit.py tests/e2e/test_orphans.py tests/e2e/test_sessions_rt.py \
	examples/egress-hosts \
	nginx/dev.conf.in nginx/yuxi-sandbox.conf scripts/run-service.sh docs/nginx.md \
	examples/agents.json examples/skills/python-basics/SKILL.md \
	examples/skills/python-basics/csv_summary.py examples/skills/shell-tips/SKILL.md
