// SPDX-License-Identifier: MIT
// The deepagents conformance suite for sandbox backends
// (@langchain/sandbox-standard-tests 2.0.0, 93 tests), run against the
// real service through nginx. The suite is not on the npm registry: it is
// used from ../shared/third_party/sandbox-standard-tests beside the
// checkout and never copied into the project.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { YuxiSandbox, bridgesUsed } from "../src/index.js";
import { noService, service, suiteDir, threadId } from "./service.js";

const entry = path.join(suiteDir, "src", "index.ts");

if (!fs.existsSync(entry)) {
	describe.skip(`deepagents conformance suite: ${suiteDir} is absent; skipped`, () => {
		it("93 conformance tests", () => {});
	});
	console.warn(`conformance: ${suiteDir} is absent (../shared beside the checkout); this part is skipped`);
} else if (noService) {
	describe.skip(`deepagents conformance suite: ${noService}`, () => {
		it("93 conformance tests", () => {});
	});
} else {
	const { sandboxStandardTests } = await import(pathToFileURL(entry).href);
	const opts = () => ({ ...service, threadId: threadId("conf"), deleteOnClose: true });
	sandboxStandardTests({
		name: "YuxiSandbox",
		runner: { describe, it, expect, beforeAll, afterAll },
		sequential: true,
		timeout: 120_000,
		createSandbox: (o) => YuxiSandbox.create({ ...opts(), ...o }),
		createUninitializedSandbox: () => new YuxiSandbox(opts()),
		closeSandbox: (sb) => sb.close(),
		resolvePath: (name) => `/home/yuxi/user-data/workspace/${name}`,
	});
	afterAll(() => {
		console.log("conformance: workarounds for pending API changes used:",
		    JSON.stringify(bridgesUsed()));
	});
}
