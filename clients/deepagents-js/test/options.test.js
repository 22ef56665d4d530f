// SPDX-License-Identifier: MIT
// The adapter's per-command and per-thread options against the real
// service: cwd and env reach the command (as the backend's defaults and
// per call), thread metadata and idle timeout round-trip (create, the
// service's own GET and list filter, update), and bad input is an error:
// the adapter's checks before any request, the service's refusals with
// their codes. The thread records are read with a plain HTTPS request,
// not through the adapter.
import fs from "node:fs";
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { YuxiSandbox, YuxiSandboxError } from "../src/index.js";
import { noService, service, threadId } from "./service.js";

const WS = "/home/yuxi/user-data/workspace";

/** GET `path` of the service as the test's user, without the adapter. */
function rawGet(path) {
	const url = new URL(path, service.url.endsWith("/") ? service.url : service.url + "/");
	return new Promise((resolve, reject) => {
		https.get(url, {
			ca: fs.readFileSync(service.caFile),
			headers: { Authorization: "Bearer " + service.token },
		}, (res) => {
			const chunks = [];
			res.on("data", (c) => chunks.push(c));
			res.on("end", () => resolve({
				status: res.statusCode, data: JSON.parse(Buffer.concat(chunks).toString("utf8")),
			}));
			res.on("error", reject);
		}).on("error", reject);
	});
}

/** The YuxiSandboxError `p` rejects with. */
async function rejection(p) {
	try {
		await p;
	} catch (e) {
		return e;
	}
	throw new Error("expected a rejection");
}

describe.skipIf(noService !== "")(`options: cwd, env, metadata, idleTimeout${noService ? " (" + noService + ")" : ""}`, () => {
	/** @type {YuxiSandbox[]} */
	const made = [];
	const make = async (o) => {
		const sb = await YuxiSandbox.create({ ...service, deleteOnClose: true, ...o });
		made.push(sb);
		return sb;
	};
	afterAll(async () => {
		for (const sb of made)
			await sb.close().catch(() => {});
	});

	describe("cwd and env reach the command", () => {
		/** @type {YuxiSandbox} */
		let sb;
		beforeAll(async () => {
			sb = await make({
				threadId: threadId("cwd"), cwd: "sub/dir", env: { FOO: "bar baz", QUOTE: "it's $HOME" },
				initialFiles: { "sub/dir/here.txt": "x\n" },
			});
		});

		it("the backend's cwd and env are every command's", async () => {
			const r = await sb.execute('pwd; echo "$FOO"; echo "$QUOTE"; ls');
			expect(r).toEqual({ output: `${WS}/sub/dir\nbar baz\nit's $HOME\nhere.txt\n`,
			    exitCode: 0, truncated: false });
			expect(sb.cwd).toBe("sub/dir");
			expect(sb.env).toEqual({ FOO: "bar baz", QUOTE: "it's $HOME" });
		});

		it("per call: cwd replaces the backend's, env is set over it", async () => {
			const r = await sb.execute('pwd; echo "$FOO/$BAR/$HOME"',
			    { cwd: "/mnt/user-data/outputs", env: { BAR: "2", HOME: "/home/yuxi/h" } });
			expect(r.output).toBe("/home/yuxi/user-data/outputs\nbar baz/2//home/yuxi/h\n");
			const w = await sb.execute("pwd", { cwd: WS });
			expect(w.output).toBe(WS + "\n");
		});

		it("per call timeout", async () => {
			const r = await sb.execute("sleep 5", { timeout: 1 });
			expect(r).toEqual({ output: "Error: Command timed out after 1.0 seconds.",
			    exitCode: 124, truncated: false });
		});

		it("a cwd the service refuses throws with its code", async () => {
			const missing = await rejection(sb.execute("true", { cwd: "nope" }));
			expect(missing).toBeInstanceOf(YuxiSandboxError);
			expect([missing.status, missing.code]).toEqual([400, "cwd_not_found"]);
			const outside = await rejection(sb.execute("true", { cwd: "/etc" }));
			expect([outside.status, outside.code]).toEqual([400, "invalid_path"]);
		});

		it("bad env is an error before any request", async () => {
			await expect(sb.execute("true", { env: { "1A": "x" } })).rejects.toThrow(TypeError);
			await expect(sb.execute("true", { env: { A: 1 } })).rejects.toThrow(TypeError);
			const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, "x"]));
			await expect(sb.execute("true", { env: many })).rejects.toThrow(/at most 64/);
			await expect(sb.execute("true", { env: { BIG: "x".repeat(32 << 10) } }))
			    .rejects.toThrow(/32 KiB/);
			expect(() => new YuxiSandbox({ ...service, env: { "A-B": "x" } })).toThrow(TypeError);
			expect(() => new YuxiSandbox({ ...service, cwd: "" })).toThrow(TypeError);
		});

		it("the service's own refusal of an env is an error with its code", async () => {
			// a profile with network: its proxy variables are the sandbox's
			const net = await make({ threadId: threadId("net"), agentId: "fetcher" });
			const e = await rejection(net.execute("true", { env: { HTTP_PROXY: "http://evil:1" } }));
			expect(e).toBeInstanceOf(YuxiSandboxError);
			expect([e.status, e.code]).toEqual([400, "invalid_env"]);
		});
	});

	describe("metadata and idleTimeout", () => {
		it("round-trip: create, the service's GET and list filter, update", async () => {
			const tag = threadId("tag");
			const sb = await make({ threadId: threadId("meta"),
			    metadata: { project: tag, run: "7" }, idleTimeout: 300 });
			expect(sb.metadata).toEqual({ project: tag, run: "7" });
			expect(sb.idleTimeout).toBe(300);

			const got = await rawGet("api/threads/" + sb.id);
			expect(got.status).toBe(200);
			expect(got.data.metadata).toEqual({ project: tag, run: "7" });
			expect(got.data.idle_timeout).toBe(300);
			const listed = await rawGet(`api/threads?metadata.project=${tag}`);
			expect(listed.data.threads.map((t) => t.thread_id)).toEqual([sb.id]);
			expect((await sb.info()).metadata).toEqual({ project: tag, run: "7" });

			const rec = await sb.update({ metadata: { run: null, stage: "review" }, idleTimeout: null });
			expect(rec.metadata).toEqual({ project: tag, stage: "review" });
			expect(sb.metadata).toEqual({ project: tag, stage: "review" });
			expect(sb.idleTimeout).toBeNull();
			const after = await rawGet("api/threads/" + sb.id);
			expect([after.data.metadata, after.data.idle_timeout])
			    .toEqual([{ project: tag, stage: "review" }, null]);
		});

		it("nothing is sent when not given; the caller's existing thread keeps its own", async () => {
			const id = threadId("plain");
			const sb = await make({ threadId: id });
			expect([sb.metadata, sb.idleTimeout]).toEqual([{}, null]);
			const again = new YuxiSandbox({ ...service, threadId: id, metadata: { x: "y" } });
			await again.initialize();
			expect(again.metadata).toEqual({});
			await again.close();
		});

		it("bad metadata and idle timeouts are errors", async () => {
			const e = await rejection(make({ threadId: threadId("badm"), metadata: { "a b": "c" } }));
			expect(e).toBeInstanceOf(YuxiSandboxError);
			expect([e.status, e.code]).toEqual([400, "invalid_metadata"]);
			const t = await rejection(make({ threadId: threadId("badt"), idleTimeout: 10 ** 9 }));
			expect([t.status, t.code]).toEqual([400, "bad_request"]);
			expect(() => new YuxiSandbox({ ...service, metadata: { a: 1 } })).toThrow(TypeError);
			expect(() => new YuxiSandbox({ ...service, idleTimeout: 1.5 })).toThrow(TypeError);
		});
	});
});
