-- The difftest prelude: every generated statement is `__o(label, function() ... end)`, which runs
-- the function under pcall and records one line: label, ok/err, then each value rendered with its
-- type. Only printable ASCII leaves the script, so both engines' JSON paths carry it unchanged.
-- The library functions used here are captured first, so a statement cannot disturb them.
local __type, __tostring, __pcall, __select, __pairs = type, tostring, pcall, select, pairs
local __byte, __sub, __concat = string.byte, string.sub, table.concat
local __lines = {}
local function __esc(s)
  local parts, n = {}, #s
  local stop = n
  if stop > 1000 then stop = 1000 end
  for i = 1, stop do
    local b = __byte(s, i)
    if b < 32 or b > 126 or b == 92 or b == 124 then
      parts[#parts + 1] = "\\" .. b .. ";"
    else
      parts[#parts + 1] = __sub(s, i, i)
    end
  end
  if n > stop then parts[#parts + 1] = "...#" .. n end
  return __concat(parts)
end
local function __v(v)
  local t = __type(v)
  if t == "string" then return "s:" .. __esc(v) end
  if t == "number" then
    if v == 0 and 1 / v < 0 then return "n:" .. __tostring(v) .. "(-0)" end
    return "n:" .. __tostring(v)
  end
  if t == "boolean" or t == "nil" then return __tostring(v) end
  return t
end
-- A table's contents in `pairs` order (one level, at most 40 entries).
local function __t(x)
  if __type(x) ~= "table" then return __v(x) end
  local parts, count = {}, 0
  for k, v in __pairs(x) do
    count = count + 1
    if count > 40 then parts[#parts + 1] = "..."; break end
    parts[#parts + 1] = __v(k) .. "=" .. __v(v)
  end
  return "{" .. __concat(parts, ",") .. "}"
end
-- Several values as one string (for results taken before a later observation).
local function __pk(...)
  local n, parts = __select("#", ...), {}
  local vals = {...}
  for i = 1, n do parts[i] = __t(vals[i]) end
  return "(" .. __concat(parts, ",") .. ")"
end
-- Up to 20 steps of a generic for loop over an iterator triple.
local function __it(f, s, c)
  local parts = {}
  for i = 1, 20 do
    local vals = {f(s, c)}
    c = vals[1]
    if c == nil then break end
    local row = {}
    for j = 1, #vals do row[j] = __v(vals[j]) end
    parts[#parts + 1] = __concat(row, "/")
  end
  return "[" .. __concat(parts, ",") .. "]"
end
local function __cap(...) return __select("#", ...), {...} end
local function __o(label, f)
  local n, r = __cap(__pcall(f))
  local parts = {label}
  if r[1] then parts[2] = "ok" else parts[2] = "err" end
  for i = 2, n do
    if r[1] then parts[#parts + 1] = __t(r[i]) else parts[#parts + 1] = __v(r[i]) end
  end
  __lines[#__lines + 1] = __concat(parts, "|")
end
