// SPDX-License-Identifier: MIT
// tests/preview/browser.mjs - what a preview's page can reach in headless
// Chromium (test_preview_browser.py runs it; docs/security.md "Previews").
// Reads a JSON job on stdin, prints a JSON result on stdout:
//   {"mode":"storage","workbench":URL,"token":T,"target":URL}
//       opens the workbench, signs in as the page does (the token in
//       sessionStorage, and a marker in localStorage), then loads target in
//       the same tab and returns what its script saw (#out).
//   {"mode":"cookie","a":URL,"b":URL}
//       preview A sets a cookie for the whole preview domain by a header
//       (/cookie?domain=...) and one by script (/jscookie); returns the
//       Cookie header preview B then receives (/cookies).
// Chromium from YUXI_CHROMIUM (default /usr/bin/chromium), playwright-core
// from tests/web/node_modules; every *.localhost name maps to 127.0.0.1.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(HERE, "..", "web", "package.json"));
const { chromium } = require("playwright-core");
const job = JSON.parse(fs.readFileSync(0, "utf8"));

const browser = await chromium.launch({
	executablePath: process.env.YUXI_CHROMIUM || "/usr/bin/chromium",
	headless: true,
	args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	    "--no-first-run", "--disable-background-networking",
	    "--disable-component-update", "--disable-sync",
	    "--host-resolver-rules=MAP *.localhost 127.0.0.1, MAP localhost 127.0.0.1"],
});
const out = {};
try {
	const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
	const page = await ctx.newPage();
	if (job.mode === "storage") {
		await page.goto(job.workbench, { waitUntil: "load" });
		// the page's own start first: without a token it signs out, which
		// clears sessionStorage (a slow 401 came after the token was set)
		await page.waitForSelector("body[data-ready='1']", { timeout: 60000 });
		await page.evaluate((t) => {
			sessionStorage.setItem("yuxi.token", t);
			localStorage.setItem("yuxi.marker", "workbench");
		}, job.token);
		const res = await page.goto(job.target, { waitUntil: "load" });
		try {
			await page.waitForFunction(() => document.getElementById("out") &&
			    document.getElementById("out").textContent !== "page",
			    null, { timeout: 10000 });
		} catch (e) {
			throw new Error("no page script result: HTTP " + (res && res.status()) +
			    ": " + (await page.content()).slice(0, 2000));
		}
		out.seen = JSON.parse(await page.textContent("#out"));
		out.url = page.url();
	} else if (job.mode === "cookie") {
		await page.goto(job.a + "cookie?domain=" + job.domain, { waitUntil: "load" });
		await page.goto(job.a + "jscookie?domain=" + job.domain, { waitUntil: "load" });
		await page.waitForFunction(() => document.getElementById("out") &&
		    document.getElementById("out").textContent !== "page");
		out.a_sees = await page.textContent("#out");
		await page.goto(job.b + "cookies", { waitUntil: "load" });
		out.b_got = (await page.textContent("body")).trim();
		await page.goto(job.a + "cookies", { waitUntil: "load" });
		out.a_got = (await page.textContent("body")).trim();
	}
} finally {
	await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
