# SPDX-License-Identifier: MIT
# tests/agentcfg: the agent configuration registry (src/agentcfg).
#   test_agents    skill selection: the config's, else the agent's, else none
#   test_profiles  sandbox profiles: selection, every key checked, errors
#                  with their JSON path, fingerprints, the settings applied
AGENTCFG_TESTS = tests/agentcfg/test_agents tests/agentcfg/test_profiles
check_PROGRAMS += $(AGENTCFG_TESTS)
TESTS += $(AGENTCFG_TESTS)
