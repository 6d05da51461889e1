-- POST /api/webhooks/payment: pre-signed notifications (HMAC is not available in wrk's Lua), one
-- "<X-Signature>\t<body>" per line, written by bench/run.ts just before the round; every thread
-- takes every n-th line, so no two requests carry the same notification id until a file runs out.
-- args: <requests file>
local common = dofile("bench/wrk/common.lua")
local signed
local next_index = 0

setup = common.setup
done = common.done

function init(args)
  local threads = tonumber(args[2])
  local lines = common.lines(args[1], threads, thread_index)
  signed = {}
  for i, line in ipairs(lines) do
    local tab = line:find("\t", 1, true)
    signed[i] = { line:sub(1, tab - 1), line:sub(tab + 1) }
  end
end

function request()
  next_index = next_index % #signed + 1
  local s = signed[next_index]
  local headers = { ["Content-Type"] = "application/json", ["X-Signature"] = s[1] }
  return wrk.format("POST", "/api/webhooks/payment", headers, s[2])
end
