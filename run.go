package zerodrop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/suites"
)

// RunOptions select and place a run of zerodrop's own scenario matrix
// (`make e2e`): every scenario of docs/incidents.md on every LB model, or
// the cells Filter selects. The zero value of each field is its default.
type RunOptions struct {
	// Filter selects cells by their labels, as `make e2e LABELS=...` does:
	// "smoke", "scenario:drain-node", "lb:metallb && profile:hardened".
	// "" runs the whole matrix (about 35 minutes on 2 cores).
	Filter string
	// Provider is "kind" (zerodrop's kind cluster, made when none answers
	// at Kubeconfig; the default) or "existing" (the cluster Kubeconfig
	// names, whose Services of type LoadBalancer get an address this
	// machine reaches).
	Provider string
	// Kubeconfig is where kind writes the cluster's kubeconfig, or the
	// existing cluster's. Required.
	Kubeconfig string
	// ClusterName is the kind cluster's name (default "zerodrop").
	ClusterName string
	// LB is what implements LoadBalancer Services on kind: "metallb",
	// "cloud" (zerodrop's cloud LB with its vendor profiles) or "all" (both
	// side by side; the default).
	LB string
	// LBProfiles narrow the cloud LB's columns (default: every profile).
	LBProfiles []string
	// OutDir receives report.json and every cell's run file. Required.
	OutDir string
	// CacheDir keeps what outlives a run: the cluster's host state and the
	// cloud LB's binary (default /var/cache/zerodrop, where `make
	// host-setup` and the node image keep theirs).
	CacheDir string
	// SignKey is the Ed25519 private key that signs every run file
	// (`zerodrop keygen` makes one); "none" leaves them unsigned; "" signs
	// with this machine's key in KeyDir, made on first use.
	SignKey string
	// KeyDir holds this machine's key (default: zerodrop under
	// os.UserConfigDir).
	KeyDir string
	// Logger gets the harness's detail (default: discarded); Progress one
	// line per step (default: none).
	Logger   *slog.Logger
	Progress func(string)
}

// RunResult is a run of the matrix.
type RunResult struct {
	// Cells are every cell's result, in the plan's order.
	Cells []zdv1.Scenario
	// Failed says of each cell that did not hold why: an assertion that
	// did not pass, a documentation cell whose run broke, a verdict its run
	// file does not give again.
	Failed []string
	// Report is the path of report.json (`zerodrop report` renders it).
	Report string
}

// Passed reports whether every cell held for its role.
func (r RunResult) Passed() bool { return len(r.Failed) == 0 }

// Run runs the registry's scenarios, as the Ginkgo suite in suites/ does,
// from any Go program: the plan, the cluster, each scenario's disruptions
// with a witness per cell, every verdict checked against its run file,
// and the report. An error means the run could not be made or finished
// (bad options, no cluster); the cells measured until then are returned
// with it.
func Run(ctx context.Context, opts RunOptions) (RunResult, error) {
	if opts.OutDir == "" {
		return RunResult{}, errors.New("zerodrop: RunOptions.OutDir is required: the report and the run files are the evidence")
	}
	if opts.Kubeconfig == "" {
		return RunResult{}, errors.New("zerodrop: RunOptions.Kubeconfig is required: where kind writes the cluster's, or the existing cluster's")
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return RunResult{}, fmt.Errorf("zerodrop: output directory: %w", err)
	}
	// The suite's settings, read and validated in one place: the options
	// stand where `make e2e` reads its environment.
	env := map[string]string{
		"PROVIDER": opts.Provider, "CLUSTER_NAME": opts.ClusterName, "LB": opts.LB,
		"LB_PROFILE": strings.Join(opts.LBProfiles, ","), "ZERODROP_OUT": out,
		"ZERODROP_KUBECONFIG": opts.Kubeconfig, "ZERODROP_CACHE": opts.CacheDir, "ZERODROP_VERSION": version(),
		"ZERODROP_SIGN_KEY": opts.SignKey,
	}
	settings, err := suites.SettingsFromEnv(func(k string) string { return env[k] }, out)
	if err != nil {
		return RunResult{}, fmt.Errorf("zerodrop: %w", err)
	}
	settings.KeyDir = opts.KeyDir
	if settings.KeyDir == "" && settings.SignKey != evidence.NoKey {
		dir, err := os.UserConfigDir()
		if err != nil {
			return RunResult{}, fmt.Errorf("zerodrop: no place for this machine's signing key (%w): give RunOptions.KeyDir, a SignKey, or SignKey \"none\"", err)
		}
		settings.KeyDir = filepath.Join(dir, "zerodrop")
	}
	cells, failed, err := suites.Run(ctx, settings, opts.Filter, opts.Logger, opts.Progress)
	res := RunResult{Cells: cells, Failed: failed, Report: filepath.Join(out, "report.json")}
	if err != nil {
		return res, fmt.Errorf("zerodrop: %w", err)
	}
	return res, nil
}
