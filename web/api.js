// SPDX-License-Identifier: MIT
// web/api.js - the workbench's client of the yuxi-sandbox HTTP API
// (docs/api: threads, viewer, execute and its stream form, background
// processes, on a terminal too; previews; services). Same origin, paths
// relative to the page (so the service may live under a URL prefix, e.g.
// /sandbox/). The
// identity is the site's own sign-in (a cookie, basic auth, an SSO proxy:
// credentials "same-origin") or, when one was pasted, a bearer token from
// sessionStorage. Every failure becomes an ApiError carrying the HTTP status,
// the service's error code and a sentence a person can read; the raw JSON is
// never shown.

const TOKEN_KEY = "yuxi.token";

export class ApiError extends Error {
	constructor(status, code, message, retryAfter) {
		super(message);
		this.name = "ApiError";
		this.status = status;
		this.code = code;
		this.retryAfter = retryAfter;
	}
}

export function getToken() {
	try {
		return sessionStorage.getItem(TOKEN_KEY) || "";
	} catch (e) {
		return "";
	}
}

export function setToken(tok) {
	try {
		if (tok)
			sessionStorage.setItem(TOKEN_KEY, tok);
		else
			sessionStorage.removeItem(TOKEN_KEY);
	} catch (e) {
		/* storage disabled: the session lasts until reload */
	}
}

// A readable sentence for an error answer; `detail` is the service's own
// message (plain text, shown as text only).
function describe(status, code, detail, retryAfter) {
	switch (code) {
	case "unauthenticated":
		return "Your token is invalid or has expired. Please sign in again.";
	case "not_found":
		return "This thread does not exist or is not yours.";
	case "file_not_found":
		return "The file no longer exists" + (detail ? " (" + detail + ")." : ".");
	case "capacity":
		return "The sandbox service is at capacity. Try again in " +
		    (retryAfter || "a few") + " seconds.";
	case "backend_unavailable":
		return "The sandbox backend is unavailable right now (container engine " +
		    "or provisioner down). Try again later.";
	case "path_not_allowed":
		return "That path is not allowed" + (detail ? ": " + detail : ".");
	case "invalid_path":
		return "Invalid path" + (detail ? ": " + detail : ".");
	case "invalid_thread_id":
		return "Invalid thread id: use 1 to 128 letters, digits, '_' or '-'.";
	case "thread_exists":
		return "That thread id is already taken by another user.";
	case "is_directory":
		return "That is a directory, not a file.";
	case "payload_too_large":
		return "The request is too large.";
	case "forbidden":
		return "You are not allowed to do that.";
	case "process_limit":
		return "Too many background processes run in this thread" +
		    (detail ? " (" + detail + ")." : ".");
	case "preview_limit":
		return "Too many previews of this thread" +
		    (detail ? " (" + detail + ")." : ".");
	case "agent_unavailable":
		return "Background processes need the in-sandbox agent, which is " +
		    "unavailable here.";
	case "not_running":
		return "The process is no longer running.";
	}
	if (status === 401)
		return "Your token is invalid or has expired. Please sign in again.";
	if (status === 404)
		return "Not found.";
	if (status === 502 || status === 504)
		return "The sandbox service is not answering (HTTP " + status + ").";
	if (status === 503)
		return "The sandbox service is unavailable (HTTP 503). Try again later.";
	if (detail)
		return detail;
	return "Request failed (HTTP " + status + ").";
}

async function failure(res) {
	let code = "", detail = "";
	const ra = res.headers.get("Retry-After");
	const ctype = res.headers.get("Content-Type") || "";
	if (ctype.includes("json")) {
		try {
			const j = await res.json();
			if (j && j.error && typeof j.error === "object") {
				code = String(j.error.code || "");
				detail = String(j.error.message || "");
			}
		} catch (e) {
			/* not JSON after all: keep the status only */
		}
	}
	return new ApiError(res.status, code, describe(res.status, code, detail, ra), ra);
}

// fetch with the token; resolves to the Response when 2xx, else throws
// ApiError (network failures included, status 0). `signal` may abort it.
// A Uint8Array body is sent as raw bytes, anything else as JSON.
async function send(method, url, body, signal) {
	const headers = {};
	const tok = getToken();
	if (tok)
		headers["Authorization"] = "Bearer " + tok;
	const init = { method, headers, cache: "no-store",
	    credentials: "same-origin", redirect: "error", signal };
	if (body instanceof Uint8Array) {
		headers["Content-Type"] = "application/octet-stream";
		init.body = body;
	} else if (body !== undefined) {
		headers["Content-Type"] = "application/json";
		init.body = JSON.stringify(body);
	}
	let res;
	try {
		res = await fetch(url, init);
	} catch (e) {
		if (e && e.name === "AbortError")
			throw e;
		throw new ApiError(0, "network", "Cannot reach the sandbox service. " +
		    "Check your connection and try again.");
	}
	if (!res.ok)
		throw await failure(res);
	return res;
}

function qs(params) {
	return new URLSearchParams(params).toString();
}

export async function listThreads() {
	const j = await (await send("GET", "api/threads")).json();
	return Array.isArray(j.threads) ? j.threads : [];
}

export async function createThread(threadId, agentId) {
	const body = {};
	if (threadId)
		body.thread_id = threadId;
	if (agentId)
		body.agent_id = agentId;
	return (await send("POST", "api/threads", body)).json();
}

export async function tree(threadId, path) {
	return (await send("GET", "api/viewer/filesystem/tree?" +
	    qs({ thread_id: threadId, path }))).json();
}

export async function readFile(threadId, path) {
	return (await send("GET", "api/viewer/filesystem/file?" +
	    qs({ thread_id: threadId, path }))).json();
}

// The file's bytes as a Blob of the given type (the server's Content-Type
// is ignored on purpose: the caller decides how the bytes may be used).
export async function downloadBlob(threadId, path, type) {
	const res = await send("GET", "api/viewer/filesystem/download?" +
	    qs({ thread_id: threadId, path }));
	const buf = await res.arrayBuffer();
	return new Blob([buf], { type });
}

export async function execute(threadId, command) {
	return (await send("POST", "api/execute",
	    { thread_id: threadId, command })).json();
}

// The stream form of execute: onEvent(event) for each line of the answer
// ({"type":"output","data"}, then {"type":"exit",...} or
// {"type":"error","error"}) as it arrives. Errors before the stream are
// thrown as ApiError, like execute's.
export async function executeStream(threadId, command, onEvent, signal) {
	const res = await send("POST", "api/execute",
	    { thread_id: threadId, command, stream: true }, signal);
	const reader = res.body.getReader();
	const dec = new TextDecoder("utf-8");
	let buf = "";
	for (;;) {
		let r;
		try {
			r = await reader.read();
		} catch (e) {
			if (e && e.name === "AbortError")
				throw e;
			throw new ApiError(0, "network", "The connection to the sandbox " +
			    "service broke while the command ran.");
		}
		if (r.done)
			break;
		buf += dec.decode(r.value, { stream: true });
		let nl;
		while ((nl = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, nl);
			buf = buf.slice(nl + 1);
			if (line)
				onEvent(JSON.parse(line));
		}
	}
}

export async function startProcess(threadId, command) {
	return (await send("POST", "api/processes",
	    { thread_id: threadId, command })).json();
}

export async function listProcesses(threadId) {
	const j = await (await send("GET", "api/processes?" +
	    qs({ thread_id: threadId }))).json();
	return Array.isArray(j.processes) ? j.processes : [];
}

// Output from `offset`, waiting up to waitMs for more (a long-poll).
export async function processOutput(threadId, pid, offset, waitMs, signal) {
	return (await send("GET", "api/processes/" + encodeURIComponent(pid) +
	    "/output?" + qs({ thread_id: threadId, offset, wait_ms: waitMs }),
	    undefined, signal)).json();
}

export async function stopProcess(threadId, pid) {
	return (await send("DELETE", "api/processes/" + encodeURIComponent(pid) +
	    "?" + qs({ thread_id: threadId }))).json();
}

// A background process on a pseudo-terminal of cols x rows (docs/api.md
// "On a terminal"); `env`: variables over the sandbox's environment.
export async function startTerminal(threadId, command, cols, rows, env) {
	return (await send("POST", "api/processes", { thread_id: threadId,
	    command, pty: { cols, rows }, env })).json();
}

export async function resizeProcess(threadId, pid, cols, rows) {
	return (await send("POST", "api/processes/" + encodeURIComponent(pid) +
	    "/resize?" + qs({ thread_id: threadId }), { cols, rows })).json();
}

// Writes `bytes` (a Uint8Array) to the process's standard input; resolves
// to {written, stdin_open}: `written` may be less than the bytes given.
export async function writeStdin(threadId, pid, bytes) {
	return (await send("POST", "api/processes/" + encodeURIComponent(pid) +
	    "/stdin?" + qs({ thread_id: threadId }), bytes)).json();
}

// The page is going away: ask for the process to be killed with a request
// that outlives the page (fetch keepalive); nothing waits for the answer.
export function stopProcessOnUnload(threadId, pid) {
	const headers = {};
	const tok = getToken();
	if (tok)
		headers["Authorization"] = "Bearer " + tok;
	fetch("api/processes/" + encodeURIComponent(pid) + "?" +
	    qs({ thread_id: threadId }), { method: "DELETE", headers,
	    credentials: "same-origin", keepalive: true, cache: "no-store" })
	    .catch(() => { /* the page is gone: nobody to tell */ });
}

// Previews (docs/api.md "Previews"): a port of the thread's sandbox at a
// URL of its own origin.
export async function listPreviews(threadId) {
	const j = await (await send("GET", "api/threads/" +
	    encodeURIComponent(threadId) + "/previews")).json();
	return Array.isArray(j.previews) ? j.previews : [];
}

export async function createPreview(threadId, port) {
	return (await send("POST", "api/threads/" + encodeURIComponent(threadId) +
	    "/previews", { port })).json();
}

export async function revokePreview(threadId, port) {
	await send("DELETE", "api/threads/" + encodeURIComponent(threadId) +
	    "/previews/" + encodeURIComponent(String(port)));
}

/* ---- snapshots (docs/api.md "Snapshots") ------------------------------- */

function snapUrl(threadId, sid, tail) {
	return "api/threads/" + encodeURIComponent(threadId) + "/snapshots" +
	    (sid ? "/" + encodeURIComponent(sid) : "") + (tail || "");
}

export async function listSnapshots(threadId) {
	const j = await (await send("GET", snapUrl(threadId))).json();
	return Array.isArray(j.snapshots) ? j.snapshots : [];
}

export async function createSnapshot(threadId, name) {
	return (await send("POST", snapUrl(threadId), name ? { name } : {})).json();
}

export async function restoreSnapshot(threadId, sid) {
	return (await send("POST", snapUrl(threadId, sid, "/restore"))).json();
}

export async function deleteSnapshot(threadId, sid) {
	await send("DELETE", snapUrl(threadId, sid));
}

// A new thread of the caller with the snapshot's files.
export async function forkSnapshot(threadId, sid, newId) {
	const body = { from_snapshot: { thread_id: threadId, snapshot_id: sid } };
	if (newId)
		body.thread_id = newId;
	return (await send("POST", "api/threads", body)).json();
}

// A thread's record with its sandbox and its profile's services
// (docs/api.md "GET /api/threads/{thread_id}", "Services").
export async function getThread(threadId) {
	return (await send("GET", "api/threads/" + encodeURIComponent(threadId))).json();
}

export async function listServices(threadId) {
	const j = await (await send("GET", "api/services?" + qs({ thread_id: threadId }))).json();
	return Array.isArray(j.services) ? j.services : [];
}
