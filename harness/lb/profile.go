package lb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"zerodrop/clusters/lb/profiles"
	"zerodrop/harness/contract"
)

// DefaultProfileName applies when neither the Service nor the controller names one.
const DefaultProfileName = "generic"

// Mode says how the LB forwards.
type Mode string

const (
	// ModeL4 forwards packets unchanged to a node (direct server return).
	ModeL4 Mode = "l4"
	// ModeL7 proxies HTTP requests over kept-alive connections to nodeIP:nodePort.
	ModeL7 Mode = "l7"
)

// HealthTarget says what a health check asks.
type HealthTarget string

const (
	// TargetKubeProxy asks the Service's healthCheckNodePort (Local) or kube-proxy's :10256/healthz (Cluster).
	TargetKubeProxy HealthTarget = "kube-proxy"
	// TargetNodePort asks Path on the Service's NodePort (L7 load balancers).
	TargetNodePort HealthTarget = "nodeport"
)

// FlowAction says what established flows to a node do when it stops taking new ones.
type FlowAction string

const (
	FlowKeep  FlowAction = "keep"  // keep forwarding them for as long as they live
	FlowDrain FlowAction = "drain" // keep forwarding them for DrainTimeout, then close
	FlowClose FlowAction = "close" // close them now
)

// CloseAction is what a packet of a closed flow meets.
type CloseAction string

const (
	CloseReset CloseAction = "reset" // the LB answers with a TCP RST from the LB address
	CloseDrop  CloseAction = "drop"  // silently dropped
)

// NoHealthy says what new connections do when no eligible node is healthy.
type NoHealthy string

const (
	NoHealthyFailOpen NoHealthy = "failOpen" // spread over every eligible node
	NoHealthyDrop     NoHealthy = "drop"
)

// Duration is a time.Duration written as a Go duration string ("8s") in profile files.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "8s"-style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"8s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// HealthCheck is a profile's health-check timing.
type HealthCheck struct {
	Target             HealthTarget `json:"target"`
	Path               string       `json:"path,omitempty"`
	Interval           Duration     `json:"interval"`
	Timeout            Duration     `json:"timeout"`
	HealthyThreshold   int          `json:"healthyThreshold"`
	UnhealthyThreshold int          `json:"unhealthyThreshold"`
}

// DetectionTime is how long a node that stopped answering stays in the set:
// interval x unhealthyThreshold (the window incidents drain-local-pdb, rolling-update-local and 003 are about).
func (h HealthCheck) DetectionTime() time.Duration {
	return h.Interval.D() * time.Duration(h.UnhealthyThreshold)
}

// Eligibility says which nodes may be backends at all.
type Eligibility struct {
	ExcludeUnschedulable bool     `json:"excludeUnschedulable"`
	PoolAnnotations      []string `json:"poolAnnotations,omitempty"`
	PoolLabel            string   `json:"poolLabel,omitempty"`
	DefaultPool          string   `json:"defaultPool,omitempty"`
}

// Flows says what established flows do when their node stops taking new ones.
type Flows struct {
	OnUnhealthy  FlowAction  `json:"onUnhealthy"`
	OnRemoved    FlowAction  `json:"onRemoved"`
	DrainTimeout Duration    `json:"drainTimeout"`
	CloseAction  CloseAction `json:"closeAction"`
	IdleTimeout  Duration    `json:"idleTimeout"`
}

// L7 configures the HTTP proxy of ModeL7 profiles.
type L7 struct {
	KeepAlive           bool     `json:"keepAlive"`
	IdleConnTimeout     Duration `json:"idleConnTimeout"`
	MaxIdleConnsPerNode int      `json:"maxIdleConnsPerNode"`
}

// Profile is one vendor's load-balancer behaviour, loaded from a YAML file.
type Profile struct {
	Name              string            `json:"name"`
	Description       string            `json:"description,omitempty"`
	Mode              Mode              `json:"mode"`
	HealthCheck       HealthCheck       `json:"healthCheck"`
	Eligibility       Eligibility       `json:"eligibility"`
	Flows             Flows             `json:"flows"`
	NoHealthyBackends NoHealthy         `json:"noHealthyBackends"`
	L7                *L7               `json:"l7,omitempty"`
	Sources           map[string]string `json:"sources,omitempty"`
}

// ParseProfile reads one profile file and validates it. Unknown fields are errors,
// so a typo in a user's profile does not silently fall back to a default.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Profile{}, fmt.Errorf("parse profile: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// Validate reports every problem of the profile at once.
func (p Profile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Name == "" {
		bad("name is empty")
	}
	switch p.Mode {
	case ModeL4, ModeL7:
	default:
		bad("mode %q: want l4 or l7", p.Mode)
	}
	h := p.HealthCheck
	switch h.Target {
	case TargetKubeProxy:
	case TargetNodePort:
		if !strings.HasPrefix(h.Path, "/") {
			bad("healthCheck.path %q: target nodeport needs an absolute path", h.Path)
		}
	default:
		bad("healthCheck.target %q: want kube-proxy or nodeport", h.Target)
	}
	if h.Interval.D() <= 0 {
		bad("healthCheck.interval must be > 0")
	}
	if h.Timeout.D() <= 0 || h.Timeout.D() > h.Interval.D() {
		bad("healthCheck.timeout %v must be > 0 and <= interval %v", h.Timeout.D(), h.Interval.D())
	}
	if h.HealthyThreshold < 1 || h.UnhealthyThreshold < 1 {
		bad("healthCheck thresholds must be >= 1 (healthy %d, unhealthy %d)", h.HealthyThreshold, h.UnhealthyThreshold)
	}
	e := p.Eligibility
	if (len(e.PoolAnnotations) > 0 || e.DefaultPool != "") && e.PoolLabel == "" {
		bad("eligibility.poolLabel is needed with poolAnnotations/defaultPool")
	}
	f := p.Flows
	switch f.OnUnhealthy {
	case FlowKeep, FlowDrain, FlowClose:
	default:
		bad("flows.onUnhealthy %q: want keep, drain or close", f.OnUnhealthy)
	}
	switch f.OnRemoved {
	case FlowDrain, FlowClose:
	default:
		bad("flows.onRemoved %q: want drain or close", f.OnRemoved)
	}
	if f.DrainTimeout.D() < 0 {
		bad("flows.drainTimeout must be >= 0")
	}
	switch f.CloseAction {
	case CloseReset, CloseDrop:
	default:
		bad("flows.closeAction %q: want reset or drop", f.CloseAction)
	}
	if f.IdleTimeout.D() < time.Second {
		bad("flows.idleTimeout must be >= 1s")
	}
	switch p.NoHealthyBackends {
	case NoHealthyFailOpen, NoHealthyDrop:
	default:
		bad("noHealthyBackends %q: want failOpen or drop", p.NoHealthyBackends)
	}
	if p.Mode == ModeL7 && p.L7 == nil {
		bad("mode l7 needs an l7 section")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("profile %q: %w", p.Name, err)
	}
	return nil
}

// Profiles is a set of profiles by name.
type Profiles map[string]Profile

// StockProfiles returns the profiles shipped in clusters/lb/profiles.
func StockProfiles() (Profiles, error) {
	return loadFS(profiles.FS, ".")
}

// LoadProfiles returns the stock profiles overlaid with every *.yaml file of dir
// (dir may be empty: stock only).
func LoadProfiles(dir string) (Profiles, error) {
	ps, err := StockProfiles()
	if err != nil {
		return nil, fmt.Errorf("stock profiles are broken (a build defect): %w", err)
	}
	if dir == "" {
		return ps, nil
	}
	user, err := loadFS(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("profiles in %s: %w", dir, err)
	}
	for n, p := range user {
		ps[n] = p
	}
	return ps, nil
}

func loadFS(fsys fs.FS, dir string) (Profiles, error) {
	names, err := fs.Glob(fsys, filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	ps := Profiles{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		p, err := ParseProfile(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if want := strings.TrimSuffix(filepath.Base(n), ".yaml"); p.Name != want {
			return nil, fmt.Errorf("%s: name %q must equal the file name %q", n, p.Name, want)
		}
		ps[p.Name] = p
	}
	return ps, nil
}

// Names lists the profile names, sorted.
func (ps Profiles) Names() []string {
	out := make([]string, 0, len(ps))
	for n := range ps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the profile named by the Service annotation, or def without it.
func (ps Profiles) Lookup(annotations map[string]string, def string) (Profile, error) {
	name := def
	if v := annotations[contract.LBProfileAnnotation]; v != "" {
		name = v
	}
	p, ok := ps[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown LB profile %q (annotation %s); known: %s", name, contract.LBProfileAnnotation, strings.Join(ps.Names(), ", "))
	}
	return p, nil
}
