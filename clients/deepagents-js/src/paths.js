// SPDX-License-Identifier: MIT
// Path helpers: the service's namespace seen from the client.
//
// The service resolves every path itself (canonical form, aliases, relative
// paths under the workspace) and answers with canonical paths. The adapter
// only needs to (1) rewrite the aliases deepagents writes to that the
// service does not resolve yet, (2) turn the canonical paths of an answer
// back into the spelling the caller used, and (3) split glob patterns.

export const USER_DATA = "/home/yuxi/user-data";
export const SKILLS = "/home/yuxi/skills";
export const WORKSPACE = USER_DATA + "/workspace";

/** The two roots of the namespace, in the order the service lists them. */
export const ROOTS = [USER_DATA, SKILLS];

/** Folders of user-data the service keeps (and refuses to delete). */
export const LAYOUT = ["workspace", "outputs", "uploads", "uploads/attachments",
    "large_tool_results"].map((d) => USER_DATA + "/" + d);

/** Aliases the service resolves (docs/api.md, "Paths"). */
const SERVICE_ALIASES = [
	["/mnt/user-data", USER_DATA],
	["/workspace", USER_DATA + "/workspace"],
	["/outputs", USER_DATA + "/outputs"],
	["/uploads", USER_DATA + "/uploads"],
	["/attachments", USER_DATA + "/uploads/attachments"],
	["/skills", SKILLS],
	["/mnt/skills", SKILLS],
];

/**
 * Aliases deepagents itself uses (tool-result eviction, conversation
 * summaries). The adapter rewrites them into user-data before a request,
 * so they work whether or not the service resolves them.
 */
const CLIENT_ALIASES = [
	["/large_tool_results", USER_DATA + "/large_tool_results"],
	["/conversation_history", USER_DATA + "/conversation_history"],
];

/**
 * Drop empty and "." components; keep ".." (the service refuses it).
 * "/a//b/./" -> "/a/b", "./x/" -> "x", "/" -> "/", and a relative path
 * with no component ("", ".", "./") -> "." (the workspace).
 * @param {string} p
 * @returns {string}
 */
export function normalize(p) {
	const parts = p.split("/").filter((s) => s !== "" && s !== ".");
	if (p.startsWith("/"))
		return "/" + parts.join("/");
	return parts.length > 0 ? parts.join("/") : ".";
}

/**
 * Whether `p` names the namespace root: absent, empty, or "/" (after
 * normalisation).
 * @param {string | null | undefined} p
 * @returns {boolean}
 */
export function isRoot(p) {
	return p == null || p === "" || normalize(p) === "/";
}

/**
 * @param {string} n a normalised absolute path
 * @param {string[][]} table
 * @returns {string | null}
 */
function mapAlias(n, table) {
	for (const [alias, target] of table) {
		if (n === alias || n.startsWith(alias + "/"))
			return target + n.slice(alias.length);
	}
	return null;
}

/**
 * The path to send to the service: client-side aliases rewritten into
 * user-data, anything else unchanged.
 * @param {string} p
 * @returns {string}
 */
export function toService(p) {
	if (!p.startsWith("/"))
		return p;
	return mapAlias(normalize(p), CLIENT_ALIASES) ?? p;
}

/**
 * The canonical path the service resolves `p` to, or null when `p` lies
 * outside the namespace or has a ".." component. Mirrors the resolution
 * documented in docs/api.md; only used where an answer carries no
 * canonical base.
 * @param {string} p
 * @returns {string | null}
 */
export function canonical(p) {
	const n = normalize(p);
	if (n.split("/").includes(".."))
		return null;
	if (!n.startsWith("/"))
		return n === "." ? WORKSPACE : WORKSPACE + "/" + n;
	for (const r of ROOTS) {
		if (n === r || n.startsWith(r + "/"))
			return n;
	}
	return mapAlias(n, SERVICE_ALIASES) ?? mapAlias(n, CLIENT_ALIASES);
}

/**
 * Join a base spelled by the caller and a relative rest.
 * @param {string} base normalised ("." or "" for the workspace, "/" for the root)
 * @param {string} rest relative, may be ""
 * @returns {string}
 */
export function join(base, rest) {
	if (rest === "")
		return base;
	if (base === "" || base === ".")
		return rest;
	return base === "/" ? "/" + rest : base + "/" + rest;
}

/**
 * Rewrite a canonical path of an answer into the caller's spelling of the
 * base it asked about: `canon` under `canonBase` becomes `callerBase` plus
 * the same rest. Paths elsewhere are returned unchanged.
 * @param {string} canon
 * @param {string} canonBase
 * @param {string} callerBase normalised
 * @returns {string}
 */
export function respell(canon, canonBase, callerBase) {
	if (canon === canonBase)
		return callerBase;
	if (canonBase === "/")
		return canon;
	if (canon.startsWith(canonBase + "/"))
		return join(callerBase, canon.slice(canonBase.length + 1));
	return canon;
}

const META = /[*?[{]/;

/**
 * Whether a glob component has a wildcard.
 * @param {string} s
 * @returns {boolean}
 */
export function hasMeta(s) {
	return META.test(s);
}

/**
 * Split a relative glob pattern into its leading literal directories and
 * the rest; the rest keeps at least the last component.
 * "src/pkg/*.py" -> ["src/pkg", "*.py"], "**\/x" -> ["", "**\/x"].
 * @param {string} pattern
 * @returns {[string, string]}
 */
export function splitLiteral(pattern) {
	const parts = pattern.split("/").filter((s) => s !== "" && s !== ".");
	let i = 0;
	while (i < parts.length - 1 && !hasMeta(parts[i]) && parts[i] !== "..")
		i++;
	return [parts.slice(0, i).join("/"), parts.slice(i).join("/")];
}

/**
 * Expand brace alternatives, as micromatch and fast-glob do:
 * "*.{js,ts}" -> ["*.js", "*.ts"], nested braces too. A brace group
 * without a top-level comma is literal, and so is an unclosed brace.
 * Throws a RangeError when the expansion has more than `max` patterns.
 * @param {string} pattern
 * @param {number} [max]
 * @returns {string[]}
 */
export function expandBraces(pattern, max = 256) {
	/** @type {string[]} */
	const out = [];
	/** @param {string} p */
	const walk = (p) => {
		const g = findGroup(p);
		if (g === null) {
			if (!out.includes(p))
				out.push(p);
			if (out.length > max)
				throw new RangeError(`glob pattern expands to more than ${max} patterns`);
			return;
		}
		const [open, close, alts] = g;
		for (const a of alts)
			walk(p.slice(0, open) + a + p.slice(close + 1));
	};
	walk(pattern);
	return out;
}

/**
 * The first brace group with a top-level comma: [open, close, alternatives].
 * @param {string} p
 * @returns {[number, number, string[]] | null}
 */
function findGroup(p) {
	for (let open = p.indexOf("{"); open >= 0; open = p.indexOf("{", open + 1)) {
		let depth = 0, last = open + 1;
		/** @type {string[]} */
		const alts = [];
		for (let i = open; i < p.length; i++) {
			const c = p[i];
			if (c === "\\") {
				i++;
				continue;
			}
			if (c === "{") {
				depth++;
			} else if (c === "}") {
				depth--;
				if (depth === 0) {
					if (alts.length === 0)
						break;		/* "{a}": literal */
					alts.push(p.slice(last, i));
					return [open, i, alts];
				}
			} else if (c === "," && depth === 1) {
				alts.push(p.slice(last, i));
				last = i + 1;
			}
		}
	}
	return null;
}
