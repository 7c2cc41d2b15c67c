// Command loadbench measures `zerodrop load` against peers, all run as a
// user runs them: whole processes with their default settings, pinned to
// the same core(s) with taskset, against a fresh echo server pinned to
// other cores, one rate after another in one run. It reports for every
// rate the rate each tool achieved, its p99 latency and its peak RSS, then
// the highest rate each one sustained and zerodrop's ratio to the peer.
//
// --protocol says what the tools speak. http/1.1 (the default): the peer
// is vegeta's CLI. h2c (HTTP/2 over cleartext TCP with prior knowledge):
// the peer is h2load (Debian's nghttp2-client), one connection, its rate
// set by --rps and its p99 read from its per-request log; vegeta's CLI
// runs too, with its -h2c flag. grpc (unary calls of the echo server's
// gRPC service over h2c): the peer is ghz (built from its module, as
// vegeta's CLI is), one connection, 100 workers, its rate set by --rps,
// the service described to it by the .proto internal/echoproto holds.
//
// A run "sustained" its rate when at least 97 % of the requested rate got a
// 2xx answer, nothing failed, and p99 stayed at or under --max-p99 (50 ms);
// for zerodrop the verdict must also be PASS, which includes its own check
// that the load was delivered on schedule in every whole second. Each rate
// runs --repeat times per tool, the tools taking turns, and counts as
// sustained when most of its runs were: a shared VM has hiccups of a
// hundred milliseconds or more, and one of them should not decide a rate.
//
// All traffic goes to 127.0.0.1. Usage (make bench-load builds the three
// binaries and runs this):
//
//	loadbench --zerodrop bin/zerodrop --vegeta bin/vegeta --echo bin/echo-server \
//	  --rates 2000,4000,8000,16000,30000 --duration 5s --out out/bench-load
//	loadbench --protocol h2c --h2load /usr/bin/h2load ...
//	loadbench --protocol grpc --ghz bin/ghz ...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/echoproto"
)

// Measurement is one tool at one requested rate.
type Measurement struct {
	Tool      string  `json:"tool"`
	Requested int     `json:"requestedRate"`
	Achieved  float64 `json:"achievedRate"` // 2xx answers per second
	Sent      float64 `json:"sentRate"`     // requests sent per second
	Failed    int64   `json:"failed"`
	P99Ms     float64 `json:"p99Ms"`
	MaxRSSMB  float64 `json:"maxRssMB"`
	Verdict   string  `json:"verdict,omitempty"` // zerodrop only
	Sustained bool    `json:"sustained"`
	Note      string  `json:"note,omitempty"`
	Repeat    int     `json:"repeat"`
}

// Result is what loadbench writes to results.json.
type Result struct {
	Started time.Time `json:"started"`
	// Protocol is what every tool spoke (zdv1.ProtocolHTTP1 or
	// zdv1.ProtocolH2C).
	Protocol string `json:"protocol"`
	// Tools ran in this order at every rate; Peer is the one zerodrop's
	// ratio is taken against.
	Tools        []string      `json:"tools"`
	Peer         string        `json:"peer"`
	CPUs         int           `json:"cpus"`
	GeneratorCPU string        `json:"generatorCpus"`
	EchoCPU      string        `json:"echoCpus"`
	Duration     string        `json:"duration"`
	MaxP99Ms     float64       `json:"maxP99Ms"`
	Measurements []Measurement `json:"measurements"`
	Repeat       int           `json:"repeat"`
	// Best is the highest requested rate each tool sustained in most of
	// its runs (0: none).
	Best map[string]int `json:"bestSustainedRate"`
	// Ratio is zerodrop's best over the peer's.
	Ratio float64 `json:"ratio"`
}

type options struct {
	zerodrop, vegeta, echo string
	h2load, ghz            string
	protocol               string
	rates                  []int
	duration               time.Duration
	genCPU, echoCPU        string
	maxP99Ms               float64
	out                    string
	port                   int
	repeat                 int
	// costs: measure each protocol's CPU per request at costRate
	// instead of the rates (cost.go).
	costs    bool
	costRate int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.StringVar(&o.zerodrop, "zerodrop", "bin/zerodrop", "zerodrop CLI binary")
	fs.StringVar(&o.vegeta, "vegeta", "bin/vegeta", "vegeta CLI binary (built from the module version go.mod pins)")
	fs.StringVar(&o.echo, "echo", "bin/echo-server", "echo server binary")
	fs.StringVar(&o.protocol, "protocol", zdv1.ProtocolHTTP1, "what the tools speak: "+zdv1.ProtocolHTTP1+" (peer: vegeta), "+zdv1.ProtocolH2C+" (peer: h2load) or "+
		zdv1.ProtocolGRPC+" (unary calls; peer: ghz)")
	fs.StringVar(&o.ghz, "ghz", "bin/ghz", "ghz binary, the gRPC peer (make bench-load builds it from its module)")
	fs.StringVar(&o.h2load, "h2load", "h2load", "h2load binary, the h2c peer (Debian: apt-get install nghttp2-client)")
	rates := fs.String("rates", "2000,4000,8000,12000,16000,20000,30000", "comma-separated requested rates per second")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each run")
	fs.StringVar(&o.genCPU, "gen-cpus", "0", "taskset CPU list for the load generator")
	fs.StringVar(&o.echoCPU, "echo-cpus", "1", "taskset CPU list for the echo server")
	fs.Float64Var(&o.maxP99Ms, "max-p99", 50, "p99 (ms) above which a rate counts as not sustained")
	fs.StringVar(&o.out, "out", "out/bench-load", "directory for raw outputs and results.json")
	fs.IntVar(&o.port, "port", 18480, "loopback port of the echo server (the admin port is the next one)")
	fs.IntVar(&o.repeat, "repeat", 3, "runs per rate and tool; a rate is sustained when most runs sustain it")
	fs.BoolVar(&o.costs, "costs", false, "measure instead what a request of each protocol costs the bench in CPU (zerodrop load and the echo server), at --cost-rate, against HTTP/1.1's")
	fs.IntVar(&o.costRate, "cost-rate", 300, "requests per second of the higher --costs run (the lower: a third of it)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	for _, f := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("--rates: %q is not a positive integer", f))
			continue
		}
		o.rates = append(o.rates, n)
	}
	files := map[string]string{"--zerodrop": o.zerodrop, "--echo": o.echo}
	switch {
	case o.costs: // zerodrop alone
	case o.protocol == zdv1.ProtocolGRPC:
		files["--ghz"] = o.ghz
	default:
		files["--vegeta"] = o.vegeta
	}
	for flagName, p := range files {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("%s %s: not a file (make bench-load builds it)", flagName, p))
		}
	}
	switch o.protocol {
	case zdv1.ProtocolHTTP1:
	case zdv1.ProtocolH2C:
		if _, err := exec.LookPath(o.h2load); err != nil {
			errs = append(errs, fmt.Errorf("--h2load %s: %w (Debian: apt-get install nghttp2-client)", o.h2load, err))
		}
	case zdv1.ProtocolGRPC:
	default:
		errs = append(errs, fmt.Errorf("--protocol %q: want %s, %s or %s", o.protocol, zdv1.ProtocolHTTP1, zdv1.ProtocolH2C, zdv1.ProtocolGRPC))
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		errs = append(errs, errors.New("taskset not found (Debian: apt-get install util-linux)"))
	}
	if o.duration < time.Second {
		errs = append(errs, fmt.Errorf("--duration %s: want at least 1s", o.duration))
	}
	if o.costs && (o.costRate < 3 || o.costRate > 10000) {
		errs = append(errs, fmt.Errorf("--cost-rate %d: want 3-10000", o.costRate))
	}
	if o.repeat < 1 {
		errs = append(errs, fmt.Errorf("--repeat %d: want at least 1", o.repeat))
	}
	if o.port <= 0 || o.port >= 65535 {
		errs = append(errs, fmt.Errorf("--port %d: want 1-65534", o.port))
	}
	return o, errors.Join(errs...)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.costs {
		return runCosts(ctx, o, stdout)
	}
	tools, peer := o.tools()
	res := Result{Started: time.Now().UTC(), Protocol: o.protocol, Tools: tools, Peer: peer, CPUs: cpus(), GeneratorCPU: o.genCPU, EchoCPU: o.echoCPU,
		Duration: o.duration.String(), MaxP99Ms: o.maxP99Ms, Repeat: o.repeat, Best: map[string]int{}}
	fmt.Fprintf(stdout, "%s; load generator on CPU %s, echo server on CPU %s, %s per run, %d run(s) per rate and tool, %d CPUs\n\n",
		o.protocol, o.genCPU, o.echoCPU, o.duration, o.repeat, res.CPUs)
	fmt.Fprintln(stdout, "| requested | tool | run | achieved 2xx/s | failed | p99 | peak RSS | verdict | sustained |")
	fmt.Fprintln(stdout, "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
	for _, rate := range o.rates {
		held := map[string]int{}
		for rep := 1; rep <= o.repeat; rep++ {
			for _, tool := range tools {
				if err := ctx.Err(); err != nil {
					return err
				}
				m, err := measure(ctx, o, tool, rate, rep)
				if err != nil {
					return fmt.Errorf("%s at %d/s: %w", tool, rate, err)
				}
				res.Measurements = append(res.Measurements, m)
				if m.Sustained {
					held[tool]++
				}
				fmt.Fprintf(stdout, "| %d | %s | %d | %.0f | %d | %.1f ms | %.0f MB | %s | %s |\n", rate, tool, rep, m.Achieved, m.Failed, m.P99Ms,
					m.MaxRSSMB, or(m.Verdict, "–"), yes(m.Sustained, m.Note))
			}
		}
		for tool, n := range held {
			if 2*n > o.repeat && rate > res.Best[tool] {
				res.Best[tool] = rate
			}
		}
	}
	if res.Best[peer] > 0 {
		res.Ratio = float64(res.Best["zerodrop"]) / float64(res.Best[peer])
	}
	var best []string
	for _, tool := range tools {
		best = append(best, fmt.Sprintf("%s %d/s", tool, res.Best[tool]))
	}
	fmt.Fprintf(stdout, "\nhighest rate sustained in most runs (p99 <= %.0f ms, >= 97%% of the rate answered 2xx, nothing failed): %s; zerodrop/%s %.2f\n",
		o.maxP99Ms, strings.Join(best, ", "), peer, res.Ratio)
	path := filepath.Join(o.out, "results.json")
	if err := writeJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "raw outputs and %s\n", path)
	return nil
}

// tools are the tools a run measures, in turn, and the peer among them.
func (o options) tools() (tools []string, peer string) {
	switch o.protocol {
	case zdv1.ProtocolH2C:
		return []string{"h2load", "vegeta", "zerodrop"}, "h2load"
	case zdv1.ProtocolGRPC:
		return []string{"ghz", "zerodrop"}, "ghz"
	}
	return []string{"vegeta", "zerodrop"}, "vegeta"
}

func yes(b bool, note string) string {
	s := "no"
	if b {
		s = "yes"
	}
	if note != "" {
		s += " (" + note + ")"
	}
	return s
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// measure runs one tool at one rate against a fresh echo server.
func measure(ctx context.Context, o options, tool string, rate, rep int) (Measurement, error) {
	m := Measurement{Tool: tool, Requested: rate, Repeat: rep}
	stopEcho, err := startEcho(ctx, o)
	if err != nil {
		return m, err
	}
	defer stopEcho()
	target := fmt.Sprintf("http://127.0.0.1:%d/", o.port)
	dir := filepath.Join(o.out, fmt.Sprintf("%s-%d-%d", tool, rate, rep))
	if err := freshDir(dir); err != nil {
		return m, err
	}
	// Generous: a collapsing tool may take its whole timeout after the run.
	rctx, cancel := context.WithTimeout(ctx, o.duration+2*time.Minute)
	defer cancel()
	var args []string
	switch tool {
	case "vegeta":
		if err := os.WriteFile(filepath.Join(dir, "targets.txt"), []byte("GET "+target+"\n"), 0o644); err != nil {
			return m, err
		}
		args = []string{o.vegeta, "attack", "-rate", fmt.Sprintf("%d/s", rate), "-duration", o.duration.String(),
			"-targets", filepath.Join(dir, "targets.txt"), "-output", filepath.Join(dir, "results.bin")}
		if o.protocol == zdv1.ProtocolH2C {
			args = append(args, "-h2c")
		}
	case "zerodrop":
		args = []string{o.zerodrop, "load", "--target", target, "--rate", strconv.Itoa(rate), "--duration", o.duration.String(),
			"--protocol", o.protocol, "--out", dir}
	case "h2load":
		args = h2loadArgs(o.h2load, target, rate, o.duration, filepath.Join(dir, "requests.tsv"))
	case "ghz":
		proto := filepath.Join(dir, "echo.proto")
		if err := os.WriteFile(proto, []byte(echoproto.GRPCProto), 0o644); err != nil {
			return m, err
		}
		args = ghzArgs(o.ghz, proto, fmt.Sprintf("127.0.0.1:%d", o.port), rate, o.duration, filepath.Join(dir, "report.json"))
	}
	use, err := pinned(rctx, o.genCPU, filepath.Join(dir, "stderr.txt"), args...)
	m.MaxRSSMB = use.rssMB
	if err != nil {
		// zerodrop exits non-zero for a verdict that is not PASS; that is
		// a measurement, read from its report below.
		var ee *exec.ExitError
		if tool != "zerodrop" || !errors.As(err, &ee) {
			return m, fmt.Errorf("%s: %w (output in %s)", args[0], err, dir)
		}
	}
	switch tool {
	case "vegeta":
		err = readVegeta(ctx, o, dir, &m)
	case "zerodrop":
		err = readZerodrop(dir, &m)
	case "h2load":
		err = readH2load(dir, &m)
	case "ghz":
		err = readGhz(dir, &m)
	}
	if err != nil {
		return m, err
	}
	m.Sustained = m.Failed == 0 && m.Achieved >= 0.97*float64(rate) && m.P99Ms <= o.maxP99Ms && (tool != "zerodrop" || m.Verdict == string(zdv1.Pass))
	return m, nil
}

// pinned runs args on the given CPUs as one process and returns its peak
// RSS in MB (taskset execs the command, so the rusage is the tool's own).
func pinned(ctx context.Context, cpus, stderrPath string, args ...string) (usage, error) {
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", cpus}, args...)...)
	f, err := os.Create(stderrPath)
	if err != nil {
		return usage{}, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	return usageOf(cmd.ProcessState), err
}

// usage is what a finished process spent: its peak RSS and its CPU time.
type usage struct {
	rssMB float64
	cpu   time.Duration
	// ran: the process started and ended (its rusage is read).
	ran bool
}

func usageOf(ps *os.ProcessState) usage {
	if ps == nil {
		return usage{}
	}
	u := usage{cpu: ps.UserTime() + ps.SystemTime(), ran: true}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.rssMB = float64(ru.Maxrss) / 1024 // Linux reports KiB
	}
	return u
}

// freshDir makes dir empty, for one run's raw outputs.
func freshDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type vegetaReport struct {
	Latencies struct {
		P99 int64 `json:"99th"`
	} `json:"latencies"`
	Rate        float64        `json:"rate"`
	Throughput  float64        `json:"throughput"`
	Success     float64        `json:"success"`
	Requests    int64          `json:"requests"`
	StatusCodes map[string]int `json:"status_codes"`
	Errors      []string       `json:"errors"`
}

func readVegeta(ctx context.Context, o options, dir string, m *Measurement) error {
	out, err := exec.CommandContext(ctx, o.vegeta, "report", "-type", "json", filepath.Join(dir, "results.bin")).Output()
	if err != nil {
		return fmt.Errorf("vegeta report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), out, 0o644); err != nil {
		return err
	}
	var r vegetaReport
	if err := json.Unmarshal(out, &r); err != nil {
		return fmt.Errorf("vegeta report: %w", err)
	}
	m.Sent = r.Rate
	m.Achieved = r.Throughput
	m.P99Ms = float64(r.Latencies.P99) / 1e6
	m.Failed = r.Requests - int64(float64(r.Requests)*r.Success+0.5)
	if len(r.Errors) > 0 {
		m.Note = truncate(r.Errors[0], 60)
	}
	return nil
}

// zerodropScenario is the one scenario of the report zerodrop load left
// in dir.
func zerodropScenario(dir string) (zdv1.Scenario, error) {
	rep, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return zdv1.Scenario{}, fmt.Errorf("zerodrop report: %w", err)
	}
	if len(rep.Scenarios) != 1 {
		return zdv1.Scenario{}, fmt.Errorf("zerodrop report %s holds %d scenarios, want 1", dir, len(rep.Scenarios))
	}
	return rep.Scenarios[0], nil
}

func readZerodrop(dir string, m *Measurement) error {
	sc, err := zerodropScenario(dir)
	if err != nil {
		return err
	}
	r := sc.Results
	m.Sent = r.AchievedRate
	if r.Total > 0 {
		m.Achieved = r.AchievedRate * float64(r.OK) / float64(r.Total)
	}
	m.Failed = r.Dropped
	m.P99Ms = r.Latency.P99Ms
	m.Verdict = string(sc.Verdict.Status)
	for _, rs := range sc.Verdict.Reasons {
		if rs.Status != zdv1.Pass {
			m.Note = rs.Check + ": " + truncate(rs.Message, 60)
			break
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func cpus() int { return runtime.NumCPU() }

// startEcho starts a fresh echo server on loopback and waits until it
// answers; the returned func stops it and says how much CPU it used.
func startEcho(ctx context.Context, o options) (func() time.Duration, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", o.port)
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("something already listens on %s: stop it or pass --port", addr)
	}
	cmd := exec.Command("taskset", "-c", o.echoCPU, o.echo, "-listen", addr, "-admin-listen", fmt.Sprintf("127.0.0.1:%d", o.port+1))
	cmd.Env = append(os.Environ(), "POD_NAME=bench-echo", "NODE_NAME=bench", "POD_NAMESPACE=bench", "POD_IP=127.0.0.1")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start echo server: %w", err)
	}
	stop := func() time.Duration {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		// taskset execs the server: the rusage is the server's own.
		return usageOf(cmd.ProcessState).cpu
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			_ = resp.Body.Close()
			return stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, fmt.Errorf("echo server on %s did not answer within 10s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// h2loadArgs runs h2load as the h2c peer: one connection (the load's h2c
// client opens one per target until the server's stream limit), up to 100
// streams at once, rate requests per second for d (in whole milliseconds:
// h2load reads no fractions), each request's start, status and time in
// logPath.
func h2loadArgs(bin, target string, rate int, d time.Duration, logPath string) []string {
	return []string{bin, "-c", "1", "-m", "100", "--rps", strconv.Itoa(rate), "-D", fmt.Sprintf("%dms", d.Milliseconds()),
		"--log-file", logPath, target}
}

// h2loadSummary is what readH2load takes from h2load's closing lines.
type h2loadSummary struct {
	seconds               float64
	started, done, failed int64
	ok2xx                 int64
	found                 map[string]bool
}

// parseH2load reads h2load's summary ("finished in 5.00s, ...",
// "requests: N total, N started, N done, N succeeded, N failed, N
// errored, N timeout", "status codes: N 2xx, ..."). Its failed count
// includes the errored and timed-out requests (h2load's manual).
func parseH2load(out string) (h2loadSummary, error) {
	s := h2loadSummary{found: map[string]bool{}}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "finished in "):
			f := strings.TrimSuffix(strings.Fields(strings.TrimPrefix(line, "finished in "))[0], ",")
			d, err := time.ParseDuration(f)
			if err != nil {
				return s, fmt.Errorf("h2load summary %q: %w", line, err)
			}
			s.seconds, s.found["finished"] = d.Seconds(), true
		case strings.HasPrefix(line, "requests: "):
			for _, part := range strings.Split(strings.TrimPrefix(line, "requests: "), ",") {
				var n int64
				var what string
				if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d %s", &n, &what); err != nil {
					return s, fmt.Errorf("h2load summary %q: %w", line, err)
				}
				switch what {
				case "started":
					s.started = n
				case "done":
					s.done = n
				case "failed":
					s.failed = n
				}
			}
			s.found["requests"] = true
		case strings.HasPrefix(line, "status codes: "):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "status codes: "), "%d 2xx", &s.ok2xx); err != nil {
				return s, fmt.Errorf("h2load summary %q: %w", line, err)
			}
			s.found["status"] = true
		}
	}
	for _, k := range []string{"finished", "requests", "status"} {
		if !s.found[k] {
			return s, fmt.Errorf("h2load printed no %q line: did it run?", k)
		}
	}
	if s.seconds <= 0 {
		return s, errors.New("h2load finished in no time")
	}
	return s, nil
}

// p99Micros is the 99th percentile of the third column (microseconds to
// the end of the response) of h2load's per-request log.
func p99Micros(tsv string) (float64, int, error) {
	var us []float64
	for _, line := range strings.Split(tsv, "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("h2load log line %q: %w", line, err)
		}
		us = append(us, v)
	}
	if len(us) == 0 {
		return 0, 0, errors.New("h2load logged no request")
	}
	slices.Sort(us)
	return us[(len(us)*99+99)/100-1], len(us), nil
}

func readH2load(dir string, m *Measurement) error {
	out, err := os.ReadFile(filepath.Join(dir, "stderr.txt"))
	if err != nil {
		return err
	}
	s, err := parseH2load(string(out))
	if err != nil {
		return fmt.Errorf("%w (output in %s)", err, dir)
	}
	tsv, err := os.ReadFile(filepath.Join(dir, "requests.tsv"))
	if err != nil {
		return err
	}
	p99, _, err := p99Micros(string(tsv))
	if err != nil {
		return fmt.Errorf("%w (in %s)", err, dir)
	}
	m.Sent = float64(s.started) / s.seconds
	m.Achieved = float64(s.ok2xx) / s.seconds
	m.Failed = s.failed
	m.P99Ms = p99 / 1000
	if cut := s.started - s.done; cut > 0 {
		m.Note = fmt.Sprintf("%d in flight at the end", cut)
	}
	return nil
}

// ghzArgs runs ghz as the gRPC peer: unary calls of the echo service, one
// connection (the load's gRPC client holds one per target), 100 workers
// (as h2load's 100 streams), rate calls per second for d, its report as
// JSON in reportPath.
func ghzArgs(bin, proto, addr string, rate int, d time.Duration, reportPath string) []string {
	return []string{bin, "--insecure", "--proto", proto, "--call", strings.TrimPrefix(echoproto.UnaryMethod, "/"),
		"--connections", "1", "-c", "100", "--rps", strconv.Itoa(rate), "-z", d.String(), "--format", "json",
		"--output", reportPath, addr}
}

// ghzReport is what readGhz takes from ghz's JSON report (ghz
// runner/reporter.go, Report): its durations are nanoseconds.
type ghzReport struct {
	Count   uint64         `json:"count"`
	Total   time.Duration  `json:"total"`
	Status  map[string]int `json:"statusCodeDistribution"`
	Errors  map[string]int `json:"errorDistribution"`
	Latency []struct {
		Percentage int           `json:"percentage"`
		Latency    time.Duration `json:"latency"`
	} `json:"latencyDistribution"`
}

func readGhz(dir string, m *Measurement) error {
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return fmt.Errorf("ghz report: %w", err)
	}
	var r ghzReport
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("ghz report %s: %w", dir, err)
	}
	if r.Total <= 0 || r.Count == 0 {
		return fmt.Errorf("ghz report %s: %d calls in %s: did it run?", dir, r.Count, r.Total)
	}
	secs := r.Total.Seconds()
	ok := r.Status["OK"]
	m.Sent = float64(r.Count) / secs
	m.Achieved = float64(ok) / secs
	// ghz ends a -z run by closing its connection under the calls its
	// workers have in flight (one each, at most -c), and counts them
	// failed: "use of closed network connection", "the client connection
	// is closing". Those are its own stop, not the server's failures.
	stopped := 0
	for e, n := range r.Errors {
		if strings.Contains(e, "use of closed network connection") || strings.Contains(e, "the client connection is closing") {
			stopped += n
		}
	}
	m.Failed = int64(r.Count) - int64(ok) - int64(stopped)
	if stopped > 0 {
		m.Note = fmt.Sprintf("%d in flight at its stop", stopped)
	}
	p99 := false
	for _, l := range r.Latency {
		if l.Percentage == 99 {
			m.P99Ms, p99 = float64(l.Latency)/1e6, true
		}
	}
	if !p99 {
		return fmt.Errorf("ghz report %s: no 99th percentile", dir)
	}
	if m.Failed > 0 {
		for e := range r.Errors {
			if !strings.Contains(e, "closed network connection") && !strings.Contains(e, "client connection is closing") {
				m.Note = truncate(e, 60)
				break
			}
		}
	}
	return nil
}
