// SPDX-License-Identifier: MIT
// The deepagents conformance suite for sandbox backends
// (@langchain/sandbox-standard-tests 2.0.0, 93 tests), run against the
// real service through nginx. The suite is not on the npm registry: it is
// used from ../shared/third_party/sandbox-standard-tests beside the
// checkout and never copied into the project. With YUXI_DA_SESSION=1 the
// backend runs in session mode (session: true), the second run that
// docs/deepagents.md reports.
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
	const session = process.env.YUXI_DA_SESSION === "1";
	const opts = () => ({ ...service, threadId: threadId("conf"), deleteOnClose: true, session });
	/** sandboxes closed, and of those the ones whose commands ran in a session */
	const tally = { closed: 0, inSession: 0 };
	sandboxStandardTests({
		name: "YuxiSandbox",
		runner: { describe, it, expect, beforeAll, afterAll },
		sequential: true,
		timeout: 120_000,
		createSandbox: (o) => YuxiSandbox.create({ ...opts(), ...o }),
		createUninitializedSandbox: () => new YuxiSandbox(opts()),
		closeSandbox: (sb) => {
			tally.closed++;
			if (sb.sessionId !== null)
				tally.inSession++;
			return sb.close();
		},
		resolvePath: (name) => `/home/yuxi/user-data/workspace/${name}`,
	});
	afterAll(() => {
		console.log("conformance: workarounds for pending API changes used:",
		    JSON.stringify(bridgesUsed()));
		console.log(`conformance: session mode ${session ? "on" : "off"}; ` +
		    `${tally.inSession} of ${tally.closed} sandboxes closed had a session`);
	});
}
