--- kruise-lua for Neovim: starts `kruise-lua lsp` for OpenKruise Rollout traffic-routing scripts,
--- their test cases and ConfigMaps holding scripts, and adds commands around the server's own.
local detect = require("kruise_lua.detect")

local M = {}

M.NAME = "kruise_lua"
M.COMMANDS = {
  run_all = "kruise-lua.runAll",
  obj_as_lua = "kruise-lua.objAsLua",
  accept_expected = "kruise-lua.acceptExpected",
  debug_step = "kruise-lua.debugStep",
  show_step_values = "kruise-lua.showStepValues",
  hide_step_values = "kruise-lua.hideStepValues",
}
M.INSTALL_COMMAND = "cargo install --locked --path server"

local defaults = {
  --- The server command; the first element may be a name on $PATH or a path.
  cmd = { "kruise-lua", "lsp" },
  --- Sent as initializationOptions and workspace/didChangeConfiguration.
  settings = {
    kruiseLua = {
      --- Lint code → "off" | "hint" | "info" | "warning" | "error".
      lints = {},
      --- "harness" (Kruise's go test verdicts) or "production" (the controller's).
      mode = "harness",
    },
  },
  --- Show the server's code lenses (case and step verdicts) and keep them fresh.
  codelens = true,
  --- Passed on to the client.
  capabilities = nil,
  on_attach = nil,
  --- Define :KruiseLuaRun, :KruiseLuaObj, :KruiseLuaAccept, :KruiseLuaShowValues and
  --- :KruiseLuaHideValues.
  user_commands = true,
  --- nil: `vim.lsp.config`/`vim.lsp.enable` when Neovim has them (0.11+), else `vim.lsp.start`
  --- from FileType autocommands; false forces the latter.
  use_lsp_enable = nil,
}

M.config = vim.deepcopy(defaults)

local function notify(message, level)
  vim.notify("kruise-lua: " .. message, level or vim.log.levels.INFO)
end

local uv = vim.uv or vim.loop

--- The filetypes of the buffers the client may attach to (scripts, cases, ConfigMaps).
local FILETYPES = { "lua", "yaml" }

--- The server binary: `cmd[1]` as a path or on $PATH, else in ~/.cargo/bin (cargo install's
--- folder, often missing from the PATH of a GUI-started editor).
function M.server_binary(cmd)
  cmd = cmd or M.config.cmd
  local name = vim.fn.expand(cmd[1])
  if vim.fn.executable(name) == 1 then
    local found = vim.fn.exepath(name)
    return found ~= "" and found or name
  end
  if not name:find("[/\\]") then
    local home = uv.os_homedir()
    if home then
      local cargo = home .. "/.cargo/bin/" .. name
      if vim.fn.executable(cargo) == 1 then
        return cargo
      end
    end
  end
  return nil
end

function M.missing_message(cmd)
  cmd = cmd or M.config.cmd
  return ("the language server `%s` was not found on $PATH or in ~/.cargo/bin. Install it from a "
    .. "kruise-lua checkout with `%s`, or set `cmd` in require('kruise_lua').setup()."):format(
    cmd[1],
    M.INSTALL_COMMAND
  )
end

local function buffer_path(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]+://") then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

local function buffer_text(bufnr)
  return function()
    return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  end
end

--- The kind of a buffer's file ("script", "testdata", "configmap") or nil.
function M.buffer_kind(bufnr)
  local path = buffer_path(bufnr)
  if not path then
    return nil
  end
  return detect.kind(path, buffer_text(bufnr))
end

--- The root for a buffer, when the buffer is kruise-lua's.
function M.buffer_root(bufnr)
  local kind = M.buffer_kind(bufnr)
  if not kind then
    return nil
  end
  return detect.root(buffer_path(bufnr), kind)
end

local function get_clients(filter)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(filter)
  end
  return vim.lsp.get_active_clients(filter)
end

--- The kruise-lua client attached to a buffer, or nil.
function M.attached_client(bufnr)
  return get_clients({ name = M.NAME, bufnr = bufnr })[1]
end

--- Sends a request through `client` (the method call changed form in Neovim 0.11); whether it
--- was sent.
local function request(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- The kruise-lua client of a buffer, else any kruise-lua client.
function M.client(bufnr)
  return M.attached_client(bufnr or vim.api.nvim_get_current_buf()) or get_clients({ name = M.NAME })[1]
end

local missing_reported = false

--- Diagnostics as published, less a script's all-pass summary ("8/8 cases pass", a hint on
--- line 1) when code lenses are on: the lens above that line says the same. A summary with
--- failing cases stays (it links to them).
local function on_publish_diagnostics(err, result, ctx, config)
  if M.config.codelens and result and result.diagnostics then
    result.diagnostics = vim.tbl_filter(function(d)
      return not (d.code == "summary" and d.severity == vim.lsp.protocol.DiagnosticSeverity.Hint)
    end, result.diagnostics)
  end
  return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
end

--- The client configuration for `vim.lsp.start`/`vim.lsp.config` (without root_dir).
local function client_config()
  local cmd = vim.deepcopy(M.config.cmd)
  local binary = M.server_binary(cmd)
  if binary then
    cmd[1] = binary
  end
  local settings = M.config.settings
  return {
    name = M.NAME,
    cmd = cmd,
    filetypes = FILETYPES,
    init_options = settings,
    settings = settings,
    capabilities = M.config.capabilities,
    on_attach = M.config.on_attach,
    handlers = { ["textDocument/publishDiagnostics"] = on_publish_diagnostics },
  }, binary ~= nil
end

local function report_missing()
  if not missing_reported then
    missing_reported = true
    notify(M.missing_message(), vim.log.levels.ERROR)
  end
end

--- Starts (or reuses) the client for a buffer, if the buffer is kruise-lua's. Works on every
--- supported Neovim; the 0.11+ path (`vim.lsp.enable`) uses it for files that become
--- kruise-lua's later (a YAML file saved as a ConfigMap with scripts).
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = M.buffer_root(bufnr)
  if not root then
    return nil
  end
  local attached = M.attached_client(bufnr)
  if attached then
    return attached.id
  end
  local config, found = client_config()
  if not found then
    report_missing()
    return nil
  end
  config.root_dir = root
  config.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  return vim.lsp.start(config, { bufnr = bufnr })
end

local function has_enable()
  if M.config.use_lsp_enable == false then
    return false
  end
  return type(vim.lsp.enable) == "function" and vim.lsp.config ~= nil
end

--- Result handlers of the server's commands (also run when a code lens invokes them).
local function show_counts(result)
  if type(result) ~= "table" then
    return
  end
  local failing = (result.cases or 0) - (result.passed or 0)
  local message = ("%d/%d cases pass (%d scripts)"):format(result.passed or 0, result.cases or 0, result.scripts or 0)
  if result.steps then
    -- `kruise-lua check` counts steps: say both (defect 12).
    message = ("%d/%d cases pass, %d/%d steps (%d scripts)"):format(
      result.passed or 0,
      result.cases or 0,
      result.stepsPassed or 0,
      result.steps,
      result.scripts or 0
    )
  end
  notify(message, failing > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
end

--- Opens Lua source in a scratch buffer in a split.
function M.open_scratch(source, title)
  vim.cmd("belowright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, title)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(source, "\n", { plain = true }))
  vim.bo[buf].filetype = "lua"
  vim.bo[buf].modified = false
  return buf
end

local function report_accept(result)
  if type(result) ~= "table" then
    return
  end
  if (result.steps or 0) == 0 then
    notify("nothing to accept, no step of this case fails")
  elseif result.applied then
    notify(("accepted the actual output of %d step(s) as expected"):format(result.steps))
  else
    notify("the edit accepting the actual output was not applied", vim.log.levels.WARN)
  end
end

local function obj_title(uri, step)
  local name = vim.fn.fnamemodify(vim.uri_to_fname(uri), ":t:r")
  return ("kruise-lua://obj/%s/step%d.lua"):format(name, step + 1)
end

--- Sends `workspace/executeCommand`; `on_result(result)` runs on success.
function M.execute(command, arguments, on_result, bufnr)
  local client = M.client(bufnr)
  if not client then
    notify("no kruise-lua server is running (open a script or a test case)", vim.log.levels.WARN)
    return false
  end
  local params = { command = command, arguments = arguments or {} }
  local handler = function(err, result)
    if err then
      notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
      return
    end
    if on_result then
      on_result(result)
    end
  end
  request(client, "workspace/executeCommand", params, handler, bufnr)
  return true
end

function M.run_all()
  return M.execute(M.COMMANDS.run_all, {}, show_counts)
end

local function case_buffer()
  local bufnr = vim.api.nvim_get_current_buf()
  if M.buffer_kind(bufnr) ~= "testdata" then
    notify("open a test case (a YAML file in a script's testdata folder) first", vim.log.levels.WARN)
    return nil
  end
  return bufnr
end

local function cursor_step(bufnr)
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  return detect.step_at_line(buffer_text(bufnr)(), line)
end

--- Runs `kruise-lua.objAsLua` with `arguments` (`{ { uri = ..., step = ... } }`) and opens the
--- Lua source it returns.
local function open_obj(arguments, bufnr)
  local arg = arguments[1] or {}
  return M.execute(M.COMMANDS.obj_as_lua, arguments, function(result)
    if type(result) == "string" then
      M.open_scratch(result, obj_title(arg.uri or "", arg.step or 0))
    end
  end, bufnr)
end

--- `:KruiseLuaObj [step]`: step is 1-based; default the step under the cursor, else 1.
function M.show_obj(step)
  local bufnr = case_buffer()
  if not bufnr then
    return false
  end
  local index = step and (step - 1) or cursor_step(bufnr) or 0
  return open_obj({ { uri = vim.uri_from_bufnr(bufnr), step = index } }, bufnr)
end

--- The script's buffer (opened in a split when no buffer holds it) with inlay hints on: the
--- server sends hints only for the script whose values are shown.
local function show_values_in(script)
  if not (vim.lsp.inlay_hint and vim.fn.has("nvim-0.10") == 1) then
    notify("inline values need Neovim 0.10 or later (inlay hints)", vim.log.levels.WARN)
    return
  end
  local target = vim.fn.fnamemodify(script, ":p")
  local found
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":p") == target then
      found = b
    end
  end
  if not found then
    vim.cmd("belowright split " .. vim.fn.fnameescape(target))
    found = vim.api.nvim_get_current_buf()
  elseif vim.fn.bufwinid(found) == -1 then
    -- Loaded but in no window (hidden, or listed only): hints there would show nowhere.
    vim.cmd("belowright sbuffer " .. found)
  end
  vim.lsp.inlay_hint.enable(true, { bufnr = found })
end

--- Runs `kruise-lua.showStepValues` with `arguments` (`{ { uri = <case>, step = <0-based> } }`).
local function show_values(arguments, bufnr)
  return M.execute(M.COMMANDS.show_step_values, arguments, function(result)
    if type(result) == "table" and result.script then
      show_values_in(result.script)
      notify(("values of step %d shown in %s"):format((result.step or 0) + 1, vim.fn.fnamemodify(result.script, ":t")))
    end
  end, bufnr)
end

--- `:KruiseLuaShowValues [step]`: step is 1-based; default the step under the cursor, else 1.
function M.show_values(step)
  local bufnr = case_buffer()
  if not bufnr then
    return false
  end
  local index = step and (step - 1) or cursor_step(bufnr) or 0
  return show_values({ { uri = vim.uri_from_bufnr(bufnr), step = index } }, bufnr)
end

--- `:KruiseLuaHideValues`.
function M.hide_values()
  return M.execute(M.COMMANDS.hide_step_values, {})
end

--- `:KruiseLuaAccept [all|step]`: the step under the cursor (1-based number given), or all
--- failing steps.
function M.accept(which)
  local bufnr = case_buffer()
  if not bufnr then
    return false
  end
  local argument = { uri = vim.uri_from_bufnr(bufnr) }
  if which ~= "all" then
    local index = tonumber(which) and (tonumber(which) - 1) or cursor_step(bufnr)
    if not index then
      notify("put the cursor inside a step's expected entry, or use :KruiseLuaAccept all", vim.log.levels.WARN)
      return false
    end
    argument.step = index
  end
  return M.execute(M.COMMANDS.accept_expected, { argument }, report_accept, bufnr)
end

local function define_user_commands()
  vim.api.nvim_create_user_command("KruiseLuaRun", function()
    M.run_all()
  end, { desc = "kruise-lua: run every test case" })
  vim.api.nvim_create_user_command("KruiseLuaObj", function(opts)
    local step = opts.args ~= "" and tonumber(opts.args) or nil
    if opts.args ~= "" and not step then
      notify("usage: :KruiseLuaObj [step number]", vim.log.levels.ERROR)
      return
    end
    M.show_obj(step)
  end, { nargs = "?", desc = "kruise-lua: show the obj of a step as Lua" })
  vim.api.nvim_create_user_command("KruiseLuaShowValues", function(opts)
    local step = opts.args ~= "" and tonumber(opts.args) or nil
    if opts.args ~= "" and not step then
      notify("usage: :KruiseLuaShowValues [step number]", vim.log.levels.ERROR)
      return
    end
    M.show_values(step)
  end, { nargs = "?", desc = "kruise-lua: show a step's values inline in its script" })
  vim.api.nvim_create_user_command("KruiseLuaHideValues", function()
    M.hide_values()
  end, { desc = "kruise-lua: hide the inline values" })
  vim.api.nvim_create_user_command("KruiseLuaAccept", function(opts)
    local arg = opts.args
    if arg ~= "" and arg ~= "all" and not tonumber(arg) then
      notify("usage: :KruiseLuaAccept [all | step number]", vim.log.levels.ERROR)
      return
    end
    M.accept(arg ~= "" and arg or nil)
  end, {
    nargs = "?",
    complete = function()
      return { "all" }
    end,
    desc = "kruise-lua: accept the actual output as expected",
  })
end

--- Client-side handlers of the server's commands, as code lenses run them.
local function define_lens_commands()
  vim.lsp.commands[M.COMMANDS.obj_as_lua] = function(command, ctx)
    open_obj(command.arguments or {}, ctx and ctx.bufnr)
  end
  vim.lsp.commands[M.COMMANDS.run_all] = function(command, ctx)
    M.execute(command.command, command.arguments, show_counts, ctx and ctx.bufnr)
  end
  vim.lsp.commands[M.COMMANDS.show_step_values] = function(command, ctx)
    show_values(command.arguments or {}, ctx and ctx.bufnr)
  end
  -- "▶ debug step N": a session of nvim-dap with `kruise-lua dap` (see kruise_lua.dap).
  vim.lsp.commands[M.COMMANDS.debug_step] = function(command)
    require("kruise_lua.dap").debug_step((command.arguments or {})[1])
  end
end

--- Buffers whose lens request is on its way: "sent", or "again" when asked meanwhile.
local lens_requests = {}

--- Asks the buffer's client for its lenses and shows them. Neovim does not take the server's
--- `workspace/codeLens/refresh`, and `vim.lsp.codelens.refresh` drops a request while the
--- buffer's last one is on its way: a run that ended while that one was answered (with the
--- lenses from before the run) would have shown stale lenses until the next edit. So a request
--- made meanwhile is sent once the answer arrives.
local function refresh_codelens(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if lens_requests[bufnr] then
    lens_requests[bufnr] = "again"
    return
  end
  local client = M.attached_client(bufnr)
  if not client then
    return
  end
  local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
  local function on_lenses(err, result, ctx)
    local again = lens_requests[bufnr] == "again"
    lens_requests[bufnr] = nil
    if vim.api.nvim_buf_is_valid(bufnr) then
      pcall(vim.lsp.codelens.on_codelens, err, result, ctx)
      if again then
        refresh_codelens(bufnr)
      end
    end
  end
  lens_requests[bufnr] = "sent"
  if not request(client, "textDocument/codeLens", params, on_lenses, bufnr) then
    lens_requests[bufnr] = nil
  end
end

local group = vim.api.nvim_create_augroup("kruise_lua", { clear = true })

local function define_autocmds()
  vim.api.nvim_clear_autocmds({ group = group })
  if not has_enable() then
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = FILETYPES,
      callback = function(args)
        M.attach(args.buf)
      end,
    })
  end
  -- A YAML file saved as a ConfigMap with scripts (or a case whose script appeared).
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    pattern = { "*.yaml", "*.yml", "*.lua" },
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  if M.config.codelens then
    vim.api.nvim_create_autocmd("LspAttach", {
      group = group,
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data.client_id)
        if not client or client.name ~= M.NAME then
          return
        end
        -- A request of a client that stopped is never answered.
        lens_requests[args.buf] = nil
        refresh_codelens(args.buf)
        -- DiagnosticChanged: runs finish after edits; their diagnostics arrive, so do fresh lenses.
        vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost", "DiagnosticChanged" }, {
          group = group,
          buffer = args.buf,
          callback = function()
            refresh_codelens(args.buf)
          end,
        })
      end,
    })
  end
end

--- Configures and enables the client. Safe to call again (the last options win).
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  missing_reported = false
  define_autocmds()
  define_lens_commands()
  -- The debug adapter, when nvim-dap is installed (loaded before or after this plugin: the
  -- lens registers it again when it starts a session).
  require("kruise_lua.dap").setup()
  if M.config.user_commands then
    define_user_commands()
  end
  if has_enable() then
    local config, found = client_config()
    if not found then
      report_missing()
    end
    config.root_dir = function(bufnr, on_dir)
      local root = M.buffer_root(bufnr)
      if root and found then
        on_dir(root)
      end
    end
    vim.lsp.config(M.NAME, config)
    vim.lsp.enable(M.NAME)
  else
    if type(vim.lsp.enable) == "function" then
      pcall(vim.lsp.enable, M.NAME, false)
    end
    -- Buffers already open when setup runs.
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(FILETYPES, vim.bo[bufnr].filetype) then
        M.attach(bufnr)
      end
    end
  end
end

return M
