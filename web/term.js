// SPDX-License-Identifier: MIT
// web/term.js - the workbench's Terminal tab: an interactive shell in the
// selected thread's sandbox on a pseudo-terminal, shown by xterm.js
// (web/vendor/xterm/, docs/workbench.md "Terminal").
//
// The shell is a background process on a terminal (docs/api.md "On a
// terminal"): `POST /api/processes` with "pty" sized to the emulator, its
// screen read by output long-polls (`wait_ms`) and written to xterm as
// terminal data, what is typed sent to its standard input, the size sent
// with `.../resize` when the panel's size changes (debounced). Typing is
// batched: while one stdin request is on its way, keystrokes queue and go
// together in the next, so fast typing costs one request per round trip,
// not one round trip per key; the requests stay in order (one at a time).
// The process is killed (`DELETE`) when the terminal is closed, the thread
// changes, the user signs out or the page goes away (a keepalive request).
//
// What the sandbox prints is terminal data for xterm's parser and nothing
// else: it is never put into markup, and links in it (OSC 8) are shown but
// never followed. xterm's own styles go through web/xterm-csp.js so that the
// page's CSP stays as it is.
//
// Ownership: one TermView per page owns the Terminal (made at the first
// start, kept for the page's life) and at most one live session (its
// process, its long-poll loop, its input queue); a session that is replaced
// or closed stops its loops by its AbortController and its `live` flag.

import { Terminal } from "./vendor/xterm/xterm.js";
import { FitAddon } from "./vendor/xterm/addon-fit.js";
import * as api from "./api.js";
import { holdCspStyles } from "./xterm-csp.js";

// bash as a login shell when the image has it, else sh
const SHELL = "command -v bash >/dev/null 2>&1 && exec bash -l; exec sh";
const ENV = { TERM: "xterm-256color", COLORTERM: "truecolor" };
const POLL_WAIT_MS = 10000;	// one output long-poll
const CAPPED_PAUSE_MS = 300;	// a long-poll that could not wait: pause
const RESIZE_DEBOUNCE_MS = 150;
const STDIN_CHUNK = 65536;	// bytes per stdin request at most
const RETRIES = 8;		// 503s and network failures in a row

const THEME = {
	background: "#14171c",
	foreground: "#e6e9ef",
	cursor: "#f0a020",
	cursorAccent: "#14171c",
	selectionBackground: "#34507f",
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();

function isAbort(err) {
	return err && err.name === "AbortError";
}

// A failure worth trying again: the service busy or not reachable.
function transient(err) {
	return err && (err.status === 0 || err.status === 503 || err.status === 502 ||
	    err.status === 504);
}

function retryDelay(err, n) {
	const ra = Number(err && err.retryAfter);
	return ra > 0 ? Math.min(ra, 10) * 1000 : Math.min(250 * (1 << n), 4000);
}

export class TermView {
	// host: the element xterm lives in; hooks: {onState(state, text),
	// onSize(cols, rows), onError(err)}: the tab's state ("starting",
	// "running", "ended", "refused", "closed") with a sentence for people
	// ("" when all is well), the size the process was last told, and a
	// refused identity (401: the page signs out).
	constructor(host, hooks) {
		this.host = host;
		this.hooks = hooks;
		this.term = null;
		this.fit = null;
		this.session = null;
		this.resizeTimer = 0;
	}

	get live() {
		return !!(this.session && this.session.live);
	}

	_state(state, text) {
		this.hooks.onState(state, text);
	}

	_unauthorized(err) {
		if (err && err.status === 401)
			this.hooks.onError(err);
	}

	// The Terminal, made once and kept for the page's life (and with it
	// the CSP wrapper, never released). xterm keeps keyboard focus in its
	// own textarea; onData gives what the keys type, as terminal input.
	_make() {
		if (this.term)
			return;
		holdCspStyles(document);
		this.term = new Terminal({
			cursorBlink: true,
			fontFamily: '"DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
			fontSize: 13,
			scrollback: 5000,
			theme: THEME,
			// OSC 8 links: shown, never followed
			linkHandler: { activate: () => {}, allowNonHttpProtocols: false },
		});
		this.fit = new FitAddon();
		this.term.loadAddon(this.fit);
		this.term.open(this.host);
		this.term.onData((d) => this._input(enc.encode(d)));
		// mouse reports in the X10 encoding: one byte per character
		this.term.onBinary((d) => this._input(Uint8Array.from(d, (c) => c.charCodeAt(0) & 255)));
		this.term.onResize(() => this._sendSize());
		// Tab completes in the shell; Shift+Tab is left to the browser, so
		// the keyboard can always leave the terminal (to its buttons)
		this.term.attachCustomKeyEventHandler((ev) => !(ev.key === "Tab" && ev.shiftKey));
		new ResizeObserver(() => this._debouncedFit()).observe(this.host);
	}

	_visible() {
		return this.host.offsetParent !== null && this.host.clientWidth > 0 &&
		    this.host.clientHeight > 0;
	}

	_debouncedFit() {
		clearTimeout(this.resizeTimer);
		this.resizeTimer = setTimeout(() => this.refit(), RESIZE_DEBOUNCE_MS);
	}

	// Fit the terminal to its panel (when the panel shows: a hidden one
	// measures nothing); xterm's onResize then sends the size.
	refit() {
		if (!this.term || !this._visible())
			return;
		const d = this.fit.proposeDimensions();
		if (!d || !Number.isFinite(d.cols) || !Number.isFinite(d.rows))
			return;
		if (d.cols !== this.term.cols || d.rows !== this.term.rows)
			this.term.resize(d.cols, d.rows);
	}

	focus() {
		if (this.term)
			this.term.focus();
	}

	// Start a shell in thread `tid`, replacing any session. Resolves when it
	// runs or was refused (the state says which).
	async start(tid) {
		await this.close();
		this._make();
		this.term.reset();
		this.refit();
		const s = { tid, pid: "", live: true, ctl: new AbortController(),
		    queue: [], sending: false, sizing: false,
		    sent: { cols: this.term.cols, rows: this.term.rows } };
		this.session = s;
		this._state("starting", "Starting a shell…");
		let p;
		try {
			p = await api.startTerminal(tid, SHELL, s.sent.cols, s.sent.rows, ENV);
		} catch (err) {
			if (this.session === s) {
				s.live = false;
				this.session = null;
				this._state("refused", "No terminal: " + err.message);
				this._unauthorized(err);
			}
			return;
		}
		s.pid = String(p.process_id);
		if (this.session !== s) {
			// closed while it started: kill what started
			api.stopProcess(tid, s.pid).catch(() => {});
			return;
		}
		this._state("running", "");
		this.hooks.onSize(s.sent.cols, s.sent.rows);
		this._sendSize();
		this._flush(s);
		this._follow(s);
		this.focus();
	}

	// Kill the session's process and forget it; the screen stays.
	async close() {
		const s = this.session;
		if (!s)
			return;
		this.session = null;
		s.live = false;
		s.ctl.abort();
		this._state("closed", "");
		if (!s.pid)
			return;	// still starting: start() kills it when it answers
		try {
			await api.stopProcess(s.tid, s.pid);
		} catch (err) {
			this._unauthorized(err);	// else it is gone already
		}
	}

	// The page is going away: a request that outlives it kills the process.
	closeOnUnload() {
		const s = this.session;
		if (!s)
			return;
		this.session = null;
		s.live = false;
		s.ctl.abort();
		if (s.pid)
			api.stopProcessOnUnload(s.tid, s.pid);
	}

	/* ---- screen: output long-polls -------------------------------------- */

	async _follow(s) {
		let offset = 0, running = true, fails = 0;
		while (!s.ctl.signal.aborted) {
			let j;
			try {
				j = await api.processOutput(s.tid, s.pid, offset,
				    running ? POLL_WAIT_MS : 0, s.ctl.signal);
			} catch (err) {
				if (isAbort(err) || s.ctl.signal.aborted)
					return;
				if (transient(err) && fails < RETRIES) {
					this._state("running", "Reconnecting…");
					await sleep(retryDelay(err, fails++));
					continue;
				}
				this._ended(s, err.status === 404 ?
				    "The shell's process was stopped elsewhere" :
				    "The terminal lost its process: " + err.message);
				this._unauthorized(err);
				return;
			}
			if (s.ctl.signal.aborted)
				return;
			if (fails) {
				fails = 0;
				this._state("running", "");
			}
			if (j.dropped)
				this.term.write("\r\n\x1b[2m[" + j.dropped +
				    " bytes of output no longer kept]\x1b[0m\r\n");
			if (j.data)
				this.term.write(j.data);
			offset = j.next_offset;
			running = j.running;
			if (!running && !j.data) {
				this._ended(s, endText(j));
				return;
			}
			if (running && j.wait_capped && !j.data)
				await sleep(CAPPED_PAUSE_MS);
		}
	}

	_ended(s, text) {
		if (this.session !== s)
			return;
		s.live = false;
		s.ctl.abort();
		this.term.write("\r\n\x1b[2m[" + text + "]\x1b[0m\r\n");
		this._state("ended", text);
	}

	/* ---- keys: standard input, batched ------------------------------------ */

	_input(bytes) {
		const s = this.session;
		if (!s || !s.live || bytes.length === 0)
			return;
		s.queue.push(bytes);
		if (s.pid && !s.sending)
			this._flush(s);
	}

	// Send what is queued, one request at a time, in order: what is typed
	// while a request is on its way goes with the next one.
	async _flush(s) {
		if (s.sending)
			return;
		s.sending = true;
		try {
			while (s.live && s.queue.length) {
				const all = concat(s.queue);
				s.queue = [];
				if (!await this._write(s, all))
					break;
			}
		} finally {
			s.sending = false;
		}
	}

	// Write all of `bytes`; false when the session cannot take more.
	async _write(s, bytes) {
		let off = 0, fails = 0;
		while (off < bytes.length && s.live) {
			const piece = bytes.subarray(off, off + STDIN_CHUNK);
			let r;
			try {
				r = await api.writeStdin(s.tid, s.pid, piece);
			} catch (err) {
				if (!s.live)
					return false;
				if (transient(err) && fails < RETRIES) {
					await sleep(retryDelay(err, fails++));
					continue;
				}
				if (err.code === "not_running" || err.status === 404)
					return false;	// the screen's loop says it ended
				this._unauthorized(err);
				this._state("running", "What was typed could not be sent: " +
				    err.message);
				return false;
			}
			fails = 0;
			off += Math.max(0, Number(r.written) || 0);
			if (r.stdin_open === false)
				return false;
		}
		return true;
	}

	/* ---- size ------------------------------------------------------------ */

	// Tell the process the terminal's size when it changed; one request at
	// a time, the last size wins.
	async _sendSize() {
		const s = this.session;
		if (!s || !s.live || !s.pid || s.sizing || !this.term)
			return;
		s.sizing = true;
		try {
			while (s.live && (s.sent.cols !== this.term.cols ||
			    s.sent.rows !== this.term.rows)) {
				const want = { cols: this.term.cols, rows: this.term.rows };
				try {
					await api.resizeProcess(s.tid, s.pid, want.cols, want.rows);
				} catch (err) {
					this._unauthorized(err);
					if (!transient(err))
						break;	// ended (409): the screen's loop says so
					await sleep(retryDelay(err, 0));
					continue;
				}
				s.sent = want;
				if (this.session === s)
					this.hooks.onSize(want.cols, want.rows);
			}
		} finally {
			s.sizing = false;
		}
	}
}

function concat(parts) {
	if (parts.length === 1)
		return parts[0];
	let n = 0;
	for (const p of parts)
		n += p.length;
	const all = new Uint8Array(n);
	n = 0;
	for (const p of parts) {
		all.set(p, n);
		n += p.length;
	}
	return all;
}

// What the end of the shell's process says, in words.
function endText(j) {
	if (j.state === "lost")
		return "The shell's process was lost (its sandbox was recreated or reaped)";
	if (j.timed_out)
		return "The shell reached its lifetime and was stopped";
	if (j.exit_code === null || j.exit_code === undefined)
		return "The shell ended";
	return "The shell ended (exit code " + j.exit_code + ")";
}
