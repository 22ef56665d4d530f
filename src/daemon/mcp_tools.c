/* SPDX-License-Identifier: MIT */
/*
 * mcp_tools.c - the MCP endpoint's tools (docs/mcp.md "Tools"): one table,
 * each tool a thin mapping onto one route of the route table (router.c).
 *
 * A tool is its route (method and path), the arguments it takes - each
 * with its JSON type, where it goes in the route's request (the JSON body,
 * the query string, the path's process id, the raw body) and the text an
 * LLM reads - and how the route's answer becomes the result (struct
 * mcp_tool.kind). The inputSchema that tools/list shows is made from the
 * same argument table, so the schema and the mapping cannot disagree.
 * What the route checks (thread id, ownership, paths, bodies, limits) is
 * not checked again here: an argument of the wrong JSON type that goes
 * into the body reaches the route as it is, and the route's 400 comes
 * back as a tool error. Here: that the arguments are an object, that no
 * argument is unknown and every required one is there, and the types of
 * those that must become query or path text.
 *
 * Adding a tool for a new route: its argument list and one line in
 * mcp_tools[]; the tools/list answer, the schema and the mapping follow.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "mcp_int.h"
#include "yuxi/ident.h"
#include "yuxi/text.h"

/* An argument's JSON type. */
enum mcp_atype {
	MA_STR,
	MA_INT,
	MA_BOOL,
	MA_MAP,		/* an object of strings */
};

/* Where an argument goes in the route's request. */
enum mcp_place {
	MP_BODY,	/* a field of the JSON body, as given */
	MP_QUERY,	/* a query parameter (text) */
	MP_ID,		/* the id in the path's "{}" (a process, a session, a thread) */
	MP_ALTID,	/* ... of the tool's other path (execute in a session) */
	MP_RAW,		/* the raw body: text as it is */
	MP_RAW64,	/* the raw body: base64, decoded */
	MP_META,	/* metadata.KEY=VALUE query parameters */
};

#define MA_REQ	0x1	/* required */

struct mcp_arg {
	const char	*name;
	enum mcp_atype	 type;
	enum mcp_place	 place;
	unsigned	 flags;
	const char	*desc;
};

/* How the route's answer becomes the tool's result. */
enum mcp_kind {
	MK_JSON,	/* structuredContent: the answer; text: its JSON */
	MK_EXEC,	/* execute's stream form (mcp_call.c) */
	MK_READ,	/* text: the numbered lines, with paging advice */
	MK_DOWNLOAD,	/* the bytes as base64 */
};

/* Tool annotations (server/tools "Tool"; hints, never trusted by clients). */
#define MH_RO	0x1	/* readOnlyHint */
#define MH_DESTR 0x2	/* destructiveHint */
#define MH_IDEM	0x4	/* idempotentHint */

struct mcp_tool {
	const char		*name;
	const char		*title;
	const char		*desc;
	enum yx_method		 method;
	const char		*path;
	const char		*alt;	/* the path an MP_ALTID argument asks for */
	enum mcp_kind		 kind;
	unsigned		 hints;
	const struct mcp_arg	*args;	/* ended by a NULL name */
};

const char yx_mcp_instructions[] =
    "yuxi-sandbox gives each conversation thread its own isolated Linux "
    "sandbox (a hardened container; no network unless the thread's agent "
    "profile allows it) and a private file tree that persists between "
    "commands.\n\n"
    "Start with create_thread (or take a thread_id from list_threads) and "
    "pass that thread_id to every other tool. Threads belong to the "
    "signed-in user: another user's thread looks exactly like one that "
    "does not exist (not_found).\n\n"
    "Paths - for every tool, and inside the sandbox:\n"
    "- /home/yuxi/user-data is the thread's own writable tree: workspace/ "
    "(the commands' working directory), outputs/ (results to hand back), "
    "uploads/, large_tool_results/ (complete output of commands whose "
    "output was cut).\n"
    "- /home/yuxi/skills holds read-only skill folders for the thread's "
    "agent.\n"
    "- A relative path such as notes/todo.txt means "
    "/home/yuxi/user-data/workspace/notes/todo.txt. /workspace, /outputs, "
    "/uploads, /skills and /mnt/user-data are aliases of those folders; "
    "answers always give the canonical /home/yuxi/... path.\n"
    "- Other paths (/etc, /tmp, ...) are refused by the file tools "
    "(path_not_allowed), and a command naming an absolute path outside "
    "these roots and the system directories (/bin, /usr/bin, /usr/lib, "
    "/dev/null, ...) is refused without running (exit code 126).\n\n"
    "read_file, write_file, edit_file, ls, glob, grep, upload and download "
    "work on the thread's files directly and never start the sandbox; "
    "execute and the process tools run inside it (the first one starts "
    "it). A command's output is capped: the whole output is then saved "
    "under /home/yuxi/user-data/large_tool_results and the result names "
    "the file. A failure is a tool error carrying the service's error code "
    "(not_found, file_not_found, invalid_path, path_not_allowed, "
    "read_only, file_exists, string_not_found, capacity, ...), its message "
    "and a request id.";

/* ---- the arguments ------------------------------------------------------ */

#define D_THREAD "The thread to act in: an id from create_thread or list_threads."
#define D_PATH_FILE                                                            \
	"The file: absolute (/home/yuxi/user-data/..., or an alias such as "   \
	"/workspace/..., /outputs/...) or relative to "                        \
	"/home/yuxi/user-data/workspace."
#define D_PATH_DIR                                                             \
	"The directory to start from (default /home/yuxi/user-data/workspace); " \
	"\"/\" is the root holding /home/yuxi/user-data and /home/yuxi/skills."
#define D_TIMEOUT_CMD                                                          \
	"Seconds before the command's whole process group is killed (exit "    \
	"code 124); default the service's (120), at most 600."
#define D_CWD                                                                  \
	"Working directory, an existing directory of the thread "              \
	"(default /home/yuxi/user-data/workspace)."
#define D_ENV "Environment variables to set for the command (names [A-Za-z_][A-Za-z0-9_]*)."
#define D_PROC "The process, as start_process returned it."
#define D_SESS "The session, as create_session returned it."

static const struct mcp_arg args_create_thread[] = {
	{ "thread_id", MA_STR, MP_BODY, 0,
	    "An id of your choice ([A-Za-z0-9_-], at most 128); default a new "
	    "random one. Creating an id you already own returns that thread." },
	{ "agent_id", MA_STR, MP_BODY, 0,
	    "An agent of the service's agents file: decides the skills the "
	    "thread sees and its sandbox profile." },
	{ "agent_config_id", MA_STR, MP_BODY, 0, "A configuration of that agent." },
	{ "metadata", MA_MAP, MP_BODY, 0,
	    "Your tags for the thread (at most 16 keys [A-Za-z0-9_.-]), "
	    "filtered on by list_threads." },
	{ "idle_timeout", MA_INT, MP_BODY, 0,
	    "Seconds the thread's sandbox may stay idle before it is stopped "
	    "(its files stay)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_list_threads[] = {
	{ "metadata", MA_MAP, MP_META, 0,
	    "List only threads whose metadata has all of these key/value pairs." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_execute[] = {
	{ "thread_id", MA_STR, MP_BODY, MA_REQ, D_THREAD },
	{ "command", MA_STR, MP_BODY, MA_REQ,
	    "The shell command, run as /bin/sh -c COMMAND in the thread's "
	    "sandbox." },
	{ "timeout", MA_INT, MP_BODY, 0, D_TIMEOUT_CMD },
	{ "cwd", MA_STR, MP_BODY, 0, D_CWD },
	{ "env", MA_MAP, MP_BODY, 0, D_ENV },
	{ "session_id", MA_STR, MP_ALTID, 0,
	    "Run it in this shell session (create_session) instead of a fresh "
	    "shell: the working directory, variables and functions of earlier "
	    "commands carry over (cwd and env are then refused: cd and export "
	    "in the command instead)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_create_session[] = {
	{ "thread_id", MA_STR, MP_BODY, MA_REQ, D_THREAD },
	{ "shell", MA_STR, MP_BODY, 0, "\"bash\" or \"sh\" (default bash when the sandbox has it)." },
	{ "cwd", MA_STR, MP_BODY, 0, "Where the shell starts (default /home/yuxi/user-data/workspace)." },
	{ "env", MA_MAP, MP_BODY, 0, "Variables the shell starts with." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_end_session[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "session_id", MA_STR, MP_ID, MA_REQ, D_SESS },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_read_file[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_QUERY, MA_REQ, D_PATH_FILE },
	{ "offset", MA_INT, MP_QUERY, 0, "The first line to read, 0-based (default 0)." },
	{ "limit", MA_INT, MP_QUERY, 0, "How many lines to read (default 2000)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_write_file[] = {
	{ "thread_id", MA_STR, MP_BODY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_BODY, MA_REQ, D_PATH_FILE },
	{ "content", MA_STR, MP_BODY, MA_REQ, "The whole text of the file." },
	{ "overwrite", MA_BOOL, MP_BODY, 0,
	    "Replace a file that exists (default false: file_exists)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_edit_file[] = {
	{ "thread_id", MA_STR, MP_BODY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_BODY, MA_REQ, D_PATH_FILE },
	{ "old_string", MA_STR, MP_BODY, MA_REQ,
	    "The exact text to replace (not a pattern); it must occur once "
	    "unless replace_all is true." },
	{ "new_string", MA_STR, MP_BODY, MA_REQ, "The text to put in its place." },
	{ "replace_all", MA_BOOL, MP_BODY, 0, "Replace every occurrence." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_ls[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_QUERY, 0, D_PATH_DIR },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_glob[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "pattern", MA_STR, MP_QUERY, MA_REQ,
	    "A glob relative to path: * and ? within a name, ** across "
	    "directories, [abc], {a,b} (e.g. **/*.py)." },
	{ "path", MA_STR, MP_QUERY, 0, D_PATH_DIR },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_grep[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "pattern", MA_STR, MP_QUERY, MA_REQ, "The text to find (literal, not a regular expression)." },
	{ "path", MA_STR, MP_QUERY, 0,
	    "A directory to search recursively, or one file (default "
	    "/home/yuxi/user-data/workspace)." },
	{ "glob", MA_STR, MP_QUERY, 0, "Only files matching this glob (e.g. *.py)." },
	{ "max_count", MA_INT, MP_QUERY, 0, "At most this many matches (default and cap 1000)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_upload[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_QUERY, MA_REQ, D_PATH_FILE " An existing file is replaced." },
	{ "content_base64", MA_STR, MP_RAW64, MA_REQ, "The file's bytes, base64-encoded." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_download[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "path", MA_STR, MP_QUERY, MA_REQ, D_PATH_FILE },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_start_process[] = {
	{ "thread_id", MA_STR, MP_BODY, MA_REQ, D_THREAD },
	{ "command", MA_STR, MP_BODY, MA_REQ,
	    "The shell command to run in the background (/bin/sh -c)." },
	{ "timeout", MA_INT, MP_BODY, 0,
	    "Its lifetime in seconds (default and cap 3600), after which its "
	    "process group is killed." },
	{ "cwd", MA_STR, MP_BODY, 0, D_CWD },
	{ "env", MA_MAP, MP_BODY, 0, D_ENV },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_process_output[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "process_id", MA_STR, MP_ID, MA_REQ, D_PROC },
	{ "offset", MA_INT, MP_QUERY, 0,
	    "Bytes of output to skip: the next_offset of the previous call "
	    "(default 0)." },
	{ "wait_ms", MA_INT, MP_QUERY, 0,
	    "Wait up to this long (at most 30000) for output past offset while "
	    "the process runs." },
	{ "max_bytes", MA_INT, MP_QUERY, 0, "At most this many bytes (default 256 KiB)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_process_stdin[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "process_id", MA_STR, MP_ID, MA_REQ, D_PROC },
	{ "data", MA_STR, MP_RAW, 0, "Text to write to the process's standard input." },
	{ "eof", MA_BOOL, MP_QUERY, 0, "Close its standard input afterwards." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_stop_process[] = {
	{ "thread_id", MA_STR, MP_QUERY, MA_REQ, D_THREAD },
	{ "process_id", MA_STR, MP_ID, MA_REQ, D_PROC },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

static const struct mcp_arg args_create_preview[] = {
	{ "thread_id", MA_STR, MP_ID, MA_REQ, D_THREAD },
	{ "port", MA_INT, MP_BODY, MA_REQ,
	    "The TCP port a server in the sandbox listens on (or will): "
	    "127.0.0.1 or 0.0.0.0 inside the sandbox." },
	{ "ttl", MA_INT, MP_BODY, 0,
	    "Seconds the URL lives (default the service's, 3600)." },
	{ NULL, MA_STR, MP_BODY, 0, NULL },
};

/* ---- the tools ---------------------------------------------------------- */

static const struct mcp_tool mcp_tools[] = {
	{ "create_thread", "Create a thread",
	    "Create a conversation thread: its own sandbox and private files. "
	    "Returns the thread record; pass its thread_id to the other tools. "
	    "Nothing starts until the first command.",
	    YX_M_POST, "/api/threads", NULL, MK_JSON, MH_IDEM, args_create_thread },
	{ "list_threads", "List threads",
	    "List your threads, newest first (at most 1000), optionally only "
	    "those with the given metadata.",
	    YX_M_GET, "/api/threads", NULL, MK_JSON, MH_RO, args_list_threads },
	{ "execute", "Run a command",
	    "Run a shell command in the thread's sandbox and wait for it; "
	    "returns its output (stdout and stderr interleaved, cut at the "
	    "service's limit) and exit code. A failing command is a normal "
	    "result with its exit code, not a tool error. While it runs, its "
	    "output is sent as progress notifications when the request has a "
	    "progress token.",
	    YX_M_POST, "/api/execute", "/api/sessions/{}/execute", MK_EXEC, MH_DESTR, args_execute },
	{ "read_file", "Read a text file",
	    "Read lines of a text file, numbered like cat -n (2000 lines from "
	    "offset by default; page with offset and limit). Binary files are "
	    "refused (binary_file): use download.",
	    YX_M_GET, "/api/filesystem/cat", NULL, MK_READ, MH_RO, args_read_file },
	{ "write_file", "Write a file",
	    "Create a text file with the given content (parent directories are "
	    "made). An existing file is an error (file_exists) unless "
	    "overwrite is true.",
	    YX_M_POST, "/api/filesystem/write", NULL, MK_JSON, MH_DESTR, args_write_file },
	{ "edit_file", "Edit a file",
	    "Replace an exact string in a text file. old_string must occur "
	    "exactly once (string_not_found, ambiguous_match otherwise) unless "
	    "replace_all is true. Returns the number of replacements.",
	    YX_M_POST, "/api/filesystem/edit", NULL, MK_JSON, MH_DESTR, args_edit_file },
	{ "ls", "List a directory",
	    "List one directory (name order): path, is_dir, size, modified_at "
	    "and type of each entry.",
	    YX_M_GET, "/api/filesystem/ls", NULL, MK_JSON, MH_RO, args_ls },
	{ "glob", "Find files by pattern",
	    "Find files whose paths match a glob pattern beneath a directory.",
	    YX_M_GET, "/api/filesystem/glob", NULL, MK_JSON, MH_RO, args_glob },
	{ "grep", "Search file contents",
	    "Search files for a literal string: path, line number and text of "
	    "each matching line. Binary files and files over 10 MiB are "
	    "skipped.",
	    YX_M_GET, "/api/filesystem/grep", NULL, MK_JSON, MH_RO, args_grep },
	{ "upload", "Upload a file",
	    "Write a file from base64-encoded bytes (any content, binary too), "
	    "replacing an existing file.",
	    YX_M_POST, "/api/filesystem/upload", NULL, MK_JSON, MH_DESTR | MH_IDEM, args_upload },
	{ "download", "Download a file",
	    "Read a whole file as base64-encoded bytes (any content, binary "
	    "too), up to the service's request size limit.",
	    YX_M_GET, "/api/filesystem/download", NULL, MK_DOWNLOAD, MH_RO, args_download },
	{ "start_process", "Start a background process",
	    "Start a command in the background (a server, a watcher, a long "
	    "build) in the thread's sandbox; returns its process_id at once. "
	    "Read its output with process_output, write to it with "
	    "process_stdin, end it with stop_process.",
	    YX_M_POST, "/api/processes", NULL, MK_JSON, 0, args_start_process },
	{ "process_output", "Read a process's output",
	    "Output of a background process from offset, its state "
	    "(running, exited, lost) and exit code; next_offset is where the "
	    "next call goes on.",
	    YX_M_GET, "/api/processes/{}/output", NULL, MK_JSON, MH_RO, args_process_output },
	{ "process_stdin", "Write to a process",
	    "Write text to a background process's standard input; eof closes "
	    "it. Returns the bytes written.",
	    YX_M_POST, "/api/processes/{}/stdin", NULL, MK_JSON, 0, args_process_stdin },
	{ "stop_process", "Stop a background process",
	    "Kill a background process's whole process group and forget it; "
	    "returns its last state.",
	    YX_M_DELETE, "/api/processes/{}", NULL, MK_JSON, MH_DESTR | MH_IDEM, args_stop_process },
	{ "create_session", "Open a shell session",
	    "Open a long-lived shell (bash, else sh) in the thread's sandbox: "
	    "commands given its session_id with execute run in it one after "
	    "another and keep its working directory, variables, functions and "
	    "activated environments. Returns its session_id.",
	    YX_M_POST, "/api/sessions", NULL, MK_JSON, 0, args_create_session },
	{ "end_session", "End a shell session",
	    "Kill a session's shell and every process of it, and forget the "
	    "session; returns its last state.",
	    YX_M_DELETE, "/api/sessions/{}", NULL, MK_JSON, MH_DESTR | MH_IDEM, args_end_session },
	{ "create_preview", "Open a preview URL",
	    "Give a port of the thread's sandbox a public HTTPS URL (HTTP and "
	    "WebSocket) that a person opens in a browser: a web app, a "
	    "notebook, a dev server. The URL itself is the key to it (hand it "
	    "only to who should see the app); a second call for the port "
	    "replaces the URL. The preview errors with not_found when the "
	    "service has previews off.",
	    YX_M_POST, "/api/threads/{}/previews", NULL, MK_JSON, 0, args_create_preview },
};

#define MCP_NTOOLS	(sizeof(mcp_tools) / sizeof(mcp_tools[0]))

/* ---- tools/list --------------------------------------------------------- */

/* The JSON Schema of one argument. */
static struct json_object *
mcp_arg_schema(const struct mcp_arg *a)
{
	static const char *const types[] = { [MA_STR] = "string", [MA_INT] = "integer", [MA_BOOL] = "boolean", [MA_MAP] = "object" };
	struct json_object *o, *s;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "type", json_object_new_string(types[a->type]));
	if (a->type == MA_MAP && (s = json_object_new_object()) != NULL) {
		json_object_object_add(s, "type", json_object_new_string("string"));
		json_object_object_add(o, "additionalProperties", s);
	}
	if (a->type == MA_INT)
		json_object_object_add(o, "minimum", json_object_new_int(0));
	json_object_object_add(o, "description", json_object_new_string(a->desc));
	return o;
}

/* inputSchema: {"type":"object","properties",{...},"required":[...],...}. */
static struct json_object *
mcp_input_schema(const struct mcp_tool *t)
{
	struct json_object	*o, *props, *req;
	const struct mcp_arg	*a;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	props = json_object_new_object();
	req = json_object_new_array();
	for (a = t->args; a->name != NULL; a++) {
		json_object_object_add(props, a->name, mcp_arg_schema(a));
		if ((a->flags & MA_REQ) != 0)
			json_object_array_add(req, json_object_new_string(a->name));
	}
	json_object_object_add(o, "type", json_object_new_string("object"));
	json_object_object_add(o, "properties", props);
	if (json_object_array_length(req) > 0)
		json_object_object_add(o, "required", req);
	else
		json_object_put(req);
	json_object_object_add(o, "additionalProperties", json_object_new_boolean(0));
	return o;
}

static struct json_object *
mcp_tool_json(const struct mcp_tool *t)
{
	struct json_object *o, *ann;

	if ((o = json_object_new_object()) == NULL || (ann = json_object_new_object()) == NULL) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "name", json_object_new_string(t->name));
	json_object_object_add(o, "title", json_object_new_string(t->title));
	json_object_object_add(o, "description", json_object_new_string(t->desc));
	json_object_object_add(o, "inputSchema", mcp_input_schema(t));
	json_object_object_add(ann, "title", json_object_new_string(t->title));
	json_object_object_add(ann, "readOnlyHint", json_object_new_boolean((t->hints & MH_RO) != 0));
	if ((t->hints & MH_RO) == 0) {
		json_object_object_add(ann, "destructiveHint",
		    json_object_new_boolean((t->hints & MH_DESTR) != 0));
		json_object_object_add(ann, "idempotentHint",
		    json_object_new_boolean((t->hints & MH_IDEM) != 0));
	}
	/* a sandbox without network, by default: its own closed world */
	json_object_object_add(ann, "openWorldHint", json_object_new_boolean(0));
	json_object_object_add(o, "annotations", ann);
	return o;
}

struct json_object *
yx_mcp_tools_list(void)
{
	struct json_object	*o, *a;
	size_t			 i;

	if ((o = yx_json_list("tools", &a)) == NULL)
		return NULL;
	for (i = 0; i < MCP_NTOOLS; i++)
		json_object_array_add(a, mcp_tool_json(&mcp_tools[i]));
	return o;
}

/* ---- tools/call --------------------------------------------------------- */

static const struct mcp_tool *
mcp_tool_find(const char *name)
{
	size_t i;

	for (i = 0; i < MCP_NTOOLS; i++)
		if (strcmp(mcp_tools[i].name, name) == 0)
			return &mcp_tools[i];
	return NULL;
}

static const struct mcp_arg *
mcp_arg_find(const struct mcp_tool *t, const char *name)
{
	const struct mcp_arg *a;

	for (a = t->args; a->name != NULL; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

/* A tool error of a bad argument (400 bad_request: "<name> <what>"), in *res. */
static int
mcp_bad_arg(struct yx_mcp_req *m, struct json_object **res, const char *name, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s %s", name, what);
	*res = yx_mcp_tool_error(m, YX_E_BAD_REQUEST, msg);
	return YX_E_BAD_REQUEST;
}

/*
 * Unknown and missing arguments: a tool error naming them (an LLM that
 * wrote file_path for path learns which names there are).
 */
static int
mcp_args_check(struct yx_mcp_req *m, const struct mcp_tool *t, struct json_object *args,
    struct json_object **res)
{
	const struct mcp_arg	*a;
	struct json_object	*v;
	char			 names[256], msg[400];
	size_t			 n = 0;

	names[0] = '\0';
	for (a = t->args; a->name != NULL && n < sizeof(names); a++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n > 0 ? ", " : "",
		    a->name);
	if (args != NULL) {
		json_object_object_foreach(args, key, val)
		{
			(void)val;
			if (mcp_arg_find(t, key) == NULL) {
				snprintf(msg, sizeof(msg), "unknown argument \"%.64s\" (%s takes: %s)",
				    key, t->name, names[0] != '\0' ? names : "none");
				*res = yx_mcp_tool_error(m, YX_E_BAD_REQUEST, msg);
				return YX_E_BAD_REQUEST;
			}
		}
	}
	for (a = t->args; a->name != NULL; a++)
		if ((a->flags & MA_REQ) != 0 &&
		    (args == NULL || !json_object_object_get_ex(args, a->name, &v) ||
			json_object_is_type(v, json_type_null)))
			return mcp_bad_arg(m, res, a->name, "is required");
	return YX_OK;
}

/* A query parameter of argument a with value v (a string, integer or
 * boolean as a says). */
static int
mcp_put_query(struct yx_mcp_req *m, struct yx_mcp_call *c, const struct mcp_arg *a,
    struct json_object *v, struct json_object **res)
{
	char num[32];

	switch (a->type) {
	case MA_STR:
		if (!json_object_is_type(v, json_type_string))
			return mcp_bad_arg(m, res, a->name, "must be a string");
		return yx_mcp_call_query(c, a->name, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
	case MA_INT:
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return mcp_bad_arg(m, res, a->name, "must be a non-negative integer");
		snprintf(num, sizeof(num), "%" PRId64, json_object_get_int64(v));
		return yx_mcp_call_query(c, a->name, num, strlen(num));
	case MA_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return mcp_bad_arg(m, res, a->name, "must be true or false");
		return json_object_get_boolean(v) ? yx_mcp_call_query(c, a->name, "1", 1) : YX_OK;
	default:
		return mcp_bad_arg(m, res, a->name, "no query form");
	}
}

/* metadata.KEY=VALUE of an object of strings. */
static int
mcp_put_meta(struct yx_mcp_req *m, struct yx_mcp_call *c, const struct mcp_arg *a,
    struct json_object *v, struct json_object **res)
{
	char	key[160];
	int	rc = YX_OK;

	if (!json_object_is_type(v, json_type_object))
		return mcp_bad_arg(m, res, a->name, "must be an object of strings");
	json_object_object_foreach(v, k, s)
	{
		if (!json_object_is_type(s, json_type_string) || strlen(k) > 128)
			return mcp_bad_arg(m, res, a->name, "must be an object of strings");
		snprintf(key, sizeof(key), "metadata.%s", k);
		if ((rc = yx_mcp_call_query(c, key, json_object_get_string(s),
			 (size_t)json_object_get_string_len(s))) != YX_OK)
			break;
	}
	return rc;
}

/*
 * The route's path (MP_ALTID: the tool's other one) with the id of a
 * process, session or thread in its "{}"; an id that cannot be one gets
 * the route's own answer for it (404).
 */
static int
mcp_put_id(struct yx_mcp_req *m, struct yx_mcp_call *c, const struct mcp_tool *t,
    const struct mcp_arg *a, struct json_object *v, struct json_object **res)
{
	const char	*path = a->place == MP_ALTID ? t->alt : t->path;
	const char	*id = json_object_get_string(v), *brace = strstr(path, "{}");
	size_t		 n;

	n = json_object_is_type(v, json_type_string) ? strlen(id) : 0;
	if (strcmp(a->name, "thread_id") == 0) {
		/* as the routes that take it in the body answer */
		if (!yx_thread_id_valid(id, n)) {
			*res = yx_mcp_tool_error(m, YX_E_BAD_REQUEST, YX_THREAD_ID_RULE);
			return YX_E_BAD_REQUEST;
		}
	} else if (n == 0 || n > 64 ||
	    strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != n) {
		if (strcmp(a->name, "session_id") == 0) {
			*res = yx_mcp_tool_error(m, YX_E_SESSION_NOT_FOUND, "no such session");
			return YX_E_SESSION_NOT_FOUND;
		}
		*res = yx_mcp_tool_error(m, YX_E_NOT_FOUND, "no such process");
		return YX_E_NOT_FOUND;
	}
	snprintf(c->path, sizeof(c->path), "%.*s%s%s", (int)(brace - path), path, id, brace + 2);
	return YX_OK;
}

/* The raw body of a text or base64 argument. */
static int
mcp_put_raw(struct yx_mcp_req *m, struct yx_mcp_call *c, const struct mcp_arg *a,
    struct json_object *v, struct json_object **res)
{
	int rc;

	if (!json_object_is_type(v, json_type_string))
		return mcp_bad_arg(m, res, a->name, "must be a string");
	if (a->place == MP_RAW)
		return yx_buf_append(&c->body, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
	rc = yx_base64_decode(&c->body, json_object_get_string(v),
	    (size_t)json_object_get_string_len(v));
	if (rc == YX_E_BAD_REQUEST)
		return mcp_bad_arg(m, res, a->name, "is not base64");
	return rc;
}

/*
 * The route's request of tool t with args, in c. YX_OK; a tool error in
 * *res with its code; another error (no memory).
 */
static int
mcp_build(struct yx_mcp_req *m, const struct mcp_tool *t, struct json_object *args,
    struct yx_mcp_call *c, struct json_object **res)
{
	struct json_object	*body = NULL, *v;
	const struct mcp_arg	*a;
	const char		*s;
	size_t			 len = 0;
	int			 rc = YX_OK;

	c->method = t->method;
	snprintf(c->path, sizeof(c->path), "%s", t->path);
	for (a = t->args; a->name != NULL && a->place != MP_BODY; a++)
		continue;
	/* a route with a JSON body: its arguments, and {} without any */
	if (a->name != NULL && (body = json_object_new_object()) == NULL)
		return YX_E_NOMEM;
	for (a = t->args; a->name != NULL && rc == YX_OK; a++) {
		if (args == NULL || !json_object_object_get_ex(args, a->name, &v) ||
		    json_object_is_type(v, json_type_null))
			continue;
		switch (a->place) {
		case MP_BODY:
			json_object_object_add(body, a->name, json_object_get(v));
			break;
		case MP_QUERY:
			rc = mcp_put_query(m, c, a, v, res);
			break;
		case MP_META:
			rc = mcp_put_meta(m, c, a, v, res);
			break;
		case MP_ID:
		case MP_ALTID:
			rc = mcp_put_id(m, c, t, a, v, res);
			break;
		case MP_RAW:
		case MP_RAW64:
			rc = mcp_put_raw(m, c, a, v, res);
			break;
		}
	}
	if (rc == YX_OK && body != NULL) {
		if (t->kind == MK_EXEC)
			json_object_object_add(body, "stream", json_object_new_boolean(1));
		s = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &len);
		rc = s != NULL ? yx_buf_append(&c->body, s, len) : YX_E_NOMEM;
	}
	json_object_put(body);
	return rc;
}

/*
 * read_file: the numbered lines as the text, with where the next page
 * starts when the file goes on.
 */
static struct json_object *
mcp_read_result(struct yx_mcp_req *m, struct yx_mcp_call *c)
{
	struct json_object	*o = NULL, *v, *next;
	struct yx_buf		 t;
	const char		*content = "";
	size_t			 len = 0;
	int64_t			 total = 0;

	if (c->cap.status != 200 || yx_json_parse_object(c->cap.body.data, c->cap.body.len, &o, NULL) != YX_OK)
		return yx_mcp_call_result(m, c, NULL);
	if (json_object_object_get_ex(o, "content", &v) && json_object_is_type(v, json_type_string)) {
		content = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(o, "total_lines", &v))
		total = json_object_get_int64(v);
	yx_buf_init(&t, SIZE_MAX);
	if (yx_buf_append(&t, content, len) == YX_OK && json_object_object_get_ex(o, "next_offset", &next) &&
	    json_object_is_type(next, json_type_int))
		(void)yx_buf_printf(&t, "\n\n[%" PRId64 " lines in all; read on with offset=%" PRId64 "]",
		    total, json_object_get_int64(next));
	json_object_put(o);
	o = yx_mcp_call_result(m, c, t.data != NULL ? t.data : "");
	yx_buf_fini(&t);
	return o;
}

/* download: {"path","size","content_base64"}. */
static struct json_object *
mcp_download_result(struct yx_mcp_req *m, struct yx_mcp_call *c, struct json_object *args)
{
	struct json_object	*o, *p = NULL;
	struct yx_buf		 b64;
	char			 msg[128];

	if (c->cap.overflow) {
		snprintf(msg, sizeof(msg), "file larger than %zu bytes", c->cap.inline_max);
		return yx_mcp_tool_error(m, YX_E_PAYLOAD_TOO_LARGE, msg);
	}
	if (c->cap.status != 200)
		return yx_mcp_call_result(m, c, NULL);
	yx_buf_init(&b64, SIZE_MAX);
	if (yx_base64_append(&b64, c->cap.body.data != NULL ? c->cap.body.data : "",
		c->cap.body.len) != YX_OK ||
	    (o = json_object_new_object()) == NULL) {
		yx_buf_fini(&b64);
		return NULL;
	}
	(void)json_object_object_get_ex(args, "path", &p);
	json_object_object_add(o, "path", json_object_get(p));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)c->cap.body.len));
	json_object_object_add(o, "content_base64",
	    json_object_new_string_len(b64.data != NULL ? b64.data : "", (int)b64.len));
	yx_buf_fini(&b64);
	return yx_mcp_result(NULL, 0, o, false);
}

int
yx_mcp_tools_call(struct yx_mcp_req *m, const char *name, struct json_object *args,
    struct json_object **result, char *msg, size_t msglen)
{
	const struct mcp_tool	*t;
	struct yx_mcp_call	 c;
	struct yx_errctx	 e;
	int			 rc;

	*result = NULL;
	if ((t = mcp_tool_find(name)) == NULL) {
		snprintf(msg, msglen, "Unknown tool: %.64s", name);
		return YX_JSONRPC_INVALID_PARAMS;
	}
	if (args != NULL && !json_object_is_type(args, json_type_object)) {
		snprintf(msg, msglen, "arguments must be an object");
		return YX_JSONRPC_INVALID_PARAMS;
	}
	yx_errctx_clear(&e);
	yx_mcp_call_init(&c, t->kind == MK_DOWNLOAD ? m->r->body_limit : YX_MCP_ANSWER_MAX,
	    m->r->body_limit);
	if ((rc = mcp_args_check(m, t, args, result)) != YX_OK ||
	    (rc = mcp_build(m, t, args, &c, result)) != YX_OK)
		goto done;
	if (t->kind == MK_EXEC) {
		*result = yx_mcp_execute(m, &c);
		goto done;
	}
	if ((rc = yx_mcp_call_run(m, &c, &e)) != YX_OK) {
		*result = yx_mcp_tool_error(m, rc, e.msg);
		goto done;
	}
	if (t->kind == MK_READ)
		*result = mcp_read_result(m, &c);
	else if (t->kind == MK_DOWNLOAD)
		*result = mcp_download_result(m, &c, args);
	else
		*result = yx_mcp_call_result(m, &c, NULL);
done:
	yx_mcp_call_fini(&c);
	if (*result == NULL && !m->gone) {
		snprintf(msg, msglen, "Internal error (request id %s)", m->r->request_id);
		return YX_JSONRPC_INTERNAL_ERROR;
	}
	return 0;
}
