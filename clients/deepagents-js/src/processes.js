// SPDX-License-Identifier: MIT
// A thread's background processes (docs/api.md "Background processes"),
// on pipes or on a terminal ("pty": {cols, rows}) that can be resized.
// `sb.processes` of a YuxiSandbox; every call is one request and throws a
// YuxiSandboxError (with the service's code) for an error answer.

import { checkCommand, checkCwd, checkEnv, checkId, checkPty, checkSeconds } from "./check.js";
import { apiError } from "./http.js";

/** The longest an output read may wait (ms). */
const WAIT_MS_MAX = 30_000;

/**
 * @typedef {object} Process
 * @property {string} process_id
 * @property {string} command
 * @property {"running" | "exited" | "lost"} state
 * @property {number | null} exit_code
 * @property {boolean} timed_out
 * @property {number} timeout its lifetime in seconds
 * @property {string} started_at
 * @property {string | null} ended_at
 * @property {number} output_bytes
 * @property {{cols: number, rows: number}} [pty] a process on a terminal
 * @property {boolean} [forgotten] in kill()'s answer
 */

/**
 * @typedef {object} ProcessOutput
 * @property {string} data valid UTF-8, host paths masked
 * @property {number} offset where data starts
 * @property {number} next_offset ask from here next time
 * @property {number} dropped bytes no longer kept
 * @property {boolean} running
 * @property {string} state
 * @property {number | null} exit_code
 * @property {boolean} timed_out
 * @property {boolean} [wait_capped]
 */

export class Processes {
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
	 * Start `command` in the background (/bin/sh -c). `timeout`: its
	 * lifetime in seconds (default and cap the service's); `cwd`, `env` as
	 * for execute; `pty: {cols, rows}` (each 1..1000) runs it on a
	 * pseudo-terminal of that size: its output is what the terminal shows
	 * (CR LF, escape sequences), its stdin what is typed.
	 * @param {string} command
	 * @param {{timeout?: number, cwd?: string, env?: Record<string, string>,
	 *          pty?: {cols: number, rows: number}}} [opts]
	 * @returns {Promise<Process>}
	 */
	async start(command, opts = {}) {
		/** @type {Record<string, unknown>} */
		const body = { thread_id: this.#tid(), command: checkCommand(command) };
		const timeout = checkSeconds(opts.timeout, "process timeout");
		const cwd = checkCwd(opts.cwd, "process cwd");
		const env = checkEnv(opts.env, "process env");
		if (timeout !== undefined)
			body.timeout = timeout;
		if (cwd !== undefined)
			body.cwd = cwd;
		if (env !== undefined)
			body.env = env;
		if (opts.pty !== undefined)
			body.pty = checkPty(opts.pty, "pty");
		const r = await this.#http.request("POST", "api/processes", { json: body });
		if (r.status !== 201)
			throw apiError("start process", r);
		return r.data;
	}

	/** The thread's processes, oldest first. @returns {Promise<Process[]>} */
	async list() {
		const r = await this.#http.request("GET", "api/processes", { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("list processes", r);
		return r.data.processes;
	}

	/** @param {string} id @returns {Promise<Process>} */
	async get(id) {
		const r = await this.#http.request("GET", "api/processes/" + checkId(id, "process id"),
		    { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("process", r);
		return r.data;
	}

	/**
	 * One read of the output from `offset`; with `waitMs` (at most 30000)
	 * it waits that long for something new while the process runs.
	 * @param {string} id
	 * @param {{offset?: number, waitMs?: number, maxBytes?: number}} [opts]
	 * @returns {Promise<ProcessOutput>}
	 */
	async output(id, opts = {}) {
		const offset = opts.offset ?? 0, waitMs = opts.waitMs ?? 0;
		if (!Number.isInteger(offset) || offset < 0)
			throw new TypeError("YuxiSandbox: offset must be a whole number >= 0");
		if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > WAIT_MS_MAX)
			throw new TypeError(`YuxiSandbox: waitMs must be a whole number 0..${WAIT_MS_MAX}`);
		if (opts.maxBytes !== undefined && (!Number.isInteger(opts.maxBytes) || opts.maxBytes < 1))
			throw new TypeError("YuxiSandbox: maxBytes must be a whole number >= 1");
		const r = await this.#http.request("GET", `api/processes/${checkId(id, "process id")}/output`, {
			query: { thread_id: this.#tid(), offset, wait_ms: waitMs, max_bytes: opts.maxBytes },
			timeoutMs: waitMs + 60_000,
		});
		if (r.status !== 200)
			throw apiError("process output", r);
		return r.data;
	}

	/**
	 * Write to the process's standard input (a string is sent as UTF-8;
	 * on a terminal, what is typed: "\r" is Enter, "\u0003" ^C); `eof`
	 * closes it afterwards.
	 * @param {string} id
	 * @param {string | Uint8Array} data
	 * @param {{eof?: boolean}} [opts]
	 * @returns {Promise<{written: number, stdin_open: boolean}>}
	 */
	async writeStdin(id, data, opts = {}) {
		if (typeof data !== "string" && !(data instanceof Uint8Array))
			throw new TypeError("YuxiSandbox: stdin data must be a string or a Uint8Array");
		const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
		const r = await this.#http.request("POST", `api/processes/${checkId(id, "process id")}/stdin`, {
			query: { thread_id: this.#tid(), eof: opts.eof ? 1 : undefined }, body,
		});
		if (r.status !== 200)
			throw apiError("process stdin", r);
		return r.data;
	}

	/**
	 * Change the terminal size of a process started with `pty` (each
	 * 1..1000); its foreground process group gets SIGWINCH. A process not
	 * on a terminal: 400 bad_request; one that ended: 409 not_running.
	 * @param {string} id
	 * @param {{cols: number, rows: number}} size
	 * @returns {Promise<{cols: number, rows: number}>}
	 */
	async resize(id, size) {
		const json = checkPty(size, "resize");
		const r = await this.#http.request("POST", `api/processes/${checkId(id, "process id")}/resize`,
		    { query: { thread_id: this.#tid() }, json });
		if (r.status !== 200)
			throw apiError("resize process", r);
		return r.data;
	}

	/**
	 * Kill the process's whole group (if it runs) and forget it; its last
	 * state with `forgotten`.
	 * @param {string} id
	 * @returns {Promise<Process>}
	 */
	async kill(id) {
		const r = await this.#http.request("DELETE", "api/processes/" + checkId(id, "process id"),
		    { query: { thread_id: this.#tid() } });
		if (r.status !== 200)
			throw apiError("kill process", r);
		return r.data;
	}
}
