-- GET /api/products?category=&page=&per_page=20: a random bench category and page.
-- args: <data dir> <pages per category>
local common = dofile("bench/wrk/common.lua")
local tokens, categories, pages

setup = common.setup
done = common.done

function init(args)
  common.seed()
  tokens = common.lines(args[1] .. "/tokens.txt")
  categories = common.lines(args[1] .. "/categories.txt")
  pages = tonumber(args[2])
end

function request()
  local headers = { ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)] }
  local path = "/api/products?category=" .. categories[math.random(#categories)] ..
    "&page=" .. math.random(pages) .. "&per_page=20"
  return wrk.format("GET", path, headers)
end
