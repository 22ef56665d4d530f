// SPDX-License-Identifier: MIT
// Unit tests without the service: the path helpers, and a fake peer on
// 127.0.0.1 for what the real service does not produce on demand (503
// capacity answers to retry) or does not produce yet (the answers of the
// API changes of issue 12: cat format=raw, refused commands as results,
// the namespace root, the delete endpoint). The real service is exercised
// by conformance.test.js and agent-loop.test.js.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { YuxiSandbox, YuxiSandboxError } from "../src/index.js";
import * as P from "../src/paths.js";

describe("paths", () => {
	it("normalize", () => {
		expect(P.normalize("/a//b/./c/")).toBe("/a/b/c");
		expect(P.normalize("./x/")).toBe("x");
		expect(P.normalize("")).toBe(".");
		expect(P.normalize("/")).toBe("/");
		expect(P.normalize("a/../b")).toBe("a/../b");
	});

	it("isRoot", () => {
		expect(P.isRoot("")).toBe(true);
		expect(P.isRoot(undefined)).toBe(true);
		expect(P.isRoot("//")).toBe(true);
		expect(P.isRoot(".")).toBe(false);
		expect(P.isRoot("/workspace")).toBe(false);
	});

	it("canonical follows the documented aliases", () => {
		expect(P.canonical("notes/a.txt")).toBe("/home/yuxi/user-data/workspace/notes/a.txt");
		expect(P.canonical(".")).toBe("/home/yuxi/user-data/workspace");
		expect(P.canonical("/workspace/x")).toBe("/home/yuxi/user-data/workspace/x");
		expect(P.canonical("/attachments/x")).toBe("/home/yuxi/user-data/uploads/attachments/x");
		expect(P.canonical("/mnt/skills/s")).toBe("/home/yuxi/skills/s");
		expect(P.canonical("/large_tool_results/c.txt")).toBe("/home/yuxi/user-data/large_tool_results/c.txt");
		expect(P.canonical("/conversation_history/s.md")).toBe("/home/yuxi/user-data/conversation_history/s.md");
		expect(P.canonical("/home/yuxi/user-datax")).toBeNull();
		expect(P.canonical("/etc/passwd")).toBeNull();
		expect(P.canonical("/workspace/../x")).toBeNull();
	});

	it("toService rewrites only deepagents' own aliases", () => {
		expect(P.toService("/large_tool_results/c.txt")).toBe("/home/yuxi/user-data/large_tool_results/c.txt");
		expect(P.toService("/conversation_history")).toBe("/home/yuxi/user-data/conversation_history");
		expect(P.toService("/workspace/a")).toBe("/workspace/a");
		expect(P.toService("rel/a")).toBe("rel/a");
		expect(P.toService("/large_tool_resultsx")).toBe("/large_tool_resultsx");
	});

	it("respell answers in the caller's spelling", () => {
		const c = "/home/yuxi/user-data/workspace";
		expect(P.respell(c + "/a/b", c, "/workspace")).toBe("/workspace/a/b");
		expect(P.respell(c + "/a", c, ".")).toBe("a");
		expect(P.respell(c, c, "/workspace")).toBe("/workspace");
		expect(P.respell("/home/yuxi/skills/s", "/", "/")).toBe("/home/yuxi/skills/s");
	});

	it("splitLiteral", () => {
		expect(P.splitLiteral("src/pkg/*.py")).toEqual(["src/pkg", "*.py"]);
		expect(P.splitLiteral("**/x")).toEqual(["", "**/x"]);
		expect(P.splitLiteral("a.txt")).toEqual(["", "a.txt"]);
		expect(P.splitLiteral("a/b.txt")).toEqual(["a", "b.txt"]);
	});

	it("expandBraces", () => {
		expect(P.expandBraces("*.{js,ts}")).toEqual(["*.js", "*.ts"]);
		expect(P.expandBraces("{a,b{c,d}}/x")).toEqual(["a/x", "bc/x", "bd/x"]);
		expect(P.expandBraces("{a}")).toEqual(["{a}"]);
		expect(P.expandBraces("{a,b")).toEqual(["{a,b"]);
		expect(P.expandBraces("x")).toEqual(["x"]);
		expect(() => P.expandBraces("{a,b}{c,d}{e,f}", 4)).toThrow(RangeError);
	});
});

/**
 * A fake peer: `routes["METHOD /path"]` answers a request (query and JSON
 * body parsed) with [status, body, headers?]; every request is recorded.
 */
function fakePeer() {
	/** @type {Record<string, (q: URLSearchParams, body: any) => [number, any, Record<string, string>?]>} */
	const routes = {};
	/** @type {Array<{route: string, query: URLSearchParams, body: any}>} */
	const seen = [];
	const server = http.createServer((req, res) => {
		const chunks = [];
		req.on("data", (c) => chunks.push(c));
		req.on("end", () => {
			const url = new URL(req.url, "http://x");
			const route = `${req.method} ${url.pathname}`;
			const raw = Buffer.concat(chunks);
			let body = null;
			if (String(req.headers["content-type"]).startsWith("application/json"))
				body = JSON.parse(raw.toString("utf8"));
			else if (raw.length > 0)
				body = raw;
			seen.push({ route, query: url.searchParams, body });
			const h = routes[route];
			const [status, out, headers = {}] = h ? h(url.searchParams, body) :
			    [404, { error: { code: "not_found", message: "no such endpoint" } }];
			if (Buffer.isBuffer(out)) {
				res.writeHead(status, { "Content-Type": "application/octet-stream", ...headers });
				res.end(out);
			} else if (out === null) {
				res.writeHead(status, headers);
				res.end();
			} else {
				res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...headers });
				res.end(JSON.stringify(out));
			}
		});
	});
	return {
		routes, seen, server,
		listen: () => new Promise((r) => server.listen(0, "127.0.0.1", () =>
		    r(`http://127.0.0.1:${server.address().port}`))),
		close: () => new Promise((r) => server.close(() => r())),
	};
}

const thread = (q, b) => [201, { thread_id: b?.thread_id ?? "t-fake", owner: "alice" }];

describe("with a fake peer", () => {
	const peer = fakePeer();
	let url = "";

	beforeAll(async () => {
		url = await peer.listen();
	});

	afterAll(async () => {
		await peer.close();
	});

	const make = (extra = {}) => YuxiSandbox.create({ url, token: "tok", threadId: "t1", ...extra });

	it("retries 503 capacity with its Retry-After, then succeeds", async () => {
		let n = 0;
		peer.routes["POST /api/threads"] = (q, b) => (++n <= 2 ?
		    [503, { error: { code: "capacity", message: "all 1 sandboxes are in use" } }, { "Retry-After": "0" }] :
		    thread(q, b));
		const sb = await make();
		expect(n).toBe(3);
		expect(sb.id).toBe("t1");
		expect(sb.isRunning).toBe(true);
		await sb.close();
		expect(sb.isRunning).toBe(false);
	});

	it("stops retrying after `retries`", async () => {
		let n = 0;
		peer.routes["POST /api/threads"] = () => (n++,
		    [503, { error: { code: "backend_unavailable", message: "engine down" } }, { "Retry-After": "0" }]);
		await expect(make({ retries: 2 })).rejects.toThrow(YuxiSandboxError);
		expect(n).toBe(3);
	});

	it("does not retry other errors", async () => {
		let n = 0;
		peer.routes["POST /api/threads"] = () => (n++,
		    [503, { error: { code: "internal", message: "x" } }, { "Retry-After": "0" }]);
		await expect(make()).rejects.toThrow(/create thread: x/);
		expect(n).toBe(1);
	});

	it("execute: a refused command answered as a result (200, exit 126)", async () => {
		peer.routes["POST /api/threads"] = thread;
		peer.routes["POST /api/execute"] = () => [200, {
			output: "command refers to a path outside the sandbox: /etc/passwd", exit_code: 126,
			truncated: false, timed_out: false, duration_ms: 0, refused: "path_not_allowed",
		}];
		const sb = await make();
		expect(await sb.execute("cat /etc/passwd")).toEqual({
			output: "command refers to a path outside the sandbox: /etc/passwd\n\nExit code: 126",
			exitCode: 126, truncated: false,
		});
		await sb.close();
	});

	it("execute: timeout, empty output, service-side cut", async () => {
		peer.routes["POST /api/threads"] = thread;
		const answers = [
			{ output: "partial", exit_code: 124, truncated: false, timed_out: true },
			{ output: "", exit_code: 0, truncated: false, timed_out: false },
			{ output: "abc", exit_code: 0, truncated: true, timed_out: false,
			    full_output_path: "/home/yuxi/user-data/large_tool_results/exec-1.txt" },
		];
		peer.routes["POST /api/execute"] = () => [200, answers.shift()];
		const sb = await make({ timeout: 7 });
		expect(await sb.execute("sleep 9")).toEqual({
			output: "Error: Command timed out after 7.0 seconds.", exitCode: 124, truncated: false });
		expect((await sb.execute("true")).output).toBe("<no output>");
		const cut = await sb.execute("yes");
		expect(cut.truncated).toBe(true);
		expect(cut.output).toContain("/home/yuxi/user-data/large_tool_results/exec-1.txt");
		expect(peer.seen.at(-1).body.timeout).toBe(7);
		await sb.close();
	});

	it("read: cat format=raw keeps line terminators the way deepagents joins lines", async () => {
		peer.routes["POST /api/threads"] = thread;
		// file "a\r\nb\nc\n": 3 lines
		const lines = ["a\r\n", "b\n", "c\n"];
		peer.routes["GET /api/filesystem/cat"] = (q) => {
			expect(q.get("format")).toBe("raw");
			const off = Number(q.get("offset")), lim = Number(q.get("limit"));
			const sel = lines.slice(off, off + lim);
			return [200, { path: "/home/yuxi/user-data/workspace/f.txt", format: "raw",
				content: sel.join(""), start_line: off + 1, end_line: off + sel.length,
				total_lines: 3, next_offset: off + sel.length < 3 ? off + sel.length : null,
				cut_lines: [] }];
		};
		const sb = await make();
		expect(await sb.read("f.txt")).toEqual({ content: "a\r\nb\nc\n", mimeType: "text/plain",
		    totalLines: 3, startLine: 1, endLine: 3, nextOffset: undefined });
		expect(await sb.read("f.txt", 0, 2)).toEqual({ content: "a\r\nb", mimeType: "text/plain",
		    totalLines: 3, startLine: 1, endLine: 2, nextOffset: 2 });
		expect(await sb.read("f.txt", 2, 1)).toEqual({ content: "c", mimeType: "text/plain",
		    totalLines: 3, startLine: 3, endLine: 3, nextOffset: undefined });
		expect(await sb.read("f.txt", 0, 0)).toEqual({ content: "", mimeType: "text/plain" });
		await sb.close();
	});

	it("read: cut lines are read whole through download", async () => {
		peer.routes["POST /api/threads"] = thread;
		const long = "x".repeat(2500);
		peer.routes["GET /api/filesystem/cat"] = () => [200, {
			path: "/home/yuxi/user-data/workspace/l.txt", format: "raw",
			content: long.slice(0, 2000) + "\nend", start_line: 1, end_line: 2, total_lines: 2,
			next_offset: null, cut_lines: [1] }];
		peer.routes["GET /api/filesystem/download"] = () => [200, Buffer.from(long + "\nend")];
		const sb = await make();
		const r = await sb.read("l.txt");
		expect(r.content).toBe(long + "\nend");
		expect(r.endLine).toBe(2);
		await sb.close();
	});

	it("ls, glob and grep of / use the service's namespace root", async () => {
		peer.routes["POST /api/threads"] = thread;
		peer.routes["GET /api/filesystem/ls"] = (q) => {
			expect(q.get("path")).toBe("/");
			return [200, { path: "/", truncated: false, entries: [
				{ path: "/home/yuxi/user-data", is_dir: true, size: 0, modified_at: "2026-01-01T00:00:00.000Z", type: "dir" },
				{ path: "/home/yuxi/skills", is_dir: true, size: 0, modified_at: "2026-01-01T00:00:00.000Z", type: "dir" }] }];
		};
		peer.routes["GET /api/filesystem/glob"] = (q) => {
			expect(q.get("path")).toBe("/");
			return [200, { path: "/", truncated: false, matches: [
				{ path: "/home/yuxi/skills/s/x.py", is_dir: false, size: 3, modified_at: null, type: "file" },
				{ path: "/home/yuxi/user-data/workspace/.a.py", is_dir: false, size: 1, modified_at: null, type: "file" }] }];
		};
		peer.routes["GET /api/filesystem/grep"] = (q) => {
			expect(q.get("path")).toBe("/");
			expect(q.get("max_count")).toBe("3");
			return [200, { path: "/", truncated: true, matches: [
				{ path: "/home/yuxi/user-data/workspace/a.txt", line: 1, text: "hit" },
				{ path: "/home/yuxi/user-data/workspace/a.txt", line: 2, text: "hit" },
				{ path: "/home/yuxi/user-data/workspace/a.png", line: 1, text: "hit" }] }];
		};
		const sb = await make();
		expect((await sb.ls("/")).files.map((f) => f.path)).toEqual(
		    ["/home/yuxi/skills/", "/home/yuxi/user-data/"]);
		expect((await sb.glob("**/*.py")).files.map((f) => f.path)).toEqual(
		    ["/home/yuxi/skills/s/x.py", "/home/yuxi/user-data/workspace/.a.py"]);
		const g = await sb.grep("hit", "/", null, 2);
		expect(g.matches.map((m) => m.line)).toEqual([1, 2]);
		expect(g.truncated).toBe(true);
		await sb.close();
	});

	it("delete uses POST /api/filesystem/delete", async () => {
		peer.routes["POST /api/threads"] = thread;
		peer.routes["POST /api/filesystem/delete"] = (q, b) => {
			expect(b.recursive).toBe(true);
			if (b.path === "/home/yuxi/user-data/large_tool_results/x.txt")
				return [204, null];
			if (b.path === "/skills/s")
				return [403, { error: { code: "read_only", message: "read-only path: /home/yuxi/skills/s" } }];
			return [404, { error: { code: "file_not_found", message: "no such file: " + b.path } }];
		};
		const sb = await make();
		expect(await sb.delete("/large_tool_results/x.txt")).toEqual(
		    { path: "/large_tool_results/x.txt", filesUpdate: null });
		expect(await sb.delete("/workspace/gone")).toEqual({ error: "Error: '/workspace/gone' not found" });
		expect((await sb.delete("/skills/s")).error).toBe(
		    "Error deleting '/skills/s': read-only path: /home/yuxi/skills/s");
		await sb.close();
	});

	it("cwd, env, metadata, idleTimeout: sent only when given, merged per call", async () => {
		peer.routes["POST /api/threads"] = thread;
		peer.routes["POST /api/execute"] = () =>
		    [200, { output: "", exit_code: 0, truncated: false, timed_out: false }];
		const plain = await make();
		expect(peer.seen.at(-1).body).toEqual({ thread_id: "t1" });
		await plain.execute("true");
		expect(peer.seen.at(-1).body).toEqual({ thread_id: "t1", command: "true", timeout: 120 });
		await plain.close();

		const sb = await make({ cwd: "/workspace/a", env: { A: "1", B: "2" },
		    metadata: { project: "p" }, idleTimeout: 60 });
		expect(peer.seen.at(-1).body).toEqual(
		    { thread_id: "t1", metadata: { project: "p" }, idle_timeout: 60 });
		await sb.execute("true");
		expect(peer.seen.at(-1).body).toEqual({ thread_id: "t1", command: "true", timeout: 120,
		    cwd: "/workspace/a", env: { A: "1", B: "2" } });
		await sb.execute("true", { cwd: "b", env: { B: "3", C: "4" }, timeout: 9 });
		expect(peer.seen.at(-1).body).toEqual({ thread_id: "t1", command: "true", timeout: 9,
		    cwd: "b", env: { A: "1", B: "3", C: "4" } });
		await sb.close();
	});

	it("bad options throw before any request; the service's refusals throw with their code", async () => {
		peer.routes["POST /api/threads"] = thread;
		const sb = await make({ env: Object.fromEntries(
		    Array.from({ length: 64 }, (_, i) => [`V${i}`, "x"])) });
		const n = peer.seen.length;
		for (const env of [{ "": "x" }, { "1A": "x" }, { "A=B": "x" }, { A: 1 }, { A: "a\0b" },
		    ["A"], "A=1", { EXTRA: "x" } /* 65 with the backend's */])
			await expect(sb.execute("true", { env })).rejects.toThrow(TypeError);
		for (const cwd of ["", 7, "a\0b"])
			await expect(sb.execute("true", { cwd })).rejects.toThrow(TypeError);
		await expect(sb.execute("true", { timeout: -1 })).rejects.toThrow(TypeError);
		await expect(sb.execute("true", { timeout: 1.5 })).rejects.toThrow(TypeError);
		expect(peer.seen.length).toBe(n);
		const big = { V: "x".repeat((32 << 10) - 1) };	/* name and value: 32 KiB */
		expect(new YuxiSandbox({ url, token: "t", env: big }).env).toEqual(big);
		expect(() => new YuxiSandbox({ url, token: "t", env: { VV: big.V } })).toThrow(/32 KiB/);
		expect(() => new YuxiSandbox({ url, token: "t", env: { É: "x" } })).toThrow(TypeError);
		expect(() => new YuxiSandbox({ url, token: "t", metadata: ["a"] })).toThrow(TypeError);
		expect(() => new YuxiSandbox({ url, token: "t", idleTimeout: 0 })).toThrow(TypeError);

		for (const code of ["invalid_env", "invalid_path", "cwd_not_found"]) {
			peer.routes["POST /api/execute"] = () => [400, { error: { code, message: "no: " + code } }];
			await expect(sb.execute("true")).rejects.toMatchObject(
			    { name: "YuxiSandboxError", status: 400, code, message: "execute: no: " + code });
		}
		peer.routes["POST /api/threads"] = () =>
		    [400, { error: { code: "invalid_metadata", message: "metadata keys must match" } }];
		await expect(make({ metadata: { "a b": "c" } })).rejects.toMatchObject(
		    { status: 400, code: "invalid_metadata" });
		await sb.close();
	});

	it("the protocol's own commands run in the workspace, without the backend's cwd and env", async () => {
		// a service without the delete route: delete goes through commands
		peer.routes["POST /api/threads"] = thread;
		delete peer.routes["POST /api/filesystem/delete"];
		peer.routes["POST /api/execute"] = () =>
		    [200, { output: "", exit_code: 0, truncated: false, timed_out: false }];
		const sb = await make({ cwd: "/outputs", env: { PATH: "/nowhere" } });
		const n = peer.seen.length;
		expect(await sb.delete("/workspace/x")).toEqual({ path: "/workspace/x", filesUpdate: null });
		const cmds = peer.seen.slice(n).filter((s) => s.route === "POST /api/execute");
		expect(cmds.map((c) => c.body.command)).toEqual([
		    "test -e '/home/yuxi/user-data/workspace/x' || test -L '/home/yuxi/user-data/workspace/x'",
		    "rm -rf -- '/home/yuxi/user-data/workspace/x'"]);
		for (const c of cmds)
			expect(Object.keys(c.body).sort()).toEqual(["command", "thread_id", "timeout"]);
		await sb.close();
	});

	it("update and info: PATCH and GET of the thread", async () => {
		peer.routes["POST /api/threads"] = (q, b) =>
		    [200, { thread_id: "t1", metadata: { old: "1" }, idle_timeout: 30 }];
		peer.routes["PATCH /api/threads/t1"] = (q, b) =>
		    [200, { thread_id: "t1", metadata: { old: "1", ...b.metadata }, idle_timeout: b.idle_timeout }];
		peer.routes["GET /api/threads/t1"] = () =>
		    [200, { thread_id: "t1", metadata: { from: "get" }, idle_timeout: 5 }];
		const sb = await make({ metadata: { ignored: "x" } });
		expect([sb.metadata, sb.idleTimeout]).toEqual([{ old: "1" }, 30]);
		await sb.update({ metadata: { n: "2" }, idleTimeout: null });
		expect(peer.seen.at(-1).body).toEqual({ metadata: { n: "2" }, idle_timeout: null });
		expect([sb.metadata, sb.idleTimeout]).toEqual([{ old: "1", n: "2" }, null]);
		await sb.info();
		expect([sb.metadata, sb.idleTimeout]).toEqual([{ from: "get" }, 5]);
		const n = peer.seen.length;
		await expect(sb.update({})).rejects.toThrow(TypeError);
		await expect(sb.update({ metadata: { a: 1 } })).rejects.toThrow(TypeError);
		expect(peer.seen.length).toBe(n);
		await sb.close();
	});

	it("upload/download error codes are deepagents' four", async () => {
		peer.routes["POST /api/threads"] = thread;
		peer.routes["POST /api/filesystem/upload"] = (q) => {
			const p = q.get("path");
			if (p.startsWith("/skills"))
				return [403, { error: { code: "read_only", message: "read-only path" } }];
			if (p === "/workspace")
				return [400, { error: { code: "is_directory", message: "is a directory" } }];
			return [400, { error: { code: "invalid_path", message: "bad" } }];
		};
		peer.routes["GET /api/filesystem/download"] = () =>
		    [404, { error: { code: "file_not_found", message: "no such file" } }];
		const sb = await make();
		const up = await sb.uploadFiles([["/skills/x", new Uint8Array(1)],
		    ["/workspace", new Uint8Array(1)], ["a\u0001", new Uint8Array(1)]]);
		expect(up.map((u) => u.error)).toEqual(["permission_denied", "is_directory", "invalid_path"]);
		expect(await sb.downloadFiles(["nope"])).toEqual(
		    [{ path: "nope", content: null, error: "file_not_found" }]);
		await sb.close();
	});
});
