--- kruise-lua and nvim-dap: the `kruise-lua` debug adapter (`kruise-lua dap`), launch
--- configurations for a step of a test case, and the "▶ debug step N" lens's command.
--- nvim-dap is a separate plugin; without it the lens says so.
local M = {}

M.TYPE = "kruise-lua"
M.COMMAND = "kruise-lua.debugStep"

--- The nvim-dap adapter: the server binary (as `setup({cmd = ...})` names it) with `dap`.
--- Returns nil and a message when the binary is missing.
function M.adapter()
  local kruise = require("kruise_lua")
  local binary = kruise.server_binary()
  if not binary then
    return nil, kruise.missing_message()
  end
  return { type = "executable", command = binary, args = { "dap" } }
end

--- The launch configuration of the lens argument `{script, case, step (from 1), mode}`, or nil
--- and why it is not one.
function M.configuration(arg)
  if type(arg) ~= "table" then
    return nil, "debug step needs {script, case, step}"
  end
  local script, case, step, mode = arg.script, arg.case, arg.step, arg.mode or "harness"
  if type(script) ~= "string" or script == "" or type(case) ~= "string" or case == "" then
    return nil, "debug step needs a script and a case path"
  end
  if type(step) ~= "number" or step < 1 or step % 1 ~= 0 then
    return nil, ("debug step needs a step number from 1, not %s"):format(vim.inspect(step))
  end
  if mode ~= "harness" and mode ~= "production" then
    return nil, ("mode is harness or production, not %s"):format(vim.inspect(mode))
  end
  return {
    type = M.TYPE,
    request = "launch",
    name = ("Debug step %d of %s"):format(step, vim.fn.fnamemodify(case, ":t")),
    script = script,
    case = case,
    step = step,
    mode = mode,
  }
end

local function notify(message, level)
  vim.notify("kruise-lua: " .. message, level or vim.log.levels.ERROR)
end

--- Registers the adapter with nvim-dap (when it is installed) and a launch configuration for
--- Lua buffers that asks for the case and step. Returns whether nvim-dap was found.
function M.setup()
  local ok, dap = pcall(require, "dap")
  if not ok then
    return false
  end
  dap.adapters[M.TYPE] = function(callback)
    local adapter, message = M.adapter()
    if adapter then
      callback(adapter)
    else
      notify(message)
    end
  end
  dap.configurations.lua = dap.configurations.lua or {}
  for _, existing in ipairs(dap.configurations.lua) do
    if existing.type == M.TYPE then
      return true
    end
  end
  table.insert(dap.configurations.lua, {
    type = M.TYPE,
    request = "launch",
    name = "kruise-lua: debug a step of a test case",
    script = "${file}",
    case = function()
      return vim.fn.input("Test case: ", vim.fn.expand("%:p:h") .. "/testdata/", "file")
    end,
    step = function()
      return tonumber(vim.fn.input("Step (from 1): ", "1")) or 1
    end,
    mode = "harness",
  })
  return true
end

--- Starts debugging the step the lens names.
function M.debug_step(arg)
  local config, message = M.configuration(arg)
  if not config then
    notify(message)
    return
  end
  local ok, dap = pcall(require, "dap")
  if not ok then
    notify("debugging a step needs nvim-dap (https://github.com/mfussenegger/nvim-dap); see :help kruise_lua-debug")
    return
  end
  M.setup()
  dap.run(config)
end

return M
