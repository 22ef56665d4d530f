// SPDX-License-Identifier: MIT
// YuxiSandbox: a deepagents sandbox backend (SandboxBackendProtocolV2)
// over the yuxi-sandbox HTTP API. Every method answers what deepagents'
// own FilesystemBackend / LocalShellBackend answer for the same operation
// (result shapes, error codes and wording); the differences that remain
// are listed in docs/deepagents.md. With the option `session: true` every
// execute() runs in one shell session of the thread (sessions.js), so that
// cd, variables and functions carry over; the default is deepagents'
// stateless execute. `sb.sessions` and `sb.processes` are the thread's
// sessions and background processes (terminals too) as plain API calls.

import { Http, YuxiSandboxError } from "./http.js";
import { checkCwd, checkEnv } from "./check.js";
import { isText, mimeType } from "./mime.js";
import * as P from "./paths.js";
import { Processes } from "./processes.js";
import { SessionShell, Sessions, endedNote } from "./sessions.js";

/** What deepagents returns for an empty (or whitespace-only) file. */
export const EMPTY_CONTENT_WARNING = "System reminder: File exists but has empty contents";

/** The service cuts one line of a cat at this many bytes (broker line_max). */
const LINE_MAX = 2000;

/** The service's cap on matches of one grep (broker max_results). */
const GREP_CAP = 1000;

/**
 * How often each workaround for an API change of issue 12 that the
 * service does not have yet was needed, in this process. With a service
 * that has them all this stays empty (the tests print it).
 * @type {Map<string, number>}
 */
const bridges = new Map();

/** @param {string} name */
function bridged(name) {
	bridges.set(name, (bridges.get(name) ?? 0) + 1);
}

/**
 * The workarounds used so far (name -> count); see docs/deepagents.md.
 * @returns {Record<string, number>}
 */
export function bridgesUsed() {
	return Object.fromEntries([...bridges].sort());
}

/**
 * @typedef {import("deepagents").ExecuteResponse} ExecuteResponse
 * @typedef {import("deepagents").LsResult} LsResult
 * @typedef {import("deepagents").ReadResult} ReadResult
 * @typedef {import("deepagents").ReadRawResult} ReadRawResult
 * @typedef {import("deepagents").WriteResult} WriteResult
 * @typedef {import("deepagents").EditResult} EditResult
 * @typedef {import("deepagents").DeleteResult} DeleteResult
 * @typedef {import("deepagents").GlobResult} GlobResult
 * @typedef {import("deepagents").GrepResult} GrepResult
 * @typedef {import("deepagents").GrepMatch} GrepMatch
 * @typedef {import("deepagents").FileInfo} FileInfo
 * @typedef {import("deepagents").FileUploadResponse} FileUploadResponse
 * @typedef {import("deepagents").FileDownloadResponse} FileDownloadResponse
 * @typedef {import("deepagents").FileOperationError} FileOperationError
 * @typedef {import("./http.js").Reply} Reply
 */

/**
 * @typedef {object} YuxiSandboxOptions
 * @property {string} url base URL of the service behind nginx (https://host:port)
 * @property {string} token bearer token of the user the thread belongs to
 * @property {string} [threadId] the thread (conversation); created by initialize()
 *   when it does not exist. Without one the service makes an id.
 * @property {string} [caFile] PEM file of the CA of the service's certificate
 * @property {string | Buffer} [ca] the same, as PEM text
 * @property {string} [agentId] agent of a new thread (decides the visible skills)
 * @property {string} [agentConfigId] agent config of a new thread
 * @property {number} [timeout] seconds one command may run (default 120, the service caps at 600)
 * @property {string} [cwd] working directory of every execute() (default the
 *   workspace): a directory of the namespace, relative paths under the workspace
 * @property {Record<string, string>} [env] variables set for every execute(),
 *   over the sandbox's environment (names [A-Za-z_][A-Za-z0-9_]*, at most 64,
 *   32 KiB of names and values in all)
 * @property {Record<string, string>} [metadata] metadata of a new thread (sent
 *   only when given; the caller's existing thread keeps its own)
 * @property {number | null} [idleTimeout] seconds a new thread's sandbox may stay
 *   idle (sent only when given; null: the service's)
 * @property {number} [maxOutputBytes] characters of command output kept (default 100000, as LocalShellBackend)
 * @property {boolean} [deleteOnClose] close() deletes the thread and its files (default false)
 * @property {number} [retries] most retries of a request answered 503 capacity/backend_unavailable (default 5)
 * @property {number} [retryBudgetMs] most total waiting for those retries, per request (default 60000)
 * @property {Record<string, string | Uint8Array>} [initialFiles] files create() uploads after initialize()
 * @property {boolean} [session] every execute() runs in one shell session of the
 *   thread, made at the first command and made again (with a note in the
 *   output) when it was lost or ended; `cwd` and `env` are then where that
 *   shell starts and what it starts with (default false: stateless execute)
 */

/** The shape of a ReadResult's pagination for lines [off, off+lim) of `total`. */
function window(off, lim, total) {
	const end = Math.min(off + lim, total);
	return {
		totalLines: total, startLine: off + 1, endLine: end,
		nextOffset: end < total ? end : undefined,
	};
}

/** deepagents' normalisation of read offsets and limits. */
function nonNegInt(n) {
	return Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
}

/**
 * Thread metadata checked for its type (an object of strings); its rules
 * (keys, sizes) are the service's, which answers 400 invalid_metadata.
 * @param {unknown} m
 * @param {string} what
 * @returns {Record<string, string> | undefined}
 */
function checkMetadata(m, what) {
	if (m === undefined || m === null)
		return undefined;
	if (typeof m !== "object" || Array.isArray(m) ||
	    Object.values(m).some((v) => typeof v !== "string"))
		throw new TypeError(`YuxiSandbox: ${what} must be an object of strings`);
	return { ...m };
}

/**
 * @param {unknown} t
 * @param {string} what
 * @returns {number | null | undefined}
 */
function checkIdleTimeout(t, what) {
	if (t === undefined || t === null)
		return t;
	if (!Number.isInteger(t) || /** @type {number} */ (t) <= 0)
		throw new TypeError(`YuxiSandbox: ${what} must be a positive whole number of seconds or null`);
	return /** @type {number} */ (t);
}

/** Codes of a 400 answer to execute about its cwd or env (not the command). */
const EXEC_OPTION_CODES = new Set(["invalid_env", "invalid_path", "cwd_not_found"]);

/** POSIX single-quoting for a command line. */
function shellQuote(s) {
	return "'" + s.replace(/'/g, "'\\''") + "'";
}

/** localeCompare order, as deepagents sorts listings. */
function byPath(a, b) {
	return a.path.localeCompare(b.path);
}

export class YuxiSandbox {
	/** @type {Http} */
	#http;
	/** @type {YuxiSandboxOptions} */
	#opts;
	/** @type {string} */
	#threadId;
	#running = false;
	#timeout;
	#maxOutput;
	/** @type {string | undefined} */
	#cwd;
	/** @type {Record<string, string> | undefined} */
	#env;
	/** @type {Record<string, string>} the record's metadata (the option until initialize()) */
	#metadata;
	/** @type {number | null} */
	#idleTimeout;
	/** the service globs with {a,b} itself (its glob answers carry `path`) */
	#nativeBraces = false;
	/** @type {SessionShell | null} session mode: the shell every execute() runs in */
	#shell = null;
	/** @type {Sessions} */
	#sessions;
	/** @type {Processes} */
	#processes;

	/** @param {YuxiSandboxOptions} opts */
	constructor(opts) {
		if (opts == null || typeof opts !== "object")
			throw new TypeError("YuxiSandbox: options are required");
		this.#opts = { ...opts };
		this.#http = new Http(opts);
		this.#threadId = opts.threadId ?? "";
		this.#timeout = opts.timeout ?? 120;
		this.#maxOutput = opts.maxOutputBytes ?? 100_000;
		if (!Number.isInteger(this.#timeout) || this.#timeout <= 0)
			throw new TypeError("YuxiSandbox: timeout must be a positive whole number of seconds");
		this.#cwd = checkCwd(opts.cwd, "cwd");
		this.#env = checkEnv(opts.env, "env");
		this.#opts.metadata = checkMetadata(opts.metadata, "metadata");
		this.#opts.idleTimeout = checkIdleTimeout(opts.idleTimeout, "idleTimeout");
		this.#metadata = { ...(this.#opts.metadata ?? {}) };
		this.#idleTimeout = this.#opts.idleTimeout ?? null;
		if (opts.session !== undefined && typeof opts.session !== "boolean")
			throw new TypeError("YuxiSandbox: session must be true or false");
		const tid = () => {
			this.#need();
			return this.#threadId;
		};
		this.#sessions = new Sessions(this.#http, tid);
		this.#processes = new Processes(this.#http, tid);
		if (opts.session === true)
			this.#shell = new SessionShell(this.#sessions, () => ({ cwd: this.#cwd, env: this.#env }));
	}

	/**
	 * Create the sandbox object, initialize it and upload `initialFiles`.
	 * @param {YuxiSandboxOptions} opts
	 * @returns {Promise<YuxiSandbox>}
	 */
	static async create(opts) {
		const sb = new YuxiSandbox(opts);
		await sb.initialize();
		const files = Object.entries(opts.initialFiles ?? {});
		if (files.length > 0) {
			const enc = new TextEncoder();
			const res = await sb.uploadFiles(files.map(([p, c]) =>
			    [p, typeof c === "string" ? enc.encode(c) : c]));
			const bad = res.filter((r) => r.error !== null);
			if (bad.length > 0) {
				throw new YuxiSandboxError("initialFiles: " +
				    bad.map((r) => `${r.path}: ${r.error}`).join(", "));
			}
		}
		return sb;
	}

	/** The sandbox id: the thread id ("" before initialize() without a threadId). */
	get id() {
		return this.#threadId;
	}

	/** The thread id (same as id). */
	get threadId() {
		return this.#threadId;
	}

	/** True between initialize() and close(). */
	get isRunning() {
		return this.#running;
	}

	/**
	 * The thread's metadata as the service last answered it (initialize(),
	 * info(), update()); before that, the `metadata` option. A copy.
	 * @returns {Record<string, string>}
	 */
	get metadata() {
		return { ...this.#metadata };
	}

	/**
	 * The thread's own idle timeout in seconds as the service last answered
	 * it, null for the service's; before initialize(), the option.
	 * @returns {number | null}
	 */
	get idleTimeout() {
		return this.#idleTimeout;
	}

	/** The default working directory of execute() (undefined: the workspace). */
	get cwd() {
		return this.#cwd;
	}

	/** A copy of the default variables of execute() (undefined: none). */
	get env() {
		return this.#env === undefined ? undefined : { ...this.#env };
	}

	/** True when every execute() runs in one shell session (the `session` option). */
	get session() {
		return this.#shell !== null;
	}

	/**
	 * Session mode: the id of the session commands run in now (null before
	 * the first command and after one ended the shell).
	 * @returns {string | null}
	 */
	get sessionId() {
		return this.#shell?.id ?? null;
	}

	/** The thread's sessions: create, execute (plain or stream), list, get, delete. */
	get sessions() {
		return this.#sessions;
	}

	/** The thread's background processes: start (pty too), output, stdin, resize, kill. */
	get processes() {
		return this.#processes;
	}

	/** Keep what a thread record says. */
	#record(data) {
		if (data && typeof data === "object") {
			if (data.metadata && typeof data.metadata === "object")
				this.#metadata = { ...data.metadata };
			if (data.idle_timeout !== undefined)
				this.#idleTimeout = data.idle_timeout;
		}
	}

	/**
	 * Create the thread, or take the caller's existing thread of that id.
	 * The sandbox container itself starts lazily at the first execute().
	 * @returns {Promise<void>}
	 */
	async initialize() {
		if (this.#running)
			return;
		/** @type {Record<string, string>} */
		const body = {};
		if (this.#threadId)
			body.thread_id = this.#threadId;
		if (this.#opts.agentId)
			body.agent_id = this.#opts.agentId;
		if (this.#opts.agentConfigId)
			body.agent_config_id = this.#opts.agentConfigId;
		if (this.#opts.metadata !== undefined)
			body.metadata = this.#opts.metadata;
		if (this.#opts.idleTimeout != null)
			body.idle_timeout = this.#opts.idleTimeout;
		const r = await this.#http.request("POST", "api/threads", { json: body });
		if (r.status !== 200 && r.status !== 201) {
			throw new YuxiSandboxError(`create thread: ${r.message || "HTTP " + r.status}`,
			    { status: r.status, code: r.code });
		}
		this.#threadId = r.data.thread_id;
		this.#record(r.data);
		this.#running = true;
	}

	/**
	 * The thread's record (GET /api/threads/{id}): metadata, idle_timeout,
	 * the sandbox's state, the disk. Refreshes `metadata` and `idleTimeout`.
	 * @returns {Promise<Record<string, any>>}
	 */
	async info() {
		this.#need();
		const r = await this.#http.request("GET", "api/threads/" + encodeURIComponent(this.#threadId));
		if (r.status !== 200) {
			throw new YuxiSandboxError(`thread: ${r.message || "HTTP " + r.status}`,
			    { status: r.status, code: r.code });
		}
		this.#record(r.data);
		return r.data;
	}

	/**
	 * Change the thread (PATCH /api/threads/{id}): `metadata` is a JSON
	 * merge patch (a string sets a key, null removes it, keys not named
	 * stay), `idleTimeout` seconds or null for the service's. Answers the
	 * new record; a refusal (400 invalid_metadata, bad_request) throws a
	 * YuxiSandboxError with the service's code, and nothing changed.
	 * @param {{metadata?: Record<string, string | null>, idleTimeout?: number | null}} change
	 * @returns {Promise<Record<string, any>>}
	 */
	async update(change) {
		this.#need();
		/** @type {Record<string, unknown>} */
		const body = {};
		if (change?.metadata !== undefined) {
			const m = change.metadata;
			if (m === null || typeof m !== "object" || Array.isArray(m) ||
			    Object.values(m).some((v) => v !== null && typeof v !== "string"))
				throw new TypeError("YuxiSandbox: update: metadata must be an object of strings or null");
			body.metadata = m;
		}
		if (change?.idleTimeout !== undefined)
			body.idle_timeout = checkIdleTimeout(change.idleTimeout, "update: idleTimeout");
		if (Object.keys(body).length === 0)
			throw new TypeError("YuxiSandbox: update needs metadata or idleTimeout");
		const r = await this.#http.request("PATCH",
		    "api/threads/" + encodeURIComponent(this.#threadId), { json: body });
		if (r.status !== 200) {
			throw new YuxiSandboxError(`update thread: ${r.message || "HTTP " + r.status}`,
			    { status: r.status, code: r.code });
		}
		this.#record(r.data);
		return r.data;
	}

	/**
	 * Stop using the sandbox. The thread and its files stay (the service
	 * retires the idle container by itself) unless deleteOnClose was set.
	 * @returns {Promise<void>}
	 */
	async close() {
		try {
			if (this.#shell !== null && !this.#opts.deleteOnClose)
				await this.#shell.close();
			if (this.#opts.deleteOnClose && this.#threadId) {
				const r = await this.#http.request("DELETE",
				    "api/threads/" + encodeURIComponent(this.#threadId));
				if (r.status !== 204 && r.status !== 404) {
					throw new YuxiSandboxError(`delete thread: ${r.message || "HTTP " + r.status}`,
					    { status: r.status, code: r.code });
				}
			}
		} finally {
			this.#running = false;
			this.#http.close();
		}
	}

	#need() {
		if (!this.#threadId)
			throw new YuxiSandboxError("YuxiSandbox: call initialize() (or create()) first");
	}

	/** @returns {Promise<Reply>} */
	#get(route, query) {
		this.#need();
		return this.#http.request("GET", route, { query: { thread_id: this.#threadId, ...query } });
	}

	/** @returns {Promise<Reply>} */
	#post(route, json) {
		this.#need();
		return this.#http.request("POST", route, { json: { thread_id: this.#threadId, ...json } });
	}

	// ---- execute ---------------------------------------------------------

	/**
	 * Run a shell command in the thread's sandbox. Output as
	 * LocalShellBackend shapes it: "<no output>" when empty, cut at
	 * maxOutputBytes with a notice, "Exit code: N" appended when not 0. A
	 * command the service's path policy refuses is an ordinary result with
	 * exit code 126.
	 *
	 * `options` (deepagents' own tools call execute(command) only):
	 * `timeout` seconds for this command (0: the backend's), `cwd` its
	 * working directory (default: the backend's `cwd`, else the
	 * workspace), `env` variables set over the backend's `env`. Bad
	 * options throw a TypeError before any request; a cwd or env the
	 * service refuses (400 invalid_env, invalid_path, cwd_not_found)
	 * throws a YuxiSandboxError with that code: they are the caller's
	 * settings, which no command can repair.
	 *
	 * In session mode (the `session` option) the command runs in the
	 * backend's session (SessionShell in sessions.js: made at the first
	 * command, made again with a note when it was lost or ended, one
	 * command at a time); a per-call `cwd` or `env` is a
	 * TypeError there (the shell keeps its own: run cd or export).
	 * @param {string} command
	 * @param {{timeout?: number, cwd?: string, env?: Record<string, string>}} [options]
	 * @returns {Promise<ExecuteResponse>}
	 */
	async execute(command, options = {}) {
		if (options === null || typeof options !== "object")
			throw new TypeError("YuxiSandbox: execute options must be an object");
		let timeout = this.#timeout;
		if (options.timeout !== undefined && options.timeout !== 0) {
			if (!Number.isInteger(options.timeout) || options.timeout < 0)
				throw new TypeError("YuxiSandbox: execute timeout must be a whole number of seconds");
			timeout = options.timeout;
		}
		if (this.#shell !== null) {
			if (options.cwd !== undefined || options.env !== undefined) {
				throw new TypeError("YuxiSandbox: execute cwd and env are not available in session " +
				    "mode: the session's shell keeps its own directory and variables (run cd or export)");
			}
			if (!command || typeof command !== "string") {
				return { output: "Error: Command must be a non-empty string.", exitCode: 1,
				    truncated: false };
			}
			this.#need();
			return this.#sessionRun(this.#shell, command, timeout);
		}
		const cwd = checkCwd(options.cwd, "execute cwd") ?? this.#cwd;
		const callEnv = checkEnv(options.env, "execute env");
		const env = callEnv === undefined ? this.#env :
		    checkEnv({ ...this.#env, ...callEnv }, "execute env (with the backend's)");
		if (!command || typeof command !== "string") {
			return { output: "Error: Command must be a non-empty string.", exitCode: 1,
			    truncated: false };
		}
		this.#need();
		/** @type {Record<string, unknown>} */
		const body = { thread_id: this.#threadId, command, timeout };
		if (cwd !== undefined)
			body.cwd = cwd;
		if (env !== undefined)
			body.env = env;
		const r = await this.#http.request("POST", "api/execute", {
			json: body,
			timeoutMs: (timeout + 60) * 1000,
		});
		if (r.status === 200)
			return this.#result(r.data, timeout);
		// A refusal of the command path policy as the service answers it
		// before the change of issue 12 (403 instead of 200 + 126).
		if (r.status === 403 && r.code === "path_not_allowed") {
			bridged("execute: refusal answered 403");
			return this.#shape(r.message, 126, false, undefined);
		}
		if (r.status === 400 && EXEC_OPTION_CODES.has(r.code)) {
			throw new YuxiSandboxError(`execute: ${r.message}`,
			    { status: r.status, code: r.code });
		}
		return { output: `Error executing command: ${r.message || "HTTP " + r.status}`,
		    exitCode: 1, truncated: false };
	}

	/**
	 * The ExecuteResponse of a command's answer `d` (execute's or a
	 * session's), as LocalShellBackend shapes it, after `note`.
	 * @param {Record<string, any>} d
	 * @param {number} timeout the seconds it was given
	 * @param {string} [note]
	 * @returns {ExecuteResponse}
	 */
	#result(d, timeout, note = "") {
		/** @type {ExecuteResponse} */
		let res;
		if (d.timed_out) {
			const t = Math.min(timeout, 600);	/* the service's cap */
			res = { output: `Error: Command timed out after ${t.toFixed(1)} seconds.`,
			    exitCode: 124, truncated: false };
		} else {
			res = this.#shape(String(d.output ?? ""), d.exit_code, d.truncated === true,
			    d.full_output_path);
		}
		res.output = note + res.output;
		if (d.session_ended === true)
			res.output += endedNote(d.exit_code);
		return res;
	}

	/**
	 * Session mode: `command` in the backend's shell, shaped as execute()
	 * shapes it. Failed requests are error results (exit code 1) as in
	 * execute(); the service's refusal of the backend's cwd or env (when
	 * the session is made) throws.
	 * @param {SessionShell} shell
	 * @param {string} command
	 * @param {number} timeout
	 * @returns {Promise<ExecuteResponse>}
	 */
	async #sessionRun(shell, command, timeout) {
		try {
			const { reply, note } = await shell.run(command, timeout);
			return this.#result(reply, timeout, note);
		} catch (e) {
			if (!(e instanceof YuxiSandboxError))
				throw e;
			if (e.status === 400 && EXEC_OPTION_CODES.has(e.code))
				throw e;
			return { output: `Error executing command: ${e.message}`, exitCode: 1,
			    truncated: false };
		}
	}

	/**
	 * @param {string} out
	 * @param {number} code
	 * @param {boolean} cut the service cut the output
	 * @param {string | undefined} full where the service saved all of it
	 * @returns {ExecuteResponse}
	 */
	#shape(out, code, cut, full) {
		let output = out === "" ? "<no output>" : out;
		let truncated = false;
		if (output.length > this.#maxOutput) {
			output = output.slice(0, this.#maxOutput) +
			    `\n\n... Output truncated at ${this.#maxOutput} bytes.`;
			truncated = true;
		} else if (cut) {
			output += `\n\n... Output truncated at ${Buffer.byteLength(out)} bytes.`;
			truncated = true;
		}
		if (truncated && cut && full)
			output += ` The whole output is saved in ${full}.`;
		if (code !== 0)
			output = `${output.trimEnd()}\n\nExit code: ${code}`;
		return { output, exitCode: code, truncated };
	}

	/**
	 * The API's own answer to a command, for internal use (the protocol's
	 * shell helpers): always in the workspace with the sandbox's own
	 * environment, never the backend's cwd or env.
	 */
	async #run(command) {
		const r = await this.#post("api/execute", { command, timeout: this.#timeout });
		if (r.status === 200)
			return { code: r.data.exit_code, output: String(r.data.output ?? "") };
		return { code: null, output: r.message || "HTTP " + r.status };
	}

	// ---- ls --------------------------------------------------------------

	/**
	 * One level of a directory. Directories end with "/" and have
	 * is_dir true. "/" (or "") is the namespace root: the two roots
	 * /home/yuxi/user-data/ and /home/yuxi/skills/. A missing path or a
	 * file gives an empty list, as in FilesystemBackend.
	 * @param {string} path
	 * @returns {Promise<LsResult>}
	 */
	async ls(path) {
		const caller = path ?? "/";
		if (P.isRoot(caller))
			return this.#lsRoot();
		const r = await this.#get("api/filesystem/ls", { path: P.toService(caller) });
		if (r.status === 200)
			return this.#listing(r.data, P.normalize(caller));
		if (r.code === "file_not_found" ||
		    (r.code === "invalid_path" && r.message.startsWith("not a directory")))
			return { files: [] };
		return { error: r.message || "HTTP " + r.status };
	}

	/** @returns {Promise<LsResult>} */
	async #lsRoot() {
		let r = await this.#get("api/filesystem/ls", { path: "/" });
		if (r.status !== 200 && (r.code === "path_not_allowed" || r.code === "invalid_path")) {
			// before issue 12 the root is only known to the viewer
			bridged("ls /: viewer tree");
			r = await this.#get("api/viewer/filesystem/tree", { path: "/" });
		}
		if (r.status !== 200)
			return { error: r.message || "HTTP " + r.status };
		return this.#listing(r.data, "/");
	}

	/** @returns {LsResult} */
	#listing(data, callerBase) {
		/** @type {FileInfo[]} */
		const files = (data.entries ?? []).map((e) => {
			/** @type {FileInfo} */
			const info = {
				path: P.respell(e.path, data.path, callerBase) + (e.is_dir ? "/" : ""),
				is_dir: e.is_dir === true,
				size: e.is_dir ? 0 : (e.size ?? 0),
			};
			if (e.modified_at)
				info.modified_at = e.modified_at;
			return info;
		});
		files.sort(byPath);
		/** @type {LsResult & {truncated?: boolean}} */
		const res = { files };
		if (data.truncated)
			res.truncated = true;
		return res;
	}

	// ---- read ------------------------------------------------------------

	/**
	 * Lines [offset, offset+limit) of a text file, unnumbered, with
	 * totalLines/startLine/endLine/nextOffset; the whole file as bytes
	 * (Uint8Array) for images, audio, video and PDF.
	 * @param {string} filePath
	 * @param {number} [offset]
	 * @param {number} [limit]
	 * @returns {Promise<ReadResult>}
	 */
	async read(filePath, offset = 0, limit = 500) {
		const type = mimeType(filePath);
		if (!isText(type)) {
			const d = await this.#download(filePath);
			if (d.error !== null)
				return { error: this.#readErrorText(filePath, d.error, d.message) };
			return { content: d.content, mimeType: type };
		}
		const off = nonNegInt(offset), lim = nonNegInt(limit);
		const r = await this.#get("api/filesystem/cat", {
			path: P.toService(filePath), offset: off, limit: Math.max(lim, 1), format: "raw",
		});
		if (r.status !== 200) {
			if (r.code === "file_not_found" || r.code === "is_directory")
				return { error: `File '${filePath}' not found` };
			// past the end (the file may be blank: deepagents checks that
			// first) and NUL bytes (deepagents reads them as text): read
			// the whole file and page it here
			if (r.code === "binary_file" ||
			    (r.code === "bad_request" && /past the end/.test(r.message)))
				return this.#readWhole(filePath, off, lim, type);
			return { error: `Error reading file '${filePath}': ${r.message || "HTTP " + r.status}` };
		}
		const d = r.data;
		const total = d.total_lines;
		if (total === 0)
			return { content: EMPTY_CONTENT_WARNING, mimeType: type };
		let content;
		if (d.format === "raw") {
			if (Array.isArray(d.cut_lines) && d.cut_lines.length > 0)
				return this.#readWhole(filePath, off, lim, type);
			content = String(d.content);
			// deepagents joins the lines of the window with "\n"; the
			// final terminator shows only when the window runs past the
			// last line
			if (off + lim <= total && content.endsWith("\n"))
				content = content.slice(0, -1);
		} else {
			// numbered ("%6d\t"), as the service answers before issue 12
			bridged("read: numbered cat");
			const lines = d.content === "" ? [] :
			    String(d.content).split("\n").map((l) => l.replace(/^ *\d+\t/, ""));
			if (lines.some((l) => Buffer.byteLength(l) >= LINE_MAX - 3))
				return this.#readWhole(filePath, off, lim, type);
			content = lines.join("\n");
		}
		if (content.trim() === "") {
			// deepagents answers the warning for a whitespace-only file
			if (off === 0 && d.next_offset == null)
				return { content: EMPTY_CONTENT_WARNING, mimeType: type };
			return this.#readWhole(filePath, off, lim, type);
		}
		if (lim === 0)
			return { content: "", mimeType: type };
		return { content, mimeType: type, ...window(off, lim, total) };
	}

	/**
	 * FilesystemBackend's read done here on the whole file: for what the
	 * service's cat does not answer the same way.
	 * @returns {Promise<ReadResult>}
	 */
	async #readWhole(filePath, off, lim, type) {
		const d = await this.#download(filePath);
		if (d.error !== null)
			return { error: this.#readErrorText(filePath, d.error, d.message) };
		const text = Buffer.from(d.content).toString("utf8");
		if (text.trim() === "")
			return { content: EMPTY_CONTENT_WARNING, mimeType: type };
		const lines = text.split("\n");
		const total = lines[lines.length - 1] === "" ? lines.length - 1 : lines.length;
		if (off >= total)
			return { error: `Line offset ${off} exceeds file length (${total} lines)` };
		const sel = lines.slice(off, Math.min(off + lim, lines.length));
		if (lim === 0 || sel.length === 0)
			return { content: sel.join("\n"), mimeType: type };
		return { content: sel.join("\n"), mimeType: type, ...window(off, lim, total) };
	}

	#readErrorText(filePath, code, message) {
		if (code === "file_not_found" || code === "is_directory")
			return `File '${filePath}' not found`;
		return `Error reading file '${filePath}': ${message}`;
	}

	/**
	 * The whole file as FileData: a string for text, bytes otherwise.
	 * @param {string} filePath
	 * @returns {Promise<ReadRawResult>}
	 */
	async readRaw(filePath) {
		const d = await this.#download(filePath);
		if (d.error !== null)
			return { error: this.#readErrorText(filePath, d.error, d.message) };
		const type = mimeType(filePath);
		const lm = d.lastModified ? new Date(d.lastModified) : null;
		const when = lm && !Number.isNaN(lm.getTime()) ? lm.toISOString() : new Date().toISOString();
		return {
			data: {
				content: isText(type) ? Buffer.from(d.content).toString("utf8") : d.content,
				mimeType: type, created_at: when, modified_at: when,
			},
		};
	}

	// ---- write, edit, delete ---------------------------------------------

	/**
	 * Create or overwrite a file (parents are made). For a file deepagents
	 * treats as binary (by its extension) `content` is base64, as in
	 * FilesystemBackend.
	 * @param {string} filePath
	 * @param {string} content
	 * @returns {Promise<WriteResult>}
	 */
	async write(filePath, content) {
		let r;
		if (!isText(mimeType(filePath))) {
			r = await this.#upload(filePath, Buffer.from(content, "base64"));
		} else {
			r = await this.#post("api/filesystem/write",
			    { path: P.toService(filePath), content, overwrite: true });
			if (r.status === 413)	/* over the JSON body limit: stream it */
				r = await this.#upload(filePath, Buffer.from(content, "utf8"));
		}
		if (r.status === 201 || r.status === 200)
			return { path: filePath, filesUpdate: null };
		return { error: `Error writing file '${filePath}': ${r.message || "HTTP " + r.status}` };
	}

	/**
	 * Replace old_string by new_string: once (it must occur exactly once)
	 * or everywhere with replaceAll. Errors in deepagents' words.
	 * @param {string} filePath
	 * @param {string} oldString
	 * @param {string} newString
	 * @param {boolean} [replaceAll]
	 * @returns {Promise<EditResult>}
	 */
	async edit(filePath, oldString, newString, replaceAll = false) {
		const notFound = { error: `Error: File '${filePath}' not found` };
		if (oldString === "") {
			// deepagents: an empty old_string sets the content of an
			// empty file, and is an error on any other
			const c = await this.#get("api/filesystem/cat",
			    { path: P.toService(filePath), limit: 1, format: "raw" });
			if (c.code === "file_not_found" || c.code === "is_directory")
				return notFound;
			if (c.status !== 200 && c.code !== "binary_file")
				return { error: `Error editing file '${filePath}': ${c.message || "HTTP " + c.status}` };
			if (c.status !== 200 || c.data.total_lines !== 0)
				return { error: "Error: oldString cannot be empty when file has content" };
			const w = await this.write(filePath, newString);
			if (w.error)
				return { error: w.error };
			return { path: filePath, filesUpdate: null, occurrences: 0 };
		}
		const r = await this.#post("api/filesystem/edit", {
			path: P.toService(filePath), old_string: oldString, new_string: newString,
			replace_all: replaceAll === true,
		});
		if (r.status === 200)
			return { path: filePath, filesUpdate: null, occurrences: r.data.occurrences };
		switch (r.code) {
		case "file_not_found":
		case "is_directory":
			return notFound;
		case "string_not_found":
			return { error: `Error: String not found in file: '${oldString}'` };
		case "ambiguous_match": {
			let n = r.data?.error?.occurrences;
			if (n === undefined) {
				bridged("edit: count from the message");
				n = Number((/occurs (\d+) times/.exec(r.message) ?? [])[1]);
			}
			return { error: `Error: String '${oldString}' has multiple occurrences (appears ${n} times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.` };
		}
		default:
			return { error: `Error editing file '${filePath}': ${r.message || "HTTP " + r.status}` };
		}
	}

	/**
	 * Delete a file, or a directory with everything in it; a symlink is
	 * removed, never followed. Skills and the thread's top-level folders
	 * cannot be deleted.
	 * @param {string} filePath
	 * @returns {Promise<DeleteResult>}
	 */
	async delete(filePath) {
		const r = await this.#post("api/filesystem/delete",
		    { path: P.toService(filePath), recursive: true });
		if (r.status === 200 || r.status === 204)
			return { path: filePath, filesUpdate: null };
		if (r.code === "file_not_found")
			return { error: `Error: '${filePath}' not found` };
		if ((r.status === 404 && r.code === "not_found" && r.message === "no such endpoint") ||
		    r.status === 405) {
			bridged("delete: by command");
			return this.#deleteByCommand(filePath);
		}
		return { error: `Error deleting '${filePath}': ${r.message || "HTTP " + r.status}` };
	}

	/**
	 * Delete through a command in the sandbox, for a service without
	 * POST /api/filesystem/delete (before issue 12). Refuses what the
	 * endpoint refuses.
	 * @returns {Promise<DeleteResult>}
	 */
	async #deleteByCommand(filePath) {
		const c = P.canonical(filePath);
		const fail = (why) => ({ error: `Error deleting '${filePath}': ${why}` });
		if (c === null)
			return fail("path not allowed");
		if (c === P.SKILLS || c.startsWith(P.SKILLS + "/"))
			return fail(`read-only path: ${c}`);
		if (c === P.USER_DATA || P.LAYOUT.includes(c))
			return fail(`cannot delete ${c}`);
		const q = shellQuote(c);
		const probe = await this.#run(`test -e ${q} || test -L ${q}`);
		if (probe.code === null)
			return fail(probe.output);
		if (probe.code !== 0)
			return { error: `Error: '${filePath}' not found` };
		const rm = await this.#run(`rm -rf -- ${q}`);
		if (rm.code === 0)
			return { path: filePath, filesUpdate: null };
		return fail(rm.output.trim() || "unknown error");
	}

	// ---- glob ------------------------------------------------------------

	/**
	 * Files and directories matching `pattern` under `path`, with paths
	 * relative to `path` (absolute when `path` is "/", the default). A
	 * leading "/" of the pattern is dropped, as in LocalShellBackend;
	 * {a,b} alternatives are expanded here.
	 * @param {string} pattern
	 * @param {string} [path]
	 * @returns {Promise<GlobResult>}
	 */
	async glob(pattern, path = "/") {
		const root = P.isRoot(path);
		const callerBase = root ? "/" : P.normalize(path);
		const pat0 = String(pattern).replace(/^\/+/, "");
		let pats = [pat0];
		try {
			if (!this.#nativeBraces) {
				pats = P.expandBraces(pat0);
				if (pats.length > 1)
					bridged("glob: {a,b} expanded");
			}
		} catch (e) {
			return { error: `invalid glob pattern '${pattern}': ${/** @type {Error} */ (e).message}` };
		}
		/** @type {Map<string, FileInfo>} */
		const found = new Map();
		let truncated = false;
		for (const pat of pats) {
			const [lit, rest] = P.splitLiteral(pat);
			const where = P.join(callerBase, lit);
			const res = P.isRoot(where) ? await this.#globRoot(rest) : await this.#globAt(rest, where);
			if ("error" in res)
				return { error: res.error };
			truncated ||= res.truncated;
			for (const f of res.files) {
				const rel = P.join(lit, f.rel);
				const out = root ? "/" + rel : rel;
				/** @type {FileInfo} */
				const info = { path: out, is_dir: f.is_dir, size: f.size };
				if (f.modified_at)
					info.modified_at = f.modified_at;
				found.set(out, info);
			}
		}
		const files = [...found.values()].sort(byPath);
		return truncated ? { files, truncated } : { files };
	}

	/**
	 * @typedef {{rel: string, is_dir: boolean, size: number, modified_at?: string}} Hit
	 * @typedef {{files: Hit[], truncated: boolean} | {error: string}} Hits
	 */

	/** Matches under a directory, relative to it. @returns {Promise<Hits>} */
	async #globAt(pattern, where) {
		const r = await this.#get("api/filesystem/glob", { pattern, path: P.toService(where) });
		if (r.status === 200) {
			if (r.data.path !== undefined)
				this.#nativeBraces = true;
			else
				bridged("glob: no base path in the answer");
			const base = r.data.path ?? P.canonical(P.toService(where));
			if (base === null)
				return { error: `cannot resolve ${where}` };
			return { files: this.#hits(r.data.matches, base), truncated: r.data.truncated === true };
		}
		if (r.code === "file_not_found" ||
		    (r.code === "invalid_path" && r.message.startsWith("not a directory")))
			return { files: [], truncated: false };
		if (r.code === "invalid_path" || r.code === "bad_request")
			return { error: `invalid glob pattern '${pattern}': ${r.message}` };
		return { error: r.message || "HTTP " + r.status };
	}

	/** Matches under the namespace root, relative to "/". @returns {Promise<Hits>} */
	async #globRoot(pattern) {
		const r = await this.#get("api/filesystem/glob", { pattern, path: "/" });
		if (r.status === 200)
			return { files: this.#hits(r.data.matches, "/"), truncated: r.data.truncated === true };
		if (r.code !== "path_not_allowed" && r.code !== "invalid_path")
			return { error: r.message || "HTTP " + r.status };
		bridged("glob /: one root at a time");
		// Before issue 12 the service globs under one root at a time.
		// "**/..." means the same under each root; a first component that
		// cannot match "home" matches nothing under "/".
		if (pattern.startsWith("**/")) {
			/** @type {Hit[]} */
			const files = [];
			let truncated = false;
			for (const rootDir of P.ROOTS) {
				const res = await this.#globAt(pattern, rootDir);
				if ("error" in res)
					return res;
				truncated ||= res.truncated;
				for (const f of res.files)
					files.push({ ...f, rel: P.join(rootDir.slice(1), f.rel) });
			}
			return { files, truncated };
		}
		const first = pattern.split("/")[0];
		if (!first.includes("**") && !componentRegex(first).test("home"))
			return { files: [], truncated: false };
		return { error: r.message };
	}

	/** @returns {Hit[]} */
	#hits(matches, base) {
		return (matches ?? []).map((m) => {
			const rel = base === "/" ? m.path.slice(1) :
			    m.path === base ? "" : m.path.slice(base.length + 1);
			return { rel, is_dir: m.is_dir === true, size: m.is_dir ? 0 : (m.size ?? 0),
			    modified_at: m.modified_at ?? undefined };
		});
	}

	// ---- grep ------------------------------------------------------------

	/**
	 * Lines containing the literal `pattern` (case-sensitive), in files
	 * under `path` (a directory, searched recursively, or one file), those
	 * deepagents reads as text only. `glob` filters the files ({a,b}
	 * expanded here); `maxCount` caps the matches (truncated when more
	 * exist).
	 * @param {string} pattern
	 * @param {string | null} [path]
	 * @param {string | null} [glob]
	 * @param {number | null} [maxCount]
	 * @returns {Promise<GrepResult>}
	 */
	async grep(pattern, path = "/", glob = null, maxCount = null) {
		const root = P.isRoot(path);
		const callerBase = root ? "/" : P.normalize(/** @type {string} */ (path));
		/** @type {Array<string | null>} */
		let globs = [glob || null];
		if (glob && !this.#nativeBraces) {
			try {
				globs = P.expandBraces(glob);
				if (globs.length > 1)
					bridged("grep: {a,b} expanded");
			} catch (e) {
				return { error: `invalid glob '${glob}': ${/** @type {Error} */ (e).message}` };
			}
		}
		const want = maxCount != null && maxCount > 0 ? Math.floor(maxCount) : null;
		const ask = want !== null && want < GREP_CAP ? want + 1 : 0;
		/** @type {GrepMatch[]} */
		let matches = [];
		let truncated = false;
		for (const g of globs) {
			const res = root ? await this.#grepRoot(pattern, g, ask) :
			    await this.#grepAt(pattern, callerBase, g, ask);
			if ("error" in res)
				return { error: res.error };
			truncated ||= res.truncated;
			matches.push(...res.matches);
		}
		if (globs.length > 1) {
			const seen = new Set();
			matches = matches.filter((m) => {
				const k = m.path + "\0" + m.line;
				return seen.has(k) ? false : (seen.add(k), true);
			});
			matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
		}
		matches = matches.filter((m) => isText(mimeType(m.path)));
		if (want !== null && matches.length > want) {
			matches = matches.slice(0, want);
			truncated = true;
		}
		return truncated ? { matches, truncated } : { matches };
	}

	/**
	 * @typedef {{matches: GrepMatch[], truncated: boolean} | {error: string}} Found
	 */

	/** @returns {Promise<Found>} */
	async #grepAt(pattern, where, glob, ask) {
		const r = await this.#get("api/filesystem/grep", {
			pattern, path: P.toService(where), glob: glob ?? undefined, max_count: ask,
		});
		if (r.status === 200) {
			if (r.data.path !== undefined)
				this.#nativeBraces = true;
			else
				bridged("grep: no base path in the answer");
			const base = r.data.path ?? P.canonical(P.toService(where));
			return {
				matches: (r.data.matches ?? []).map((m) => ({
					path: base === null ? m.path : P.respell(m.path, base, where),
					line: m.line, text: m.text,
				})),
				truncated: r.data.truncated === true,
			};
		}
		if (r.code === "file_not_found")
			return { matches: [], truncated: false };
		return { error: r.message || "HTTP " + r.status };
	}

	/** @returns {Promise<Found>} */
	async #grepRoot(pattern, glob, ask) {
		const r = await this.#get("api/filesystem/grep",
		    { pattern, path: "/", glob: glob ?? undefined, max_count: ask });
		if (r.status === 200)
			return { matches: r.data.matches ?? [], truncated: r.data.truncated === true };
		if (r.code !== "path_not_allowed" && r.code !== "invalid_path")
			return { error: r.message || "HTTP " + r.status };
		// before issue 12: one root at a time
		bridged("grep /: one root at a time");
		/** @type {GrepMatch[]} */
		const matches = [];
		let truncated = false;
		for (const rootDir of P.ROOTS) {
			const res = await this.#grepAt(pattern, rootDir, glob, ask);
			if ("error" in res)
				return res;
			truncated ||= res.truncated;
			matches.push(...res.matches);
		}
		return { matches, truncated };
	}

	// ---- upload, download ------------------------------------------------

	/**
	 * Write files from bytes (parents are made, existing files replaced).
	 * @param {Array<[string, Uint8Array]>} files
	 * @returns {Promise<FileUploadResponse[]>}
	 */
	async uploadFiles(files) {
		/** @type {FileUploadResponse[]} */
		const out = [];
		for (const [path, content] of files) {
			const r = await this.#upload(path, content);
			out.push({ path, error: r.status === 201 || r.status === 200 ? null : fileError(r) });
		}
		return out;
	}

	/** @returns {Promise<Reply>} */
	#upload(path, bytes) {
		this.#need();
		return this.#http.request("POST", "api/filesystem/upload", {
			query: { thread_id: this.#threadId, path: P.toService(path) },
			body: bytes,
		});
	}

	/**
	 * Read files as bytes.
	 * @param {string[]} paths
	 * @returns {Promise<FileDownloadResponse[]>}
	 */
	async downloadFiles(paths) {
		/** @type {FileDownloadResponse[]} */
		const out = [];
		for (const path of paths) {
			const d = await this.#download(path);
			out.push({ path, content: d.content, error: d.error });
		}
		return out;
	}

	/**
	 * @returns {Promise<{content: Uint8Array | null, error: FileOperationError | null,
	 *     message: string, lastModified?: string}>}
	 */
	async #download(path) {
		const r = await this.#get("api/filesystem/download", { path: P.toService(path) });
		if (r.status === 200) {
			return { content: new Uint8Array(r.body.buffer, r.body.byteOffset, r.body.byteLength),
			    error: null, message: "", lastModified: r.headers["last-modified"] };
		}
		return { content: null, error: fileError(r), message: r.message || "HTTP " + r.status };
	}
}

/**
 * deepagents' file error code for an error answer; throws for answers
 * that are not about the file (identity, thread, service trouble).
 * @param {Reply} r
 * @returns {FileOperationError}
 */
function fileError(r) {
	switch (r.code) {
	case "file_not_found":
		return "file_not_found";
	case "is_directory":
		return "is_directory";
	case "path_not_allowed":
	case "read_only":
		return "permission_denied";
	case "invalid_path":
	case "bad_request":
	case "binary_file":
	case "payload_too_large":
	case "insufficient_storage":
		return "invalid_path";
	default:
		break;
	}
	if (r.code === "" && r.status === 403)	/* nginx refused a symlink */
		return "permission_denied";
	if (r.code === "" && r.status === 404)
		return "file_not_found";
	throw new YuxiSandboxError(r.message || "HTTP " + r.status, { status: r.status, code: r.code });
}

/**
 * A RegExp for one glob component (*, ?, [...]), to test a fixed name.
 * @param {string} comp
 * @returns {RegExp}
 */
function componentRegex(comp) {
	let re = "^";
	for (let i = 0; i < comp.length; i++) {
		const c = comp[i];
		if (c === "*") {
			re += "[^/]*";
		} else if (c === "?") {
			re += "[^/]";
		} else if (c === "[") {
			const j = comp.indexOf("]", i + 2);
			if (j < 0) {
				re += "\\[";
			} else {
				let cls = comp.slice(i + 1, j).replace(/\\/g, "\\\\");
				if (cls.startsWith("!"))
					cls = "^" + cls.slice(1);
				re += "[" + cls + "]";
				i = j;
			}
		} else {
			re += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
		}
	}
	return new RegExp(re + "$");
}
