package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// Cost is what one protocol's requests cost the bench: the CPU time of
// the load generator and of the echo server at two rates, and what the
// requests the higher rate added cost, per thousand, against HTTP/1.1's.
// The difference leaves out what a process spends whatever its rate
// (starting, its pause watch, its report), which at a few hundred
// requests a second is most of it and would pull every ratio towards 1.
type Cost struct {
	Protocol string `json:"protocol"`
	// Load is the zerodrop load flags beyond the protocol: the shape of
	// the matrix's cells of that protocol.
	Load []string  `json:"load,omitempty"`
	Runs []CostRun `json:"runs"`
	// PerKms is the CPU the higher rate's extra requests cost, per
	// thousand; Ratio is PerKms over HTTP/1.1's in the same run.
	PerKms float64 `json:"marginalCpuMsPer1000"`
	Ratio  float64 `json:"ratio"`
}

// CostRun is one protocol at one rate.
type CostRun struct {
	Rate      int     `json:"rate"`
	Requests  int64   `json:"requests"`
	Dropped   int64   `json:"dropped"`
	Verdict   string  `json:"verdict"`
	GenCPUms  float64 `json:"generatorCpuMs"`
	EchoCPUms float64 `json:"echoCpuMs"`
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
	lo, hi := o.costRate/3, o.costRate
	fmt.Fprintf(stdout, "CPU per request, each protocol at %d/s and %d/s for %s (load generator on CPU %s, echo server on CPU %s)\n\n",
		lo, hi, o.duration, o.genCPU, o.echoCPU)
	fmt.Fprintln(stdout, "| protocol | load | rate | requests | dropped | verdict | generator CPU | echo CPU | marginal CPU ms per 1,000 | against HTTP/1.1 |")
	fmt.Fprintln(stdout, "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
	for _, c := range costShapes() {
		for _, rate := range []int{lo, hi} {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := measureCost(ctx, o, c, rate)
			if err != nil {
				return fmt.Errorf("%s at %d/s: %w", c.Protocol, rate, err)
			}
			c.Runs = append(c.Runs, r)
		}
		a, b := c.Runs[0], c.Runs[1]
		if n := b.Requests - a.Requests; n > 0 {
			c.PerKms = (b.GenCPUms + b.EchoCPUms - a.GenCPUms - a.EchoCPUms) * 1000 / float64(n)
		}
		c.Ratio = 1
		if len(res.Costs) > 0 && res.Costs[0].PerKms > 0 {
			c.Ratio = c.PerKms / res.Costs[0].PerKms
		}
		res.Costs = append(res.Costs, c)
		for i, r := range c.Runs {
			perK, ratio := "", ""
			if i == len(c.Runs)-1 {
				perK, ratio = fmt.Sprintf("%.0f", c.PerKms), fmt.Sprintf("%.2f", c.Ratio)
			}
			fmt.Fprintf(stdout, "| %s | %v | %d | %d | %d | %s | %.0f ms | %.0f ms | %s | %s |\n", c.Protocol, c.Load, r.Rate, r.Requests, r.Dropped,
				r.Verdict, r.GenCPUms, r.EchoCPUms, perK, ratio)
		}
	}
	path := filepath.Join(o.out, "costs.json")
	if err := writeJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nraw outputs and %s\n", path)
	return nil
}

func measureCost(ctx context.Context, o options, c Cost, rate int) (CostRun, error) {
	r := CostRun{Rate: rate}
	stopEcho, err := startEcho(ctx, o)
	if err != nil {
		return r, err
	}
	dir := filepath.Join(o.out, fmt.Sprintf("cost-%s-%d", strings.ReplaceAll(c.Protocol, "/", ""), rate))
	if err := freshDir(dir); err != nil {
		stopEcho()
		return r, err
	}
	rctx, cancel := context.WithTimeout(ctx, o.duration+2*time.Minute)
	defer cancel()
	args := append([]string{o.zerodrop, "load", "--target", fmt.Sprintf("http://127.0.0.1:%d/", o.port), "--rate", strconv.Itoa(rate),
		"--duration", o.duration.String(), "--protocol", c.Protocol, "--out", dir}, c.Load...)
	use, runErr := pinned(rctx, o.genCPU, filepath.Join(dir, "stderr.txt"), args...)
	echoCPU := stopEcho()
	if !use.ran {
		return r, fmt.Errorf("zerodrop load did not run: %w", runErr)
	}
	r.GenCPUms = float64(use.cpu) / 1e6
	r.EchoCPUms = float64(echoCPU) / 1e6
	sc, err := zerodropScenario(dir)
	if err != nil {
		return r, fmt.Errorf("%w (load: %v)", err, runErr)
	}
	r.Requests, r.Dropped, r.Verdict = sc.Results.Total, sc.Results.Dropped, string(sc.Verdict.Status)
	return r, nil
}
