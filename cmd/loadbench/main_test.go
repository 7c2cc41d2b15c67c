package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := []string{"--zerodrop", bin, "--vegeta", bin, "--echo", bin}
	tests := []struct {
		name string
		args []string
		want []string // every one must appear in the error
	}{
		{"valid", append(ok, "--rates", "100, 200"), nil},
		{"bad rates", append(ok, "--rates", "100,x,-5"), []string{`"x" is not a positive integer`, `"-5" is not a positive integer`}},
		{"missing binaries", []string{"--zerodrop", filepath.Join(dir, "nope"), "--vegeta", dir, "--echo", bin},
			[]string{"--zerodrop", "--vegeta", "make bench-load builds it"}},
		{"short duration", append(ok, "--duration", "10ms"), []string{"--duration 10ms"}},
		{"bad port", append(ok, "--port", "70000"), []string{"--port 70000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(o.rates) != 2 || o.rates[0] != 100 || o.rates[1] != 200 {
					t.Errorf("rates %v, want [100 200]", o.rates)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
