// Package images holds the shell scripts that build the kind node image;
// its tests drive their functions with a stand-in for the go command.
package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServedToolchain: a release is built with its own Go when the module
// proxy serves it, else with the newest later patch of the same minor it
// serves; a toolchain already in the module cache counts as served.
func TestServedToolchain(t *testing.T) {
	tests := []struct {
		name   string
		want   string
		served []string // what `go list -m -json golang.org/toolchain@...` finds
		cached []string // toolchain zips in the module cache
		out    string   // "" when it must fail
	}{
		{name: "served as released", want: "go1.20.6", served: []string{"go1.20.6", "go1.20.14"}, out: "go1.20.6"},
		{name: "newest later patch", want: "go1.19.3", served: []string{"go1.19.9", "go1.19.13", "go1.19.2", "go1.20.1"}, out: "go1.19.13"},
		{name: "in the module cache only", want: "go1.20.6", cached: []string{"go1.20.6"}, out: "go1.20.6"},
		{name: "a cached later patch", want: "go1.19.3", cached: []string{"go1.19.9"}, out: "go1.19.9"},
		{name: "only another minor", want: "go1.19.3", served: []string{"go1.20.14", "go1.18.10"}},
		{name: "nothing", want: "go1.19.3"},
		{name: "not a release", want: "go1.19rc1", served: []string{"go1.19.13"}},
		{name: "a minor's first release, before Go 1.21", want: "go1.19", served: []string{"go1.19.13", "go1.20.14"}, out: "go1.19.13"},
		{name: "a minor's first release, served", want: "go1.19", served: []string{"go1.19"}, out: "go1.19"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			modcache := filepath.Join(dir, "mod")
			dl := filepath.Join(modcache, "cache", "download", "golang.org", "toolchain", "@v")
			if err := os.MkdirAll(dl, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.cached {
				if err := os.WriteFile(filepath.Join(dl, "v0.0.1-"+v+".linux-amd64.zip"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var cases strings.Builder
			for _, v := range tc.served {
				cases.WriteString("    golang.org/toolchain@v0.0.1-" + v + ".linux-amd64) exit 0 ;;\n")
			}
			fakeGo := filepath.Join(dir, "go")
			// `go env A B C` prints one line per variable, as go does.
			script := "#!/bin/sh\n" +
				"if [ \"$1\" = env ]; then\n" +
				"  shift\n" +
				"  for v; do case \"$v\" in\n" +
				"    GOHOSTOS) echo linux ;;\n" +
				"    GOHOSTARCH) echo amd64 ;;\n" +
				"    GOMODCACHE) echo " + modcache + " ;;\n" +
				"    *) exit 2 ;;\n" +
				"  esac; done\n" +
				"  exit 0\n" +
				"fi\n" +
				"[ \"$1 $2 $3\" = 'list -m -json' ] || exit 2\n" +
				"case \"$4\" in\n" + cases.String() + "esac\nexit 1\n"
			if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-c", `. ./lib.sh && served_toolchain "$1"`, "bash", tc.want)
			cmd.Env = append(os.Environ(), "GO="+fakeGo, "ZERODROP_CACHE="+filepath.Join(dir, "cache"))
			out, err := cmd.Output()
			got := strings.TrimSpace(string(out))
			if tc.out == "" {
				if err == nil {
					t.Fatalf("served_toolchain %s = %q, want a failure", tc.want, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("served_toolchain %s: %v (%s)", tc.want, err, out)
			}
			if got != tc.out {
				t.Errorf("served_toolchain %s = %q, want %q", tc.want, got, tc.out)
			}
		})
	}
}
