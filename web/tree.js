// SPDX-License-Identifier: MIT
// web/tree.js - the lazy file tree of one thread: one level fetched at a
// time from /api/viewer/filesystem/tree, expanded directories remembered
// across refreshes. Every name is set with textContent. Special entries
// (symlink, fifo, socket, devices, other) are shown with their type and are
// never followed: activating one only reports what it is. Keyboard: the
// items are buttons (Enter/Space activate), with a roving tabindex and the
// usual tree keys (Up/Down, Left/Right, Home/End).

import * as api from "./api.js";

const SPECIAL = {
	symlink: "symlink",
	fifo: "FIFO",
	socket: "socket",
	chardev: "char device",
	blockdev: "block device",
	other: "special file",
};

export function entryType(e) {
	if (typeof e.type === "string" && e.type)
		return e.type;
	return e.is_dir ? "dir" : "file";
}

export function fmtSize(n) {
	if (typeof n !== "number" || !isFinite(n))
		return "";
	if (n < 1024)
		return n + " B";
	const u = ["KiB", "MiB", "GiB", "TiB"];
	let v = n / 1024, i = 0;
	while (v >= 1024 && i < u.length - 1) {
		v /= 1024;
		i++;
	}
	return (v < 10 ? v.toFixed(1) : Math.round(v)) + " " + u[i];
}

function pad(n) {
	return n < 10 ? "0" + n : String(n);
}

// ISO 8601 -> "YYYY-MM-DD HH:MM" in the browser's time zone ("" if absent).
export function fmtTime(iso) {
	if (!iso)
		return "";
	const d = new Date(iso);
	if (isNaN(d.getTime()))
		return "";
	return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) +
	    " " + pad(d.getHours()) + ":" + pad(d.getMinutes());
}

function el(tag, cls, text) {
	const n = document.createElement(tag);
	if (cls)
		n.className = cls;
	if (text !== undefined)
		n.textContent = text;
	return n;
}

export class FileTree {
	// root: the <ul role="tree">; handlers: {onFile(entry), onSpecial(entry),
	// onError(err)}.
	constructor(root, handlers) {
		this.root = root;
		this.h = handlers;
		this.thread = "";
		this.expanded = new Set();
		this.gen = 0;
		root.addEventListener("keydown", (ev) => this.onKey(ev));
		root.addEventListener("focusin", (ev) => this.onFocus(ev));
	}

	clear() {
		this.gen++;
		this.thread = "";
		this.expanded.clear();
		this.root.replaceChildren();
	}

	async show(threadId) {
		this.thread = threadId;
		this.expanded = new Set(["/home/yuxi/user-data"]);
		await this.refresh();
	}

	// Reload every visible level; returns when the new tree is in place.
	async refresh() {
		if (!this.thread)
			return;
		const gen = ++this.gen;
		const focused = document.activeElement &&
		    this.root.contains(document.activeElement) ?
		    document.activeElement.dataset.path : null;
		const ul = document.createElement("ul");
		try {
			await this.load(ul, "/", 1, gen);
		} catch (err) {
			if (gen === this.gen)
				this.h.onError(err);
			return;
		}
		if (gen !== this.gen)
			return;
		this.root.replaceChildren(...ul.childNodes);
		this.root.setAttribute("aria-busy", "false");
		this.fixTabStop(focused);
	}

	async load(ul, path, level, gen) {
		const j = await api.tree(this.thread, path);
		if (gen !== this.gen)
			return;
		const entries = Array.isArray(j.entries) ? j.entries.slice() : [];
		// the roots keep the service's order (user-data, skills)
		if (level > 1)
			entries.sort((a, b) => (b.is_dir === true) - (a.is_dir === true) ||
		    String(a.name).localeCompare(String(b.name)));
		const kids = [];
		for (const e of entries) {
			const li = this.item(e, level);
			ul.append(li);
			if (entryType(e) === "dir" && this.expanded.has(e.path))
				kids.push(this.expandInto(li, e, level, gen, false));
		}
		if (entries.length === 0 && level > 1)
			ul.append(el("li", "tree-empty", "(empty)"));
		if (j.truncated === true)
			ul.append(el("li", "tree-empty", "(listing truncated)"));
		await Promise.all(kids);
	}

	item(e, level) {
		const type = entryType(e);
		const li = el("li", "tree-li");
		li.setAttribute("role", "none");
		const b = el("button", "node t-" + type);
		b.type = "button";
		b.setAttribute("role", "treeitem");
		b.setAttribute("aria-level", String(level));
		b.tabIndex = -1;
		b.dataset.path = e.path;
		b.dataset.type = type;
		b.style.setProperty("--depth", String(level - 1));
		const icon = el("span", "icon");
		icon.setAttribute("aria-hidden", "true");
		b.append(icon, el("span", "name", String(e.name)));
		const meta = el("span", "meta");
		if (SPECIAL[type])
			meta.append(el("span", "badge", SPECIAL[type]));
		if (type === "file")
			meta.append(el("span", "size", fmtSize(e.size)));
		if (e.modified_at)
			meta.append(el("span", "mtime", fmtTime(e.modified_at)));
		b.append(meta);
		b.title = e.path + (SPECIAL[type] ? " (" + SPECIAL[type] + ", not followed)" : "") +
		    (type === "file" ? " — " + e.size + " bytes" : "");
		if (type === "dir")
			b.setAttribute("aria-expanded", "false");
		b.addEventListener("click", () => this.activate(li, b, e, level));
		li.append(b);
		return li;
	}

	async expandInto(li, e, level, gen, focusFirst) {
		const b = li.firstChild;
		const group = document.createElement("ul");
		group.setAttribute("role", "group");
		group.className = "tree-group";
		b.setAttribute("aria-expanded", "true");
		this.expanded.add(e.path);
		try {
			await this.load(group, e.path, level + 1, gen);
		} catch (err) {
			if (gen !== this.gen)
				return;
			if (err.status === 401)
				throw err;
			group.append(el("li", "tree-error", err.message));
		}
		if (gen !== this.gen)
			return;
		const old = li.querySelector(":scope > ul");
		if (old)
			old.remove();
		li.append(group);
		if (focusFirst) {
			const first = group.querySelector("button.node");
			if (first)
				this.focus(first);
		}
	}

	async activate(li, b, e, level) {
		const type = entryType(e);
		if (type === "dir") {
			if (b.getAttribute("aria-expanded") === "true") {
				this.collapse(li, b, e);
				return;
			}
			b.setAttribute("aria-busy", "true");
			try {
				await this.expandInto(li, e, level, this.gen, false);
			} catch (err) {
				this.h.onError(err);
			}
			b.removeAttribute("aria-busy");
			return;
		}
		this.select(b);
		if (type === "file")
			this.h.onFile(e);
		else
			this.h.onSpecial(e, SPECIAL[type] || type);
	}

	collapse(li, b, e) {
		b.setAttribute("aria-expanded", "false");
		for (const p of Array.from(this.expanded))
			if (p === e.path || p.startsWith(e.path + "/"))
				this.expanded.delete(p);
		const g = li.querySelector(":scope > ul");
		if (g)
			g.remove();
	}

	select(b) {
		for (const s of this.root.querySelectorAll("[aria-selected=true]"))
			s.removeAttribute("aria-selected");
		b.setAttribute("aria-selected", "true");
	}

	visible() {
		return Array.from(this.root.querySelectorAll("button.node"));
	}

	focus(b) {
		for (const n of this.root.querySelectorAll("button.node[tabindex='0']"))
			n.tabIndex = -1;
		b.tabIndex = 0;
		b.focus();
	}

	onFocus(ev) {
		const b = ev.target.closest && ev.target.closest("button.node");
		if (!b)
			return;
		for (const n of this.root.querySelectorAll("button.node[tabindex='0']"))
			if (n !== b)
				n.tabIndex = -1;
		b.tabIndex = 0;
	}

	fixTabStop(path) {
		const nodes = this.visible();
		if (nodes.length === 0)
			return;
		const keep = path ? nodes.find((n) => n.dataset.path === path) : null;
		const sel = this.root.querySelector("[aria-selected=true]");
		const t = keep || sel || nodes[0];
		t.tabIndex = 0;
		if (keep)
			keep.focus();
	}

	onKey(ev) {
		const b = ev.target.closest && ev.target.closest("button.node");
		if (!b)
			return;
		const nodes = this.visible();
		const i = nodes.indexOf(b);
		const li = b.parentElement;
		let to = null;
		switch (ev.key) {
		case "ArrowDown":
			to = nodes[i + 1];
			break;
		case "ArrowUp":
			to = nodes[i - 1];
			break;
		case "Home":
			to = nodes[0];
			break;
		case "End":
			to = nodes[nodes.length - 1];
			break;
		case "ArrowRight":
			if (b.dataset.type === "dir") {
				if (b.getAttribute("aria-expanded") === "true") {
					to = li.querySelector(":scope > ul button.node");
				} else {
					b.click();
				}
			}
			break;
		case "ArrowLeft":
			if (b.getAttribute("aria-expanded") === "true") {
				b.click();
			} else {
				const up = li.parentElement.closest("li");
				to = up ? up.querySelector(":scope > button.node") : null;
			}
			break;
		default:
			return;
		}
		ev.preventDefault();
		if (to)
			this.focus(to);
	}
}
