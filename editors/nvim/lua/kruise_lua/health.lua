--- `:checkhealth kruise_lua`: the Neovim version, the server binary and its version, and
--- whether a client is attached to the buffer the user was in.
local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

--- The buffer to report on: the one the user was in. `:checkhealth` runs in its own buffer
--- (a new tab, or a float), so the current buffer is the report itself; the user's buffer is
--- then the alternate one, or the current window's buffer of the tab page left.
local function inspected_buffer()
  local function is_report(b)
    return vim.bo[b].filetype == "checkhealth" or vim.api.nvim_buf_get_name(b):match("^health://") ~= nil
      or vim.bo[b].buftype == "nofile"
  end
  local current = vim.api.nvim_get_current_buf()
  if not is_report(current) then
    return current
  end
  local alternate = vim.fn.bufnr("#")
  if alternate > 0 and vim.api.nvim_buf_is_valid(alternate) and not is_report(alternate) then
    return alternate
  end
  local previous_tab = vim.fn.tabpagenr("#")
  if previous_tab > 0 then
    local buffers = vim.fn.tabpagebuflist(previous_tab)
    local b = buffers[vim.fn.tabpagewinnr(previous_tab)]
    if b and vim.api.nvim_buf_is_valid(b) and not is_report(b) then
      return b
    end
  end
  return current
end

function M.check()
  local kruise_lua = require("kruise_lua")

  start("Neovim")
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.9") == 1 then
    local how = (type(vim.lsp.enable) == "function") and "vim.lsp.config/vim.lsp.enable"
      or "vim.lsp.start from FileType autocommands"
    ok(("Neovim %s (clients start through %s)"):format(version, how))
  else
    error(("Neovim %s is too old: kruise_lua needs 0.9 or newer"):format(version))
  end

  start("kruise-lua language server")
  local binary = kruise_lua.server_binary()
  if not binary then
    error(kruise_lua.missing_message(), { "Install it: " .. kruise_lua.INSTALL_COMMAND })
  else
    local out = vim.fn.system({ binary, "--version" })
    if vim.v.shell_error ~= 0 then
      error(("%s --version failed: %s"):format(binary, vim.trim(out)))
    else
      ok(("%s (%s)"):format(binary, vim.trim(out)))
      local help = vim.fn.system({ binary, "lsp", "--help" })
      if vim.v.shell_error ~= 0 then
        error(("%s has no `lsp` subcommand; rebuild it from a current checkout"):format(binary), {
          kruise_lua.INSTALL_COMMAND,
        })
      else
        ok("`kruise-lua lsp` is available")
      end
    end
  end

  local bufnr = inspected_buffer()
  start(("Buffer %d (%s)"):format(bufnr, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":~:.")))
  local kind = kruise_lua.buffer_kind(bufnr)
  if not kind then
    info("not a kruise-lua file (a traffic-routing script, one of its test cases, or a ConfigMap holding scripts)")
  else
    info(("a %s, root %s"):format(kind, kruise_lua.buffer_root(bufnr) or "?"))
  end
  local client = kruise_lua.attached_client(bufnr)
  if client then
    local server = client.server_info and client.server_info.version or "?"
    ok(("client %d attached (server %s, root %s)"):format(client.id, server, client.config.root_dir or "?"))
  elseif kind then
    warn("no kruise-lua client is attached to this buffer", {
      "Call require('kruise_lua').setup() in your config",
      "See :LspLog and the `kruise-lua language server` section above",
    })
  else
    info("no kruise-lua client attached (expected for this buffer)")
  end

  start("Debugging (kruise-lua dap)")
  if pcall(require, "dap") then
    ok("nvim-dap is installed: the `kruise-lua` adapter and the ▶ debug step lenses work")
  else
    -- `:help tag` becomes a link in the report; a character glued to the tag (a closing
    -- parenthesis) would be taken into it and show as `|tag)|`.
    info("nvim-dap is not installed: debugging a step needs it, see :help kruise_lua-debug")
  end
end

return M
