package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/userevents"
	"zerodrop.dev/zerodrop/internal/echoproto"
)

const runFileName = "run.jsonl"

func loadCommand() command {
	return command{name: "load", summary: "send attributed constant-rate load to a URL and judge it", run: runLoad}
}

const loadDescription = `
Sends GET requests at a constant rate to the target URL(s) and records every
result (send time, latency, status, error class, and the echo server's pod,
node, client IP, readiness and connection) in DIR/run.jsonl as it happens,
then writes the analysis and verdict to DIR/report.json.

--duration 0 runs until interrupted (Ctrl-C); an interrupted fixed-duration
run is reported as broken (exit 2), with everything measured so far kept.
A first Ctrl-C lets the requests in flight finish (at most --timeout); a
second abandons them.

The verdict judges the load generator too: a run in which it fell behind
its schedule (any whole second below 97% of --rate), sent a request later
than --max-send-lag, or left requests unsent because --max-in-flight was
full is broken (exit 2), never a pass: the spans it missed were not
measured. A request Go's HTTP client re-sent on its own after a failed
attempt counts as dropped.

--events-from PATH puts your own actions on the timeline while the load
runs: PATH is a file (followed like tail -f) or a FIFO (mkfifo) of lines,
each appended to run.jsonl as an event of source "user" the moment it is
read. A plain line is an action ("drained node-1 by hand"); a JSON line
sets the event: {"type":"pod-unready","object":"pod/ns/a","message":"..."}
(type, object, message, time, fields; all optional). Blank lines and lines
starting with # are ignored. A bad line is reported on stderr with its
number, noted in the run file, and skipped; the run goes on. User events
never change the verdict.

  mkfifo /tmp/zd-events
  zerodrop load ... --events-from /tmp/zd-events &
  echo "kubectl drain node-1" > /tmp/zd-events

Exit status: 0 nothing dropped, 1 something dropped (or another criterion
failed), 2 bad input or the run broke.`

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runLoad(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "load", "--target URL --rate N --duration D --out DIR [flags]", loadDescription)
	var targets stringList
	fs.Var(&targets, "target", "`URL` to load (repeat for round-robin over several)")
	rate := fs.Int("rate", 0, "`N` requests per second (required)")
	duration := fs.Duration("duration", 0, "how long to send load, e.g. 60s; 0 runs until interrupted (required)")
	connections := fs.Int("connections", load.DefaultConnections, "idle keep-alive connections kept per target host")
	maxConns := fs.Int("max-connections", 0, "cap on connections per target host (0: no cap)")
	keepAlive := fs.Bool("keepalive", true, "reuse connections (--keepalive=false opens one per request)")
	protocol := fs.String("protocol", zdv1.ProtocolHTTP1, "how requests travel: "+zdv1.ProtocolHTTP1+", "+zdv1.ProtocolH2C+
		" (HTTP/2 over cleartext with prior knowledge: streams on kept-alive connections; the run file records each GOAWAY a server sends), "+
		zdv1.ProtocolGRPC+" (a call of the echo server's gRPC service per request, over h2c), "+zdv1.ProtocolGRPCStream+
		" (one of its server streams per request: --stream-messages, --stream-interval) or "+zdv1.ProtocolWebSocket+
		" (a session of the echo server's WebSocket route per request, as long)")
	streamEvery := fs.Int("stream-every", 0, "grpc: open a stream instead of a unary call for one request in `K` (0: none)")
	streamMessages := fs.Int("stream-messages", echoproto.DefaultMessages, "grpc-stream, websocket: the messages each stream or session asks for")
	streamInterval := fs.Duration("stream-interval", echoproto.DefaultInterval, "grpc-stream, websocket: the server's pause before each message")
	timeout := fs.Duration("timeout", load.DefaultTimeout, "per-request timeout, connect to last byte")
	idleTimeout := fs.Duration("idle-timeout", load.DefaultIdleTimeout, "close a keep-alive connection idle this long (keep it under the server's own idle close)")
	rotate := fs.Int("rotate-connections", 0, "keep N kept-alive connections and send each request on the next in turn, as a proxy's pool does (0: Go's pool, most recently used first)")
	maxInFlight := fs.Int("max-in-flight", load.DefaultMaxInFlight, "cap on requests in flight (bounds memory); requests due while it is full are unsent")
	maxLag := fs.Duration("max-send-lag", 0, "latest a request may leave after its scheduled time (default: 3 intervals, at least 50ms)")
	maxP99 := fs.Duration("max-p99", 0, "fail when the 99th percentile latency exceeds this (0: no latency criterion)")
	host := fs.String("host", "", "Host header to send (default: from the URL)")
	out := fs.String("out", "", "output `DIR` for run.jsonl and report.json (required; must not hold a run already)")
	name := fs.String("name", "load", "scenario name in the report")
	maxDropped := fs.Int64("max-dropped", 0, "dropped requests still allowed")
	expectIP := fs.String("expect-client-ip", "", "fail unless the echo server saw this client IP on every response")
	gap := fs.Duration("window-gap", 0, "merge failures closer than this into one window (default 1s)")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification for https targets")
	implF := addImplementationFlags(fs)
	signKey := fs.String("sign-key", "", "`PATH` of the Ed25519 private key that signs the run file (zerodrop keygen); default this machine's key, made on first use; none: unsigned")
	eventsFrom := fs.String("events-from", "", "`PATH` of a file or FIFO whose lines are recorded as your own events while the load runs")
	if code, ok := parseFlags(c, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return badInput(c, "load", "unexpected arguments %q: every setting is a flag", fs.Args())
	}
	var missing []string
	if len(targets) == 0 {
		missing = append(missing, "--target")
	}
	if *rate == 0 {
		missing = append(missing, "--rate")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["duration"] {
		missing = append(missing, "--duration")
	}
	if *out == "" {
		missing = append(missing, "--out")
	}
	if len(missing) > 0 {
		return badInput(c, "load", "missing %s", strings.Join(missing, ", "))
	}
	if *maxDropped < 0 {
		return badInput(c, "load", "--max-dropped %d: must not be negative", *maxDropped)
	}
	impl, err := implF.implementation()
	if err != nil {
		return badInput(c, "load", "%v", err)
	}
	if *gap < 0 {
		return badInput(c, "load", "--window-gap %s: must not be negative", *gap)
	}
	if *maxP99 < 0 {
		return badInput(c, "load", "--max-p99 %s: must not be negative (0: no latency criterion)", *maxP99)
	}
	opts := []load.Option{
		load.WithTargets(targets...), load.WithRate(*rate), load.WithDuration(*duration),
		load.WithConnections(*connections), load.WithMaxConnections(*maxConns), load.WithKeepAlive(*keepAlive), load.WithProtocol(*protocol),
		load.WithTimeout(*timeout), load.WithIdleTimeout(*idleTimeout), load.WithRotation(*rotate), load.WithHost(*host), load.WithMaxInFlight(*maxInFlight), load.WithMaxSendLag(*maxLag),
	}
	if *insecure {
		opts = append(opts, load.WithInsecureTLS())
	}
	if *protocol == zdv1.ProtocolGRPCStream || *protocol == zdv1.ProtocolWebSocket || *streamEvery != 0 {
		opts = append(opts, load.WithStream(*streamMessages, *streamInterval), load.WithStreamEvery(*streamEvery))
	}
	l, err := load.New(opts...)
	if err != nil {
		return badInput(c, "load", "%v", err)
	}

	runPath := filepath.Join(*out, runFileName)
	if _, err := os.Stat(runPath); err == nil {
		return badInput(c, "load", "%s already exists: choose a new --out directory or remove the old run", runPath)
	}
	key, keyNote, err := evidence.Resolve(*signKey, c.keyDir)
	if err != nil {
		return badInput(c, "load", "%v", err)
	}
	var wopts []runfile.WriterOption
	if key != nil {
		wopts = append(wopts, runfile.WithSealer(key))
	}
	var userEvents *userevents.Source
	if *eventsFrom != "" {
		if userEvents, err = userevents.Open(*eventsFrom); err != nil {
			return badInput(c, "load", "--events-from: %v", err)
		}
	}
	createdDir := false
	if _, err := os.Stat(*out); errors.Is(err, os.ErrNotExist) {
		createdDir = true
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return badInput(c, "load", "cannot create output directory: %v", err)
	}
	settings := l.Settings()
	crit := zdv1.Criteria{MaxDropped: zdv1.Int64(*maxDropped), ExpectedClientIP: *expectIP,
		WindowGapMs: float64(*gap) / float64(time.Millisecond)}
	if *maxP99 > 0 {
		crit.MaxP99Ms = zdv1.Float64(float64(*maxP99) / float64(time.Millisecond))
	}
	w, err := runfile.Create(runPath, zdv1.Header{
		RunID:       l.RunID(),
		ToolVersion: c.version,
		Scenario: zdv1.ScenarioSpec{
			Name: *name, Role: zdv1.RoleAssertion, Criteria: crit,
			Description: "zerodrop load against " + strings.Join(settings.Targets, ", "),
		},
		Load: &settings,
	}, wopts...)
	if err != nil {
		if createdDir {
			_ = os.Remove(*out)
		}
		if userEvents != nil {
			_ = userEvents.Close()
		}
		return badInput(c, "load", "%v", err)
	}

	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	log.Info(keyNote)
	stopUserEvents := followUserEvents(ctx, log, userEvents, *eventsFrom, w)
	started := time.Now()
	log.Info("load started", "targets", strings.Join(settings.Targets, ","), "rate", *rate, "duration", duration.String(),
		"keepalive", *keepAlive, "run_file", runPath)
	running, err := l.Start(ctx, w)
	var loadErr error
	if err != nil {
		loadErr = err
	} else {
		progress := time.NewTicker(5 * time.Second)
		interrupts := 0
	wait:
		for {
			select {
			case <-running.Done():
				break wait
			case <-c.interrupts:
				// The first one also cancelled ctx: the load stops and
				// waits for its requests in flight.
				if interrupts++; interrupts == 1 {
					log.Info("interrupted: waiting for the requests in flight (Ctrl-C again abandons them)", "timeout", timeout.String())
				} else {
					log.Warn("interrupted again: abandoning the requests in flight")
					running.Abort()
				}
			case <-progress.C:
				s := running.Snapshot()
				log.Info("load progress", "results", s.Results, "dropped", s.Dropped, "rate", fmt.Sprintf("%.1f/s", s.Rate()))
			}
		}
		progress.Stop()
		var sum load.Summary
		sum, loadErr = running.Wait()
		log.Info("load finished", "results", sum.Results, "dropped", sum.Dropped, "rate", fmt.Sprintf("%.1f/s", sum.Rate()))
	}
	stopUserEvents()
	if err := w.CloseWithError(loadErr); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop load: closing %s: %v\n", runPath, err)
	}

	// The analysis must complete even when the run was interrupted.
	rep, code := analyzeDir(context.WithoutCancel(ctx), c, *out, []string{runPath}, nil, zdv1.RunMeta{
		ToolVersion: c.version,
		Provider:    "none",
		Start:       started,
		Host:        hostDescription(),
	}, reportExtras{impl: impl, set: &zdv1.ScenarioSet{Name: zdv1.ScenarioSetLoad, Version: c.version}}, nil)
	if rep == nil {
		return code
	}
	if loadErr != nil {
		fmt.Fprintf(c.stderr, "zerodrop load: the run broke: %v\n", loadErr)
	}
	return code
}

// followUserEvents records the lines of src as user events in w until the
// returned stop is called; stop waits for the lines already written. Each
// event is flushed at once, so the run file holds it even if the run is
// killed a moment later. A bad line is logged and noted in the run file
// (the evidence says a user event was lost, and why); it never ends the
// run.
func followUserEvents(ctx context.Context, log *slog.Logger, src *userevents.Source, path string, w *runfile.Writer) (stop func()) {
	if src == nil {
		return func() {}
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	sink := zdv1.EventFunc(func(e zdv1.Event) error {
		if err := w.Event(e); err != nil {
			return err
		}
		return w.Flush()
	})
	log.Info("recording your events", "from", path)
	go func() {
		defer close(done)
		st, err := src.Follow(fctx, sink, userevents.Options{OnBad: func(line int, text string, err error) {
			log.Warn("events-from: line skipped", "file", path, "line", line, "error", err.Error(), "text", text)
			_ = w.Event(zdv1.Event{Source: zdv1.SourceLoad, Type: zdv1.EventNote,
				Message: fmt.Sprintf("events-from %s line %d skipped: %v", path, line, err)})
		}})
		if err != nil {
			log.Error("events-from: stopped reading", "file", path, "error", err.Error())
			_ = w.Event(zdv1.Event{Source: zdv1.SourceLoad, Type: zdv1.EventNote,
				Message: fmt.Sprintf("events-from %s: stopped reading: %v", path, err)})
		}
		log.Info("your events recorded", "events", st.Events, "skipped_lines", st.Bad)
	}()
	return func() {
		cancel()
		<-done
	}
}

// hostDescription records the load generator's machine, because every
// timing figure depends on it.
func hostDescription() string {
	h, _ := os.Hostname()
	desc := fmt.Sprintf("%s, %d CPUs", h, numCPU())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			desc += ", load average " + strings.Join(f[:3], " ")
		}
	}
	return desc
}
