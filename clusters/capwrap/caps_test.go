package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// all caps 0..40 except CAP_SYS_RESOURCE (24): the bounding set seen on the
// project's machines.
const hostBound = capSet(0x1fffeffffff)

func TestParseCapBnd(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    capSet
		wantErr bool
	}{
		{"host", "Name:\tx\nCapInh:\t0000000000000000\nCapBnd:\t000001fffeffffff\n", hostBound, false},
		{"full", "CapBnd:\t000001ffffffffff\n", 0x1ffffffffff, false},
		{"missing", "Name:\tx\n", 0, true},
		{"garbage", "CapBnd:\tzz\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCapBnd([]byte(tt.status))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"CAP_SYS_RESOURCE", false},
		{"SYS_RESOURCE", false},
		{"cap_sys_resource", false},
		{"CAP_SYS_ADMIN", true},
		{"CAP_CHECKPOINT_RESTORE", true},
		{"CAP_FROM_THE_FUTURE", true}, // unknown names are left to runc
	}
	for _, tt := range tests {
		if got := hostBound.allowed(tt.name); got != tt.want {
			t.Errorf("allowed(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if capSet(1 << 24).allowed("CAP_CHOWN") {
		t.Error("CAP_CHOWN allowed by a set holding only SYS_RESOURCE")
	}
}

func TestFilterDoc(t *testing.T) {
	priv := []any{"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"}
	caps := func() map[string]any {
		return map[string]any{"bounding": priv, "effective": priv, "permitted": priv, "inheritable": priv, "ambient": []any{}}
	}
	tests := []struct {
		name      string
		doc       map[string]any
		isProcess bool
		wantNil   bool
		get       func(map[string]any) map[string]any
	}{
		{
			name: "bundle config",
			doc:  map[string]any{"ociVersion": "1.0.2", "process": map[string]any{"user": map[string]any{"uid": 4294967294}, "capabilities": caps()}},
			get: func(m map[string]any) map[string]any {
				return m["process"].(map[string]any)["capabilities"].(map[string]any)
			},
		},
		{
			name:      "exec process file",
			doc:       map[string]any{"args": []any{"sh"}, "capabilities": caps()},
			isProcess: true,
			get:       func(m map[string]any) map[string]any { return m["capabilities"].(map[string]any) },
		},
		{
			name:    "nothing to remove",
			doc:     map[string]any{"process": map[string]any{"capabilities": map[string]any{"bounding": []any{"CAP_CHOWN"}}}},
			wantNil: true,
		},
		{
			name:    "no process",
			doc:     map[string]any{"ociVersion": "1.0.2"},
			wantNil: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, _ := json.Marshal(tt.doc)
			out, err := filterDoc(in, tt.isProcess, hostBound)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil {
				if out != nil {
					t.Fatalf("want unchanged, got %s", out)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			want := []any{"CAP_CHOWN", "CAP_SYS_ADMIN"}
			for _, l := range []string{"bounding", "effective", "permitted", "inheritable"} {
				if g := tt.get(got)[l]; !reflect.DeepEqual(g, want) {
					t.Errorf("%s = %v, want %v", l, g, want)
				}
			}
			if !tt.isProcess {
				// Large numbers must survive the round trip unchanged.
				if uid := got["process"].(map[string]any)["user"].(map[string]any)["uid"]; uid != float64(4294967294) {
					t.Errorf("uid = %v", uid)
				}
			}
		})
	}
	if _, err := filterDoc([]byte("{"), false, hostBound); err == nil {
		t.Error("broken JSON accepted")
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want invocation
		file string
	}{
		{"docker create", []string{"--root", "/var/run/docker/runtime-runc/moby", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "id"},
			invocation{Command: "create", Bundle: "/b"}, "/b/config.json"},
		{"short bundle", []string{"create", "-b", "/b", "id"}, invocation{Command: "create", Bundle: "/b"}, "/b/config.json"},
		{"equals bundle", []string{"run", "--bundle=/b", "id"}, invocation{Command: "run", Bundle: "/b"}, "/b/config.json"},
		{"cwd bundle", []string{"create", "id"}, invocation{Command: "create"}, "config.json"},
		{"docker exec", []string{"--root", "/r", "--log", "/l", "--log-format", "json", "exec", "--process", "/tmp/runc-process1", "--detach", "--pid-file", "/p", "id"},
			invocation{Command: "exec", Process: "/tmp/runc-process1"}, "/tmp/runc-process1"},
		{"exec -p", []string{"exec", "-p", "/f", "id"}, invocation{Command: "exec", Process: "/f"}, "/f"},
		{"state", []string{"--root", "/r", "state", "id"}, invocation{Command: "state"}, ""},
		{"version flag", []string{"--version"}, invocation{}, ""},
		{"rootless value", []string{"--rootless", "false", "delete", "id"}, invocation{Command: "delete"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseArgs(tt.args)
			if got != tt.want {
				t.Fatalf("parseArgs = %+v, want %+v", got, tt.want)
			}
			if f := got.specFile(); f != tt.file {
				t.Fatalf("specFile = %q, want %q", f, tt.file)
			}
		})
	}
}

func TestFilterFileAndRegister(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	doc := `{"process":{"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_KILL"]}}}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := filterFile(p, false, hostBound); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != `{"process":{"capabilities":{"bounding":["CAP_KILL"]}}}` {
		t.Fatalf("filtered file = %s", b)
	}

	dj := filepath.Join(dir, "etc", "daemon.json")
	if err := os.MkdirAll(filepath.Dir(dj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dj, []byte(`{"log-level":"warn"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		changed, err := registerRuntime(dj, "capwrap", "/opt/capwrap")
		if err != nil || changed != want {
			t.Fatalf("call %d: changed=%v err=%v, want changed=%v", i, changed, err, want)
		}
	}
	var cfg map[string]any
	b, _ = os.ReadFile(dj)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["log-level"] != "warn" || cfg["default-runtime"] != "capwrap" {
		t.Fatalf("daemon.json = %s", b)
	}
	if _, err := registerRuntime(p+".missing/x.json", "a", "b"); err != nil {
		t.Fatalf("missing file should be created: %v", err)
	}
	if err := os.WriteFile(dj, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := registerRuntime(dj, "a", "b"); err == nil {
		t.Fatal("broken daemon.json accepted")
	}
}
