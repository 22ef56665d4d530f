# SPDX-License-Identifier: MIT
# tests/proof: the proof suites of docs/security.md, part B (groups 3, 7, 8
# and 9), run by pytest against the real service (nginx + TLS + workers +
# reaper + dockerd). Group 3's controls use the security suite's control
# daemon tests/security/yuxi-sandboxd-control-broker; group 9 uses
# tests/proof/lockhold, which takes the shared table's lock and stops itself,
# and for the controls of reload and stop (test_g9_reload.py) the control
# daemon tests/security/yuxi-sandboxd-control with YX_CONTROL_OFF=drain.
# `make check` runs the quick sizes (run-proof.sh, in three shards run side
# by side: run-proof-N.sh), `make check-soak` the
# full ones (run-proof-soak.sh, in the same three shards, side by side:
# 10,000 race tries, long kill loops, the
# provider kill-loop soak's numbers, and the engine restart when
# YUXI_PROOF_ENGINE_RESTART=1); `make check-runsc` runs groups 3, 7 and
# 8's exhaustion again under gVisor (YUXI_PROOF_SELECT).
check_PROGRAMS += tests/proof/lockhold
tests_proof_lockhold_SOURCES = tests/proof/lockhold.c
tests_proof_lockhold_LDADD = $(YX_LIBS)

TESTS += tests/proof/run-proof-1.sh tests/proof/run-proof-2.sh \
	tests/proof/run-proof-3.sh
PROOF_SHARDS = tests/proof/run-proof-1.sh tests/proof/run-proof-2.sh \
	tests/proof/run-proof-3.sh
SOAK_TESTS += tests/proof/run-proof-soak-1.sh tests/proof/run-proof-soak-2.sh \
	tests/proof/run-proof-soak-3.sh
EXTRA_DIST += tests/proof/run-proof.sh tests/proof/run-proof-soak.sh \
	tests/proof/run-proof-soak-1.sh tests/proof/run-proof-soak-2.sh \
	tests/proof/run-proof-soak-3.sh \
	tests/proof/run-proof-1.sh tests/proof/run-proof-2.sh tests/proof/run-proof-3.sh \
	tests/proof/prooffix.py \
	tests/proof/test_g3_hostside.py tests/proof/test_g7_confine.py \
	tests/proof/test_g8_exhaust.py tests/proof/test_g8_budget.py \
	tests/proof/test_g9_lifecycle.py tests/proof/test_g9_reload.py \
	tests/proof/test_g12_tenants.py tests/proof/test_g8_quota.py \
	tests/proof/test_g12_pool.py tests/proof/test_g9_supervise.py
CLEANFILES += tests/proof/results.json tests/proof/results-1.json \
	tests/proof/results-2.json tests/proof/results-3.json \
	tests/proof/results-soak*.json
