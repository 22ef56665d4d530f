// SPDX-License-Identifier: MIT
// vitest configuration of the adapter's tests. The conformance suite is
// TypeScript source outside this package (../shared/third_party/...,
// beside the checkout): its bare imports of "deepagents" resolve to this
// package's copy.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const deepagents = fileURLToPath(import.meta.resolve("deepagents"));

export default defineConfig({
	resolve: {
		alias: [{ find: /^deepagents$/, replacement: deepagents }],
	},
	test: {
		include: ["test/**/*.test.js"],
		testTimeout: 180_000,
		hookTimeout: 180_000,
		fileParallelism: false,
		server: { deps: { inline: [/sandbox-standard-tests/] } },
	},
});
