package echo

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	host := func() (string, error) { return "box", nil }
	base := func(mod func(*Config)) Config {
		c := DefaultConfig()
		c.Identity = Identity{Pod: "p", Node: "n", Namespace: "ns", PodIP: "10.0.0.9"}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	podEnv := map[string]string{"POD_NAME": "p", "NODE_NAME": "n", "POD_NAMESPACE": "ns", "POD_IP": "10.0.0.9"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range podEnv {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    Config
		wantErr string // substring; "" means success
	}{
		{name: "defaults", env: podEnv, want: base(nil)},
		{
			name: "every flag",
			args: []string{"--listen", "127.0.0.1:1", "--admin-listen=127.0.0.1:2", "--ready=false", "--keepalive=false",
				"--shutdown-delay", "15s", "--unready-on-term", "--drain-timeout", "0s", "--log-requests",
				"--ready-path=/healthz,/ready", "--live-path", "/healthz", "--close-grace=0s"},
			env: podEnv,
			want: base(func(c *Config) {
				c.Listen, c.AdminListen, c.Ready, c.KeepAlive = "127.0.0.1:1", "127.0.0.1:2", false, false
				c.ShutdownDelay, c.UnreadyOnTerm, c.DrainTimeout, c.LogRequests = 15*time.Second, true, 0, true
				c.ReadyPaths, c.LivePaths = []string{"/healthz", "/ready"}, []string{"/healthz"}
				zero := time.Duration(0)
				c.CloseGrace = &zero
			}),
		},
		{
			name: "every environment variable",
			env: with(map[string]string{
				"ECHO_LISTEN": ":9,:10254", "ECHO_ADMIN_LISTEN": ":10", "ECHO_READY": "false", "ECHO_KEEPALIVE": "0",
				"ECHO_SHUTDOWN_DELAY": "2s", "ECHO_UNREADY_ON_TERM": "true", "ECHO_DRAIN_TIMEOUT": "3s", "ECHO_LOG_REQUESTS": "1",
				"ECHO_READY_PATH": "/ready", "ECHO_LIVE_PATH": "/live,/alive", "ECHO_CLOSE_GRACE": "2s",
			}),
			want: base(func(c *Config) {
				c.Listen, c.AdminListen, c.Ready, c.KeepAlive = ":9,:10254", ":10", false, false
				c.ReadyPaths, c.LivePaths = []string{"/ready"}, []string{"/live", "/alive"}
				two := 2 * time.Second
				c.CloseGrace = &two
				c.ShutdownDelay, c.UnreadyOnTerm, c.DrainTimeout, c.LogRequests = 2*time.Second, true, 3*time.Second, true
			}),
		},
		{
			name: "flag beats environment",
			args: []string{"--keepalive=true", "--shutdown-delay=1s"},
			env:  with(map[string]string{"ECHO_KEEPALIVE": "false", "ECHO_SHUTDOWN_DELAY": "9s", "ECHO_READY": "false"}),
			want: base(func(c *Config) { c.ShutdownDelay, c.Ready = time.Second, false }),
		},
		{
			name: "hostname stands in for pod and node",
			env:  map[string]string{"POD_IP": "fd00::1"},
			want: base(func(c *Config) { c.Identity = Identity{Pod: "box", Node: "box", PodIP: "fd00::1"} }),
		},
		{name: "bad boolean in env", env: with(map[string]string{"ECHO_READY": "yes please"}), wantErr: `ECHO_READY="yes please"`},
		{name: "bad duration in env", env: with(map[string]string{"ECHO_DRAIN_TIMEOUT": "10"}), wantErr: "ECHO_DRAIN_TIMEOUT"},
		{name: "bad duration flag", args: []string{"--shutdown-delay", "soon"}, env: podEnv, wantErr: "shutdown-delay"},
		{name: "negative delay", args: []string{"--shutdown-delay=-1s"}, env: podEnv, wantErr: "negative"},
		{name: "negative drain", env: with(map[string]string{"ECHO_DRAIN_TIMEOUT": "-5s"}), wantErr: "negative"},
		{name: "empty listen", args: []string{"--listen="}, env: podEnv, wantErr: "--listen"},
		{name: "only commas to listen on", args: []string{"--listen=,"}, env: podEnv, wantErr: "--listen"},
		{name: "bad close grace", args: []string{"--close-grace=soon"}, env: podEnv, wantErr: "close-grace"},
		{name: "relative probe path", args: []string{"--ready-path=ready"}, env: podEnv, wantErr: "does not start with /"},
		{name: "positional argument", args: []string{"serve"}, env: podEnv, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--port=80"}, env: podEnv, wantErr: "port"},
		{name: "bad POD_IP", env: with(map[string]string{"POD_IP": "ten.zero"}), wantErr: "POD_IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, err := ParseConfig(tt.args, env, host, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("config\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseConfigHelpAndHostnameFailure(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	var out strings.Builder
	if _, err := ParseConfig([]string{"-h"}, none, func() (string, error) { return "h", nil }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: error = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"ECHO_LISTEN", "ECHO_ADMIN_LISTEN", "ECHO_READY", "ECHO_KEEPALIVE", "ECHO_SHUTDOWN_DELAY", "ECHO_UNREADY_ON_TERM", "ECHO_DRAIN_TIMEOUT", "POD_NAME"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("usage does not mention %s:\n%s", f, out.String())
		}
	}
	_, err := ParseConfig(nil, none, func() (string, error) { return "", errors.New("uts gone") }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "POD_NAME") || !strings.Contains(err.Error(), "uts gone") {
		t.Fatalf("hostname failure: error = %v, want it to name POD_NAME and wrap the cause", err)
	}
}

func TestParseSwitch(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   bool
		wantOK bool
	}{
		{"true", true, true}, {"false", false, true},
		{"", false, false}, {"1", false, false}, {"TRUE", false, false}, {"yes", false, false}, {"true ", false, false},
	} {
		got, err := parseSwitch(tt.in)
		if (err == nil) != tt.wantOK || (tt.wantOK && got != tt.want) {
			t.Errorf("parseSwitch(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.wantOK)
		}
	}
}
