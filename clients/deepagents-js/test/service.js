// SPDX-License-Identifier: MIT
// Where the service under test is: tests/deepagents/run-deepagents.sh
// starts one (tests/deepagents/serve.py) and passes it in the environment.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The connection options, or null when no service was given. */
export const service = process.env.YUXI_DA_URL ? {
	url: process.env.YUXI_DA_URL,
	token: process.env.YUXI_DA_TOKEN ?? "",
	caFile: process.env.YUXI_DA_CA,
	/** a second user's token (tests of another user's thread) */
	tokenBob: process.env.YUXI_DA_TOKEN_BOB ?? "",
} : null;

/** Why the service tests are skipped, or "". */
export const noService = service ? "" :
    "no service: run tests/deepagents/run-deepagents.sh (it starts one and sets YUXI_DA_URL, YUXI_DA_TOKEN, YUXI_DA_CA)";

/** A fresh thread id for one test. */
export function threadId(tag) {
	return `da-${tag}-${randomBytes(5).toString("hex")}`;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** The checkout's top directory. */
export const top = path.resolve(here, "..", "..", "..");

/** The deepagents conformance suite, beside the checkout (../shared/...). */
export const suiteDir = process.env.YUXI_DA_STANDARD_TESTS ??
    path.resolve(top, "..", "shared", "third_party", "sandbox-standard-tests");
