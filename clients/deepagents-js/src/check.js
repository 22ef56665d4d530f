// SPDX-License-Identifier: MIT
// Arguments checked as the service checks them, before any request: a
// wrong one throws a TypeError naming it (docs/api.md's rules; the
// service checks everything again).

/** What the service takes as an env name (docs/api.md "POST /api/execute"). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The most env entries, and bytes of names and values, of one command. */
const ENV_MAX = 64;
const ENV_BYTES = 32 << 10;

/**
 * `cwd` checked as the service checks it (a non-empty string without NUL;
 * whether it is a directory of the namespace only the service knows).
 * @param {unknown} cwd
 * @param {string} what
 * @returns {string | undefined}
 */
export function checkCwd(cwd, what) {
	if (cwd === undefined || cwd === null)
		return undefined;
	if (typeof cwd !== "string")
		throw new TypeError(`YuxiSandbox: ${what} must be a string`);
	if (cwd === "" || cwd.includes("\0"))
		throw new TypeError(`YuxiSandbox: ${what} must be a non-empty path without NUL`);
	return cwd;
}

/**
 * `env` checked as the service checks it: an object of at most 64 names
 * [A-Za-z_][A-Za-z0-9_]* with string values without NUL, 32 KiB of names
 * and values (UTF-8) in all.
 * @param {unknown} env
 * @param {string} what
 * @returns {Record<string, string> | undefined}
 */
export function checkEnv(env, what) {
	if (env === undefined || env === null)
		return undefined;
	if (typeof env !== "object" || Array.isArray(env))
		throw new TypeError(`YuxiSandbox: ${what} must be an object of strings`);
	/** @type {Record<string, string>} */
	const out = {};
	let bytes = 0, n = 0;
	for (const [k, v] of Object.entries(env)) {
		if (!ENV_NAME.test(k))
			throw new TypeError(`YuxiSandbox: ${what}: names must match [A-Za-z_][A-Za-z0-9_]*: ${JSON.stringify(k)}`);
		if (typeof v !== "string" || v.includes("\0"))
			throw new TypeError(`YuxiSandbox: ${what}: ${k} must be a string without NUL`);
		if (++n > ENV_MAX)
			throw new TypeError(`YuxiSandbox: ${what}: at most ${ENV_MAX} entries`);
		bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
		if (bytes > ENV_BYTES)
			throw new TypeError(`YuxiSandbox: ${what}: at most 32 KiB of names and values in all`);
		out[k] = v;
	}
	return out;
}

/** What the service takes as a thread, process or session id segment. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * An id that goes into a URL path (a process's, a session's).
 * @param {unknown} id
 * @param {string} what
 * @returns {string}
 */
export function checkId(id, what) {
	if (typeof id !== "string" || !ID.test(id))
		throw new TypeError(`YuxiSandbox: ${what} must match [A-Za-z0-9_-]{1,128}`);
	return id;
}

/**
 * A command: a non-empty string.
 * @param {unknown} command
 * @returns {string}
 */
export function checkCommand(command) {
	if (typeof command !== "string" || command === "")
		throw new TypeError("YuxiSandbox: command must be a non-empty string");
	return command;
}

/**
 * A positive whole number of seconds, or undefined.
 * @param {unknown} t
 * @param {string} what
 * @returns {number | undefined}
 */
export function checkSeconds(t, what) {
	if (t === undefined || t === null)
		return undefined;
	if (!Number.isInteger(t) || /** @type {number} */ (t) <= 0)
		throw new TypeError(`YuxiSandbox: ${what} must be a positive whole number of seconds`);
	return /** @type {number} */ (t);
}

/** The most columns and rows of a terminal (docs/api.md "On a terminal"). */
export const PTY_MAX = 1000;

/**
 * A terminal size: {cols, rows}, each a whole number 1..1000.
 * @param {unknown} pty
 * @param {string} what
 * @returns {{cols: number, rows: number}}
 */
export function checkPty(pty, what) {
	const p = /** @type {any} */ (pty);
	if (p === null || typeof p !== "object" || Array.isArray(p))
		throw new TypeError(`YuxiSandbox: ${what} must be {cols, rows}`);
	for (const k of ["cols", "rows"]) {
		if (!Number.isInteger(p[k]) || p[k] < 1 || p[k] > PTY_MAX)
			throw new TypeError(`YuxiSandbox: ${what}.${k} must be a whole number 1..${PTY_MAX}`);
	}
	return { cols: p.cols, rows: p.rows };
}
