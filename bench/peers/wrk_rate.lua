-- wrk 4.1 at about a fixed rate (wrk2's -R is not packaged): each connection waits
-- connections / rate seconds before its next request, so the connections together send about
-- `rate` requests a second while the server keeps up. wrk's delay() counts whole milliseconds.
-- Arguments (after --): rate, connections.
local wait_ms = 0

function init(args)
  local rate, connections = tonumber(args[1]), tonumber(args[2])
  wait_ms = math.max(1, math.floor(1000 * connections / rate + 0.5))
end

function delay()
  return wait_ms
end
