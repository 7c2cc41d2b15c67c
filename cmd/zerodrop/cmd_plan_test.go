package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
)

func runPlanCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runPlan(context.Background(), &cli{stdout: &out, stderr: &errOut, version: "test", keyDir: testKeyDir}, args)
	return code, out.String(), errOut.String()
}

// The plan reads make e2e's variables: a row per scenario and the whole,
// or only the timeout; bad settings and filters are bad input.
func TestPlanCommand(t *testing.T) {
	t.Setenv("LB", "all")
	t.Setenv("LB_PROFILE", "gcp-nlb")
	code, out, errOut := runPlanCLI(t)
	if code != exitOK || !strings.Contains(out, "rolling-update") || !strings.Contains(out, "total") || !strings.Contains(out, "timeout") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runPlanCLI(t, "--timeout-minutes")
	if m, err := strconv.Atoi(strings.TrimSpace(out)); code != exitOK || err != nil || m < 10 {
		t.Errorf("--timeout-minutes: exit %d, %q", code, out)
	}
	code, out, _ = runPlanCLI(t, "--label-filter", "smoke", "--timeout-minutes")
	small, _ := strconv.Atoi(strings.TrimSpace(out))
	whole, _ := strconv.Atoi(strings.TrimSpace(func() string { _, o, _ := runPlanCLI(t, "--timeout-minutes"); return o }()))
	if code != exitOK || small >= whole {
		t.Errorf("the smoke's timeout %d min is not below the whole matrix's %d", small, whole)
	}
	if code, _, errOut := runPlanCLI(t, "--label-filter", "(("); code != exitBroken || errOut == "" {
		t.Errorf("bad label filter: exit %d, %q", code, errOut)
	}
	t.Setenv("SHARD", "3/2")
	if code, _, errOut := runPlanCLI(t); code != exitBroken || !strings.Contains(errOut, "SHARD") {
		t.Errorf("bad shard: exit %d, %q", code, errOut)
	}
}
