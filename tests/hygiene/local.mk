# SPDX-License-Identifier: MIT
# tests/hygiene: rules on the source tree itself (docs/architecture.md
# "Layers"): no call cycle between source files, the table lock only in
# src/provider, no header of the top layers included below them, no
# reference to a document outside the repository; every file names its
# license (check-spdx.sh); every setting is in the installed configuration
# file, its manual page and docs/configuration.md (check-conf.sh).
TESTS += tests/hygiene/check-layers.sh tests/hygiene/check-spdx.sh \
	tests/hygiene/check-conf.sh
EXTRA_DIST += tests/hygiene/check-layers.sh tests/hygiene/check-layers.py \
	tests/hygiene/check-spdx.sh tests/hygiene/check-conf.sh
