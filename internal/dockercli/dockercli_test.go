package dockercli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs a stand-in docker from PATH: its output comes back, and a
// failure names the command and the end of what it said.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"case \"$1\" in\n" +
		"  ok) cat; exit 0 ;;\n" +
		"  quiet) echo on-stdout; exit 3 ;;\n" +
		"  long) i=0; while [ $i -lt 300 ]; do printf 'line %03d of a long complaint\\n' $i >&2; i=$((i+1)); done; exit 1 ;;\n" +
		"esac\n" +
		"echo \"no such command $1\" >&2; exit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()

	if out, err := Run(ctx, strings.NewReader("hello"), "ok"); err != nil || out != "hello" {
		t.Errorf("ok: %q, %v", out, err)
	}
	if _, err := Run(ctx, nil, "bad", "arg"); err == nil || !strings.Contains(err.Error(), "docker bad arg: exit status 1: no such command bad") {
		t.Errorf("bad: %v", err)
	}
	if _, err := Run(ctx, nil, "quiet"); err == nil || !strings.HasSuffix(err.Error(), ": on-stdout") {
		t.Errorf("a failure with nothing on stderr should quote stdout: %v", err)
	}
	_, err := Run(ctx, nil, "long")
	if err == nil || !strings.Contains(err.Error(), ": ...") || !strings.Contains(err.Error(), "line 299") || strings.Contains(err.Error(), "line 000") || len(err.Error()) > 2100 {
		t.Errorf("a long complaint should keep its last 2000 characters: %d characters", len(err.Error()))
	}
}

func TestShortArgs(t *testing.T) {
	if got := shortArgs([]string{"exec", "-i", "node"}); got != "exec -i node" {
		t.Errorf("short: %q", got)
	}
	long := shortArgs([]string{strings.Repeat("x", 200)})
	if len(long) != 163 || !strings.HasSuffix(long, "...") {
		t.Errorf("long: %d characters %q", len(long), long[len(long)-5:])
	}
}
