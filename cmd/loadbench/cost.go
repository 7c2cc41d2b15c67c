package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// Cost is what one protocol's load cost the bench at one rate: the CPU
// time of the load generator and of the echo server, per thousand
// requests, and the whole against HTTP/1.1's.
type Cost struct {
	Protocol string `json:"protocol"`
	// Load is the zerodrop load flags beyond the protocol: the shape of
	// the matrix's cells of that protocol.
	Load      []string `json:"load,omitempty"`
	Rate      int      `json:"rate"`
	Requests  int64    `json:"requests"`
	Dropped   int64    `json:"dropped"`
	Verdict   string   `json:"verdict"`
	GenCPUms  float64  `json:"generatorCpuMs"`
	EchoCPUms float64  `json:"echoCpuMs"`
	// PerKms is the two together per thousand requests; Ratio is PerKms
	// over HTTP/1.1's in the same run.
	PerKms float64 `json:"cpuMsPer1000"`
	Ratio  float64 `json:"ratio"`
}

// CostResult is what loadbench --costs writes to costs.json.
type CostResult struct {
	Started      time.Time `json:"started"`
	CPUs         int       `json:"cpus"`
	GeneratorCPU string    `json:"generatorCpus"`
	EchoCPU      string    `json:"echoCpus"`
	Duration     string    `json:"duration"`
	Costs        []Cost    `json:"costs"`
}

// costShapes are the protocols a cost run measures, each with the load
// shape of the matrix's cells of it (load.MatrixShape), HTTP/1.1 first:
// the others' ratios are to it.
func costShapes() []Cost {
	var out []Cost
	for _, p := range []string{zdv1.ProtocolHTTP1, zdv1.ProtocolH2C, zdv1.ProtocolGRPC, zdv1.ProtocolWebSocket} {
		out = append(out, Cost{Protocol: p, Load: load.MatrixShape(p).Flags()})
	}
	return out
}

// runCosts measures every protocol's cost at one rate, each against a
// fresh echo server, generator and server pinned apart as in the rate
// runs, and prints the CPU each spent per thousand requests.
func runCosts(ctx context.Context, o options, stdout io.Writer) error {
	res := CostResult{Started: time.Now().UTC(), CPUs: cpus(), GeneratorCPU: o.genCPU, EchoCPU: o.echoCPU, Duration: o.duration.String()}
	fmt.Fprintf(stdout, "CPU per request, each protocol at %d/s for %s (load generator on CPU %s, echo server on CPU %s)\n\n",
		o.costRate, o.duration, o.genCPU, o.echoCPU)
	fmt.Fprintln(stdout, "| protocol | load | requests | dropped | verdict | generator CPU | echo CPU | CPU ms per 1,000 | against HTTP/1.1 |")
	fmt.Fprintln(stdout, "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
	for _, c := range costShapes() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := measureCost(ctx, o, &c); err != nil {
			return fmt.Errorf("%s at %d/s: %w", c.Protocol, o.costRate, err)
		}
		if len(res.Costs) > 0 && res.Costs[0].PerKms > 0 {
			c.Ratio = c.PerKms / res.Costs[0].PerKms
		} else {
			c.Ratio = 1
		}
		res.Costs = append(res.Costs, c)
		fmt.Fprintf(stdout, "| %s | %v | %d | %d | %s | %.0f ms | %.0f ms | %.0f | %.2f |\n", c.Protocol, c.Load, c.Requests, c.Dropped, c.Verdict,
			c.GenCPUms, c.EchoCPUms, c.PerKms, c.Ratio)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(o.out, "costs.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nraw outputs and %s\n", path)
	return nil
}

func measureCost(ctx context.Context, o options, c *Cost) error {
	c.Rate = o.costRate
	stopEcho, err := startEcho(ctx, o)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.out, "cost-"+c.Protocol)
	if c.Protocol == zdv1.ProtocolHTTP1 {
		dir = filepath.Join(o.out, "cost-http1")
	}
	if err := os.RemoveAll(dir); err != nil {
		stopEcho()
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		stopEcho()
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, o.duration+2*time.Minute)
	defer cancel()
	args := append([]string{o.zerodrop, "load", "--target", fmt.Sprintf("http://127.0.0.1:%d/", o.port), "--rate", strconv.Itoa(o.costRate),
		"--duration", o.duration.String(), "--protocol", c.Protocol, "--out", dir}, c.Load...)
	cmd := exec.CommandContext(rctx, "taskset", append([]string{"-c", o.genCPU}, args...)...)
	f, err := os.Create(filepath.Join(dir, "stderr.txt"))
	if err != nil {
		stopEcho()
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	echoCPU := stopEcho()
	if cmd.ProcessState == nil {
		return fmt.Errorf("zerodrop load did not run: %w", runErr)
	}
	c.GenCPUms = float64(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()) / 1e6
	c.EchoCPUms = float64(echoCPU) / 1e6
	rep, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return fmt.Errorf("zerodrop report: %w (load: %v)", err, runErr)
	}
	if len(rep.Scenarios) != 1 {
		return fmt.Errorf("zerodrop report %s holds %d scenarios, want 1", dir, len(rep.Scenarios))
	}
	sc := rep.Scenarios[0]
	c.Requests, c.Dropped, c.Verdict = sc.Results.Total, sc.Results.Dropped, string(sc.Verdict.Status)
	if c.Requests > 0 {
		c.PerKms = (c.GenCPUms + c.EchoCPUms) * 1000 / float64(c.Requests)
	}
	return nil
}
