// SPDX-License-Identifier: MIT
// A small HTTPS client for the yuxi-sandbox API: bearer token, the
// service's CA, keep-alive, JSON in and out, and bounded retries of the
// answers that say "try again later" (503 capacity / backend_unavailable,
// with their Retry-After); NDJSON answers (a streamed command) read as
// they come; the error classes, one per code that a caller acts on.

import fs from "node:fs";
import http from "node:http";
import https from "node:https";

/** Codes of a 503 that are worth retrying. */
const RETRY_CODES = new Set(["capacity", "backend_unavailable"]);

/**
 * @typedef {object} Reply
 * @property {number} status
 * @property {import("node:http").IncomingHttpHeaders} headers
 * @property {Buffer} body raw bytes
 * @property {any} data parsed JSON body, or null
 * @property {string} code error code of a JSON error body, or ""
 * @property {string} message error message of a JSON error body, or ""
 */

/** A transport or protocol failure (no usable answer from the service). */
export class YuxiSandboxError extends Error {
	/**
	 * @param {string} message
	 * @param {{status?: number, code?: string}} [info]
	 */
	constructor(message, info = {}) {
		super(message);
		this.name = "YuxiSandboxError";
		/** HTTP status, 0 when there was no answer */
		this.status = info.status ?? 0;
		/** the API's error code, "" when there was none */
		this.code = info.code ?? "";
	}
}

/**
 * 404 session_not_found: no such session in the thread, or its shell
 * ended (a command ended it, it idled out, it was deleted) or its keeper
 * is gone (the sandbox was recreated or reaped). Nothing ran.
 */
export class SessionNotFoundError extends YuxiSandboxError {
	constructor(message, info = {}) {
		super(message, { status: 404, code: "session_not_found", ...info });
		this.name = "SessionNotFoundError";
	}
}

/** 409 session_busy: another command of the session runs now; nothing ran. */
export class SessionBusyError extends YuxiSandboxError {
	constructor(message, info = {}) {
		super(message, { status: 409, code: "session_busy", ...info });
		this.name = "SessionBusyError";
	}
}

/**
 * 429 session_limit: the thread (YUXI_SESSION_MAX) or the user
 * (YUXI_SESSION_USER_MAX) has as many open sessions as allowed.
 */
export class SessionLimitError extends YuxiSandboxError {
	constructor(message, info = {}) {
		super(message, { status: 429, code: "session_limit", ...info });
		this.name = "SessionLimitError";
	}
}

/** The codes with a class of their own, and their status. */
const ERROR_CLASSES = {
	session_not_found: [404, SessionNotFoundError],
	session_busy: [409, SessionBusyError],
	session_limit: [429, SessionLimitError],
};

/**
 * The error for an error answer: the class of its code when it has one
 * (and the status is the code's), else a YuxiSandboxError; `what` names
 * the call in the message.
 * @param {string} what
 * @param {{status: number, code: string, message: string}} r
 * @returns {YuxiSandboxError}
 */
export function apiError(what, r) {
	const msg = `${what}: ${r.message || "HTTP " + r.status}`;
	const known = Object.hasOwn(ERROR_CLASSES, r.code) ? ERROR_CLASSES[r.code] : null;
	if (known !== null && known[0] === r.status)
		return new known[1](msg);
	return new YuxiSandboxError(msg, { status: r.status, code: r.code });
}

/**
 * @typedef {object} HttpOptions
 * @property {string} url base URL of the service (https://host:port[/prefix])
 * @property {string} token bearer token
 * @property {string} [caFile] PEM file of the CA that signed the service's certificate
 * @property {string | Buffer} [ca] the same, as PEM text
 * @property {number} [retries] most retries of one request (default 5)
 * @property {number} [retryBudgetMs] most total waiting for retries of one request (default 60000)
 * @property {number} [requestTimeoutMs] socket idle timeout (default 180000)
 */

export class Http {
	/** @param {HttpOptions} opts */
	constructor(opts) {
		if (!opts.url)
			throw new TypeError("YuxiSandbox: url is required");
		if (!opts.token)
			throw new TypeError("YuxiSandbox: token is required");
		this.base = new URL(opts.url.endsWith("/") ? opts.url : opts.url + "/");
		this.token = opts.token;
		this.retries = opts.retries ?? 5;
		this.retryBudgetMs = opts.retryBudgetMs ?? 60_000;
		this.requestTimeoutMs = opts.requestTimeoutMs ?? 180_000;
		const ca = opts.ca ?? (opts.caFile ? fs.readFileSync(opts.caFile) : undefined);
		this.secure = this.base.protocol === "https:";
		this.agent = this.secure
		    ? new https.Agent({ keepAlive: true, maxSockets: 8, ca })
		    : new http.Agent({ keepAlive: true, maxSockets: 8 });
	}

	/** Close idle kept-alive connections. */
	close() {
		this.agent.destroy();
	}

	/**
	 * One request, retried while the service answers 503 capacity or
	 * backend_unavailable (at most `retries` times and `retryBudgetMs` of
	 * waiting, each wait being the answer's Retry-After, default 1 s).
	 * Any other answer, error or not, is returned as it is.
	 * @param {string} method
	 * @param {string} path e.g. "api/execute" (relative to the base URL)
	 * @param {{query?: Record<string, string | number | boolean | undefined>,
	 *          json?: unknown, body?: Uint8Array, timeoutMs?: number}} [req]
	 * @returns {Promise<Reply>}
	 */
	async request(method, path, req = {}) {
		return this.#retried(() => this.once(method, path, req));
	}

	/**
	 * As request(), for an answer that may be NDJSON (a streamed
	 * command): a 200 is returned as soon as its headers came, with
	 * `events`, an async iterator of its parsed lines (read as they
	 * arrive; `close()` hangs up); any other answer as request() returns
	 * it (read whole, `events` null).
	 * @param {string} method
	 * @param {string} path
	 * @param {{json?: unknown, timeoutMs?: number}} [req]
	 * @returns {Promise<Reply & {events: AsyncGenerator<any> | null, close: () => void}>}
	 */
	async stream(method, path, req = {}) {
		return this.#retried(() => this.#openStream(method, path, req));
	}

	/**
	 * `attempt()` again while it answers 503 capacity or
	 * backend_unavailable, after its Retry-After (1 s when absent, at most
	 * 30 s), at most `retries` times and `retryBudgetMs` of waiting.
	 * @template {Reply} R
	 * @param {() => Promise<R>} attempt
	 * @returns {Promise<R>}
	 */
	async #retried(attempt) {
		let waited = 0;
		for (let n = 0; ; n++) {
			const r = await attempt();
			if (r.status !== 503 || !RETRY_CODES.has(r.code) || n >= this.retries)
				return r;
			const ra = Number.parseInt(String(r.headers["retry-after"] ?? ""), 10);
			const ms = Math.min(Number.isFinite(ra) && ra >= 0 ? ra * 1000 : 1000, 30_000);
			if (waited + ms > this.retryBudgetMs)
				return r;
			waited += ms;
			await new Promise((res) => setTimeout(res, ms));
		}
	}

	/**
	 * @param {string} method
	 * @param {string} path
	 * @param {{query?: Record<string, string | number | boolean | undefined>,
	 *          json?: unknown, body?: Uint8Array, timeoutMs?: number}} req
	 * @returns {Promise<Reply>}
	 */
	once(method, path, req) {
		const url = new URL(path, this.base);
		for (const [k, v] of Object.entries(req.query ?? {})) {
			if (v !== undefined)
				url.searchParams.set(k, String(v));
		}
		/** @type {Record<string, string | number>} */
		const headers = {
			"Authorization": "Bearer " + this.token,
			"Accept": "application/json",
		};
		/** @type {Buffer | undefined} */
		let payload;
		if (req.json !== undefined) {
			payload = Buffer.from(JSON.stringify(req.json), "utf8");
			headers["Content-Type"] = "application/json";
		} else if (req.body !== undefined) {
			payload = Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength);
			headers["Content-Type"] = "application/octet-stream";
		}
		if (payload !== undefined)
			headers["Content-Length"] = payload.length;
		const mod = this.secure ? https : http;
		return new Promise((resolve, reject) => {
			const rq = mod.request(url, { method, headers, agent: this.agent }, (res) => {
				/** @type {Buffer[]} */
				const chunks = [];
				res.on("data", (c) => chunks.push(c));
				res.on("error", (e) => reject(new YuxiSandboxError(
				    `${method} ${url.pathname}: ${e.message}`)));
				res.on("end", () => resolve(parseReply(res, Buffer.concat(chunks))));
			});
			rq.setTimeout(req.timeoutMs ?? this.requestTimeoutMs, () => {
				rq.destroy(new Error("timed out waiting for the service"));
			});
			rq.on("error", (e) => reject(new YuxiSandboxError(
			    `${method} ${url.pathname}: ${e.message}`)));
			rq.end(payload);
		});
	}

	/**
	 * One request whose 200 answer is read line by line (NDJSON).
	 * @param {string} method
	 * @param {string} path
	 * @param {{json?: unknown, timeoutMs?: number}} req
	 */
	#openStream(method, path, req) {
		const url = new URL(path, this.base);
		const payload = Buffer.from(JSON.stringify(req.json ?? {}), "utf8");
		const headers = {
			"Authorization": "Bearer " + this.token,
			"Accept": "application/x-ndjson, application/json",
			"Content-Type": "application/json",
			"Content-Length": payload.length,
		};
		const mod = this.secure ? https : http;
		const fail = (e) => new YuxiSandboxError(`${method} ${url.pathname}: ${e.message}`);
		return new Promise((resolve, reject) => {
			const rq = mod.request(url, { method, headers, agent: this.agent }, (res) => {
				if (res.statusCode !== 200) {
					/** @type {Buffer[]} */
					const chunks = [];
					res.on("data", (c) => chunks.push(c));
					res.on("error", (e) => reject(fail(e)));
					res.on("end", () => resolve({ ...parseReply(res, Buffer.concat(chunks)),
					    events: null, close: () => {} }));
					return;
				}
				resolve({
					status: 200, headers: res.headers, body: Buffer.alloc(0), data: null,
					code: "", message: "", events: ndjson(res, fail),
					close: () => rq.destroy(),
				});
			});
			rq.setTimeout(req.timeoutMs ?? this.requestTimeoutMs, () => {
				rq.destroy(new Error("timed out waiting for the service"));
			});
			rq.on("error", (e) => reject(fail(e)));
			rq.end(payload);
		});
	}
}

/**
 * The Reply of a whole answer.
 * @param {import("node:http").IncomingMessage} res
 * @param {Buffer} body
 * @returns {Reply}
 */
function parseReply(res, body) {
	const reply = {
		status: res.statusCode ?? 0, headers: res.headers, body,
		data: null, code: "", message: "",
	};
	const ct = String(res.headers["content-type"] ?? "");
	if (ct.startsWith("application/json")) {
		try {
			reply.data = JSON.parse(body.toString("utf8"));
		} catch {
			reply.data = null;
		}
		const err = reply.data?.error;
		if (err && typeof err === "object") {
			reply.code = String(err.code ?? "");
			reply.message = String(err.message ?? "");
		}
	} else if (reply.status >= 400) {
		reply.message = `HTTP ${reply.status}`;
	}
	return reply;
}

/**
 * The parsed lines of an NDJSON answer, each as soon as it has arrived.
 * A line that is not JSON, or a connection that breaks, throws a
 * YuxiSandboxError (made by `fail`).
 * @param {import("node:http").IncomingMessage} res
 * @param {(e: Error) => YuxiSandboxError} fail
 * @returns {AsyncGenerator<any>}
 */
async function* ndjson(res, fail) {
	let rest = "";
	const dec = new TextDecoder("utf-8");
	try {
		for await (const chunk of res) {
			rest += dec.decode(chunk, { stream: true });
			let nl;
			while ((nl = rest.indexOf("\n")) >= 0) {
				const line = rest.slice(0, nl).trim();
				rest = rest.slice(nl + 1);
				if (line !== "")
					yield parseLine(line, fail);
			}
		}
	} catch (e) {
		if (e instanceof YuxiSandboxError)
			throw e;
		throw fail(/** @type {Error} */ (e));
	}
	rest += dec.decode();
	if (rest.trim() !== "")
		yield parseLine(rest.trim(), fail);
}

/** @param {string} line @param {(e: Error) => YuxiSandboxError} fail */
function parseLine(line, fail) {
	try {
		return JSON.parse(line);
	} catch {
		throw fail(new Error(`not an NDJSON event: ${line.slice(0, 200)}`));
	}
}
