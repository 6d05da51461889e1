-- Shared by the wrk scripts: data files written by bench/run.ts, a per-thread random seed, and a
-- done() that prints one machine-readable line (bench/run.ts parses it).
local common = {}

function common.lines(path, stride, offset)
  local found = {}
  local n = 0
  for line in io.lines(path) do
    if line ~= "" then
      if stride == nil or n % stride == offset then found[#found + 1] = line end
      n = n + 1
    end
  end
  if #found == 0 then error("no lines in " .. path) end
  return found
end

local thread_count = 0
function common.setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

function common.seed()
  math.randomseed(os.time() * 1000 + (thread_index or 0) * 7919 + math.floor(os.clock() * 1e6))
end

function common.done(summary, latency, _)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"bytes":%d,"errors_connect":%d,"errors_read":%d,' ..
    '"errors_write":%d,"errors_status":%d,"errors_timeout":%d,"p50_us":%d,"p90_us":%d,' ..
    '"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end

return common
