-- GET /api/products/{id}: a random product of the bench catalog, a random customer's token.
-- args: <data dir>
local common = dofile("bench/wrk/common.lua")
local tokens, ids

setup = common.setup
done = common.done

function init(args)
  common.seed()
  tokens = common.lines(args[1] .. "/tokens.txt")
  ids = common.lines(args[1] .. "/ids.txt")
end

function request()
  local headers = { ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)] }
  return wrk.format("GET", "/api/products/" .. ids[math.random(#ids)], headers)
end
