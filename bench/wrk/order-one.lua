-- POST /api/orders: a random customer orders one unit of one product (a hot row when its stock is tracked).
-- args: <data dir> <product id>
local common = dofile("bench/wrk/common.lua")
local tokens, body

setup = common.setup
done = common.done

function init(args)
  common.seed()
  tokens = common.lines(args[1] .. "/tokens.txt")
  body = '{"product_id":' .. args[2] .. ',"qty":1}'
end

function request()
  local headers = {
    ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)],
    ["Content-Type"] = "application/json",
  }
  return wrk.format("POST", "/api/orders", headers, body)
end
