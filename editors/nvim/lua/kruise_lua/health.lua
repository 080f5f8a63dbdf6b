--- `:checkhealth kruise_lua`: the Neovim version, the server binary and its version, and
--- whether a client is attached to the current buffer.
local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

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

  start("Current buffer")
  local bufnr = vim.api.nvim_get_current_buf()
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
    info("nvim-dap is not installed: debugging a step needs it (see :help kruise_lua-debug)")
  end
end

return M
