package runfile

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// reference is what encoding/json makes of a result line.
func reference(t *testing.T, r *zdv1.Result) map[string]any {
	t.Helper()
	data, err := json.Marshal(struct {
		Kind string `json:"kind"`
		*zdv1.Result
	}{zdv1.KindResult, r})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func checkEncode(t *testing.T, r *zdv1.Result) {
	t.Helper()
	line := appendResultLine(nil, r)
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("appendResultLine(%+v) = %s: not JSON: %v", r, line, err)
	}
	if want := reference(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("appendResultLine = %s\ndecodes to %v\nencoding/json gives %v", line, got, want)
	}
	rec, err := decodeLine(line)
	if err != nil || rec.Result == nil || rec.Kind != zdv1.KindResult {
		t.Fatalf("reader cannot decode %s: %v", line, err)
	}
}

func TestAppendResultLine(t *testing.T) {
	tr, fa := true, false
	loc := time.FixedZone("x", 3600)
	for _, r := range []zdv1.Result{
		{},
		{Seq: 1, ID: "a-1", Time: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Latency: 12345, Status: 200},
		{Seq: 1 << 62, ID: "a", Target: 3, Time: time.Date(2025, 1, 2, 3, 4, 5, 0, loc), Latency: -1, Status: 503, Reused: true},
		{ID: "x", Class: zdv1.ClassReset, Error: "Get \"http://127.0.0.1:1/\": read: connection reset by peer\n\t<>&\x01\x7f"},
		{Pod: "p", Node: "n", ClientIP: "::1", Ready: &tr, Draining: &fa, ConnID: "c-1", ConnRequest: 9},
		{Error: "bad \xff utf8 \u2028 \u2029 é 日本"},
		{Pod: "p", ClientIP: "172.19.0.6", ForwardedFor: "203.0.113.9, 172.19.0.1"},
		everyField(t),
	} {
		checkEncode(t, &r)
	}
}

// everyField is a result with every field set, so a field added to
// zdv1.Result without its place in appendResultLine fails the test above.
func everyField(t *testing.T) zdv1.Result {
	t.Helper()
	var r zdv1.Result
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Struct:
			if f.Type() != reflect.TypeOf(time.Time{}) {
				t.Fatalf("zdv1.Result.%s: a %s field everyField cannot fill", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf(time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)))
		default:
			t.Fatalf("zdv1.Result.%s: a %s field everyField cannot fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	return r
}

func FuzzAppendResultLine(f *testing.F) {
	f.Add(uint64(1), "id", "err", "pod", int64(1234), 200, true, int64(1700000000123456789))
	f.Add(uint64(0), "\x00\"\\", "\xff\xfe", "\u2028", int64(-5), 0, false, int64(0))
	f.Fuzz(func(t *testing.T, seq uint64, id, errText, pod string, lat int64, status int, b bool, ns int64) {
		ts := time.Unix(0, ns).UTC() // years 1677-2262: within what encoding/json accepts
		r := zdv1.Result{Seq: seq, ID: id, Time: ts, Latency: time.Duration(lat), Status: status, Error: errText, Pod: pod,
			Reused: b, Ready: &b, ConnRequest: status}
		checkEncode(t, &r)
	})
}

func BenchmarkResultLine(b *testing.B) {
	tr, fa := true, false
	r := zdv1.Result{Seq: 1234, ID: "2fcb62ac95a3-214", Time: time.Now(), Latency: 123456, Status: 200, Reused: true,
		Pod: "echo-0", Node: "node-0", ClientIP: "127.0.0.1", Ready: &tr, Draining: &fa, ConnID: "a1b2c3d4-17", ConnRequest: 42}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf = appendResultLine(buf[:0], &r)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(struct {
				Kind string `json:"kind"`
				*zdv1.Result
			}{zdv1.KindResult, &r}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
