// SPDX-License-Identifier: MIT
// A thread's sessions (docs/api.md "Sessions"): one long-lived shell in
// the thread's sandbox whose state (working directory, variables,
// functions, an activated venv) stays from one command to the next.
// `sb.sessions` of a YuxiSandbox; every call is one request and throws a
// YuxiSandboxError for an error answer (SessionNotFoundError,
// SessionBusyError, SessionLimitError for the sessions' own codes).
// SessionShell is the adapter's session mode: one session that its
// commands run in, one after another, made again when it is gone.

import { checkCommand, checkCwd, checkEnv, checkId, checkSeconds } from "./check.js";
import { apiError, SessionNotFoundError, YuxiSandboxError } from "./http.js";

/** The most a command may run (the service caps a timeout here). */
const EXEC_TIMEOUT_MAX = 600;

/** Seconds the client waits beyond a command's own timeout. */
const EXEC_GRACE = 60;

/**
 * @typedef {object} Session
 * @property {string} session_id
 * @property {string} thread_id
 * @property {string | null} shell "bash" or "sh"
 * @property {"running" | "ended" | "lost"} state
 * @property {boolean} busy a command runs in it now
 * @property {string} cwd the shell's directory after its last command
 * @property {string} created_at
 * @property {string} last_used
 * @property {number} commands
 * @property {string | null} [ended_at]
 * @property {string | null} [end_reason] exit, idle, killed or lost
 * @property {number | null} [exit_code]
 * @property {boolean} [forgotten] in delete()'s answer
 */

/**
 * @typedef {object} SessionResult
 * @property {string} output stdout and stderr as written
 * @property {number} exit_code the command's own (124 at its timeout)
 * @property {boolean} truncated
 * @property {boolean} timed_out
 * @property {number} duration_ms
 * @property {string} [full_output_path]
 * @property {string} [refused]
 * @property {string} cwd the shell's directory after the command
 * @property {boolean} session_ended the command ended the shell
 */

/**
 * The events of a streamed session command: {type: "output", data} as
 * the command writes, then {type: "exit", exit_code, ..., cwd,
 * session_ended} (also kept as `result`). An error event throws a
 * YuxiSandboxError with its code. `close()` before the end hangs up, and
 * the service stops the command as at a timeout (the session stays).
 */
export class SessionStream {
	#reply;
	/** @type {SessionResult | null} the exit event, once it came */
	result = null;

	/** @param {{events: AsyncGenerator<any> | null, close: () => void}} reply */
	constructor(reply) {
		this.#reply = reply;
	}

	async *[Symbol.asyncIterator]() {
		for await (const ev of /** @type {AsyncGenerator<any>} */ (this.#reply.events)) {
			if (ev?.type === "error") {
				const e = ev.error ?? {};
				throw new YuxiSandboxError(`session execute: ${e.message ?? "stream error"}`,
				    { code: String(e.code ?? "") });
			}
			if (ev?.type === "exit")
				this.result = ev;
			yield ev;
		}
		if (this.result === null)
			throw new YuxiSandboxError("session execute: the stream ended without an exit event");
	}

	close() {
		this.#reply.close();
	}
}

export class Sessions {
	/** @type {import("./http.js").Http} */
	#http;
	/** @type {() => string} */
	#tid;

	/**
	 * @param {import("./http.js").Http} http
	 * @param {() => string} tid the thread id (throws before initialize())
	 */
	constructor(http, tid) {
		this.#http = http;
		this.#tid = tid;
	}

	/**
	 * Start a shell in the thread's sandbox (POST /api/sessions; the
	 * sandbox is acquired or created as for execute). `shell` "bash" or
	 * "sh" (default: bash when the image has it); `cwd` and `env`: where
	 * it starts and variables it starts with, checked as for execute.
	 * @param {{shell?: "bash" | "sh", cwd?: string, env?: Record<string, string>}} [opts]
	 * @returns {Promise<Session>}
	 */
	async create(opts = {}) {
		/** @type {Record<string, unknown>} */
		const body = { thread_id: this.#tid() };
		if (opts.shell !== undefined) {
			if (opts.shell !== "bash" && opts.shell !== "sh")
				throw new TypeError('YuxiSandbox: session shell must be "bash" or "sh"');
			body.shell = opts.shell;
		}
		const cwd = checkCwd(opts.cwd, "session cwd");
		const env = checkEnv(opts.env, "session env");
		if (cwd !== undefined)
			body.cwd = cwd;
		if (env !== undefined)
			body.env = env;
		const r = await this.#http.request("POST", "api/sessions", { json: body });
		if (r.status !== 201)
			throw apiError("create session", r);
		return r.data;
	}

	/**
	 * Run `command` in the session's shell (POST
	 * /api/sessions/{id}/execute): execute's answer plus `cwd` and
	 * `session_ended`. A timeout kills the command, not the session. With
	 * `stream: true` a SessionStream of the events as the command writes.
	 * Throws SessionNotFoundError for a session that ended or is gone,
	 * SessionBusyError while another command of it runs (nothing ran).
	 * @param {string} sessionId
	 * @param {string} command
	 * @param {{timeout?: number, stream?: boolean}} [opts]
	 * @returns {Promise<SessionResult | SessionStream>}
	 */
	async execute(sessionId, command, opts = {}) {
		const path = `api/sessions/${checkId(sessionId, "session id")}/execute`;
		/** @type {Record<string, unknown>} */
		const body = { thread_id: this.#tid(), command: checkCommand(command) };
		const timeout = checkSeconds(opts.timeout, "session execute timeout");
		if (timeout !== undefined)
			body.timeout = timeout;
		if (opts.stream !== undefined && typeof opts.stream !== "boolean")
			throw new TypeError("YuxiSandbox: stream must be true or false");
		const timeoutMs = (Math.min(timeout ?? EXEC_TIMEOUT_MAX, EXEC_TIMEOUT_MAX) + EXEC_GRACE) * 1000;
		if (opts.stream) {
			body.stream = true;
			const r = await this.#http.stream("POST", path, { json: body, timeoutMs });
			if (r.events === null)
				throw apiError("session execute", r);
			return new SessionStream(r);
		}
		const r = await this.#http.request("POST", path, { json: body, timeoutMs });
		if (r.status !== 200)
			throw apiError("session execute", r);
		return r.data;
	}

	/**
	 * The thread's sessions, oldest first (ended and lost ones too, until
	 * deleted).
	 * @returns {Promise<Session[]>}
	 */
	async list() {
		const r = await this.#http.request("GET", "api/sessions",
		    { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("list sessions", r);
		return r.data.sessions;
	}

	/**
	 * One session: state, busy, cwd, times, commands run.
	 * @param {string} sessionId
	 * @returns {Promise<Session>}
	 */
	async get(sessionId) {
		const r = await this.#http.request("GET",
		    "api/sessions/" + checkId(sessionId, "session id"), { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("session", r);
		return r.data;
	}

	/**
	 * Kill the shell and every process of it and forget the session; its
	 * last state with `forgotten`.
	 * @param {string} sessionId
	 * @returns {Promise<Session>}
	 */
	async delete(sessionId) {
		const r = await this.#http.request("DELETE",
		    "api/sessions/" + checkId(sessionId, "session id"), { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("delete session", r);
		return r.data;
	}
}

/**
 * What a command's output starts with when it ran in a new session that
 * replaced one whose state is gone.
 * @param {string} why
 */
export function newSessionNote(why) {
	return `[Shell session restarted: ${why}. Its working directory, variables and functions are gone; this command ran in a new shell.]\n`;
}

/**
 * What ends the output of a command that ended its session's shell.
 * @param {number} code the shell's status
 */
export function endedNote(code) {
	return `\n\n[This command ended the shell session (exit code ${code}): the next command runs in a new shell, without this one's working directory, variables and functions.]`;
}

/**
 * One session that commands run in, one at a time in the order given
 * (deepagents may run tool calls in parallel: they wait for each other
 * here instead of meeting session_busy). The session is made at the
 * first command, where `start()` says (cwd, env), and made again when the
 * service answers session_not_found (its shell ended, idled out or was
 * deleted, or its sandbox was recreated: nothing ran) or the last command
 * ended it; the command then runs in the new shell and `note` says that
 * the old shell's state is gone.
 */
export class SessionShell {
	/** @type {Sessions} */
	#sessions;
	/** @type {() => {cwd?: string, env?: Record<string, string>}} */
	#start;
	/** @type {string | null} the session's id once made */
	#sid = null;
	/** @type {string | null} why the last session is gone, for the next note */
	#gone = null;
	/** @type {Promise<unknown>} the commands, one after another */
	#queue = Promise.resolve();

	/**
	 * @param {Sessions} sessions
	 * @param {() => {cwd?: string, env?: Record<string, string>}} start
	 */
	constructor(sessions, start) {
		this.#sessions = sessions;
		this.#start = start;
	}

	/** The session's id, null before the first command and after one ended it. */
	get id() {
		return this.#sid;
	}

	/**
	 * Run `command` after the commands given before it. Resolves with the
	 * session's answer and the note ("" or newSessionNote()); rejects with
	 * a YuxiSandboxError when the session cannot be made or the request
	 * fails.
	 * @param {string} command
	 * @param {number} timeout seconds
	 * @returns {Promise<{reply: SessionResult, note: string}>}
	 */
	run(command, timeout) {
		const p = this.#queue.then(() => this.#run(command, timeout));
		this.#queue = p.catch(() => {});
		return p;
	}

	/** @returns {Promise<{reply: SessionResult, note: string}>} */
	async #run(command, timeout) {
		for (let attempt = 0; attempt < 2; attempt++) {
			let note = "";
			if (this.#sid === null) {
				this.#sid = (await this.#sessions.create(this.#start())).session_id;
				if (this.#gone !== null) {
					note = newSessionNote(this.#gone);
					this.#gone = null;
				}
			}
			/** @type {SessionResult} */
			let reply;
			try {
				reply = /** @type {SessionResult} */ (
				    await this.#sessions.execute(this.#sid, command, { timeout }));
			} catch (e) {
				if (!(e instanceof SessionNotFoundError))
					throw e;
				this.#sid = null;
				this.#gone = `the previous session is gone (${e.message.replace(/^session execute: /, "")})`;
				continue;
			}
			if (reply.session_ended === true) {
				this.#sid = null;
				this.#gone = `the command before ended the shell (exit code ${reply.exit_code})`;
			}
			return { reply, note };
		}
		throw new YuxiSandboxError(`the shell session was lost twice in a row (${this.#gone})`);
	}

	/** Delete the session, if one is made (after the commands given before). */
	async close() {
		await this.#queue;
		const sid = this.#sid;
		this.#sid = null;
		if (sid !== null)
			await this.#sessions.delete(sid).catch(() => {});	/* gone already */
	}
}
