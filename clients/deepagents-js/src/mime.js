// SPDX-License-Identifier: MIT
// File types by extension, the way deepagents decides them: a file whose
// type is not text is read and written as bytes (read() returns a
// Uint8Array, write() takes base64), everything else is text. Extensions
// not listed are text/plain, and so are names without an extension or
// starting with their only dot (".env").

/** @type {Record<string, string>} */
const TYPES = {
	// images
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml",
	".heic": "image/heic", ".heif": "image/heif",
	// audio
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".aiff": "audio/aiff",
	".aac": "audio/aac", ".ogg": "audio/ogg", ".flac": "audio/flac",
	// video
	".mp4": "video/mp4", ".webm": "video/webm", ".mpeg": "video/mpeg",
	".mpg": "video/mpeg", ".mov": "video/quicktime", ".avi": "video/x-msvideo",
	".flv": "video/x-flv", ".wmv": "video/x-ms-wmv", ".3gpp": "video/3gpp",
	// documents
	".pdf": "application/pdf", ".ppt": "application/vnd.ms-powerpoint",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	// text with a specific type
	".md": "text/markdown", ".markdown": "text/markdown", ".html": "text/html",
	".htm": "text/html", ".css": "text/css", ".csv": "text/csv", ".xml": "text/xml",
	".json": "application/json", ".js": "application/javascript",
	".mjs": "application/javascript", ".cjs": "application/javascript",
};

/**
 * The MIME type of a path, from its extension.
 * @param {string} path
 * @returns {string}
 */
export function mimeType(path) {
	const name = path.slice(path.lastIndexOf("/") + 1);
	const dot = name.lastIndexOf(".");
	if (dot <= 0)
		return "text/plain";
	return TYPES[name.slice(dot).toLowerCase()] ?? "text/plain";
}

/**
 * Whether a MIME type is read as text.
 * @param {string} type
 * @returns {boolean}
 */
export function isText(type) {
	return type.startsWith("text/") || type === "application/json" ||
	    type === "application/javascript" || type === "image/svg+xml";
}

/**
 * Whether deepagents treats the file at `path` as text.
 * @param {string} path
 * @returns {boolean}
 */
export function isTextPath(path) {
	return isText(mimeType(path));
}
