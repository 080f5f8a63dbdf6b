// Command gopher-runner runs Lua scripts through gopher-lua the way OpenKruise Rollouts runs a
// custom traffic-routing script, for the differential test in ../src (kruise-lua-difftest).
//
// Protocol (stdin/stdout, one script at a time): the caller writes a line with the script's
// length in bytes, then the script's bytes. The runner answers with one line of JSON:
// {"status": "ok"|"syntax"|"runtime"|"timeout"|"not_table"|"panic", "out": "...", "msg": "..."}.
// "out" is the `spec` string field of the returned table (the difftest scripts return their
// observations there); "msg" is the error text or, for not_table, the Lua type name.
//
// What is modelled, from openkruise/rollouts pkg/util/luamanager/lua.go (LuaManager.RunLuaScript)
// and pkg/trafficrouting/network/customNetworkProvider/custom_network_provider.go
// (customController.executeLuaForCanary):
//   - lua.NewState(lua.Options{SkipOpenLibs: true}), then math, base, table, string opened in that
//     order, each through CallByParam with its library name;
//   - a 1 second context timeout set with SetContext;
//   - the global `obj` set from the input object;
//   - l.DoString(script), then the last value on the stack, l.Get(-1), must be a table.
//   - Kruise's own `json` module (pkg/util/luamanager/json.go) opened last, as reproduced in
//     json.go.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

type answer struct {
	Status string `json:"status"`
	Out    string `json:"out"`
	Msg    string `json:"msg"`
}

// objTable builds the `obj` global: the fixed object the difftest gives both engines
// (a custom provider's obj with weights and services, no data).
func objTable(l *lua.LState) *lua.LTable {
	obj := l.NewTable()
	obj.RawSetString("canaryWeight", lua.LNumber(20))
	obj.RawSetString("stableWeight", lua.LNumber(80))
	obj.RawSetString("canaryService", lua.LString("web-canary"))
	obj.RawSetString("stableService", lua.LString("web"))
	return obj
}

func run(script string) (ans answer) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	defer func() {
		// A Go panic escaping gopher-lua: the controller would see it as a failure of the run.
		if r := recover(); r != nil {
			ans = answer{Status: "panic", Msg: fmt.Sprint(r)}
		}
	}()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.MathLibName, lua.OpenMath},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{"json", openJSON},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return answer{Status: "panic", Msg: err.Error()}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1*time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", objTable(l))
	if err := l.DoString(script); err != nil {
		status := "runtime"
		if apiErr, ok := err.(*lua.ApiError); ok && apiErr.Type == lua.ApiErrorSyntax {
			status = "syntax"
		} else if ctx.Err() != nil && strings.Contains(err.Error(), ctx.Err().Error()) {
			status = "timeout"
		}
		return answer{Status: status, Msg: err.Error()}
	}
	result := l.Get(-1)
	table, ok := result.(*lua.LTable)
	if !ok {
		return answer{Status: "not_table", Msg: result.Type().String()}
	}
	out, _ := table.RawGetString("spec").(lua.LString)
	return answer{Status: "ok", Out: string(out)}
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		header, err := in.ReadString('\n')
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gopher-runner: reading the header:", err)
			os.Exit(2)
		}
		size, err := strconv.Atoi(strings.TrimSpace(header))
		if err != nil || size < 0 {
			fmt.Fprintf(os.Stderr, "gopher-runner: bad header %q\n", header)
			os.Exit(2)
		}
		script := make([]byte, size)
		if _, err := io.ReadFull(in, script); err != nil {
			fmt.Fprintln(os.Stderr, "gopher-runner: reading the script:", err)
			os.Exit(2)
		}
		if err := enc.Encode(run(string(script))); err != nil {
			os.Exit(2)
		}
		out.Flush()
	}
}
