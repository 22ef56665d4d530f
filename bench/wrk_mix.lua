-- bench/wrk_mix.lua - wrk script for bench/rss_soak.sh: cycle through a
-- cheap endpoint mix (GET /api/threads, viewer tree and file, /healthz)
-- with the bearer token from $YXB_TOKEN and the thread id from $YXB_THREAD.
local tok = os.getenv("YXB_TOKEN")
local tid = os.getenv("YXB_THREAD")
if tok == nil or tok == "" or tid == nil or tid == "" then
	error("YXB_TOKEN and YXB_THREAD must be set")
end
local paths = {
	"/api/threads",
	"/api/viewer/filesystem/tree?thread_id=" .. tid .. "&path=/workspace",
	"/api/viewer/filesystem/file?thread_id=" .. tid .. "&path=/workspace/notes.txt",
	"/healthz",
}
local i = 0
wrk.headers["Authorization"] = "Bearer " .. tok

function request()
	i = i % #paths + 1
	return wrk.format("GET", paths[i])
end
