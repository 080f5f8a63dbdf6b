// The `json` module Kruise's runtime opens after the four libraries (openkruise/rollouts
// pkg/util/luamanager/json.go, `OpenJson`), written here from its behaviour so that generated
// scripts can call json.encode/json.decode through gopher-lua as Kruise does:
//   - encode(v) is encoding/json's Marshal of a wrapper whose MarshalJSON turns one Lua value
//     into JSON, marshalling a table's items with Marshal in turn (so every level wraps an
//     error from below in a MarshalerError); a table is null when empty, an array when its
//     first key (gopher's Next order) is a number and the keys run 1, 2, 3..., an object when
//     it is a string and all keys are; tables are remembered and never visited twice;
//   - decode(s) is Unmarshal into interface{} and a conversion to tables (CreateTable(n, 0) and
//     Append for arrays, CreateTable(0, n) and RawSetH for objects);
//   - on failure both return nil and the error text.
// The wrapper's Go type is named in that text; Kruise's is luamanager.jsonValue, so the text
// is given with that package name.
package main

import (
	"encoding/json"
	"errors"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

var (
	errTableTwice = errors.New("cannot encode recursively nested tables to JSON")
	errNotArray   = errors.New("cannot encode sparse array")
	errKeyTypes   = errors.New("cannot encode mixed or invalid key types")
)

// jsonValue is one Lua value being marshalled, with the tables met so far.
type jsonValue struct {
	value lua.LValue
	seen  map[*lua.LTable]bool
}

func (j jsonValue) MarshalJSON() ([]byte, error) {
	switch v := j.value.(type) {
	case *lua.LNilType:
		return []byte("null"), nil
	case lua.LBool:
		return json.Marshal(bool(v))
	case lua.LNumber:
		return json.Marshal(float64(v))
	case lua.LString:
		return json.Marshal(string(v))
	case *lua.LTable:
		return j.table(v)
	}
	return nil, errors.New("cannot encode " + j.value.Type().String() + " to JSON")
}

func (j jsonValue) table(t *lua.LTable) ([]byte, error) {
	if j.seen[t] {
		return nil, errTableTwice
	}
	j.seen[t] = true
	key, value := t.Next(lua.LNil)
	switch key.(type) {
	case *lua.LNilType:
		return []byte("null"), nil
	case lua.LNumber:
		var items []jsonValue
		for next := lua.LNumber(1); key != lua.LNil; next++ {
			n, isNumber := key.(lua.LNumber)
			if !isNumber {
				return nil, errKeyTypes
			}
			if n != next {
				return nil, errNotArray
			}
			items = append(items, jsonValue{value, j.seen})
			key, value = t.Next(key)
		}
		return json.Marshal(items)
	case lua.LString:
		members := make(map[string]jsonValue)
		for key != lua.LNil {
			s, isString := key.(lua.LString)
			if !isString {
				return nil, errKeyTypes
			}
			members[string(s)] = jsonValue{value, j.seen}
			key, value = t.Next(key)
		}
		return json.Marshal(members)
	}
	return nil, errKeyTypes
}

func jsonEncode(l *lua.LState) int {
	text, err := json.Marshal(jsonValue{l.CheckAny(1), make(map[*lua.LTable]bool)})
	if err != nil {
		l.Push(lua.LNil)
		l.Push(lua.LString(strings.ReplaceAll(err.Error(), "main.jsonValue", "luamanager.jsonValue")))
		return 2
	}
	l.Push(lua.LString(text))
	return 1
}

func toLua(l *lua.LState, v interface{}) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []interface{}:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]interface{}:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

func jsonDecode(l *lua.LState) int {
	var v interface{}
	if err := json.Unmarshal([]byte(l.CheckString(1)), &v); err != nil {
		l.Push(lua.LNil)
		l.Push(lua.LString(err.Error()))
		return 2
	}
	l.Push(toLua(l, v))
	return 1
}

// openJSON registers the module as Kruise's OpenJson does.
func openJSON(l *lua.LState) int {
	l.Push(l.RegisterModule("json", map[string]lua.LGFunction{
		"decode": jsonDecode,
		"encode": jsonEncode,
	}))
	return 1
}
