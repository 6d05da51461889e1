-- POST /api/orders: a random customer orders 1-3 of a random bench product.
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
  local headers = {
    ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)],
    ["Content-Type"] = "application/json",
  }
  local body = '{"product_id":' .. ids[math.random(#ids)] .. ',"qty":' .. math.random(3) .. "}"
  return wrk.format("POST", "/api/orders", headers, body)
end
