// SPDX-License-Identifier: MIT
// A small HTTPS client for the yuxi-sandbox API: bearer token, the
// service's CA, keep-alive, JSON in and out, and bounded retries of the
// answers that say "try again later" (503 capacity / backend_unavailable,
// with their Retry-After).

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
		let waited = 0;
		for (let attempt = 0; ; attempt++) {
			const r = await this.once(method, path, req);
			if (r.status !== 503 || !RETRY_CODES.has(r.code) || attempt >= this.retries)
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
				res.on("end", () => {
					const body = Buffer.concat(chunks);
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
					resolve(reply);
				});
			});
			rq.setTimeout(req.timeoutMs ?? this.requestTimeoutMs, () => {
				rq.destroy(new Error("timed out waiting for the service"));
			});
			rq.on("error", (e) => reject(new YuxiSandboxError(
			    `${method} ${url.pathname}: ${e.message}`)));
			rq.end(payload);
		});
	}
}
