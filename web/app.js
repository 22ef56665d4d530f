// SPDX-License-Identifier: MIT
// web/app.js - the workbench page: sign in with a bearer token, list and
// create threads, browse the thread's files (tree.js), view text and images,
// download any file, run a command in the thread and show its output live
// (the stream form of execute), start background processes, list them with
// their live output and stop them, open a terminal in the thread (the
// Terminal tab, term.js, loaded on first use), open a port of the sandbox
// as a preview (its own origin, opened in a new tab, never given this
// page's token), and watch the desktop of a thread whose profile serves one
// (the Desktop tab, desk.js: noVNC framed from a preview of its port, the
// only frame the page makes; docs/workbench.md "Desktop").
// Data from the service is only ever rendered with textContent; images are
// shown from Blob object URLs of the bytes fetched with the token (png, jpeg,
// gif and webp only, never SVG); downloads go through a temporary
// <a download> on an object URL of an application/octet-stream Blob.

import * as api from "./api.js";
import { FileTree, fmtSize, fmtTime } from "./tree.js";
import { DeskView, deskService } from "./desk.js";

const $ = (id) => document.getElementById(id);

const IMAGE_TYPES = {
	png: "image/png",
	jpg: "image/jpeg",
	jpeg: "image/jpeg",
	gif: "image/gif",
	webp: "image/webp",
};

const THREAD_KEY = "yuxi.thread";

const state = {
	siteSession: false,	// signed in by the site, not by a pasted token
	thread: "",
	threads: [],
	file: null,		// entry shown in the viewer
	objectUrl: "",		// the viewer image's object URL
	viewSeq: 0,
	running: false,
	procs: [],
	proc: "",		// the process whose output is shown
	follow: null,		// AbortController of that output's long-polls
	tab: "run",		// the work pane's tab: "run" or "term"
	termState: "closed",	// the terminal's state (term.js)
	previews: [],
};

const FOLLOW_WAIT_MS = 10000;	// one output long-poll

let fileTree = null;
let termView = null;	// the Terminal tab (term.js), made on first use
let deskView = null;	// the Desktop tab (desk.js)

function el(tag, cls, text) {
	const n = document.createElement(tag);
	if (cls)
		n.className = cls;
	if (text !== undefined)
		n.textContent = text;
	return n;
}

/* ---- messages ------------------------------------------------------- */

function showAlert(text, kind) {
	$("alert-text").textContent = text;
	$("alert").className = "alert " + (kind || "error");
	$("alert").hidden = false;
}

function hideAlert() {
	$("alert").hidden = true;
	$("alert-text").textContent = "";
}

// Show an error; a 401 ends the session and returns to the sign-in form.
function fail(err) {
	const msg = err && err.message ? err.message : String(err);
	if (err && err.status === 401) {
		signOut();
		showAlert(msg, "error");
		return;
	}
	showAlert(msg, "error");
}

/* ---- session -------------------------------------------------------- */

function showSignIn() {
	$("bench").hidden = true;
	$("session").hidden = true;
	$("signin-view").hidden = false;
	$("token").value = "";
	$("token").focus();
}

function showBench() {
	$("signin-view").hidden = true;
	$("bench").hidden = false;
	$("session").hidden = false;
}

function signOut() {
	closeTerminal();	// first: its DELETE still carries the token
	api.setToken("");
	try {
		sessionStorage.removeItem(THREAD_KEY);
	} catch (e) { /* ignore */ }
	state.thread = "";
	state.threads = [];
	fileTree.clear();
	clearViewer();
	$("thread-list").replaceChildren();
	$("run-result").hidden = true;
	$("run-output").textContent = "";
	clearProcs();
	clearPreviews();
	selectTab("run", false);
	deskView.reset();
	$("tab-desk").hidden = true;
	$("who").textContent = "";
	$("files-title").textContent = "Files";
	setThreadControls(false);
	showSignIn();
}

async function signIn(ev) {
	ev.preventDefault();
	const tok = $("token").value.trim();
	if (!tok)
		return;
	hideAlert();
	$("signin-btn").disabled = true;
	api.setToken(tok);
	try {
		await loadThreads();
		state.siteSession = false;
		$("signout").hidden = false;
		showBench();
		$("newthread-btn").focus();
	} catch (err) {
		api.setToken("");
		if (err.status === 401)
			showAlert("That token was not accepted (invalid or expired).", "error");
		else
			showAlert(err.message, "error");
	} finally {
		$("signin-btn").disabled = false;
	}
}

/* ---- threads -------------------------------------------------------- */

async function loadThreads() {
	const list = await api.listThreads();
	state.threads = list;
	renderThreads();
	const owner = list.length && list[0].owner ? String(list[0].owner) : "";
	$("who").textContent = owner ? "Signed in as " + owner : "Signed in";
}

function renderThreads() {
	const ul = $("thread-list");
	ul.replaceChildren();
	for (const t of state.threads) {
		const li = el("li");
		const b = el("button", "thread");
		b.type = "button";
		b.dataset.thread = t.thread_id;
		b.append(el("span", "tid", String(t.thread_id)));
		const meta = [];
		if (t.agent_id)
			meta.push(String(t.agent_id) + (t.agent_config_id ?
			    "/" + String(t.agent_config_id) : ""));
		if (t.created_at)
			meta.push(fmtTime(t.created_at));
		b.append(el("span", "tmeta", meta.join(" · ")));
		if (t.thread_id === state.thread)
			b.setAttribute("aria-current", "true");
		b.addEventListener("click", () => pickThread(String(t.thread_id)));
		li.append(b);
		ul.append(li);
	}
	$("threads-empty").hidden = state.threads.length !== 0;
}

async function reloadThreads() {
	hideAlert();
	try {
		await loadThreads();
	} catch (err) {
		fail(err);
	}
}

async function newThread(ev) {
	ev.preventDefault();
	hideAlert();
	const id = $("nt-id").value.trim();
	const agent = $("nt-agent").value.trim();
	$("newthread-btn").disabled = true;
	try {
		const rec = await api.createThread(id, agent);
		$("nt-id").value = "";
		await loadThreads();
		await pickThread(String(rec.thread_id));
	} catch (err) {
		fail(err);
	} finally {
		$("newthread-btn").disabled = false;
	}
}

function setThreadControls(on) {
	$("cmd").disabled = !on;
	$("bg").disabled = !on;
	$("procs-reload").disabled = !on;
	$("previews-reload").disabled = !on;
	$("preview-port").disabled = !on;
	$("preview-btn").disabled = !on;
	$("snaps-reload").disabled = !on;
	$("snap-name").disabled = !on;
	$("snap-btn").disabled = !on;
	$("run-btn").disabled = !on || state.running;
	$("tree-reload").disabled = !on;
	$("files-hint").hidden = on;
	$("term-hint").hidden = on;
}

async function pickThread(tid) {
	hideAlert();
	state.thread = tid;
	try {
		sessionStorage.setItem(THREAD_KEY, tid);
	} catch (e) { /* ignore */ }
	for (const b of $("thread-list").querySelectorAll("button.thread")) {
		if (b.dataset.thread === tid)
			b.setAttribute("aria-current", "true");
		else
			b.removeAttribute("aria-current");
	}
	clearViewer();
	$("run-result").hidden = true;
	clearProcs();
	clearPreviews();
	clearSnaps();
	setThreadControls(true);
	$("files-title").replaceChildren("Files — ", el("span", "h-thread", tid));
	// a terminal belongs to its thread: the old one is killed, and the
	// tab, when it shows, opens one in the new thread (and lists the
	// thread's processes once its start answered: never during it)
	closeTerminal();
	if (state.tab === "term")
		openTerminal();
	else
		loadProcs();
	loadPreviews();
	loadSnaps();
	deskView.reset();
	loadDesk(tid);
	await fileTree.show(tid);
}

/* ---- the desktop (desk.js) -------------------------------------------- */

// Show the Desktop tab when the thread's profile serves a desktop (a
// service ready on DESK_PORT); else hide it, leaving it when it showed.
async function loadDesk(tid) {
	let has = false;
	try {
		has = !!deskService((await api.getThread(tid)).services);
	} catch (err) {
		if (tid === state.thread)
			fail(err);
	}
	if (tid !== state.thread)
		return;
	$("tab-desk").hidden = !has;
	if (state.tab === "desk")
		has ? deskView.open(tid) : selectTab("run", false);
}

/* ---- viewer ----------------------------------------------------------- */

function clearViewer() {
	state.viewSeq++;
	state.file = null;
	if (state.objectUrl) {
		URL.revokeObjectURL(state.objectUrl);
		state.objectUrl = "";
	}
	$("viewer-path").textContent = "";
	$("viewer-note").hidden = true;
	$("download-btn").hidden = true;
	$("viewer-body").replaceChildren(el("p", "hint", "Open a file from the tree."));
}

function ext(name) {
	const i = name.lastIndexOf(".");
	return i > 0 ? name.slice(i + 1).toLowerCase() : "";
}

function note(text) {
	$("viewer-note").textContent = text;
	$("viewer-note").hidden = !text;
}

// Text the service decoded with U+FFFD for invalid bytes: call it binary
// when it has NUL bytes or more than a few replacement characters.
function looksBinary(s) {
	if (s.indexOf("\u0000") >= 0)
		return true;
	let bad = 0;
	for (let i = s.indexOf("\uFFFD"); i >= 0; i = s.indexOf("\uFFFD", i + 1))
		bad++;
	return bad > 8 && bad * 50 > s.length;
}

async function openFile(entry) {
	hideAlert();
	clearViewer();
	const seq = state.viewSeq;
	const name = String(entry.name);
	state.file = entry;
	$("viewer-path").textContent = entry.path;
	$("download-btn").hidden = false;
	const body = $("viewer-body");
	body.replaceChildren(el("p", "hint", "Loading…"));
	body.setAttribute("aria-busy", "true");
	try {
		const itype = IMAGE_TYPES[ext(name)];
		if (itype) {
			const blob = await api.downloadBlob(state.thread, entry.path, itype);
			if (seq !== state.viewSeq)
				return;
			state.objectUrl = URL.createObjectURL(blob);
			const img = el("img", "preview");
			img.alt = name;
			img.addEventListener("error", () => {
				if (seq === state.viewSeq)
					note("This image could not be decoded; download it instead.");
			});
			img.src = state.objectUrl;
			body.replaceChildren(img);
			note("");
			$("viewer-path").textContent = entry.path + "  (" +
			    fmtSize(blob.size) + ")";
			return;
		}
		const j = await api.readFile(state.thread, entry.path);
		if (seq !== state.viewSeq)
			return;
		const content = typeof j.content === "string" ? j.content : "";
		if (looksBinary(content)) {
			body.replaceChildren(el("p", "hint",
			    "Binary file (" + fmtSize(j.size) + "): not shown. Use Download."));
			return;
		}
		const pre = el("pre", "mono text", content);
		pre.tabIndex = 0;
		pre.setAttribute("aria-label", "Content of " + name);
		body.replaceChildren(pre);
		if (j.truncated === true)
			note("Truncated: the file is " + fmtSize(j.size) + " (" + j.size +
			    " bytes); only the beginning is shown. Download it for the whole content.");
		else if (content === "")
			note("Empty file.");
	} catch (err) {
		if (seq !== state.viewSeq)
			return;
		body.replaceChildren(el("p", "hint", "Could not open this file."));
		fail(err);
	} finally {
		if (seq === state.viewSeq)
			body.removeAttribute("aria-busy");
	}
}

function showSpecial(entry, what) {
	hideAlert();
	clearViewer();
	$("viewer-path").textContent = entry.path;
	$("viewer-body").replaceChildren(el("p", "hint",
	    "This entry is a " + what + ". The workbench shows it but never follows or opens it."));
}

async function download() {
	const entry = state.file;
	if (!entry)
		return;
	hideAlert();
	const btn = $("download-btn");
	btn.disabled = true;
	try {
		const blob = await api.downloadBlob(state.thread, entry.path,
		    "application/octet-stream");
		const url = URL.createObjectURL(blob);
		const a = document.createElement("a");
		a.href = url;
		a.download = String(entry.name);
		a.hidden = true;
		document.body.append(a);
		a.click();
		a.remove();
		setTimeout(() => URL.revokeObjectURL(url), 30000);
	} catch (err) {
		fail(err);
	} finally {
		btn.disabled = false;
	}
}

/* ---- command runner ------------------------------------------------- */

function runMeta(r) {
	const meta = ["exit code " + r.exit_code, r.duration_ms + " ms"];
	if (r.refused)
		meta.push("refused by the command path policy (not run)");
	if (r.layout_repaired)
		meta.push("repaired: " + r.layout_repaired.join(", "));
	if (r.timed_out)
		meta.push("timed out (process tree killed)");
	if (r.truncated)
		meta.push("output truncated" + (r.full_output_path ?
		    "; full output in " + r.full_output_path : ""));
	$("run-meta").textContent = meta.join(" · ");
	$("run-meta").className = "run-meta " + (r.exit_code === 0 ? "ok" : "bad");
}

// Output as it comes: appended as text, the view kept at its end when it
// was there.
function appendOutput(pre, text) {
	const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
	pre.append(document.createTextNode(text));
	pre.classList.remove("empty");
	if (atEnd)
		pre.scrollTop = pre.scrollHeight;
}

// The streamed run: output events appended live, the exit event ends it.
async function runStream(tid, cmd) {
	let last = null;
	await api.executeStream(tid, cmd, (ev) => {
		if (tid !== state.thread)
			return;
		if (ev.type === "output" && typeof ev.data === "string")
			appendOutput($("run-output"), ev.data);
		else if (ev.type === "exit" || ev.type === "error")
			last = ev;
	});
	if (tid !== state.thread)
		return;
	if (last && last.type === "exit") {
		runMeta(last);
		$("run-output").classList.toggle("empty", $("run-output").textContent === "");
		return;
	}
	$("run-meta").textContent = "The command's result was lost.";
	$("run-meta").className = "run-meta bad";
	if (last && last.error)
		showAlert(String(last.error.message || "The run failed."), "error");
}

async function runBackground(tid, cmd) {
	const p = await api.startProcess(tid, cmd);
	$("run-result").hidden = true;
	$("bg").checked = false;
	await loadProcs();
	showProc(String(p.process_id));
}

async function run(ev) {
	if (ev)
		ev.preventDefault();
	const cmd = $("cmd").value;
	if (!state.thread || state.running || cmd.trim() === "")
		return;
	hideAlert();
	state.running = true;
	$("run-btn").disabled = true;
	$("run-btn").textContent = "Running…";
	$("run-result").hidden = false;
	$("run-result").setAttribute("aria-busy", "true");
	$("run-meta").textContent = "Running…";
	$("run-meta").className = "run-meta";
	$("run-output").textContent = "";
	$("run-output").classList.add("empty");
	const tid = state.thread;
	try {
		if ($("bg").checked)
			await runBackground(tid, cmd);
		else
			await runStream(tid, cmd);
		if (tid === state.thread)
			await fileTree.refresh();
	} catch (err) {
		$("run-meta").textContent = "Not run.";
		$("run-meta").className = "run-meta bad";
		fail(err);
	} finally {
		state.running = false;
		$("run-result").removeAttribute("aria-busy");
		$("run-btn").textContent = "Run";
		$("run-btn").disabled = !state.thread;
	}
}

/* ---- background processes --------------------------------------------- */

function clearProcs() {
	stopFollow();
	state.procs = [];
	state.proc = "";
	$("proc-list").replaceChildren();
	$("procs-empty").hidden = false;
	$("proc-view").hidden = true;
	$("proc-output").textContent = "";
}

function stopFollow() {
	if (state.follow)
		state.follow.abort();
	state.follow = null;
}

function procState(p) {
	if (p.state === "exited")
		return "exited " + p.exit_code + (p.timed_out ? " (lifetime over)" : "");
	return String(p.state);
}

function renderProcs() {
	const ul = $("proc-list");
	ul.replaceChildren();
	for (const p of state.procs) {
		const pid = String(p.process_id);
		const li = el("li", "proc");
		li.dataset.proc = pid;
		if (pid === state.proc)
			li.setAttribute("aria-current", "true");
		const show = el("button", "proc-cmd ghost");
		show.type = "button";
		show.append(el("span", "mono", String(p.command)));
		show.append(el("span", "pmeta", (p.pty ? "terminal · " : "") +
		    procState(p) + " · " + (p.started_at ? fmtTime(p.started_at) : "")));
		show.setAttribute("aria-label", "Show the output of " + String(p.command));
		show.addEventListener("click", () => showProc(pid));
		const stop = el("button", "small stop", p.state === "running" ? "Stop" : "Forget");
		stop.type = "button";
		stop.setAttribute("aria-label", (p.state === "running" ? "Stop " : "Forget ") +
		    String(p.command));
		stop.addEventListener("click", () => stopProc(pid, stop));
		li.append(show);
		if (p.state === "running") {
			const port = guessPort(String(p.command));
			const open = el("button", "small", "Open port");
			open.type = "button";
			open.setAttribute("aria-label", "Open a port of " + String(p.command));
			open.addEventListener("click", () => offerPort(port));
			li.append(open);
		}
		li.append(stop);
		ul.append(li);
	}
	$("procs-empty").hidden = state.procs.length !== 0;
}

async function loadProcs() {
	const tid = state.thread;
	try {
		const list = await api.listProcesses(tid);
		if (tid !== state.thread)
			return;
		state.procs = list;
		renderProcs();
	} catch (err) {
		if (tid === state.thread)
			fail(err);
	}
}

async function stopProc(pid, btn) {
	hideAlert();
	btn.disabled = true;
	try {
		await api.stopProcess(state.thread, pid);
		if (pid === state.proc) {
			stopFollow();
			state.proc = "";
			$("proc-view").hidden = true;
		}
		await loadProcs();
	} catch (err) {
		btn.disabled = false;
		fail(err);
	}
}

function procMeta(j) {
	const m = [j.state === "exited" ? "exited " + j.exit_code : String(j.state)];
	if (j.dropped)
		m.push(j.dropped + " older bytes no longer kept");
	$("proc-meta").textContent = m.join(" · ");
	$("proc-meta").className = "run-meta" + (j.state === "running" ? "" :
	    j.state === "exited" && j.exit_code === 0 ? " ok" : " bad");
}

// Show one process's output from its start and follow it with long-polls
// until it ends or another one is picked.
async function showProc(pid) {
	stopFollow();
	state.proc = pid;
	renderProcs();
	const tid = state.thread;
	const ctl = new AbortController();
	state.follow = ctl;
	$("proc-view").hidden = false;
	$("proc-output").textContent = "";
	$("proc-output").classList.add("empty");
	$("proc-meta").textContent = "…";
	let offset = 0, wasRunning = true;
	try {
		while (!ctl.signal.aborted) {
			const j = await api.processOutput(tid, pid, offset,
			    wasRunning ? FOLLOW_WAIT_MS : 0, ctl.signal);
			if (ctl.signal.aborted || tid !== state.thread)
				return;
			if (j.data)
				appendOutput($("proc-output"), j.data);
			offset = j.next_offset;
			procMeta(j);
			if (!j.running && !j.data)
				break;
			if (wasRunning && !j.running)
				loadProcs();
			wasRunning = j.running;
		}
	} catch (err) {
		if (!(err && err.name === "AbortError"))
			fail(err);
	} finally {
		if (state.follow === ctl)
			state.follow = null;
	}
}

/* ---- tabs and the terminal ------------------------------------------- */

const TABS = { run: "tab-run", term: "tab-term", desk: "tab-desk" };

// Show tab `name` ("run" or "term"); the terminal opens when its tab shows
// and none runs yet (an ended or refused one waits for "New shell").
function selectTab(name, focus) {
	state.tab = name;
	for (const [n, id] of Object.entries(TABS)) {
		const on = n === name;
		$(id).setAttribute("aria-selected", on ? "true" : "false");
		$(id).tabIndex = on ? 0 : -1;
		$($(id).getAttribute("aria-controls")).hidden = !on;
	}
	if (focus)
		$(TABS[name]).focus();
	if (name === "term" && state.thread && state.termState === "closed")
		openTerminal();
	else if (name === "term" && termView)
		termView.refit();
	if (name === "desk" && state.thread)
		deskView.open(state.thread);
}

// Left/Right (and Home/End) move between the tabs, as in a tab list.
function tabKey(ev) {
	const names = Object.keys(TABS).filter((n) => !$(TABS[n]).hidden);
	let i = names.indexOf(state.tab);
	if (ev.key === "ArrowRight")
		i = (i + 1) % names.length;
	else if (ev.key === "ArrowLeft")
		i = (i + names.length - 1) % names.length;
	else if (ev.key === "Home")
		i = 0;
	else if (ev.key === "End")
		i = names.length - 1;
	else
		return;
	ev.preventDefault();
	selectTab(names[i], true);
}

const TERM_TEXT = {
	closed: "",
	starting: "Starting a shell…",
	running: "Shell running",
};

function termState(st, text) {
	const prev = state.termState;
	state.termState = st;
	$("panel-term").dataset.state = st;
	$("term-status").textContent = text || TERM_TEXT[st] || "";
	$("term-status").classList.toggle("bad", st === "ended" || st === "refused" ||
	    (st === "running" && !!text));
	$("term-restart").hidden = !(st === "ended" || st === "refused");
	if (st === "closed" || st === "refused")
		$("term-size").textContent = "";
	// the thread's process list shows the terminal's process too; it is
	// asked for once a start answered, not while one is on its way: the
	// service takes a process listed before its keeper runs for lost
	if (st !== prev && (st === "running" || st === "ended" || st === "refused") &&
	    state.thread)
		loadProcs();
}

function termSize(cols, rows) {
	$("term-size").textContent = cols + " × " + rows;
	$("term").dataset.cols = String(cols);
	$("term").dataset.rows = String(rows);
}

let termLoading = null;	// the import of term.js under way

async function loadTermView() {
	if (!termLoading)
		termLoading = import("./term.js").then(({ TermView }) => {
			termView = new TermView($("term"), {
				onState: termState,
				onSize: termSize,
				onError: fail,
			});
			return termView;
		}, (err) => {
			termLoading = null;
			throw err;
		});
	return termLoading;
}

async function openTerminal() {
	const tid = state.thread;
	if (!tid)
		return;
	termState("starting", "");
	let view;
	try {
		view = await loadTermView();
	} catch (err) {
		termState("refused", "The terminal could not be loaded (" +
		    String(err && err.message) + ").");
		return;
	}
	if (tid !== state.thread || state.tab !== "term") {
		if (state.termState === "starting" && !view.live)
			termState("closed", "");
		return;
	}
	await view.start(tid);
}

// Kill the terminal's process (when one runs); the tab stays.
function closeTerminal() {
	if (termView)
		termView.close();
	else
		termState("closed", "");
}

async function closeTerminalTab() {
	if (termView)
		await termView.close();
	selectTab("run", true);
	if (state.thread)
		loadProcs();
}

/* ---- previews ------------------------------------------------------------ */

function clearPreviews() {
	state.previews = [];
	$("preview-list").replaceChildren();
	$("previews-empty").hidden = false;
}

// The port a server command most likely listens on ("http.server 8000",
// "--port 3000", ":5173"); "" when none shows.
function guessPort(cmd) {
	const m = cmd.match(/(?:--port[= ]|-p |:)(\d{2,5})\b/) ||
	    cmd.match(/\b(\d{4,5})\b/);
	return m && Number(m[1]) <= 65535 ? m[1] : "";
}

function offerPort(port) {
	$("preview-port").value = port;
	$("preview-port").focus();
}

function fmtLeft(iso) {
	const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
	if (!(s > 0))
		return "expired";
	return s >= 3600 ? Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min left" :
	    s >= 60 ? Math.floor(s / 60) + " min left" : s + " s left";
}

function renderPreviews() {
	const ul = $("preview-list");
	ul.replaceChildren();
	for (const p of state.previews) {
		const li = el("li", "preview");
		li.dataset.port = String(p.port);
		const info = el("div", "preview-info");
		info.append(el("span", "pport", "port " + String(p.port)),
		    el("span", "pmeta", String(p.prefix) + "… · " + fmtLeft(String(p.expires_at))));
		// a link of its own origin, in a new tab, without a referrer or
		// an opener: the preview's page can reach nothing of this one
		const a = el("a", "small button", "Open");
		a.href = String(p.url);
		a.target = "_blank";
		a.rel = "noopener noreferrer";
		a.setAttribute("aria-label", "Open port " + String(p.port) + " in a new tab");
		const copy = el("button", "small", "Copy");
		copy.type = "button";
		copy.setAttribute("aria-label", "Copy the URL of port " + String(p.port));
		copy.addEventListener("click", () => copyUrl(String(p.url), copy));
		const rev = el("button", "small stop", "Revoke");
		rev.type = "button";
		rev.setAttribute("aria-label", "Revoke the preview of port " + String(p.port));
		rev.addEventListener("click", () => revokePreview(p.port, rev));
		li.append(info, a, copy, rev);
		ul.append(li);
	}
	$("previews-empty").hidden = state.previews.length !== 0;
}

async function loadPreviews() {
	const tid = state.thread;
	try {
		const list = await api.listPreviews(tid);
		if (tid !== state.thread)
			return;
		state.previews = list;
		renderPreviews();
	} catch (err) {
		if (tid === state.thread && err.status !== 404)
			fail(err);
		if (err.status === 404)	/* previews are off on this service */
			$("previews-empty").textContent = "Previews are off on this service.";
	}
}

async function openPort(ev) {
	ev.preventDefault();
	hideAlert();
	const port = Number($("preview-port").value);
	if (!(port >= 1 && port <= 65535)) {
		showAlert("A port is a number from 1 to 65535.", "error");
		return;
	}
	$("preview-btn").disabled = true;
	try {
		await api.createPreview(state.thread, port);
		$("preview-port").value = "";
		await loadPreviews();
	} catch (err) {
		fail(err);
	} finally {
		$("preview-btn").disabled = !state.thread;
	}
}

async function copyUrl(url, btn) {
	try {
		await navigator.clipboard.writeText(url);
		btn.textContent = "Copied";
		setTimeout(() => { btn.textContent = "Copy"; }, 1500);
	} catch (e) {
		showAlert("The browser did not let the page copy; open the preview and " +
		    "copy its address instead.", "error");
	}
}

async function revokePreview(port, btn) {
	hideAlert();
	btn.disabled = true;
	try {
		await api.revokePreview(state.thread, port);
		await loadPreviews();
	} catch (err) {
		btn.disabled = false;
		fail(err);
	}
}

function cmdKey(ev) {
	if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey))
		run(ev);
}

/* ---- start ---------------------------------------------------------- */

/* ---- snapshots ---------------------------------------------------------- */

function clearSnaps() {
	$("snap-list").replaceChildren();
	$("snaps-empty").hidden = false;
}

function snapButton(label, aria, fn) {
	const b = el("button", "small", label);
	b.type = "button";
	b.setAttribute("aria-label", aria);
	b.addEventListener("click", () => fn(b));
	return b;
}

function renderSnaps(list) {
	const ul = $("snap-list");
	ul.replaceChildren();
	for (const s of list) {
		const sid = String(s.snapshot_id);
		const what = s.name ? String(s.name) : sid;
		const li = el("li", "proc snap");
		li.dataset.snapshot = sid;
		const info = el("div", "proc-cmd");
		info.append(el("span", "mono", what));
		info.append(el("span", "pmeta", (s.created_at ? fmtTime(s.created_at) : "") +
		    " · holds " + fmtSize(Number(s.size_bytes) || 0)));
		li.append(info,
		    snapButton("Restore", "Restore " + what, (b) => restoreSnap(sid, what, b)),
		    snapButton("Fork", "Fork " + what + " into a new thread",
			(b) => forkSnap(sid, b)),
		    snapButton("Delete", "Delete " + what, (b) => deleteSnap(sid, b)));
		ul.append(li);
	}
	$("snaps-empty").hidden = list.length !== 0;
}

async function loadSnaps() {
	const tid = state.thread;
	try {
		const list = await api.listSnapshots(tid);
		if (tid === state.thread)
			renderSnaps(list);
	} catch (err) {
		if (tid === state.thread)
			fail(err);
	}
}

async function takeSnap(ev) {
	ev.preventDefault();
	hideAlert();
	const btn = $("snap-btn");
	btn.disabled = true;
	try {
		await api.createSnapshot(state.thread, $("snap-name").value.trim());
		$("snap-name").value = "";
		await loadSnaps();
	} catch (err) {
		fail(err);
	} finally {
		btn.disabled = !state.thread;
	}
}

// Two clicks: the first asks (no dialog: the page opens none), the second
// within 5 s restores.
async function restoreSnap(sid, what, btn) {
	hideAlert();
	if (btn.dataset.armed !== "1") {
		btn.dataset.armed = "1";
		btn.textContent = "Sure?";
		showAlert("Restore " + what + "? The thread's files become the snapshot's; " +
		    "its sandbox, background processes and sessions end. Click “Sure?” " +
		    "to go on.", "info");
		setTimeout(() => {
			btn.dataset.armed = "";
			btn.textContent = "Restore";
		}, 5000);
		return;
	}
	btn.dataset.armed = "";
	btn.textContent = "Restore";
	btn.disabled = true;
	try {
		await api.restoreSnapshot(state.thread, sid);
		showAlert("Restored " + what + ".", "info");
		clearViewer();
		await Promise.all([fileTree.refresh(), loadProcs(), loadSnaps()]);
	} catch (err) {
		fail(err);
	} finally {
		btn.disabled = false;
	}
}

// A new thread (its id made up by the service) with the snapshot's files,
// opened at once.
async function forkSnap(sid, btn) {
	hideAlert();
	btn.disabled = true;
	try {
		const t = await api.forkSnapshot(state.thread, sid, "");
		await loadThreads();
		await pickThread(t.thread_id);
	} catch (err) {
		fail(err);
	} finally {
		btn.disabled = false;
	}
}

async function deleteSnap(sid, btn) {
	hideAlert();
	btn.disabled = true;
	try {
		await api.deleteSnapshot(state.thread, sid);
		await loadSnaps();
	} catch (err) {
		btn.disabled = false;
		fail(err);
	}
}

async function start() {
	fileTree = new FileTree($("tree"), {
		onFile: openFile,
		onSpecial: showSpecial,
		onError: fail,
	});
	$("signin-form").addEventListener("submit", signIn);
	$("signout").addEventListener("click", () => {
		hideAlert();
		signOut();
	});
	$("alert-close").addEventListener("click", hideAlert);
	$("threads-reload").addEventListener("click", reloadThreads);
	$("newthread-form").addEventListener("submit", newThread);
	$("tree-reload").addEventListener("click", () => fileTree.refresh());
	$("run-form").addEventListener("submit", run);
	$("procs-reload").addEventListener("click", () => {
		hideAlert();
		loadProcs();
	});
	$("snap-form").addEventListener("submit", takeSnap);
	$("snaps-reload").addEventListener("click", () => {
		hideAlert();
		loadSnaps();
	});
	$("cmd").addEventListener("keydown", cmdKey);
	$("preview-form").addEventListener("submit", openPort);
	$("previews-reload").addEventListener("click", () => {
		hideAlert();
		loadPreviews();
	});
	$("download-btn").addEventListener("click", download);
	for (const [n, id] of Object.entries(TABS)) {
		$(id).addEventListener("click", () => selectTab(n, false));
		$(id).addEventListener("keydown", tabKey);
	}
	$("term-close").addEventListener("click", closeTerminalTab);
	deskView = new DeskView({ frame: $("desk-frame"), status: $("desk-status"),
	    control: $("desk-control"), open: $("desk-open"), stop: $("desk-stop"),
	    hint: $("desk-hint") }, { onError: fail });
	$("term-restart").addEventListener("click", () => {
		hideAlert();
		openTerminal();
	});
	// the page going away takes its terminal's process with it
	window.addEventListener("pagehide", () => {
		if (termView)
			termView.closeOnUnload();
	});

	// No token pasted: the site may sign people in itself (a session
	// cookie, basic auth, an SSO proxy); then the API answers at once.
	try {
		await loadThreads();
		state.siteSession = !api.getToken();
		$("signout").hidden = state.siteSession;
		showBench();
		let last = "";
		try {
			last = sessionStorage.getItem(THREAD_KEY) || "";
		} catch (e) { /* ignore */ }
		if (last && state.threads.some((t) => t.thread_id === last))
			await pickThread(last);
	} catch (err) {
		if (err.status === 401) {
			const hadToken = !!api.getToken();
			signOut();
			if (hadToken)
				showAlert(err.message, "error");
		} else {
			showBench();
			fail(err);
		}
	}
	document.body.dataset.ready = "1";
}

start();
