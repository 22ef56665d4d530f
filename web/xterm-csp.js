// SPDX-License-Identifier: MIT
// web/xterm-csp.js - lets xterm.js (web/vendor/xterm/) render under the
// page's Content-Security-Policy (`style-src 'self'`: no <style> element,
// no style attribute) without loosening it.
//
// xterm.js 6.0's DOM renderer puts its theme, font and cell-size rules into
// three <style> elements it creates in Terminal.open() (two in the
// renderer, one in the viewport), and the colour of a cell in 24-bit colour
// into a style attribute (setAttribute("style", ...)) while it renders
// rows. The CSP refuses both: every refusal is a violation report, and the
// terminal renders without its rules (no font, no colours, rows of the
// wrong height). Upstream: xtermjs/xterm.js#4445. The CSS object model is
// not subject to `style-src` (it is written by script, which `script-src`
// already governs; injected markup is what the policy stops): a
// constructed CSSStyleSheet adopted by the document, and element.style.
//
// So, while a terminal exists, document.createElement is wrapped (an own
// property of the document, removed when the last terminal is disposed):
//  - "style" gives a stand-in: an inert <template> element (never
//    rendered, its content never parsed as markup) whose textContent
//    setter replaces the rules of a constructed stylesheet, adopted by the
//    document while the stand-in is in it and dropped by its remove();
//  - "span" gives a span whose setAttribute("style", v) sets
//    style.cssText = v instead (the same declarations, through the CSSOM).
// Everything else is the document's own createElement. The page itself
// never creates <style> and never sets a style attribute, and no terminal
// output reaches either: the rules xterm writes are its own, built from its
// options and theme (colours as numbers, the font family we pass).
// Tested by tests/web/workbench.test.mjs (no violation while the Terminal
// tab runs, colours and 24-bit colours applied).

const nativeCreate = Document.prototype.createElement;
const nativeSetAttribute = Element.prototype.setAttribute;
const nativeRemove = Element.prototype.remove;

let users = 0;		// terminals alive; the wrapper is installed while > 0
const sheets = new Set();	// the stand-ins' sheets, dropped with the wrapper

function adopt(doc, sheet, on) {
	const list = doc.adoptedStyleSheets.filter((s) => s !== sheet);
	if (on)
		list.push(sheet);
	doc.adoptedStyleSheets = list;
}

// The stand-in for a <style> element: its rules live in `sheet`.
function styleStandIn(doc) {
	const el = nativeCreate.call(doc, "template");
	const sheet = new CSSStyleSheet();
	let text = "";
	sheets.add(sheet);
	el.dataset.xtermStyle = "";
	Object.defineProperty(el, "textContent", {
		get() {
			return text;
		},
		set(v) {
			text = String(v);
			sheet.replaceSync(text);
			adopt(doc, sheet, true);
		},
	});
	el.remove = function () {
		adopt(doc, sheet, false);
		sheets.delete(sheet);
		nativeRemove.call(this);
	};
	return el;
}

function cssomSetAttribute(name, value) {
	if (String(name).toLowerCase() === "style")
		this.style.cssText = String(value);
	else
		nativeSetAttribute.call(this, name, value);
}

function wrappedCreate(doc) {
	return function createElement(tag, options) {
		const t = String(tag).toLowerCase();
		if (t === "style")
			return styleStandIn(doc);
		const el = nativeCreate.call(doc, tag, options);
		if (t === "span")
			el.setAttribute = cssomSetAttribute;
		return el;
	};
}

// Installs the wrapper on `doc` (before a Terminal is opened); returns the
// function that releases it (call it after the Terminal's dispose()): the
// last release removes the wrapper and every sheet the stand-ins made.
export function holdCspStyles(doc) {
	if (users++ === 0)
		doc.createElement = wrappedCreate(doc);
	let held = true;
	return () => {
		if (!held)
			return;
		held = false;
		if (--users !== 0)
			return;
		delete doc.createElement;
		// xterm's renderer detaches some stand-ins without remove()
		doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => !sheets.has(s));
		sheets.clear();
	};
}
