-- bench/wrk_auth.lua - wrk script: send the bearer token from $YXB_TOKEN
-- on every request (nginx maps it to the user; see nginx/dev.conf.in).
local tok = os.getenv("YXB_TOKEN")
if tok == nil or tok == "" then
	error("YXB_TOKEN is not set")
end
wrk.headers["Authorization"] = "Bearer " .. tok
