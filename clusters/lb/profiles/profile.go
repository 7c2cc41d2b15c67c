package profiles

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"zerodrop.dev/zerodrop/apis/contract"
)

// DefaultName applies when neither the Service nor the controller names one.
const DefaultName = "generic"

// Mode says how the LB forwards.
type Mode string

const (
	// ModeL4 forwards packets unchanged to a node (direct server return).
	ModeL4 Mode = "l4"
	// ModeL7 proxies HTTP requests over kept-alive connections to nodeIP:nodePort.
	ModeL7 Mode = "l7"
	// ModeAnnounce is no LB device at all: one node answers for the address
	// (MetalLB's L2 mode) and the health check is replaced by following the
	// EndpointSlices (TargetServing). MetalLB implements it; the cloud LB
	// does not.
	ModeAnnounce Mode = "announce"
	// ModeProxy is a TCP proxy that opens its own connection to a node for
	// each client connection (AWS Classic ELB). Only its timing is modelled,
	// for the doctor; the cloud LB does not emulate it.
	ModeProxy Mode = "proxy"
)

// HealthTarget says what a health check asks.
type HealthTarget string

// KubeProxyHealthzPort is the node's port where kube-proxy answers
// /healthz for the node as a whole, not one Service (kubernetes v1.37.2
// pkg/cluster/ports ProxyHealthzPort, the default healthzBindAddress). It
// fails while the node carries the cluster autoscaler's
// ToBeDeletedByClusterAutoscaler taint or is being deleted (same release,
// pkg/proxy/healthcheck/proxy_health.go NodeEligible; KEP-3836, GA in
// 1.31), so a check on it sees a node about to go.
const KubeProxyHealthzPort = 10256

const (
	// TargetKubeProxy asks the Service's healthCheckNodePort (Local) or kube-proxy's :10256/healthz (Cluster).
	TargetKubeProxy HealthTarget = "kube-proxy"
	// TargetNodePort asks Path on the Service's NodePort (L7 load balancers).
	TargetNodePort HealthTarget = "nodeport"
	// TargetTrafficPort opens a TCP connection to the Service's NodePort
	// and passes when it is accepted (AWS NLB and Azure for Cluster
	// Services): kube-proxy answers for the whole cluster there, so the
	// check follows the node, not its local endpoints.
	TargetTrafficPort HealthTarget = "traffic-port"
	// TargetPod makes the LB's targets the Service's Pods (container-native
	// load balancing: GKE NEG, AWS IP targets) and asks Path on each Pod's
	// serving port, or opens a TCP connection to it when Path is empty: no
	// node and no kube-proxy between the LB and the Pod.
	TargetPod HealthTarget = "pod"
	// TargetServing asks nothing: nodes are picked from the EndpointSlices'
	// serving condition (ModeAnnounce), so a terminating Pod that stays
	// ready keeps its node in use until it exits; Interval is how quickly
	// the LB follows a change.
	TargetServing HealthTarget = "endpoint-serving"
	// TargetFixedPort asks Path on a fixed port of the node (HealthCheck
	// Port), as a GKE BackendConfig with healthCheck.port makes the check
	// do (WithBackendConfig). That port is the Service's
	// healthCheckNodePort when a Local Service wants kube-proxy to answer.
	TargetFixedPort HealthTarget = "port"
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

// SessionAffinity says what the LB makes of a Service's
// spec.sessionAffinity: ClientIP.
type SessionAffinity string

const (
	// AffinityClientIP: the LB keeps a client address on one node (GCP
	// target pools and backend services CLIENT_IP, Azure load distribution
	// SourceIP), by hashing the client address alone instead of the
	// connection's 4-tuple. kube-proxy on that node then keeps the client on
	// one Pod, as the Service asks.
	AffinityClientIP SessionAffinity = "clientIP"
	// AffinityIgnored: the LB spreads a client's connections over nodes
	// whatever the Service says (a node's kube-proxy keeps its own affinity,
	// so a client may reach one Pod per node).
	AffinityIgnored SessionAffinity = "ignored"
	// AffinityRefused: the provider will not build an LB for a Service that
	// asks for ClientIP affinity (the AWS provider fails EnsureLoadBalancer);
	// an LB that exists stays as it was.
	AffinityRefused SessionAffinity = "refused"
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
	Target HealthTarget `json:"target"`
	Path   string       `json:"path,omitempty"`
	// Port is the node's port TargetFixedPort asks.
	Port int `json:"port,omitempty"`
	// FromReadinessProbe: the vendor's controller builds the check from
	// the serving container's readiness probe when it has an HTTP one
	// (GKE: Profile.WithReadinessProbe); the fields here are the check
	// without one.
	FromReadinessProbe bool     `json:"fromReadinessProbe,omitempty"`
	Interval           Duration `json:"interval"`
	Timeout            Duration `json:"timeout"`
	HealthyThreshold   int      `json:"healthyThreshold"`
	UnhealthyThreshold int      `json:"unhealthyThreshold"`
}

// DetectionTime is how long a node that stopped answering stays in the set:
// interval x unhealthyThreshold (the window incidents drain-local-pdb,
// rolling-update-local and keepalive-unready are about). A check whose
// timeout is longer than its interval (a profile the cloud LB does not
// run: alibaba-slb) counts each failure at its timeout, the bound however
// the vendor schedules a check while the last one waits.
func (h HealthCheck) DetectionTime() time.Duration {
	return max(h.Interval.D(), h.Timeout.D()) * time.Duration(h.UnhealthyThreshold)
}

// AdditionTime is how long a node whose check started passing waits before
// it gets traffic: interval x healthyThreshold.
func (h HealthCheck) AdditionTime() time.Duration {
	return h.Interval.D() * time.Duration(h.HealthyThreshold)
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
	OnUnhealthy  FlowAction `json:"onUnhealthy"`
	OnRemoved    FlowAction `json:"onRemoved"`
	DrainTimeout Duration   `json:"drainTimeout"`
	// AfterDrain says what a drained node's flows meet when DrainTimeout is
	// over: close (the default) or keep (AWS NLB without connection
	// termination on deregistration: the flows live on until they end or
	// idle out).
	AfterDrain  FlowAction  `json:"afterDrain,omitempty"`
	CloseAction CloseAction `json:"closeAction"`
	IdleTimeout Duration    `json:"idleTimeout"`
}

// L7 configures the HTTP proxy of ModeL7 profiles.
type L7 struct {
	// Backends is what the proxy sends requests to: "nodes" (nodeIP:nodePort,
	// through kube-proxy; the default) or "pods" (podIP:targetPort,
	// container-native load balancing). It must agree with healthCheck.target
	// (pod for pods), which is what decides it for every mode.
	Backends            string   `json:"backends,omitempty"`
	KeepAlive           bool     `json:"keepAlive"`
	IdleConnTimeout     Duration `json:"idleConnTimeout"`
	MaxIdleConnsPerNode int      `json:"maxIdleConnsPerNode"`
}

// Pods configures a Pod-targeted profile (healthCheck.target pod): how the
// vendor's controller turns the Service's endpoints into the LB's targets.
type Pods struct {
	// Register says which endpoints become targets: RegisterReady or
	// RegisterNotTerminating. An endpoint that stops qualifying is
	// deregistered, and its target drains as flows.onRemoved says.
	Register string `json:"register"`
	// ReadinessGate is the Pod condition the vendor's controller sets
	// from the target's health, for Pods whose spec.readinessGates name
	// it (nil: the vendor has none).
	ReadinessGate *ReadinessGate `json:"readinessGate,omitempty"`
}

// ReadinessGate is a vendor's pod readiness gate: a Pod that names
// ConditionType in spec.readinessGates is Ready only once the LB has set
// that condition True, so a rollout or a drain waits for the LB.
type ReadinessGate struct {
	// ConditionType is the condition the LB sets. AWS writes one per
	// TargetGroupBinding (target-health.elbv2.k8s.aws/<binding>); the
	// cloud LB writes one per profile, True only while the Pod is healthy
	// in every Service of that profile that targets it: the effect of all
	// a Pod's bindings' gates together.
	ConditionType string `json:"conditionType"`
	// Sticky: once True the condition is never set back to False (GKE);
	// otherwise it follows the target's health both ways (AWS).
	Sticky bool `json:"sticky,omitempty"`
	// Injected says when the vendor puts the gate into Pods: "always"
	// (every Pod of a Service the LB targets: GKE with container-native
	// load balancing) or "namespaceLabel" (Pods created in a namespace the
	// user labelled: AWS). The cloud LB injects nothing (no webhook); the
	// workload builders write the gate where the vendor would inject it.
	Injected string `json:"injected"`
	// NamespaceLabel is the label, "key=value", that asks for the gate on
	// a namespace (injected namespaceLabel): the doctor counts a Pod of a
	// namespace the input labels so as gated.
	NamespaceLabel string `json:"namespaceLabel,omitempty"`
}

// InjectedIn reports whether the vendor injects the gate into Pods of a
// namespace with the given labels (nil: not known).
func (g ReadinessGate) InjectedIn(nsLabels map[string]string) bool {
	if g.Injected == GateInjectedAlways {
		return true
	}
	k, v := g.Label()
	got, ok := nsLabels[k]
	return g.Injected == GateInjectedNamespaceLabel && k != "" && ok && got == v
}

// Label is NamespaceLabel's key and value ("" and "" when unset).
func (g ReadinessGate) Label() (key, value string) {
	key, value, _ = strings.Cut(g.NamespaceLabel, "=")
	return key, value
}

// When a vendor injects its readiness gate.
const (
	GateInjectedAlways         = "always"
	GateInjectedNamespaceLabel = "namespaceLabel"
)

// Which endpoints a Pod-targeted LB registers.
const (
	// RegisterReady: the endpoints the EndpointSlices call ready (the AWS
	// Load Balancer Controller's IP targets).
	RegisterReady = "ready"
	// RegisterNotTerminating: every endpoint that is not terminating, ready
	// or not; the LB's own health check decides which take traffic (GKE's
	// NEGs).
	RegisterNotTerminating = "notTerminating"
)

// Profile is one vendor's load-balancer behaviour, loaded from a YAML file.
type Profile struct {
	// APIVersion is the format's version, APIVersion; a file without one
	// is read as that version (the format had none before it).
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name"`
	// Aliases are other names users know the LB by ("gke", "eks"); the
	// doctor accepts them, Service annotations name the profile itself.
	Aliases     []string `json:"aliases,omitempty"`
	Description string   `json:"description,omitempty"`
	Mode        Mode     `json:"mode"`
	// Historical says why the profile describes an LB that can no longer be
	// created (kept for the incident it explains); empty for current ones.
	Historical string `json:"historical,omitempty"`
	// HealthCheck is the check of a Service with externalTrafficPolicy
	// Local (the healthCheckNodePort, which follows the node's local
	// endpoints): the one every drain incident is about.
	HealthCheck HealthCheck `json:"healthCheck"`
	// ClusterHealthCheck is the check of a Service with
	// externalTrafficPolicy Cluster when it differs (AWS and Azure probe the
	// traffic port with other timing); nil means HealthCheck.
	ClusterHealthCheck *HealthCheck `json:"clusterHealthCheck,omitempty"`
	Eligibility        Eligibility  `json:"eligibility"`
	Flows              Flows        `json:"flows"`
	NoHealthyBackends  NoHealthy    `json:"noHealthyBackends"`
	// SessionAffinity is what a Service's ClientIP affinity becomes at the
	// LB; empty is AffinityIgnored.
	SessionAffinity SessionAffinity `json:"sessionAffinity,omitempty"`
	L7              *L7             `json:"l7,omitempty"`
	// Pods is how a Pod-targeted profile registers targets (PodBackends).
	Pods *Pods `json:"pods,omitempty"`
	// BackendConfig: a Service may tune the health check with a GKE
	// BackendConfig (WithBackendConfig), as GKE's Ingress LBs let it.
	BackendConfig bool `json:"backendConfig,omitempty"`
	// TimingOnly: the cloud LB does not run the profile although its mode
	// is one it runs, because the vendor's flows are not sourced; only its
	// health-check timing is modelled (the doctor, the fixtures). Its
	// flows, noHealthyBackends and the timeout <= interval rule are not
	// required then.
	TimingOnly bool              `json:"timingOnly,omitempty"`
	Sources    map[string]string `json:"sources,omitempty"`
}

// HealthCheckFor returns the check the LB runs for a Service with the given
// externalTrafficPolicy ("" is Cluster, the API default).
func (p Profile) HealthCheckFor(policy corev1.ServiceExternalTrafficPolicy) HealthCheck {
	if policy != corev1.ServiceExternalTrafficPolicyLocal && p.ClusterHealthCheck != nil {
		return *p.ClusterHealthCheck
	}
	return p.HealthCheck
}

// RemovalLag is the longest time the LB keeps sending new connections to a
// node after its last local endpoint stopped serving, for a Service with
// externalTrafficPolicy Local (HealthCheck.DetectionTime).
func (p Profile) RemovalLag() time.Duration { return p.HealthCheck.DetectionTime() }

// LongestRemovalLag is RemovalLag over both traffic policies: how long a
// caller must wait for the LB to have noticed any node that stopped serving.
func (p Profile) LongestRemovalLag() time.Duration {
	return max(p.RemovalLag(), p.HealthCheckFor(corev1.ServiceExternalTrafficPolicyCluster).DetectionTime())
}

// AdditionLag is the longest time before the LB sends traffic to a node that
// started serving (HealthCheck.AdditionTime).
func (p Profile) AdditionLag() time.Duration { return p.HealthCheck.AdditionTime() }

// FollowsServing reports whether the LB picks nodes from the EndpointSlices'
// serving condition instead of a health check (TargetServing): there a
// terminating Pod that stays ready keeps traffic on its node until it exits,
// so the readiness probe, not the Pod's deletion, is what moves the LB.
func (p Profile) FollowsServing() bool { return p.HealthCheck.Target == TargetServing }

// Emulated reports whether zerodrop's cloud LB can run the profile (modes l4
// and l7, with node or Pod targets, unless TimingOnly); the others exist for
// their timing (the doctor, the fixtures) and for the LB that implements
// them (MetalLB for announce).
func (p Profile) Emulated() bool {
	return (p.Mode == ModeL4 || p.Mode == ModeL7) && !p.TimingOnly
}

// ReadinessGate is the vendor's pod readiness gate, nil when it has none.
func (p Profile) ReadinessGate() *ReadinessGate {
	if p.Pods == nil {
		return nil
	}
	return p.Pods.ReadinessGate
}

// PodBackends reports whether the LB's targets are the Service's Pods
// (container-native load balancing: GKE NEG, AWS IP targets) instead of
// nodes and kube-proxy: its health check asks each Pod.
func (p Profile) PodBackends() bool { return p.HealthCheck.Target == TargetPod }

// L7 backend kinds.
const (
	L7BackendNodes = "nodes"
	L7BackendPods  = "pods"
)

// APIVersion is the version of the profile format this zerodrop reads and
// writes. A change that would make an older zerodrop misread a file
// bumps it, so a file never means two things.
const APIVersion = "zerodrop.dev/lb-profile/v1"

// Parse reads one profile file and validates it. Unknown fields are errors,
// so a typo in a user's profile does not silently fall back to a default,
// and so is a format version this zerodrop does not read.
func Parse(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Profile{}, fmt.Errorf("parse profile: %w", err)
	}
	switch p.APIVersion {
	case "":
		p.APIVersion = APIVersion
	case APIVersion:
	default:
		return Profile{}, fmt.Errorf("profile %q: apiVersion %q: this zerodrop reads %s", p.Name, p.APIVersion, APIVersion)
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
	case ModeL4, ModeL7, ModeAnnounce, ModeProxy:
	default:
		bad("mode %q: want l4, l7, announce or proxy", p.Mode)
	}
	p.validateHealthCheck("healthCheck", p.HealthCheck, bad)
	if c := p.ClusterHealthCheck; c != nil {
		p.validateHealthCheck("clusterHealthCheck", *c, bad)
		if c.Target == TargetServing || c.Target == TargetPod {
			bad("clusterHealthCheck.target %s: only healthCheck may follow endpoints or Pods", c.Target)
		}
	}
	h := p.HealthCheck
	e := p.Eligibility
	if (len(e.PoolAnnotations) > 0 || e.DefaultPool != "") && e.PoolLabel == "" {
		bad("eligibility.poolLabel is needed with poolAnnotations/defaultPool")
	}
	if p.Mode == ModeAnnounce && h.Target != TargetServing {
		bad("mode announce needs healthCheck.target %s", TargetServing)
	}
	if p.Emulated() {
		p.validateFlows(bad)
	}
	if p.Mode == ModeL7 && p.L7 == nil {
		bad("mode l7 needs an l7 section")
	}
	if p.L7 != nil {
		switch p.L7.Backends {
		case "", L7BackendNodes:
			if h.Target == TargetPod {
				bad("healthCheck.target %s needs l7.backends %s", TargetPod, L7BackendPods)
			}
		case L7BackendPods:
			if h.Target != TargetPod {
				bad("l7.backends %s needs healthCheck.target %s", L7BackendPods, TargetPod)
			}
		default:
			bad("l7.backends %q: want %s or %s", p.L7.Backends, L7BackendNodes, L7BackendPods)
		}
	}
	switch {
	case p.PodBackends() && p.Pods == nil:
		bad("healthCheck.target %s needs a pods section (pods.register)", TargetPod)
	case p.PodBackends() && p.ClusterHealthCheck != nil:
		bad("clusterHealthCheck: a Pod-targeted LB checks each Pod the same way whatever the traffic policy")
	case !p.PodBackends() && p.Pods != nil:
		bad("pods section needs healthCheck.target %s", TargetPod)
	case p.Pods != nil && p.Pods.Register != RegisterReady && p.Pods.Register != RegisterNotTerminating:
		bad("pods.register %q: want %s or %s", p.Pods.Register, RegisterReady, RegisterNotTerminating)
	}
	if g := p.ReadinessGate(); g != nil {
		if msgs := validation.IsQualifiedName(g.ConditionType); len(msgs) > 0 || !strings.Contains(g.ConditionType, "/") {
			bad("pods.readinessGate.conditionType %q: want a prefixed condition type (domain/name): %s", g.ConditionType, strings.Join(msgs, "; "))
		}
		switch {
		case g.Injected != GateInjectedAlways && g.Injected != GateInjectedNamespaceLabel:
			bad("pods.readinessGate.injected %q: want %s or %s", g.Injected, GateInjectedAlways, GateInjectedNamespaceLabel)
		case (g.Injected == GateInjectedNamespaceLabel) != (g.NamespaceLabel != ""):
			bad("pods.readinessGate.namespaceLabel %q: wanted (key=value) exactly when injected is %s", g.NamespaceLabel, GateInjectedNamespaceLabel)
		case g.NamespaceLabel != "":
			k, v, ok := strings.Cut(g.NamespaceLabel, "=")
			if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); !ok || len(msgs) > 0 {
				bad("pods.readinessGate.namespaceLabel %q: want key=value of a label: %s", g.NamespaceLabel, strings.Join(msgs, "; "))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("profile %q: %w", p.Name, err)
	}
	return nil
}

func (p Profile) validateHealthCheck(field string, h HealthCheck, bad func(string, ...any)) {
	switch h.Target {
	case TargetKubeProxy, TargetTrafficPort:
	case TargetServing:
		if p.Mode != ModeAnnounce {
			bad("%s.target %s belongs to mode announce", field, TargetServing)
		}
	case TargetPod:
		if h.Path != "" && !strings.HasPrefix(h.Path, "/") {
			bad("%s.path %q: target %s needs an absolute path, or none for a TCP check", field, h.Path, h.Target)
		}
		if p.Mode != ModeL4 && p.Mode != ModeL7 {
			bad("%s.target %s needs mode l4 or l7", field, h.Target)
		}
	case TargetNodePort, TargetFixedPort:
		if !strings.HasPrefix(h.Path, "/") {
			bad("%s.path %q: target %s needs an absolute path", field, h.Path, h.Target)
		}
		if h.Target == TargetFixedPort && (h.Port < 1 || h.Port > 65535) {
			bad("%s.port %d: target %s needs a port", field, h.Port, h.Target)
		}
	default:
		bad("%s.target %q: want kube-proxy, traffic-port, nodeport, pod, port or %s", field, h.Target, TargetServing)
	}
	if h.FromReadinessProbe && h.Target != TargetPod && h.Target != TargetNodePort {
		bad("%s.fromReadinessProbe: only an HTTP check of the Pod or its NodePort (target pod or nodeport) is built from a readiness probe", field)
	}
	if h.Interval.D() <= 0 {
		bad("%s.interval must be > 0", field)
	}
	// The cloud LB sends one check per interval and waits at most that
	// long; a profile it does not run may say what its vendor does.
	if h.Timeout.D() <= 0 || (p.Emulated() && h.Timeout.D() > h.Interval.D()) {
		bad("%s.timeout %v must be > 0 and <= interval %v", field, h.Timeout.D(), h.Interval.D())
	}
	if h.HealthyThreshold < 1 || h.UnhealthyThreshold < 1 {
		bad("%s thresholds must be >= 1 (healthy %d, unhealthy %d)", field, h.HealthyThreshold, h.UnhealthyThreshold)
	}
}

// validateFlows checks what the cloud LB needs to run the profile; the
// modes it does not emulate are modelled by their timing alone.
func (p Profile) validateFlows(bad func(string, ...any)) {
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
	switch cmp.Or(f.AfterDrain, FlowClose) {
	case FlowClose:
	case FlowKeep:
		if f.OnRemoved != FlowDrain && f.OnUnhealthy != FlowDrain {
			bad("flows.afterDrain keep needs a drain (onRemoved or onUnhealthy drain)")
		}
	default:
		bad("flows.afterDrain %q: want close or keep", f.AfterDrain)
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
	switch p.SessionAffinity {
	case AffinityClientIP, AffinityIgnored, AffinityRefused, "":
	default:
		bad("sessionAffinity %q: want %s, %s or %s", p.SessionAffinity, AffinityClientIP, AffinityIgnored, AffinityRefused)
	}
}

// Refuses returns why the vendor's provider builds no LB for svc, or nil.
func (p Profile) Refuses(svc *corev1.Service) error {
	if p.SessionAffinity == AffinityRefused && svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		return fmt.Errorf("profile %s: unsupported load balancer affinity %s (the provider refuses the Service: %s)", p.Name, svc.Spec.SessionAffinity, p.Sources["sessionAffinity"])
	}
	return nil
}

// KeepsClientOnNode reports whether the LB keeps every connection of one
// client address on one node for svc.
func (p Profile) KeepsClientOnNode(svc *corev1.Service) bool {
	return p.SessionAffinity == AffinityClientIP && svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
}

// Set is a set of profiles by name.
type Set map[string]Profile

// Stock returns the profiles shipped in clusters/lb/profiles.
func Stock() (Set, error) {
	ps, err := stock()
	if err != nil {
		return nil, err
	}
	out := make(Set, len(ps))
	for k, p := range ps {
		out[k] = p.clone()
	}
	return out, nil
}

// stock is the embedded profiles, parsed once: every fixture's default
// and every cell of a plan asks for them, and parsing them each time was
// four fifths of a plan's time. Callers get clones (Stock).
var stock = sync.OnceValues(func() (Set, error) { return loadFS(FS, ".") })

// clone is p sharing no slice, map or pointer with the parsed set, so a
// caller that changes its copy changes no one else's.
func (p Profile) clone() Profile {
	p.Aliases = slices.Clone(p.Aliases)
	p.Eligibility.PoolAnnotations = slices.Clone(p.Eligibility.PoolAnnotations)
	p.Sources = maps.Clone(p.Sources)
	if p.ClusterHealthCheck != nil {
		c := *p.ClusterHealthCheck
		p.ClusterHealthCheck = &c
	}
	if p.L7 != nil {
		c := *p.L7
		p.L7 = &c
	}
	if p.Pods != nil {
		c := *p.Pods
		if c.ReadinessGate != nil {
			g := *c.ReadinessGate
			c.ReadinessGate = &g
		}
		p.Pods = &c
	}
	return p
}

// MustStock returns the stock profile called name and panics if there is
// none: for names written in code (fixtures, defaults), which the package's
// tests check against the stock set.
func MustStock(name string) Profile {
	ps, err := stock()
	if err != nil {
		panic(fmt.Sprintf("stock LB profiles are broken (a build defect): %v", err))
	}
	p, ok := ps[name]
	if !ok {
		panic(fmt.Sprintf("%q is not a stock LB profile; known: %s", name, strings.Join(ps.Names(), ", ")))
	}
	// Only the one profile asked for is copied, not the whole set.
	return p.clone()
}

// Load returns the stock profiles overlaid with every *.yaml file of dir
// (dir may be empty: stock only).
func Load(dir string) (Set, error) {
	ps, err := Stock()
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
	return ps, checkAliases(ps)
}

func loadFS(fsys fs.FS, dir string) (Set, error) {
	names, err := fs.Glob(fsys, filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	ps := Set{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		p, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if want := strings.TrimSuffix(filepath.Base(n), ".yaml"); p.Name != want {
			return nil, fmt.Errorf("%s: name %q must equal the file name %q", n, p.Name, want)
		}
		ps[p.Name] = p
	}
	return ps, checkAliases(ps)
}

// checkAliases refuses an alias that is another profile's name or alias, so
// Find has one answer.
func checkAliases(ps Set) error {
	owner := map[string]string{}
	for _, n := range ps.Names() {
		for _, a := range ps[n].Aliases {
			if a != strings.ToLower(a) {
				return fmt.Errorf("profile %s: alias %q must be lower case", n, a)
			}
			if _, clash := ps[a]; clash {
				return fmt.Errorf("profile %s: alias %q is the name of another profile", n, a)
			}
			if o, dup := owner[a]; dup {
				return fmt.Errorf("profiles %s and %s both claim alias %q", o, n, a)
			}
			owner[a] = n
		}
	}
	return nil
}

// Find returns the profile whose name or one of whose aliases is name
// (case-insensitive).
func (ps Set) Find(name string) (Profile, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if p, ok := ps[n]; ok {
		return p, true
	}
	for _, p := range ps {
		if slices.Contains(p.Aliases, n) {
			return p, true
		}
	}
	return Profile{}, false
}

// Names lists the profile names, sorted.
func (ps Set) Names() []string {
	out := make([]string, 0, len(ps))
	for n := range ps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Emulated lists the names of the profiles the cloud LB can run, sorted.
func (ps Set) Emulated() []string {
	var out []string
	for _, n := range ps.Names() {
		if ps[n].Emulated() {
			out = append(out, n)
		}
	}
	return out
}

// Lookup returns the profile the cloud LB runs for a Service: the one its
// annotation names, or def without it. A profile the cloud LB does not
// emulate is an error.
func (ps Set) Lookup(annotations map[string]string, def string) (Profile, error) {
	name := def
	if v := annotations[contract.LBProfileAnnotation]; v != "" {
		name = v
	}
	p, ok := ps[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown LB profile %q (annotation %s); known: %s", name, contract.LBProfileAnnotation, strings.Join(ps.Emulated(), ", "))
	}
	if !p.Emulated() {
		return Profile{}, fmt.Errorf("LB profile %q (mode %s) is not one the cloud LB emulates; it runs: %s", name, p.Mode, strings.Join(ps.Emulated(), ", "))
	}
	return p, nil
}
