package echo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults of the contract (issue 2). Fixtures rely on them.
const (
	DefaultListen       = ":8080"
	DefaultAdminListen  = ":8081"
	DefaultDrainTimeout = 10 * time.Second
	DefaultH2Notice     = time.Second
	DefaultReadyPath    = "/readyz"
	DefaultLivePath     = "/healthz"
)

// Identity is who the server says it is in every answer. In a pod it comes
// from the downward API.
type Identity struct {
	Pod       string
	Node      string
	Namespace string
	PodIP     string
}

// Config is the contract's knobs. The zero value is not useful: start from
// DefaultConfig or ParseConfig.
type Config struct {
	// Listen is the traffic address (the Service's target port), or several
	// separated by commas (":80,:443,:10254"): every one serves the same
	// traffic handler, as a stand-in for an app with several ports must.
	Listen string
	// AdminListen is the admin address (never behind a Service).
	AdminListen string
	// Ready is the initial readiness.
	Ready bool
	// KeepAlive is the initial keep-alive switch.
	KeepAlive bool
	// ShutdownDelay is how long serving goes on unchanged after the first
	// termination signal, to outlast endpoint propagation.
	ShutdownDelay time.Duration
	// UnreadyOnTerm fails readiness the moment the termination signal
	// arrives instead of after the delay.
	UnreadyOnTerm bool
	// DrainTimeout is the graceful budget for in-flight requests once the
	// server stops accepting; 0 closes them at once (the naive app).
	DrainTimeout time.Duration
	// CloseGrace, when set, is how long a drain lets keep-alive clients
	// close before the server stops accepting and closes idle connections;
	// nil is the default, half of DrainTimeout and at most 5 s (see Run). A
	// stand-in for a server that stops accepting at once sets 0.
	CloseGrace *time.Duration
	// H2Notice is how long a graceful drain (DrainTimeout > 0) waits for
	// its HTTP/2 clients to answer the shutdown notice, RFC 9113's first
	// GOAWAY (of 2^31-1) and a PING, before Go's server sends the real
	// GOAWAY; 0 sends no notice, as Go's server alone does (h2notice.go).
	H2Notice time.Duration
	// ReadyPaths answer readiness (200 when ready, 503 when not) and
	// LivePaths liveness (always 200) on the traffic port; default /readyz
	// and /healthz. A path in both answers readiness: an app whose one
	// health handler serves both probes fails both when it stops being
	// ready, which is what such an app does.
	ReadyPaths, LivePaths []string
	// LogRequests logs one debug line per request. Off by default: the
	// load generator records requests, the server logs state changes.
	LogRequests bool
	// Identity is filled from POD_NAME, NODE_NAME, POD_NAMESPACE and POD_IP.
	Identity Identity
}

// DefaultConfig is the contract's defaults with an empty identity.
func DefaultConfig() Config {
	return Config{
		Listen:       DefaultListen,
		AdminListen:  DefaultAdminListen,
		Ready:        true,
		KeepAlive:    true,
		DrainTimeout: DefaultDrainTimeout,
		H2Notice:     DefaultH2Notice,
		ReadyPaths:   []string{DefaultReadyPath},
		LivePaths:    []string{DefaultLivePath},
	}
}

// ListenAddrs splits Listen into its addresses.
func (c Config) ListenAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.Listen, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// graceFlag is --close-grace: "auto" (nil) or a duration.
type graceFlag struct{ p **time.Duration }

func (g graceFlag) String() string {
	if g.p == nil || *g.p == nil {
		return "auto"
	}
	return (**g.p).String()
}

func (g graceFlag) Set(v string) error {
	if v == "auto" {
		*g.p = nil
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want auto or a duration: %w", err)
	}
	if d < 0 {
		return fmt.Errorf("negative: %s", d)
	}
	*g.p = &d
	return nil
}

// pathList is a comma-separated flag of URL paths.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.HasPrefix(s, "/") {
			return fmt.Errorf("path %q does not start with /", s)
		}
		out = append(out, s)
	}
	*p = out
	return nil
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case len(c.ListenAddrs()) == 0:
		return errors.New("traffic listen address (--listen, ECHO_LISTEN) is empty")
	case c.AdminListen == "":
		return errors.New("admin listen address (--admin-listen, ECHO_ADMIN_LISTEN) is empty")
	case c.ShutdownDelay < 0:
		return fmt.Errorf("shutdown delay (--shutdown-delay, ECHO_SHUTDOWN_DELAY) is negative: %s", c.ShutdownDelay)
	case c.DrainTimeout < 0:
		return fmt.Errorf("drain timeout (--drain-timeout, ECHO_DRAIN_TIMEOUT) is negative: %s", c.DrainTimeout)
	case c.H2Notice < 0:
		return fmt.Errorf("HTTP/2 shutdown notice wait (--h2-notice, ECHO_H2_NOTICE) is negative: %s", c.H2Notice)
	}
	return nil
}

// LookupEnv is os.LookupEnv's shape, so tests pass a map instead of
// mutating the process environment.
type LookupEnv func(key string) (string, bool)

// ParseConfig reads flags, then the environment for every flag not given on
// the command line, then the pod identity. A flag beats its variable, which
// beats the default. hostname supplies pod and node names outside a pod;
// pass os.Hostname. Usage and errors go to output; -h returns flag.ErrHelp.
func ParseConfig(args []string, env LookupEnv, hostname func() (string, error), output io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("echo-server", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "traffic address, or several comma-separated [ECHO_LISTEN]")
	fs.StringVar(&cfg.AdminListen, "admin-listen", cfg.AdminListen, "admin address [ECHO_ADMIN_LISTEN]")
	fs.BoolVar(&cfg.Ready, "ready", cfg.Ready, "initial readiness [ECHO_READY]")
	fs.BoolVar(&cfg.KeepAlive, "keepalive", cfg.KeepAlive, "HTTP keep-alive on the traffic port [ECHO_KEEPALIVE]")
	fs.DurationVar(&cfg.ShutdownDelay, "shutdown-delay", cfg.ShutdownDelay, "after SIGTERM keep serving this long [ECHO_SHUTDOWN_DELAY]")
	fs.BoolVar(&cfg.UnreadyOnTerm, "unready-on-term", cfg.UnreadyOnTerm, "fail readiness as soon as SIGTERM arrives [ECHO_UNREADY_ON_TERM]")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "after the delay, budget for in-flight requests; 0 closes them at once [ECHO_DRAIN_TIMEOUT]")
	fs.DurationVar(&cfg.H2Notice, "h2-notice", cfg.H2Notice, "a graceful drain first tells HTTP/2 clients it is going away (GOAWAY of 2^31-1 and a PING) and waits this long at most for their answers; 0 sends no notice [ECHO_H2_NOTICE]")
	fs.Var(graceFlag{&cfg.CloseGrace}, "close-grace", "how long a drain lets keep-alive clients close before it stops accepting: auto (half the drain timeout, at most 5s) or a duration [ECHO_CLOSE_GRACE]")
	fs.Var((*pathList)(&cfg.ReadyPaths), "ready-path", "paths answering readiness on the traffic port, comma-separated [ECHO_READY_PATH]")
	fs.Var((*pathList)(&cfg.LivePaths), "live-path", "paths answering liveness on the traffic port, comma-separated [ECHO_LIVE_PATH]")
	fs.BoolVar(&cfg.LogRequests, "log-requests", cfg.LogRequests, "log one debug line per request [ECHO_LOG_REQUESTS]")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: echo-server [flags]\n\n"+
			"zerodrop echo server. Pod identity comes from POD_NAME, POD_NAMESPACE, NODE_NAME, POD_IP.\n"+
			"Each flag can be set by the variable in brackets; a flag on the command line wins.\n"+
			"Boolean flags take their value with '=': --ready=false.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments %q: echo-server takes flags only (see -h)", fs.Args())
	}

	// Each flag's environment variable; the usage text names them too.
	flagEnv := [...]struct{ flag, env string }{
		{"listen", "ECHO_LISTEN"},
		{"admin-listen", "ECHO_ADMIN_LISTEN"},
		{"ready", "ECHO_READY"},
		{"keepalive", "ECHO_KEEPALIVE"},
		{"shutdown-delay", "ECHO_SHUTDOWN_DELAY"},
		{"unready-on-term", "ECHO_UNREADY_ON_TERM"},
		{"drain-timeout", "ECHO_DRAIN_TIMEOUT"},
		{"log-requests", "ECHO_LOG_REQUESTS"},
		{"close-grace", "ECHO_CLOSE_GRACE"},
		{"h2-notice", "ECHO_H2_NOTICE"},
		{"ready-path", "ECHO_READY_PATH"},
		{"live-path", "ECHO_LIVE_PATH"},
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, fe := range flagEnv {
		if given[fe.flag] {
			continue
		}
		v, ok := env(fe.env)
		if !ok {
			continue
		}
		if err := fs.Set(fe.flag, v); err != nil {
			return Config{}, fmt.Errorf("environment %s=%q (for --%s): %w", fe.env, v, fe.flag, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}

	id, err := identityFromEnv(env, hostname)
	if err != nil {
		return Config{}, err
	}
	cfg.Identity = id
	return cfg, nil
}

// identityFromEnv reads the downward API variables. Outside a pod the
// hostname stands in for both pod and node, and the first non-loopback
// interface address for the pod IP.
func identityFromEnv(env LookupEnv, hostname func() (string, error)) (Identity, error) {
	get := func(k string) string { v, _ := env(k); return v }
	id := Identity{
		Pod:       get("POD_NAME"),
		Node:      get("NODE_NAME"),
		Namespace: get("POD_NAMESPACE"),
		PodIP:     get("POD_IP"),
	}
	if id.Pod == "" || id.Node == "" {
		h, err := hostname()
		if err != nil {
			return Identity{}, fmt.Errorf("POD_NAME or NODE_NAME unset and the hostname is unreadable (%w): set POD_NAME and NODE_NAME", err)
		}
		if id.Pod == "" {
			id.Pod = h
		}
		if id.Node == "" {
			id.Node = h
		}
	}
	if id.PodIP == "" {
		id.PodIP = firstInterfaceIP()
	}
	if id.PodIP != "" && net.ParseIP(id.PodIP) == nil {
		return Identity{}, fmt.Errorf("POD_IP=%q is not an IP address: set it from status.podIP", id.PodIP)
	}
	return id, nil
}

// firstInterfaceIP is the best guess at "my address" outside a pod; an
// empty answer is fine (the field is informative only).
func firstInterfaceIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		return ipn.IP.String()
	}
	return ""
}

// OSEnv is LookupEnv for the real process environment.
func OSEnv(key string) (string, bool) { return os.LookupEnv(key) }

// parseSwitch accepts exactly "true" or "false": an admin call is a
// deliberate act, so "1" or "yes" is more likely a typo than intent.
func parseSwitch(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("value=%s: want value=true or value=false", strconv.Quote(v))
}
