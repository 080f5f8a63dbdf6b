--- Which files are kruise-lua's (scripts, their test cases, ConfigMaps holding scripts) and
--- where their root is. Plain Lua over paths, so every other Lua and YAML file is left alone.
local M = {}

M.CUSTOM_SCRIPT_NAME = "trafficRouting.lua"
M.INGRESS_FOLDER = "trafficrouting_ingress"
M.TREE_FOLDER = "lua_configuration"

local uv = vim.uv or vim.loop

local function stat_type(path)
  local stat = uv.fs_stat(path)
  return stat and stat.type or nil
end

local function default_exists(path)
  return stat_type(path) == "file"
end

local function is_dir(path)
  return stat_type(path) == "directory"
end

--- Path segments, `/` or `\` separated.
local function segments(path)
  local parts = {}
  for part in path:gmatch("[^/\\]+") do
    parts[#parts + 1] = part
  end
  return parts
end

local function dirname(path)
  local dir = path:match("^(.*)[/\\][^/\\]*$")
  if dir == nil then
    return "."
  end
  if dir == "" then
    return "/"
  end
  return dir
end

local function basename(path)
  return path:match("([^/\\]*)$")
end

local function join(a, b)
  if a:sub(-1) == "/" then
    return a .. b
  end
  return a .. "/" .. b
end

local function is_yaml(path)
  return path:match("%.ya?ml$") ~= nil
end

--- A script the server runs: `trafficRouting.lua`, any Lua file in a `lua_configuration` tree,
--- or `trafficrouting_ingress/<class>.lua`.
function M.is_script(path)
  if not path:match("%.lua$") then
    return false
  end
  local parts = segments(path)
  local name = parts[#parts]
  if name == M.CUSTOM_SCRIPT_NAME then
    return true
  end
  for i = 1, #parts - 1 do
    if parts[i] == M.TREE_FOLDER then
      return true
    end
  end
  return parts[#parts - 1] == M.INGRESS_FOLDER
end

--- The script whose test case `path` is, if that script exists: `<dir>/testdata/**` next to
--- `<dir>/trafficRouting.lua`, or `trafficrouting_ingress/testdata/<class>/**`.
function M.case_owner(path, exists)
  exists = exists or default_exists
  if not is_yaml(path) then
    return nil
  end
  local first = dirname(path)
  local dir, child = first, basename(path)
  while true do
    local parent = dirname(dir)
    if basename(dir) == "testdata" then
      local custom = join(parent, M.CUSTOM_SCRIPT_NAME)
      if exists(custom) then
        return custom
      end
      if basename(parent) == M.INGRESS_FOLDER and dir ~= first then
        local ingress = join(parent, child .. ".lua")
        if exists(ingress) then
          return ingress
        end
      end
    end
    if parent == dir then
      return nil
    end
    child = basename(dir)
    dir = parent
  end
end

--- Whether YAML text is a ConfigMap with `lua.traffic.routing.*` keys.
function M.looks_like_configmap(text)
  local kind, key = false, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*kind:%s*[\"']?ConfigMap[\"']?%s*$") then
      kind = true
    elseif line:match("^%s*[\"']?lua%.traffic%.routing%.") then
      key = true
    end
  end
  return kind and key
end

--- "script", "testdata", "configmap" or nil; `text` (string or function returning one) is only
--- read for YAML outside testdata.
function M.kind(path, text, exists)
  if path == nil or path == "" then
    return nil
  end
  if M.is_script(path) then
    return "script"
  end
  if not is_yaml(path) then
    return nil
  end
  if M.case_owner(path, exists) then
    return "testdata"
  end
  if type(text) == "function" then
    text = text()
  end
  if text and M.looks_like_configmap(text) then
    return "configmap"
  end
  return nil
end

--- The nearest ancestor of `path` (itself included when a directory) that `pred` accepts.
local function nearest(path, pred)
  local dir = path
  while true do
    if pred(dir) then
      return dir
    end
    local parent = dirname(dir)
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

--- The workspace root for a file of kind `kind`: the `lua_configuration` folder it is in (or
--- that sits beside it, for a ConfigMap); else the nearest folder holding
--- `trafficrouting_ingress`; else, for `<root>/<group>/<Kind>/trafficRouting.lua`, `<root>`;
--- else the file's folder.
function M.root(path, kind, dir_exists)
  dir_exists = dir_exists or is_dir
  local start = dirname(path)
  local tree = nearest(start, function(dir)
    return basename(dir) == M.TREE_FOLDER
  end)
  if tree then
    return tree
  end
  if kind == "configmap" then
    local beside = nearest(start, function(dir)
      return dir_exists(join(dir, M.TREE_FOLDER))
    end)
    if beside then
      return join(beside, M.TREE_FOLDER)
    end
    return start
  end
  local ingress = nearest(start, function(dir)
    return basename(dir) == M.INGRESS_FOLDER
  end)
  if ingress then
    return dirname(ingress)
  end
  local holder = nearest(start, function(dir)
    return dir_exists(join(dir, M.INGRESS_FOLDER))
  end)
  if holder then
    return holder
  end
  local script = path
  if kind == "testdata" then
    script = M.case_owner(path) or path
  end
  if basename(script) == M.CUSTOM_SCRIPT_NAME then
    -- <root>/<group>/<Kind>/trafficRouting.lua
    return dirname(dirname(dirname(script)))
  end
  return start
end

--- The 0-based step a 0-based line of a test case is in (inside `expected[i]` or the
--- rollout's `steps[i]`), or nil.
function M.step_at_line(text, line)
  local lines = vim.split(text, "\n", { plain = true })
  local function indent_of(s)
    return #s:match("^(%s*)")
  end
  local function blank(s)
    return s:match("^%s*$") ~= nil or s:match("^%s*#") ~= nil
  end
  local function list_under(pattern, top_level)
    for i, l in ipairs(lines) do
      if l:match(pattern) and (not top_level or indent_of(l) == 0) then
        local key_indent = indent_of(l)
        local items, item_indent = {}, nil
        local j = i + 1
        while j <= #lines do
          local s = lines[j]
          if not blank(s) then
            local indent = indent_of(s)
            local is_item = s:match("^%s*%-%s") ~= nil or s:match("^%s*%-$") ~= nil
            if item_indent == nil then
              if not is_item or indent < key_indent then
                break
              end
              item_indent = indent
            end
            if indent < item_indent or (indent == item_indent and not is_item) then
              break
            end
            if indent == item_indent and is_item then
              items[#items + 1] = j - 1
            end
          end
          j = j + 1
        end
        return items, j - 1
      end
    end
    return nil
  end
  for _, spec in ipairs({ { "^%s*expected:%s*$", true }, { "^%s*steps:%s*$", false } }) do
    local items, stop = list_under(spec[1], spec[2])
    if items and #items > 0 and line >= items[1] and line < stop then
      local step = 0
      for i, first in ipairs(items) do
        if first <= line then
          step = i - 1
        end
      end
      return step
    end
  end
  return nil
end

return M
