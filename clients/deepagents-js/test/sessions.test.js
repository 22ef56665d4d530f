// SPDX-License-Identifier: MIT
// Sessions and terminals against the real service (docs/api.md
// "Sessions", "On a terminal"), through the adapter's plain calls
// (sb.sessions, sb.processes) and its session mode (`session: true`):
//   - a shell's state (cd, variables, functions) carried from command to
//     command, plain and streamed, with its cwd; a command's own exit code;
//     a timeout that leaves the session usable; `exit 3` ending it
//     (SessionNotFoundError afterwards); a second command meanwhile
//     (SessionBusyError); the per-thread limit (SessionLimitError); list,
//     get, delete; another user's thread (404 not_found);
//   - processes on a terminal: `tty; stty size` at the asked size, a resize
//     seen by a running WINCH trap, the refusals;
//   - session mode: cd and export carry over, without it they do not; a
//     session deleted behind the backend's back or ended by `exit` is made
//     again with a note; a timeout keeps the state; parallel execute()s
//     run one after the other; close() deletes the session;
//   - bad arguments throw a TypeError before any request.
// The literal `cd /tmp` form of the check is in tests/python (an instance
// without the command path policy, which refuses /tmp here).
import { afterAll, describe, expect, it } from "vitest";

import {
	SessionBusyError, SessionLimitError, SessionNotFoundError, YuxiSandbox, YuxiSandboxError,
} from "../src/index.js";
import { noService, service, threadId } from "./service.js";

const WS = "/home/yuxi/user-data/workspace";
const OUT = "/home/yuxi/user-data/outputs";

/** The error `p` rejects with. */
async function rejection(p) {
	try {
		await p;
	} catch (e) {
		return e;
	}
	throw new Error("expected a rejection");
}

/** Poll `pred` every 50 ms for up to `ms`; its last value. */
async function waitFor(pred, ms) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await pred();
		if (v || Date.now() >= end)
			return v;
		await new Promise((r) => setTimeout(r, 50));
	}
}

/** A process's output from 0 until it holds `want`, or it ended, or 10 s. */
async function outputUntil(sb, id, want) {
	let out = "", off = 0;
	const end = Date.now() + 10_000;
	while (!out.includes(want) && Date.now() < end) {
		const o = await sb.processes.output(id, { offset: off, waitMs: 1000 });
		out += o.data;
		if (!o.running && o.next_offset === off)
			break;
		off = o.next_offset;
	}
	return out;
}

describe.skipIf(noService !== "")(`sessions and terminals${noService ? " (" + noService + ")" : ""}`, () => {
	/** @type {YuxiSandbox[]} */
	const made = [];
	const make = async (o = {}) => {
		const sb = await YuxiSandbox.create({ ...service, threadId: threadId("ss"),
		    deleteOnClose: true, ...o });
		made.push(sb);
		return sb;
	};
	afterAll(async () => {
		for (const sb of made)
			await sb.close().catch(() => {});
	});

	it("a session keeps its state; plain, streamed, list, get, delete", async () => {
		const sb = await make();
		const s = await sb.sessions.create();
		expect(s.session_id).toMatch(/^s[0-9a-f]{16}$/);
		expect([s.state, s.shell, s.cwd, s.commands]).toEqual(["running", "bash", WS, 0]);
		let r = await sb.sessions.execute(s.session_id,
		    "mkdir -p deep && cd deep && export A=41 && f() { echo fn$((A+1)); }");
		expect([r.exit_code, r.cwd, r.session_ended]).toEqual([0, `${WS}/deep`, false]);
		r = await sb.sessions.execute(s.session_id, "pwd; echo $A; f");
		expect(r.output).toBe(`${WS}/deep\n41\nfn42\n`);
		r = await sb.sessions.execute(s.session_id, "(exit 3)");
		expect([r.exit_code, r.session_ended]).toEqual([3, false]);
		const st = await sb.sessions.execute(s.session_id, "cd ..; echo $A", { stream: true });
		let data = "";
		for await (const ev of st) {
			if (ev.type === "output")
				data += ev.data;
		}
		expect(data).toBe("41\n");
		expect([st.result?.cwd, st.result?.session_ended]).toEqual([WS, false]);
		const got = await sb.sessions.get(s.session_id);
		expect([got.cwd, got.commands, got.busy]).toEqual([WS, 4, false]);
		expect((await sb.sessions.list()).map((x) => x.session_id)).toContain(s.session_id);
		const gone = await sb.sessions.delete(s.session_id);
		expect(gone.forgotten).toBe(true);
		const e = await rejection(sb.sessions.get(s.session_id));
		expect(e).toBeInstanceOf(SessionNotFoundError);
		expect(e).toBeInstanceOf(YuxiSandboxError);
		expect([e.status, e.code]).toEqual([404, "session_not_found"]);
	});

	it("a timeout keeps the session; exit ends it", async () => {
		const sb = await make();
		const { session_id: id } = await sb.sessions.create({ cwd: "/mnt/user-data/outputs", env: { B: "7" } });
		let r = await sb.sessions.execute(id, 'pwd; echo "$B"; B=8');
		expect(r.output).toBe(`${OUT}\n7\n`);
		r = await sb.sessions.execute(id, "sleep 30", { timeout: 1 });
		expect([r.timed_out, r.exit_code, r.session_ended]).toEqual([true, 124, false]);
		expect((await sb.sessions.execute(id, "echo $B")).output).toBe("8\n");
		r = await sb.sessions.execute(id, "exit 3");
		expect([r.exit_code, r.session_ended]).toEqual([3, true]);
		const e = await rejection(sb.sessions.execute(id, "echo gone"));
		expect(e).toBeInstanceOf(SessionNotFoundError);
		expect(e.message).toMatch(/ended/);
		const st = (await sb.sessions.list()).find((x) => x.session_id === id);
		expect([st?.state, st?.end_reason, st?.exit_code]).toEqual(["ended", "exit", 3]);
	});

	it("one command at a time: session_busy at once", async () => {
		const sb = await make();
		const { session_id: id } = await sb.sessions.create();
		const first = sb.sessions.execute(id, "sleep 2; echo slept");
		expect(await waitFor(async () => (await sb.sessions.get(id)).busy, 10_000)).toBe(true);
		const t0 = Date.now();
		const e = await rejection(sb.sessions.execute(id, "echo second"));
		expect(Date.now() - t0).toBeLessThan(1000);
		expect(e).toBeInstanceOf(SessionBusyError);
		expect([e.status, e.code]).toEqual([409, "session_busy"]);
		expect((await first).output).toBe("slept\n");
	});

	it("the per-thread limit, and another user's thread", async () => {
		const sb = await make();
		const ids = [];
		for (let i = 0; i < 4; i++)
			ids.push((await sb.sessions.create({ shell: "bash" })).session_id);
		const e = await rejection(sb.sessions.create());
		expect(e).toBeInstanceOf(SessionLimitError);
		expect([e.status, e.code]).toEqual([429, "session_limit"]);
		const bob = new YuxiSandbox({ ...service, token: service.tokenBob, threadId: sb.id });
		const b = await rejection(bob.sessions.execute(ids[0], "true"));
		expect([b.status, b.code]).toEqual([404, "not_found"]);	// the thread, as everywhere
		bob.close();
		await sb.sessions.delete(ids[0]);
		await sb.sessions.create();	// room again
	});

	it("a process on a terminal: its size, a resize, the refusals", async () => {
		const sb = await make();
		let p = await sb.processes.start("tty; stty size", { pty: { cols: 101, rows: 33 } });
		expect(p.pty).toEqual({ cols: 101, rows: 33 });
		const out = await outputUntil(sb, p.process_id, "33 101");
		expect(out).toMatch(/\/dev\/pts\/\d+\r\n33 101\r\n/);
		await sb.processes.kill(p.process_id);
		p = await sb.processes.start("trap 'stty size' WINCH; echo ready; while :; do sleep 0.1; done",
		    { pty: { cols: 80, rows: 24 } });
		expect(await outputUntil(sb, p.process_id, "ready")).toContain("ready");
		expect(await sb.processes.resize(p.process_id, { cols: 120, rows: 40 })).toEqual({ cols: 120, rows: 40 });
		expect(await outputUntil(sb, p.process_id, "40 120")).toContain("40 120");
		// typed on the terminal: ^C ends the loop
		await sb.processes.writeStdin(p.process_id, "\u0003");
		expect(await waitFor(async () => (await sb.processes.get(p.process_id)).state === "exited", 10_000)).toBe(true);
		let e = await rejection(sb.processes.resize(p.process_id, { cols: 80, rows: 24 }));
		expect([e.status, e.code]).toEqual([409, "not_running"]);
		const q = await sb.processes.start("sleep 30");
		e = await rejection(sb.processes.resize(q.process_id, { cols: 80, rows: 24 }));
		expect([e.status, e.code]).toEqual([400, "bad_request"]);
		expect((await sb.processes.list()).map((x) => x.process_id)).toContain(q.process_id);
		expect((await sb.processes.kill(q.process_id)).forgotten).toBe(true);
	});

	it("session mode keeps cd and export; the default does not", async () => {
		const sess = await make({ session: true });
		const plain = new YuxiSandbox({ ...service, threadId: sess.id });
		await plain.initialize();
		expect([sess.session, plain.session, sess.sessionId]).toEqual([true, false, null]);
		let r = await sess.execute(`cd ${OUT} && export A=1 && f() { echo f$A; }`);
		expect(r).toEqual({ output: "<no output>", exitCode: 0, truncated: false });
		r = await sess.execute("pwd; echo $A; f");
		expect(r).toEqual({ output: `${OUT}\n1\nf1\n`, exitCode: 0, truncated: false });
		await plain.execute(`cd ${OUT} && export A=1`);
		r = await plain.execute('pwd; echo "[$A]"');
		expect(r.output).toBe(`${WS}\n[]\n`);
		// a timeout kills the command; the state stays
		r = await sess.execute("sleep 30", { timeout: 1 });
		expect(r).toEqual({ output: "Error: Command timed out after 1.0 seconds.", exitCode: 124, truncated: false });
		expect((await sess.execute("echo $A")).output).toBe("1\n");
		await expect(sess.execute("true", { cwd: "sub" })).rejects.toThrow(TypeError);
		await expect(sess.execute("true", { env: { X: "1" } })).rejects.toThrow(TypeError);
		// close() deletes the session (the thread stays without deleteOnClose)
		const keep = await YuxiSandbox.create({ ...service, threadId: sess.id, session: true });
		await keep.execute("true");
		const id = /** @type {string} */ (keep.sessionId);
		await keep.close();
		const e = await rejection(sess.sessions.get(id));
		expect(e).toBeInstanceOf(SessionNotFoundError);
		await plain.close();
	});

	it("session mode: a lost or ended session is made again, with a note", async () => {
		const sb = await make({ session: true, cwd: "/mnt/user-data/outputs", env: { START: "s" } });
		let r = await sb.execute('pwd; echo "$START"; export A=1');
		expect(r.output).toBe(`${OUT}\ns\n`);
		const first = sb.sessionId;
		await sb.sessions.delete(/** @type {string} */ (first));
		r = await sb.execute('pwd; echo "[${A:-}]"');
		expect(r.output).toMatch(/^\[Shell session restarted: the previous session is gone \(.+\)\. Its working directory, variables and functions are gone; this command ran in a new shell\.\]\n/);
		expect(r.output.endsWith(`${OUT}\n[]\n`)).toBe(true);
		expect(sb.sessionId).not.toBe(first);
		expect((await sb.execute("echo again")).output).toBe("again\n");
		r = await sb.execute("exit 3");
		expect(r.exitCode).toBe(3);
		expect(r.output).toContain("This command ended the shell session (exit code 3)");
		expect(sb.sessionId).toBe(null);
		r = await sb.execute('echo "[${A:-}]"');
		expect(r.output).toBe("[Shell session restarted: the command before ended the shell (exit code 3). " +
		    "Its working directory, variables and functions are gone; this command ran in a new shell.]\n[]\n");
	});

	it("session mode: parallel execute()s run one after the other", async () => {
		const sb = await make({ session: true });
		const rs = await Promise.all([0, 1, 2, 3].map((i) => sb.execute(`sleep 0.3; echo n${i}`)));
		expect(rs.map((r) => r.output)).toEqual(["n0\n", "n1\n", "n2\n", "n3\n"]);
	});

	it("bad arguments throw before any request", async () => {
		const sb = new YuxiSandbox({ ...service, threadId: "t-none" });
		const bad = [
			() => sb.sessions.create({ shell: "zsh" }),
			() => sb.sessions.create({ cwd: "" }),
			() => sb.sessions.create({ env: { "1A": "x" } }),
			() => sb.sessions.execute("../s", "true"),
			() => sb.sessions.execute("s1", ""),
			() => sb.sessions.execute("s1", "true", { timeout: 0 }),
			() => sb.sessions.execute("s1", "true", { stream: "yes" }),
			() => sb.sessions.get("a/b"),
			() => sb.processes.start("sh", { pty: { cols: 0, rows: 24 } }),
			() => sb.processes.start("sh", { pty: { cols: 80, rows: 1001 } }),
			() => sb.processes.start("sh", { pty: { cols: 80 } }),
			() => sb.processes.resize("p1", { cols: 80.5, rows: 24 }),
			() => sb.processes.output("p1", { waitMs: 30_001 }),
			() => sb.processes.writeStdin("p1", 5),
			() => new YuxiSandbox({ ...service, session: "yes" }),
		];
		for (const f of bad)
			await expect((async () => f())()).rejects.toThrow(TypeError);
	});
});
