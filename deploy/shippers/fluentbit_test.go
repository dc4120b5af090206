package shippers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	lua "github.com/yuin/gopher-lua"
)

// fluentBit is the part of fluent-bit.yaml the tests read.
type fluentBit struct {
	Parsers  []map[string]any `yaml:"parsers"`
	Pipeline struct {
		Inputs  []map[string]any `yaml:"inputs"`
		Filters []map[string]any `yaml:"filters"`
		Outputs []map[string]any `yaml:"outputs"`
	} `yaml:"pipeline"`
}

func readFluentBit(t *testing.T, file string) fluentBit {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg fluentBit
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cfg
}

func plugin(t *testing.T, list []map[string]any, name string) map[string]any {
	t.Helper()
	for _, p := range list {
		if p["name"] == name {
			return p
		}
	}
	t.Fatalf("no %s plugin", name)
	return nil
}

// TestFluentBitConfig checks the wiring of fluent-bit.yaml: tail with the
// JSON parser that keeps start_time, the Lua filter on the same tag, Kafka
// keyed by a contract field with JSON records.
func TestFluentBitConfig(t *testing.T) {
	cfg := readFluentBit(t, "fluent-bit.yaml")
	in := plugin(t, cfg.Pipeline.Inputs, "tail")
	lf := plugin(t, cfg.Pipeline.Filters, "lua")
	out := plugin(t, cfg.Pipeline.Outputs, "kafka")
	if in["tag"] != lf["match"] || in["tag"] != out["match"] {
		t.Errorf("tag %v, lua match %v, kafka match %v: want one tag", in["tag"], lf["match"], out["match"])
	}
	var parser map[string]any
	for _, p := range cfg.Parsers {
		if p["name"] == in["parser"] {
			parser = p
		}
	}
	if parser == nil || parser["format"] != "json" {
		t.Errorf("tail parser %v: want a json parser defined under parsers", in["parser"])
	} else if _, ok := parser["time_key"]; ok && parser["time_keep"] != "on" && parser["time_keep"] != true {
		t.Errorf("parser %v takes time_key without time_keep: start_time would leave the record", parser["name"])
	}
	if out["format"] != "json" {
		t.Errorf("kafka format %v, want json", out["format"])
	}
	if key := fmt.Sprint(out["message_key_field"]); !slices.Contains(Names(GatewayFields), key) {
		t.Errorf("kafka message_key_field %q is not a contract field of the mapping", key)
	}
	if ts := fmt.Sprint(out["timestamp_key"]); slices.Contains(Names(GatewayFields), ts) || ts == "<nil>" || ts == "@timestamp" {
		t.Errorf("kafka timestamp_key %q: name it explicitly, and not after a contract field (out_kafka adds it to every record)", ts)
	}
}

// TestFluentBitLua runs gateway.lua on every sample the way Fluent Bit
// does (record as a Lua table, numbers as doubles, type_int_key, empty
// tables packed as arrays, the Kafka output's timestamp key added) and
// requires the Go reference's events, accepted by the ingester's decoder.
func TestFluentBitLua(t *testing.T) {
	f := loadLuaFilter(t, readFluentBit(t, "fluent-bit.yaml"))
	for _, s := range samples(t, "gateway") {
		t.Run(s.name, func(t *testing.T) {
			line := compact(t, s.in)
			want, err := Gateway(line)
			if err != nil {
				t.Fatal(err)
			}
			f.checkIntKeys(t, want)
			code, got := f.run(t, "gateway.access", line)
			if code != 1 && code != 2 {
				t.Fatalf("%s returned code %v, want 1 or 2 (record modified)", f.call, code)
			}
			wantLine, _ := json.Marshal(want)
			if !sameEvents(t, got, wantLine) {
				t.Errorf("gateway.lua and gateway.go disagree\nlua: %s\ngo:  %s", got, wantLine)
			}
		})
	}
}

// luaFilter is the Lua filter of a Fluent Bit configuration, loaded as
// Fluent Bit loads it, with what its Kafka output adds.
type luaFilter struct {
	L       *lua.LState
	fn      *lua.LFunction
	call    string
	intKeys []string
	tsKey   string
}

func loadLuaFilter(t *testing.T, cfg fluentBit) *luaFilter {
	t.Helper()
	lf := plugin(t, cfg.Pipeline.Filters, "lua")
	out := plugin(t, cfg.Pipeline.Outputs, "kafka")
	f := &luaFilter{L: lua.NewState(), call: fmt.Sprint(lf["call"]),
		intKeys: strings.Fields(fmt.Sprint(lf["type_int_key"])), tsKey: fmt.Sprint(out["timestamp_key"])}
	t.Cleanup(f.L.Close)
	script := fmt.Sprint(lf["script"])
	if err := f.L.DoFile(script); err != nil { // relative to the config, as Fluent Bit resolves it
		t.Fatalf("load %s: %v", script, err)
	}
	var ok bool
	if f.fn, ok = f.L.GetGlobal(f.call).(*lua.LFunction); !ok {
		t.Fatalf("%s defines no function %s (the filter's call)", script, f.call)
	}
	return f
}

// checkIntKeys: every integer of a reference event must be in
// type_int_key.
func (f *luaFilter) checkIntKeys(t *testing.T, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if _, isInt := v.(int); isInt && !slices.Contains(f.intKeys, k) {
			t.Errorf("%s is an integer but not in type_int_key %v: Fluent Bit would send %v.0", k, f.intKeys, v)
		}
	}
}

// run calls the filter on one JSON line as the tail input's JSON parser
// hands it over, and returns the filter's code and, unless it dropped the
// record (-1), the record as out_kafka sends it (its timestamp key taken
// off again), already accepted by the ingester's decoder.
func (f *luaFilter) run(t *testing.T, tag string, line []byte) (int, []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	L := f.L
	if err := L.CallByParam(lua.P{Fn: f.fn, NRet: 3, Protect: true},
		lua.LString(tag), lua.LNumber(1795978267.5), toLua(L, rec)); err != nil {
		t.Fatalf("%s: %v", f.call, err)
	}
	code, table := L.Get(-3), L.Get(-1)
	L.Pop(3)
	n, _ := code.(lua.LNumber)
	if n == -1 {
		return -1, nil
	}
	tb, ok := table.(*lua.LTable)
	if !ok {
		t.Fatalf("%s returned a %s record, want a table", f.call, table.Type())
	}
	var buf bytes.Buffer
	packTable(&buf, tb, f.intKeys, true)
	got := withKey(t, buf.Bytes(), f.tsKey, `"2026-11-29T18:51:07.500000Z"`)
	decodes(t, "Fluent Bit output", got)
	var ev map[string]any
	if err := json.Unmarshal(got, &ev); err != nil {
		t.Fatalf("Fluent Bit output is not JSON: %v\n%s", err, got)
	}
	delete(ev, f.tsKey)
	out, _ := json.Marshal(ev)
	return int(n), out
}

// toLua converts a JSON value as Fluent Bit hands it to Lua.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := v.Float64()
		return lua.LNumber(f)
	case map[string]any:
		tb := L.NewTable()
		for k, e := range v {
			tb.RawSetString(k, toLua(L, e))
		}
		return tb
	case []any:
		tb := L.NewTable()
		for i, e := range v {
			tb.RawSetInt(i+1, toLua(L, e))
		}
		return tb
	}
	return lua.LNil
}

// packTable writes a Lua table as Fluent Bit packs it and prints it as
// JSON: a table whose keys are 1..n (an empty one too) is an array, other
// tables are maps; numbers are doubles except top-level type_int_key keys.
func packTable(buf *bytes.Buffer, tb *lua.LTable, intKeys []string, top bool) {
	n, isArray := 0, true
	tb.ForEach(func(k, _ lua.LValue) {
		if f, ok := k.(lua.LNumber); ok && f > 0 && float64(f) == math.Trunc(float64(f)) {
			n++
			return
		}
		isArray = false
	})
	if isArray && tb.MaxN() == n {
		buf.WriteByte('[')
		for i := 1; i <= n; i++ {
			if i > 1 {
				buf.WriteByte(',')
			}
			packValue(buf, tb.RawGetInt(i), false)
		}
		buf.WriteByte(']')
		return
	}
	var keys []string
	tb.ForEach(func(k, _ lua.LValue) { keys = append(keys, k.String()) })
	sort.Strings(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		buf.Write(name)
		buf.WriteByte(':')
		packValue(buf, tb.RawGetString(k), top && slices.Contains(intKeys, k))
	}
	buf.WriteByte('}')
}

func packValue(buf *bytes.Buffer, v lua.LValue, asInt bool) {
	switch v := v.(type) {
	case *lua.LTable:
		packTable(buf, v, nil, false)
	case lua.LNumber:
		f := float64(v)
		switch {
		case asInt:
			buf.WriteString(strconv.FormatInt(int64(f), 10))
		case f == math.Trunc(f):
			buf.WriteString(strconv.FormatFloat(f, 'f', 1, 64)) // 200.0, as Fluent Bit prints a double
		default:
			buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case lua.LString:
		s, _ := json.Marshal(string(v))
		buf.Write(s)
	case lua.LBool:
		buf.WriteString(strconv.FormatBool(bool(v)))
	default:
		buf.WriteString("null")
	}
}

// withKey adds "key": value to a packed JSON object, as out_kafka adds the
// record time.
func withKey(t *testing.T, obj []byte, key, value string) []byte {
	t.Helper()
	if len(obj) < 2 || obj[0] != '{' {
		t.Fatalf("the Lua filter's record is not a map: %s", obj)
	}
	head := `{"` + key + `":` + value
	if string(obj) == "{}" {
		return []byte(head + "}")
	}
	return append([]byte(head+","), obj[1:]...)
}
