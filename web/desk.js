// SPDX-License-Identifier: MIT
// web/desk.js - the workbench's Desktop tab: the thread's sandbox desktop
// (the browser profile's noVNC, docs/browser.md "Watching") in a frame of
// its own origin.
//
// The desktop is served inside the sandbox on DESK_PORT (noVNC and its
// websockify bridge); the tab reaches it through a preview of that port
// (docs/api.md "Previews"): a capability URL on an origin of its own,
// which the tab makes (or reuses while it has DESK_MIN_LEFT_MS to live)
// with the page's credentials, then frames. The frame gets the URL only:
// never this page's token, no referrer, and the preview's origin can read
// nothing of this page. noVNC opens view-only (it ignores the mouse and
// keys); "Take control" loads it again with input on, "Stop controlling"
// back; "Open in a new tab" gives noVNC's full page there. "Stop sharing"
// revokes the preview: the URL stops working at once and open connections
// are closed.
//
// Before it frames noVNC the tab makes sure its service is ready: a box
// that is not running is woken with a command (`true`), then the services'
// states are polled (GET /api/services) until the desktop's is `ready`.
//
// Ownership: one DeskView per page owns the frame it makes and an
// AbortController-like sequence number; a thread change or close bumps
// it, so a late answer for an old thread changes nothing.

import * as api from "./api.js";

export const DESK_PORT = 6080;
const DESK_MIN_LEFT_MS = 5 * 60 * 1000;	// reuse a preview with that left
const READY_WAIT_MS = 60000;		// the desktop's service, at most
const READY_POLL_MS = 500;

// The service of a thread's profile that serves the desktop: the one
// whose ready port is DESK_PORT; null when there is none.
export function deskService(services) {
	return (services || []).find((s) => s && s.ready_port === DESK_PORT) || null;
}

function sleep(ms) {
	return new Promise((r) => setTimeout(r, ms));
}

export class DeskView {
	// els: {frame, status, control, open, stop, hint}; cb: {onError}
	constructor(els, cb) {
		this.els = els;
		this.cb = cb;
		this.seq = 0;
		this.thread = "";
		this.url = "";		// the preview's URL while one is shown
		this.control = false;
		this.blocked = false;	// the page's CSP refused the frame
		this.iframe = null;
		document.addEventListener("securitypolicyviolation", (ev) => {
			if (ev.effectiveDirective === "frame-src" && this.url &&
			    String(ev.blockedURI).startsWith(this.url.replace(/\/$/, "")))
				this.refused();
		});
		els.control.addEventListener("click", () => this.toggleControl());
		els.stop.addEventListener("click", () => this.stopSharing());
	}

	status(text, bad) {
		this.els.status.textContent = text;
		this.els.status.classList.toggle("bad", !!bad);
	}

	// The framed page: noVNC's vnc_lite.html, the remote screen scaled to
	// the frame, view-only unless in control (it reads any view_only value
	// as on: none is given then). Not vnc.html: its settings live in
	// localStorage, which a browser denies a frame of another site.
	frameUrl() {
		const q = new URLSearchParams({ path: "websockify", scale: "1" });
		if (!this.control)
			q.set("view_only", "1");
		return this.url + "vnc_lite.html?" + q.toString();
	}

	// The new tab's page: noVNC's own vnc.html, first-party there.
	tabUrl() {
		const q = new URLSearchParams({ autoconnect: "true", reconnect: "true",
		    resize: "scale", path: "websockify",
		    view_only: this.control ? "false" : "true" });
		return this.url + "vnc.html?" + q.toString();
	}

	buttons(on) {
		this.els.control.disabled = !on;
		this.els.stop.disabled = !on;
		this.els.open.hidden = !on;
		this.els.control.textContent = this.control ? "Stop controlling" : "Take control";
		this.els.control.setAttribute("aria-pressed", this.control ? "true" : "false");
		if (on)
			this.els.open.href = this.tabUrl();
	}

	clearFrame() {
		if (this.iframe) {
			this.iframe.remove();
			this.iframe = null;
		}
	}

	// Drop what shows (a thread change, sign-out): the preview stays.
	reset() {
		this.seq++;
		this.thread = "";
		this.url = "";
		this.control = false;
		this.blocked = false;
		this.clearFrame();
		this.buttons(false);
		this.els.hint.hidden = false;
		this.status("", false);
	}

	// A preview of DESK_PORT with time left, else a new one.
	async preview(tid) {
		const now = Date.now();
		for (const p of await api.listPreviews(tid))
			if (p.port === DESK_PORT && Date.parse(String(p.expires_at)) - now > DESK_MIN_LEFT_MS)
				return p;
		return api.createPreview(tid, DESK_PORT);
	}

	// Wait until the desktop's service is ready, waking a box that does
	// not run. True when it is; false when the wait was overtaken.
	async ready(tid, seq) {
		const until = Date.now() + READY_WAIT_MS;
		let woken = false;
		for (;;) {
			const svc = deskService(await api.listServices(tid));
			if (seq !== this.seq)
				return false;
			if (!svc)
				throw new Error("This thread's profile has no desktop.");
			if (svc.state === "ready")
				return true;
			if (svc.state === "stopped" && !woken) {
				this.status("Starting the sandbox…", false);
				woken = true;
				await api.execute(tid, "true");
				if (seq !== this.seq)
					return false;
				this.status("Starting the desktop…", false);
			}
			if (Date.now() >= until)
				throw new Error("The desktop did not start within " +
				    READY_WAIT_MS / 1000 + " s (its service is " + String(svc.state) + ").");
			await sleep(READY_POLL_MS);
		}
	}

	// Show thread tid's desktop (the tab was selected).
	async open(tid) {
		if (this.thread === tid && this.iframe && !this.blocked)
			return;
		this.reset();
		const seq = this.seq;
		this.thread = tid;
		this.els.hint.hidden = true;
		this.status("Starting the desktop…", false);
		try {
			if (!await this.ready(tid, seq))
				return;
			const p = await this.preview(tid);
			if (seq !== this.seq)
				return;
			this.url = String(p.url);
			this.show();
		} catch (err) {
			if (seq !== this.seq)
				return;
			this.status(err.message || String(err), true);
			if (err.status !== undefined)
				this.cb.onError(err);
		}
	}

	show() {
		this.clearFrame();
		const f = document.createElement("iframe");
		f.className = "desk";
		f.title = "Desktop of the thread (noVNC" +
		    (this.control ? ", in control)" : ", view only)");
		f.referrerPolicy = "no-referrer";
		// its own origin: scripts and its own storage, nothing of ours
		f.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
		f.src = this.frameUrl();
		this.els.frame.append(f);
		this.iframe = f;
		this.buttons(true);
		this.status(this.control ? "In control: your keys and clicks reach the desktop" :
		    "Watching (view only)", false);
	}

	refused() {
		this.blocked = true;
		this.clearFrame();
		this.buttons(true);
		this.status("This site's policy does not let the page frame the desktop " +
		    "(docs/nginx.md: the workbench's frame-src); open it in a new tab.", true);
	}

	toggleControl() {
		if (!this.url)
			return;
		this.control = !this.control;
		if (this.blocked)
			this.buttons(true);
		else
			this.show();
	}

	async stopSharing() {
		const tid = this.thread;
		if (!tid || !this.url)
			return;
		this.els.stop.disabled = true;
		try {
			await api.revokePreview(tid, DESK_PORT);
		} catch (err) {
			if (err.status !== 404) {
				this.els.stop.disabled = false;
				this.cb.onError(err);
				return;
			}
		}
		if (tid !== this.thread)
			return;
		this.seq++;
		this.url = "";
		this.clearFrame();
		this.buttons(false);
		this.status("Sharing stopped: the desktop's URL no longer works. Select the " +
		    "tab again for a new one.", false);
		this.thread = "";
	}
}
