package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/internal/atomicfile"
)

// SchemaVersion identifies the layout of Report. Readers should refuse a
// version they do not know rather than guess.
const SchemaVersion = "zerodrop.dev/report/v1"

// Status is a verdict outcome.
type Status string

const (
	// Pass means every criterion of the scenario held.
	Pass Status = "PASS"
	// Fail means the run completed and at least one criterion did not hold.
	Fail Status = "FAIL"
	// Error means the run itself broke (no results, truncated run file, load
	// failure) so the numbers cannot support a PASS or a FAIL.
	Error Status = "ERROR"
)

// worse orders statuses so that combining verdicts keeps the most severe.
func (s Status) rank() int {
	switch s {
	case Pass:
		return 0
	case Fail:
		return 1
	default:
		return 2
	}
}

// Known reports whether s is one of PASS, FAIL and ERROR.
func (s Status) Known() bool { return s == Pass || s == Fail || s == Error }

// Worst returns the more severe of s and o (ERROR > FAIL > PASS).
func Worst(s, o Status) Status {
	if o.rank() > s.rank() {
		return o
	}
	return s
}

// Role says whether a scenario's verdict counts toward the suite's outcome.
type Role string

const (
	// RoleAssertion scenarios fail the suite when their verdict is not PASS.
	RoleAssertion Role = "assertion"
	// RoleDocumentation scenarios (for example the naive profiles that are
	// expected to drop traffic) are measured and reported but never fail the
	// suite; their verdict documents what happens.
	RoleDocumentation Role = "documentation"
)

// Outcome labels for documentation scenarios. A documentation scenario
// measures a known hazard; calling its result PASS would read as "safe".
const (
	OutcomeHazardReproduced    = "hazard reproduced"
	OutcomeHazardNotReproduced = "hazard not reproduced"
)

// CheckLoad is the check that judges the load generator's delivery: ERROR
// when it did not keep its schedule, so some span was not measured.
const CheckLoad = "load"

// CheckGround is the still-ground check: ERROR when a request failed while
// nothing was being disrupted (before the run's disruption event, or in an
// undisturbed run), since what dropped it is not what the run disrupts.
const CheckGround = "ground"

// CheckControl is the control check: ERROR when the control of the cell's
// column (EventControl) dropped a request or did not pass.
const CheckControl = "control"

// CheckExplained is the every-window-explained check
// (Criteria.ExplainWithinMs): ERROR when a failure window after the
// disruption began has no event of it near enough to be its cause.
const CheckExplained = "explained"

// CheckLimit is the limit's-own-windows check (Criteria.LimitOpens): ERROR
// when a failure window of a cell documenting a platform limit is not
// opened by an event of the limit's mechanism.
const CheckLimit = "limit"

// CheckEvidence is the evidence check a reader of report.json adds: ERROR
// when the scenario's run file is missing, since a verdict that cannot be
// recomputed from its figures is a claim, not a measurement. (A run file
// that contradicts report.json or its signature is refused outright.)
const CheckEvidence = "evidence"

// Outcome is a scenario's result in the words every output uses (console,
// Markdown, HTML, JUnit): an assertion's verdict status. For a documentation
// scenario: "hazard reproduced" when the run dropped requests or a criterion
// did not hold, even if the load generator missed some span (a hazard seen is
// seen; an unmeasured span cannot take it back); "hazard not reproduced" when
// it measured neither and measured everything; ERROR when the run broke, or
// when a span went unmeasured and nothing was seen (the hazard may have been
// there).
func (sc *Scenario) Outcome() string {
	if sc.Role != RoleDocumentation {
		return string(sc.Verdict.Status)
	}
	seen := sc.Results.Dropped > 0 || sc.Verdict.Status == Fail
	onlyUnmeasured := true // every ERROR reason is the load check
	for _, r := range sc.Verdict.Reasons {
		switch {
		case r.Status == Fail:
			seen = true
		case r.Status == Error && r.Check != CheckLoad:
			onlyUnmeasured = false
		}
	}
	switch {
	case sc.Verdict.Status == Error && !(seen && onlyUnmeasured):
		return string(Error)
	case seen:
		return OutcomeHazardReproduced
	default:
		return OutcomeHazardNotReproduced
	}
}

// Expectation is where a documentation scenario's hazard is expected:
// Outcome is OutcomeHazardReproduced or OutcomeHazardNotReproduced, or
// empty when either may happen (a platform limit that depends on timing the
// workload does not control); Why is the hazard, or the mechanism that
// prevents it on this LB.
type Expectation struct {
	Outcome string `json:"outcome,omitempty"`
	Why     string `json:"why"`
}

// Unexpected reports whether a documentation scenario's measured outcome
// differs from its expected one (a run that broke is an ERROR, not a
// surprise about the hazard).
func (sc *Scenario) Unexpected() bool {
	if sc.Role != RoleDocumentation || sc.Expected == nil || sc.Expected.Outcome == "" {
		return false
	}
	out := sc.Outcome()
	return out != string(Error) && out != sc.Expected.Outcome
}

// OutcomeText says what happened in a documentation scenario, never
// empty: "hazard reproduced: <what was measured>" or "hazard not reproduced
// on <LB>: <the mechanism that prevents it>", flagged when it was not the
// expected outcome. An assertion's text is its status and first failing
// reason.
func (sc *Scenario) OutcomeText() string {
	out := sc.Outcome()
	if sc.Role != RoleDocumentation || out == string(Error) {
		for _, r := range sc.Verdict.Reasons {
			if r.Status != Pass {
				return out + ": " + r.Message
			}
		}
		return fmt.Sprintf("%s: %d requests, every criterion held", out, sc.Results.Total)
	}
	lb := sc.Labels["lb"]
	if lb == "" {
		lb = "this LB"
	}
	flag := ""
	if sc.Unexpected() {
		flag = fmt.Sprintf(" (UNEXPECTED: expected %s)", sc.Expected.Outcome)
	}
	if out == OutcomeHazardReproduced {
		var found []string
		if sc.Results.Dropped > 0 {
			found = append(found, fmt.Sprintf("%d of %d requests dropped in %d failure window(s)",
				sc.Results.Dropped, sc.Results.Total, len(sc.FailureWindows)))
		}
		for _, r := range sc.Verdict.Reasons {
			// The dropped check's own message would repeat the figure above.
			if r.Status == Fail && !(r.Check == "dropped" && sc.Results.Dropped > 0) {
				found = append(found, r.Message)
			}
		}
		return out + " on " + lb + flag + ": " + strings.Join(found, "; ")
	}
	why := fmt.Sprintf("0 of %d requests dropped and every criterion held", sc.Results.Total)
	if sc.Expected != nil && sc.Expected.Outcome == OutcomeHazardNotReproduced {
		why = sc.Expected.Why
	} else if sc.Expected != nil && sc.Expected.Outcome == "" {
		why += " this time (" + sc.Expected.Why + ")"
	}
	return out + " on " + lb + flag + ": " + why
}

// OverridesText is the criteria a reader overrode, as compact JSON
// ({"maxDropped":1000}); "" when the run file's own criteria decided.
func (sc *Scenario) OverridesText() string {
	if sc.CriteriaOverrides == nil {
		return ""
	}
	b, err := json.Marshal(sc.CriteriaOverrides)
	if err != nil {
		return "(unprintable overrides)"
	}
	return string(b)
}

// Report is the top level of report.json.
type Report struct {
	SchemaVersion string  `json:"schemaVersion"`
	Run           RunMeta `json:"run"`
	// Implementation and ScenarioSet say what was tested with which
	// scenarios, for a vendor's submission; nil when nobody said.
	Implementation *Implementation `json:"implementation,omitempty"`
	ScenarioSet    *ScenarioSet    `json:"scenarioSet,omitempty"`
	Summary        Summary         `json:"summary"`
	Scenarios      []Scenario      `json:"scenarios"`
}

// RunMeta describes the environment of the whole run.
type RunMeta struct {
	ToolVersion       string `json:"toolVersion"`
	Provider          string `json:"provider"`                    // "kind", "existing", "none" (plain URL load)
	KubernetesVersion string `json:"kubernetesVersion,omitempty"` // server version, e.g. "v1.34.0"
	// KubeProxyFeatureGates are the feature gates kube-proxy's configuration
	// sets, as read from the cluster ("ProxyTerminatingEndpoints=false"),
	// empty when it sets none or they could not be read: a release measured
	// with a gate changed is another environment than the release as shipped.
	KubeProxyFeatureGates string    `json:"kubeProxyFeatureGates,omitempty"`
	LBImplementation      string    `json:"lbImplementation,omitempty"` // "metallb", "zerodrop-cloudlb", ...
	Start                 time.Time `json:"start"`
	End                   time.Time `json:"end"`
	// Host describes the machine that generated load, free-form
	// ("2 cores, load average 1.2"), because timing figures depend on it.
	Host string `json:"host,omitempty"`
}

// Summary aggregates the scenario verdicts. Status counts assertion scenarios
// only; documentation scenarios are tallied separately.
type Summary struct {
	Status        Status `json:"status"`
	Scenarios     int    `json:"scenarios"`
	Passed        int    `json:"passed"`
	Failed        int    `json:"failed"`
	Errored       int    `json:"errored"`
	Documentation int    `json:"documentation"`
	// Remeasured counts the scenarios measured more than once because the
	// load generator spoiled a measurement (Scenario.Remeasured).
	Remeasured int `json:"remeasured,omitempty"`
	// Submission is the paragraph a vendor attaches to a submission
	// (Report.SubmissionSummary), written with the counts above.
	Submission string `json:"submission,omitempty"`
}

// ScenarioSpec is what a scenario is and what it asserts, known before it
// runs. It is embedded (flattened in JSON) in Scenario and recorded in the run
// file's header so that a run can be re-analysed on its own.
type ScenarioSpec struct {
	Name        string `json:"name"`
	Role        Role   `json:"role"`
	Description string `json:"description,omitempty"`
	// Seeds are the incidents the scenario reproduces, by the identifiers
	// docs/incidents.md gives them (e.g. "drain-local-pdb").
	Seeds []string `json:"seeds,omitempty"`
	// PlatformLimit, on a documentation scenario, is the measured platform
	// behaviour that makes zero drops impossible for it on this LB: the
	// hardened profile runs, everything is reported, but the platform, not
	// the workload, decides the outcome.
	PlatformLimit string `json:"platformLimit,omitempty"`
	// Expected is a documentation scenario's expected outcome on its LB,
	// written next to the scenario before it runs, so a hazard that
	// unexpectedly appears or disappears is flagged (Unexpected).
	Expected *Expectation      `json:"expected,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Config is the scenario's knobs as strings
	// ("externalTrafficPolicy": "Local", "preStopSleep": "5s").
	Config   map[string]string `json:"config,omitempty"`
	Criteria Criteria          `json:"criteria"`
}

// Criteria are the pass criteria of a scenario. A nil pointer or an empty
// value means "not checked"; every check that is set appears in the verdict's
// reasons, passing or not.
type Criteria struct {
	// MaxDropped is the largest number of dropped requests (errors plus
	// non-2xx) that still passes. Zero-drop scenarios set it to 0.
	MaxDropped *int64 `json:"maxDropped,omitempty"`
	// MaxDroppedRatio is the same as a fraction of all requests (0..1).
	MaxDroppedRatio *float64 `json:"maxDroppedRatio,omitempty"`
	// ExpectedClientIP, when set, must be the client_ip the echo server saw on
	// every attributed request (source-IP preservation).
	ExpectedClientIP string `json:"expectedClientIP,omitempty"`
	// ForbiddenClientIP, when set, must never be the client_ip seen; used to
	// assert that an address is hidden (e.g. Cluster policy SNAT).
	ForbiddenClientIP string `json:"forbiddenClientIP,omitempty"`
	// ForwardedClientIP, when set, must be one of the addresses in the
	// X-Forwarded-For header of every attributed response: behind an HTTP
	// proxy the Pod's peer is the proxy, and the client's address is what
	// the proxy appends to that header.
	ForwardedClientIP string `json:"forwardedClientIP,omitempty"`
	// ExpectedPods lists pods that exist during the run. They are reported
	// with zero traffic if no result names them, since a pod that got nothing
	// never appears in the results.
	ExpectedPods []string `json:"expectedPods,omitempty"`
	// RequireAllPodsServed fails the scenario when any expected pod got no
	// traffic.
	RequireAllPodsServed bool `json:"requireAllPodsServed,omitempty"`
	// MinPodShare fails the scenario when an expected (or seen) pod got less
	// than this fraction of the attributed requests.
	MinPodShare *float64 `json:"minPodShare,omitempty"`
	// MaxServedUnready and MaxServedDraining bound the requests answered by a
	// pod that reported itself unready or draining.
	MaxServedUnready  *int64 `json:"maxServedUnready,omitempty"`
	MaxServedDraining *int64 `json:"maxServedDraining,omitempty"`
	// MaxP99Ms bounds the 99th percentile latency of all requests.
	MaxP99Ms *float64 `json:"maxP99Ms,omitempty"`
	// MinRequests is the fewest results a run must have to be judged at all;
	// fewer means the load broke and the verdict is ERROR. Zero means 1.
	MinRequests int64 `json:"minRequests,omitempty"`
	// WindowGapMs merges failures closer than this into one failure window.
	// Zero means the default (1000 ms). Only the run file's header sets it:
	// windows are built while the file is read.
	WindowGapMs float64 `json:"windowGapMs,omitempty"`
	// ServedAfterRemoval bounds what one pod may still answer after its
	// endpoint was removed: the keep-alive hazard, where connections that
	// kube-proxy's NAT pinned to the pod keep feeding it.
	ServedAfterRemoval *AfterRemovalLimit `json:"servedAfterRemoval,omitempty"`
	// Undisturbed says the run disrupts nothing (a control, or a scenario
	// that only observes): every request that fails in it is the ground
	// moving, an ERROR of the run, never a FAIL of the workload. Runs that
	// disrupt something mark where with an EventDisruption instead.
	Undisturbed bool `json:"undisturbed,omitempty"`
	// ExplainWithinMs, when set, asks every failure window after the
	// disruption began to be explained: an event of the disruption (from
	// the harness, Kubernetes, the LB or the user; not the load
	// generator's own) inside the window or at most this long before its
	// start, the longest a cause takes to show as drops (the LB's own
	// lag, kube-proxy's sync). An event that opens a lasting state counts
	// for all of it: a machine's shutdown (EventNodeShutdown) lasts until
	// the run saw the same node's machine off (EventNodeOff). A window with
	// none is unexplained, and the run ERROR: what dropped it is not what
	// was watched.
	ExplainWithinMs *float64 `json:"explainWithinMs,omitempty"`
	// LimitOpens, set on a cell that documents a platform limit instead of
	// asserting, are the event types that open the limit's failure windows
	// (its mechanism: the LB marking a node unhealthy, MetalLB's announcing
	// node losing its endpoint). Every window after the disruption began
	// needs one of them inside it or within ExplainWithinMs before it (a
	// shutdown lasting until its node-off, as for ExplainWithinMs); a
	// window without is not the limit's, so the limit cannot excuse it:
	// the limit check is then ERROR (what dropped is unknown, or the limit's
	// mechanism is wrong).
	LimitOpens []string `json:"limitOpens,omitempty"`
}

// AfterRemovalLimit is the criterion on one pod's answers after its endpoint
// was removed.
type AfterRemovalLimit struct {
	// Pod is the pod the run took out of its Service's endpoints.
	Pod string `json:"pod"`
	// GraceMs is how long after the removal answers are still allowed: for
	// kube-proxy to apply the change on every node.
	GraceMs float64 `json:"graceMs"`
	// Max is how many answers to requests sent after the grace are allowed.
	Max int64 `json:"max"`
}

// AfterRemoval is what one pod answered after its endpoint was removed.
type AfterRemoval struct {
	Pod string `json:"pod"`
	// EndpointRemoved is when the run file first records the pod's endpoint
	// removed (or terminating); absent when it never does.
	EndpointRemoved *time.Time `json:"endpointRemoved,omitempty"`
	GraceMs         float64    `json:"graceMs"`
	// Served counts 2xx answers from the pod to requests sent after the
	// removal plus the grace; Reused came over a reused keep-alive
	// connection, NewConnections on a connection's first request.
	Served         int64 `json:"served"`
	Reused         int64 `json:"reused"`
	NewConnections int64 `json:"newConnections"`
}

// Int64 returns a pointer to v, for the optional Criteria fields.
func Int64(v int64) *int64 { return &v }

// Float64 returns a pointer to v, for the optional Criteria fields.
func Float64(v float64) *float64 { return &v }

// The load's protocols (LoadSettings.Protocol).
const (
	// ProtocolHTTP1 is HTTP/1.1: one request at a time on a connection.
	ProtocolHTTP1 = "http/1.1"
	// ProtocolH2C is HTTP/2 over cleartext TCP with prior knowledge (RFC
	// 9113, section 3.3): many requests at once on a connection, as streams.
	ProtocolH2C = "h2c"
	// ProtocolGRPC is gRPC unary calls over h2c: one request, one answer,
	// each call a stream on a kept-alive HTTP/2 connection, its outcome a
	// gRPC status (gRPC over HTTP/2, grpc/grpc doc/PROTOCOL-HTTP2.md).
	ProtocolGRPC = "grpc"
	// ProtocolGRPCStream is gRPC server streaming over h2c: each scheduled
	// request opens a stream of several messages, and a stream whose
	// messages stop before the last one, or whose status is not OK, is
	// dropped work (Result.Messages against Result.WantMessages).
	ProtocolGRPCStream = "grpc-stream"
	// ProtocolWebSocket is a WebSocket session (RFC 6455) per request:
	// the echo server's messages on one long-lived connection each, to
	// the server's close frame; a session cut without one is dropped.
	ProtocolWebSocket = "websocket"
)

// Protocols are the load's protocols, in the order the CLI lists them.
var Protocols = []string{ProtocolHTTP1, ProtocolH2C, ProtocolGRPC, ProtocolGRPCStream, ProtocolWebSocket}

// ProtocolIsGRPC says whether protocol is one of gRPC's.
func ProtocolIsGRPC(protocol string) bool {
	return protocol == ProtocolGRPC || protocol == ProtocolGRPCStream
}

// ProtocolMultiplexed says whether protocol carries many requests at once
// on one connection (HTTP/2, and gRPC over it): its requests need
// keep-alive, and its server ends a connection with GOAWAY.
func ProtocolMultiplexed(protocol string) bool {
	return protocol == ProtocolH2C || ProtocolIsGRPC(protocol)
}

// ProtocolLongLived says whether protocol's connections outlive a
// request by design (HTTP/2 and gRPC carry many; a WebSocket holds one
// session): keep-alive is no setting of theirs.
func ProtocolLongLived(protocol string) bool {
	return ProtocolMultiplexed(protocol) || protocol == ProtocolWebSocket
}

// ProtocolTitle is how a report names protocol's rows ("HTTP/2 (h2c)").
func ProtocolTitle(protocol string) string {
	switch protocol {
	case ProtocolH2C:
		return "HTTP/2 (h2c)"
	case ProtocolGRPC:
		return "gRPC"
	case ProtocolGRPCStream:
		return "gRPC streams"
	case ProtocolWebSocket:
		return "WebSocket"
	}
	return "HTTP/1.1"
}

// ProtocolName is protocol by name, the default's too: "" is HTTP/1.1.
func ProtocolName(protocol string) string {
	if protocol == "" {
		return ProtocolHTTP1
	}
	return protocol
}

// LoadSettings are the parameters the load generator ran with.
type LoadSettings struct {
	Targets     []string `json:"targets"`
	Host        string   `json:"host,omitempty"`
	Rate        int      `json:"rate"`       // requests per second
	DurationMs  float64  `json:"durationMs"` // 0: open-ended, stopped by the harness
	Connections int      `json:"connections"`
	// MaxConnections caps connections per target host; 0 means no cap.
	MaxConnections int  `json:"maxConnections,omitempty"`
	KeepAlive      bool `json:"keepAlive"`
	// Protocol is how the requests travelled: ProtocolHTTP1,
	// ProtocolH2C (HTTP/2 streams on kept-alive connections; a server that
	// ends one gracefully sends GOAWAY, recorded as EventGoAway),
	// ProtocolGRPC or ProtocolGRPCStream (gRPC over h2c; Stream). "" in run
	// files from before it was recorded: HTTP/1.1.
	Protocol string `json:"protocol,omitempty"`
	// StreamMessages and StreamIntervalMs are a ProtocolGRPCStream
	// stream's length: the messages each stream asks for, and the
	// server's pause before each of them.
	StreamMessages int `json:"streamMessages,omitempty"`
	// StreamEvery, with ProtocolGRPC, is how often a request was a
	// stream instead of a unary call: one in StreamEvery (0: none).
	StreamEvery      int     `json:"streamEvery,omitempty"`
	StreamIntervalMs float64 `json:"streamIntervalMs,omitempty"`
	TimeoutMs        float64 `json:"timeoutMs"`
	// IdleTimeoutMs is how long a keep-alive connection sat idle before
	// the generator closed it; a server that closes idle connections
	// sooner races the next request on them. 0 in run files from before
	// it was recorded (Go's default then: 90 s).
	IdleTimeoutMs float64 `json:"idleTimeoutMs,omitempty"`
	// RotateConnections, when set, is how many kept-alive connections the
	// generator held and used in turn, one request on each (as a proxy or
	// a client with a round-robin pool does); 0 is Go's pool, which reuses
	// the most recently used idle connection first, so the others idle out.
	RotateConnections int `json:"rotateConnections,omitempty"`
	// MaxInFlight caps the requests in flight, which bounds the load
	// generator's memory; a request due while the cap is full is not sent
	// and is recorded as unsent. 0 in run files from before the cap.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// MaxSendLagMs is the instrument's time resolution: a request sent
	// later than this after its scheduled time (or not sent at all) leaves
	// a blind span in which a failure could go unseen, so the verdict does
	// not pass it. 0 means the default, SendLagBound.
	MaxSendLagMs float64 `json:"maxSendLagMs,omitempty"`
	// Scheduling is how the kernel scheduled the load generator's threads
	// ("SCHED_RR 1", "SCHED_OTHER nice -5"): on a machine it shares with
	// the cluster it measures, what kept it on time or did not. Context
	// for a pause, not part of the verdict; "" in run files from before it.
	Scheduling string `json:"scheduling,omitempty"`
	// LocalPorts is the range new connections take their local port
	// from, each destination in turn through the whole range ("32768-60999"),
	// so a client 4-tuple comes back only after the range is used up: at
	// 200 new connections/s, 141 s, past the 120 s a node's conntrack keeps
	// an unanswered SYN's NAT binding. "" in run files from before the
	// cycle, whose new connections took whatever port the kernel gave.
	LocalPorts string `json:"localPorts,omitempty"`
}

// MinDeliveredRatio is the share of the requested rate the load must
// achieve in every whole second for a run to be judged at all: below it the
// load generator, not the target, decided what was measured.
const MinDeliveredRatio = 0.97

// DefaultMinSendLag is the floor of the default send-lag bound: below it
// the bound would flag ordinary scheduling noise of a busy host.
const DefaultMinSendLag = 50 * time.Millisecond

// SendLagBound is the largest send lag the verdict accepts: MaxSendLagMs
// when set, else three inter-request intervals but at least
// DefaultMinSendLag (200/s: 50 ms; 10/s: 300 ms).
func (l LoadSettings) SendLagBound() time.Duration {
	if l.MaxSendLagMs > 0 {
		return time.Duration(l.MaxSendLagMs * float64(time.Millisecond))
	}
	if l.Rate <= 0 {
		return DefaultMinSendLag
	}
	return max(3*time.Second/time.Duration(l.Rate), DefaultMinSendLag)
}

// Scenario is one scenario's measured outcome.
type Scenario struct {
	ScenarioSpec
	Load LoadSettings `json:"load"`
	// RunFile is the path of the run file the numbers were computed from,
	// relative to the report when possible.
	RunFile string `json:"runFile,omitempty"`
	// RunFileSHA256 is the hex SHA-256 of the run file as analysed: a
	// reader checks a report against its evidence with it (zerodrop report
	// re-analyses the file and refuses a report that disagrees).
	RunFileSHA256 string `json:"runFileSha256,omitempty"`
	// SigningKey is the ID of the key the run file's header says signs it
	// (Header.SigningKey); zerodrop report --verify-key checks the
	// signature. "" for an unsigned run file.
	SigningKey string `json:"signingKey,omitempty"`
	// SkippedLines counts run-file lines that could not be read and were
	// skipped (the verdict is ERROR then: they were not measured).
	SkippedLines int64 `json:"skippedLines,omitempty"`
	// CriteriaOverrides holds the criteria a reader replaced when analysing
	// (zerodrop analyze --max-dropped ...), only the fields replaced; nil
	// when the run file's own criteria decided. Criteria is the result.
	CriteriaOverrides *Criteria       `json:"criteriaOverrides,omitempty"`
	RunID             string          `json:"runId,omitempty"`
	Start             time.Time       `json:"start"`
	End               time.Time       `json:"end"`
	Results           Results         `json:"results"`
	FailureWindows    []FailureWindow `json:"failureWindows"`
	// Events are the run's events in time order, at most MaxEvents of them;
	// EventsOmitted counts the rest.
	Events        []Event `json:"events"`
	EventsOmitted int64   `json:"eventsOmitted,omitempty"`
	Verdict       Verdict `json:"verdict"`
	// Remeasured are earlier measurements of this scenario that the load
	// generator spoiled (LoadSpoiled), oldest first: each measured too
	// little to judge, so the scenario was measured again under a new
	// disruption. They stay in the report with their run files, findings
	// about the instrument; the verdict above is the last measurement's
	// alone.
	Remeasured []Remeasure `json:"remeasured,omitempty"`
}

// Remeasure is an earlier, spoiled measurement of a scenario: what its own
// run file gives (re-derivable from it like the scenario's).
type Remeasure struct {
	RunFile       string    `json:"runFile,omitempty"`
	RunFileSHA256 string    `json:"runFileSha256,omitempty"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Total         int64     `json:"total"`
	Dropped       int64     `json:"dropped"`
	Verdict       Verdict   `json:"verdict"`
}

// String is what the measurement was and what the load generator missed:
// "ERROR, 5984 requests, 0 dropped; the load generator could not ...".
func (m Remeasure) String() string {
	return fmt.Sprintf("%s, %d requests, %d dropped; %s", m.Verdict.Status, m.Total, m.Dropped, m.Verdict.LoadProblem())
}

// AsRemeasure is sc as an earlier measurement of itself.
func (sc *Scenario) AsRemeasure() Remeasure {
	return Remeasure{RunFile: sc.RunFile, RunFileSHA256: sc.RunFileSHA256, Start: sc.Start, End: sc.End,
		Total: sc.Results.Total, Dropped: sc.Results.Dropped, Verdict: sc.Verdict}
}

// LoadSpoiled reports whether the run's only problem was the instrument's:
// its outcome is ERROR, every ERROR reason is the load check and no
// criterion failed. Nothing it measured speaks against the target; it
// measured too little to speak at all (a span the load generator missed
// may hide a failure), so it may be measured again. A run that saw a
// failure is never LoadSpoiled: an assertion that dropped a request
// failed, and a documentation run that saw its hazard reproduced it,
// whatever the load missed besides.
func (sc *Scenario) LoadSpoiled() bool {
	if sc.Outcome() != string(Error) || sc.Results.Dropped > 0 {
		// A dropped request is a failure seen, whatever the criteria
		// allowed.
		return false
	}
	load := false
	for _, r := range sc.Verdict.Reasons {
		switch {
		case r.Status == Fail, r.Status == Error && r.Check != CheckLoad:
			return false
		case r.Status == Error:
			load = true
		}
	}
	return load
}

// Results are the totals over every result line of a run.
type Results struct {
	Total int64 `json:"total"`
	// OK counts 2xx responses.
	OK int64 `json:"ok"`
	// Dropped = Errors + Non2xx.
	Dropped int64 `json:"dropped"`
	// Errors are requests without an HTTP response to their first attempt:
	// no response at all, or one the HTTP client got only by re-sending the
	// request on its own (class "retried").
	Errors int64 `json:"errors"`
	// Non2xx are HTTP responses with a status outside 200-299.
	Non2xx int64 `json:"non2xx"`
	// ErrorClasses counts Errors by class: refused, reset, timeout, dns,
	// other, retried.
	ErrorClasses map[string]int64 `json:"errorClasses,omitempty"`
	// StatusCodes counts responses by status code ("200", "503").
	StatusCodes  map[string]int64 `json:"statusCodes,omitempty"`
	FirstSend    time.Time        `json:"firstSend"`
	LastSend     time.Time        `json:"lastSend"`
	AchievedRate float64          `json:"achievedRate"` // results per second between first and last send
	// Latency covers every result (failures included, so timeouts show up);
	// LatencyOK covers 2xx responses only.
	Latency   Latency `json:"latency"`
	LatencyOK Latency `json:"latencyOK"`
	// Unattributed counts 2xx responses whose body carried no echo-server
	// identity (no pod), so per-pod figures exclude them.
	Unattributed int64      `json:"unattributed"`
	Pods         []PodCount `json:"pods"`
	Nodes        []Count    `json:"nodes"`
	// ZeroTrafficPods are expected pods that no result named.
	ZeroTrafficPods []string `json:"zeroTrafficPods"`
	// ServedUnready counts 2xx answers from a pod reporting ready=false;
	// ServedUnreadyReused those of them that came over a reused connection
	// (conn_request > 1), the keep-alive failure mode. Same for Draining.
	ServedUnready        int64 `json:"servedUnready"`
	ServedUnreadyReused  int64 `json:"servedUnreadyReused"`
	ServedDraining       int64 `json:"servedDraining"`
	ServedDrainingReused int64 `json:"servedDrainingReused"`
	// ClientIPs counts the client_ip values the echo server reported.
	ClientIPs        []Count `json:"clientIPs"`
	ExpectedClientIP string  `json:"expectedClientIP,omitempty"`
	// ClientIPMismatches counts attributed responses whose client_ip differs
	// from ExpectedClientIP (only when one is expected).
	ClientIPMismatches int64 `json:"clientIPMismatches"`
	// ForwardedFor counts the X-Forwarded-For headers the echo server
	// reported (absent when none did); ForwardedMismatches the attributed
	// responses whose header lacks ForwardedClientIP (only when one is
	// expected).
	ForwardedFor        []Count `json:"forwardedFor,omitempty"`
	ForwardedClientIP   string  `json:"forwardedClientIP,omitempty"`
	ForwardedMismatches int64   `json:"forwardedMismatches,omitempty"`
	// Retried counts requests the HTTP client re-sent on its own after a
	// failed attempt; they are dropped (class "retried").
	Retried int64 `json:"retried"`
	// DisruptionStart is when the run's disruption began (its first
	// EventDisruption); absent in a run that marks none.
	DisruptionStart *time.Time `json:"disruptionStart,omitempty"`
	// GroundMoved counts dropped requests sent while nothing was being
	// disrupted: before DisruptionStart, or anywhere in an undisturbed run
	// (Criteria.Undisturbed). They are part of Dropped, and they make the
	// run ERROR: what dropped them is not what the run disrupts.
	GroundMoved int64 `json:"groundMoved,omitempty"`
	// Delivery is how closely the load generator kept its schedule; nil
	// when the run file says nothing about the load (no load settings).
	Delivery *Delivery `json:"delivery,omitempty"`
	// AfterRemoval is set when the criteria ask what a pod served after its
	// endpoint was removed.
	AfterRemoval *AfterRemoval `json:"afterRemoval,omitempty"`
}

// Delivery judges the instrument rather than the target: a load that fell
// behind its schedule, stalled or hit its in-flight cap did not measure the
// spans it missed, so a run with any of those is not PASS.
type Delivery struct {
	// RequestedRate is the load's rate in requests per second.
	RequestedRate float64 `json:"requestedRate"`
	// Seconds counts the whole seconds of the schedule that were judged
	// (from the load's start, by scheduled time; the last partial second
	// is left out).
	Seconds int `json:"seconds"`
	// MinSecondRate is the fewest requests sent in any judged second.
	MinSecondRate float64 `json:"minSecondRate"`
	// ShortSeconds are the judged seconds below MinDeliveredRatio of the
	// requested rate, in order (at most 100 listed; ShortSecondsTotal
	// counts them all).
	ShortSeconds      []DeliverySecond `json:"shortSeconds"`
	ShortSecondsTotal int              `json:"shortSecondsTotal"`
	// Unsent counts requests due that were never sent; Late those sent
	// more than LagBoundMs after their scheduled time.
	Unsent     int64   `json:"unsent"`
	Late       int64   `json:"late"`
	MaxLagMs   float64 `json:"maxLagMs"`
	LagBoundMs float64 `json:"lagBoundMs"`
	// Stalls are the spans (by scheduled time) with unsent or late
	// requests, merged when closer than the lag bound (at most 100 listed).
	Stalls []Stall `json:"stalls"`
}

// DeliverySecond is one second of the schedule and what was sent in it.
type DeliverySecond struct {
	Start time.Time `json:"start"`
	Sent  int64     `json:"sent"`
}

// Stall is a span of the schedule the load generator did not keep.
type Stall struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	DurationMs float64   `json:"durationMs"`
	Unsent     int64     `json:"unsent"`
	Late       int64     `json:"late"`
	MaxLagMs   float64   `json:"maxLagMs"`
	// Reason is what the load generator said about its unsent requests
	// ("in-flight cap 2048 reached", "312 ms behind schedule").
	Reason string `json:"reason,omitempty"`
	// Pause is the longest instrument-pause event near the stall: what the
	// load generator's own process measured about not running on time.
	Pause *ProcessPause `json:"pause,omitempty"`
}

// ProcessPause is an instrument-pause event as the report shows it.
type ProcessPause struct {
	Start  time.Time `json:"start"`
	LateMs float64   `json:"lateMs"`
	// Cause is "gc" (Go stopped the world), "steal" (the hypervisor ran
	// something else on the machine's CPUs), "cpu" (its threads waited for
	// a CPU other tasks held), "irq" (they waited while the CPUs served
	// interrupts more than they ran other tasks), "busy" (they ran all
	// along: the process itself wanted more CPU than it got), or
	// "unexplained" (none of these).
	Cause string `json:"cause"`
	// RunDelayMs is the time its threads waited for a CPU and ExecMs the
	// time they ran (nil: the kernel did not say); GCSTWMs the longest
	// stop-the-world pause.
	RunDelayMs *float64 `json:"runDelayMs,omitempty"`
	ExecMs     *float64 `json:"execMs,omitempty"`
	// StealMs is the machine's steal time in the span, per CPU.
	StealMs  *float64 `json:"stealMs,omitempty"`
	GCSTWMs  float64  `json:"gcStwMs"`
	GCCycles int64    `json:"gcCycles"`
	// Machine is what the machine's CPUs did in the span (nil: unknown).
	Machine *MachineCPU `json:"machine,omitempty"`
}

// MachineCPU is the machine's CPU time in a span, summed over its CPUs
// (/proc/stat, counted to about 10 ms): running tasks (user, nice,
// system; the test process's own included), serving interrupts (irq and
// softirq), idle (idle and iowait), and stolen by the hypervisor.
type MachineCPU struct {
	TasksMs float64 `json:"tasksMs"`
	// SystemMs is the part of TasksMs the kernel ran for them (a long
	// stretch of it is not preempted on a kernel without full preemption,
	// whatever a waiting task's priority).
	SystemMs float64 `json:"systemMs"`
	IRQMs    float64 `json:"irqMs"`
	IdleMs   float64 `json:"idleMs"`
	StealMs  float64 `json:"stealMs"`
}

// String is the pause in a sentence.
func (p ProcessPause) String() string {
	s := fmt.Sprintf("the test process ran %.0f ms late", p.LateMs)
	switch p.Cause {
	case "cpu":
		if p.RunDelayMs != nil {
			s += fmt.Sprintf(": its threads waited %.0f ms for a CPU that other processes held", *p.RunDelayMs)
		} else {
			s += ": its threads waited for a CPU that other processes held"
		}
	case "irq":
		if p.RunDelayMs != nil {
			s += fmt.Sprintf(": its threads waited %.0f ms for a CPU while the kernel served interrupts (network processing among them)", *p.RunDelayMs)
		} else {
			s += ": its threads waited for a CPU while the kernel served interrupts (network processing among them)"
		}
	case "busy":
		if p.RunDelayMs != nil && p.ExecMs != nil {
			s += fmt.Sprintf(": its threads ran %.0f ms and waited %.0f ms for a CPU (the test process itself was busy)", *p.ExecMs, *p.RunDelayMs)
		} else {
			s += ": its threads ran all along (the test process itself was busy)"
		}
	case "steal":
		if p.StealMs != nil {
			s += fmt.Sprintf(": the hypervisor gave %.0f ms of this machine's CPU time to others", *p.StealMs)
		} else {
			s += ": the hypervisor gave this machine's CPU time to others"
		}
	case "gc":
		s += fmt.Sprintf(": Go's garbage collector stopped it for up to %.0f ms", p.GCSTWMs)
	default:
		s += ": neither waiting for a CPU"
		if p.RunDelayMs != nil {
			s += fmt.Sprintf(" (%.0f ms)", *p.RunDelayMs)
		}
		s += fmt.Sprintf(" nor stopped by Go's garbage collector (%.0f ms, %d cycles)", p.GCSTWMs, p.GCCycles)
		if p.StealMs != nil {
			s += fmt.Sprintf(" nor by steal (%.0f ms)", *p.StealMs)
		}
		s += ": not accounted for by what it measures"
	}
	if m := p.Machine; m != nil {
		s += fmt.Sprintf(" (the machine's CPUs meanwhile, summed over them: tasks %.0f ms of which the kernel %.0f ms, interrupts %.0f ms, idle %.0f ms, stolen %.0f ms)", m.TasksMs, m.SystemMs, m.IRQMs, m.IdleMs, m.StealMs)
	}
	return s
}

// OK reports whether the load was delivered as scheduled.
func (d *Delivery) OK() bool {
	return d == nil || (d.Unsent == 0 && d.Late == 0 && d.ShortSecondsTotal == 0)
}

// Latency is a latency summary in milliseconds. Percentiles come from a
// fixed-size log-linear histogram and are the upper bound of their bucket:
// never below the true value and at most 0.8% above it. Max is exact.
type Latency struct {
	Count int64   `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// MeanMs is exact (sum / count).
	MeanMs float64 `json:"meanMs"`
}

// PodCount is one pod's share of the attributed 2xx responses.
type PodCount struct {
	Pod                  string  `json:"pod"`
	Node                 string  `json:"node,omitempty"`
	Count                int64   `json:"count"`
	Share                float64 `json:"share"`
	ServedUnready        int64   `json:"servedUnready"`
	ServedUnreadyReused  int64   `json:"servedUnreadyReused"`
	ServedDraining       int64   `json:"servedDraining"`
	ServedDrainingReused int64   `json:"servedDrainingReused"`
}

// Count is a named tally with its share of the attributed 2xx responses.
type Count struct {
	Name  string  `json:"name"`
	Count int64   `json:"count"`
	Share float64 `json:"share"`
}

// FailureWindow is a stretch of time during which requests failed, by send
// time. Failures closer together than the window gap belong to one window.
type FailureWindow struct {
	Index int       `json:"index"`
	Start time.Time `json:"start"` // send time of the first failed request
	End   time.Time `json:"end"`   // send time of the last failed request
	// DurationMs is End - Start.
	DurationMs float64 `json:"durationMs"`
	// Failed counts failed requests in the window; OK counts requests sent in
	// [Start, End] that succeeded (a partial outage has both).
	Failed int64 `json:"failed"`
	OK     int64 `json:"ok"`
	// Classes counts failures by kind: the error classes (refused, reset,
	// timeout, dns, other) and "http-NNN" for non-2xx statuses.
	Classes map[string]int64 `json:"classes"`
	// GroundMoved counts the window's failures sent while nothing was
	// being disrupted (see Results.GroundMoved).
	GroundMoved int64 `json:"groundMoved,omitempty"`
	// OpenAtEnd: the run's last request failed in this window, so the
	// window was still open when the load stopped: its end is where the
	// measurement stopped, not where the failures did, and DurationMs is a
	// lower bound.
	OpenAtEnd bool `json:"openAtEnd,omitempty"`
	// Unexplained: the window lies after the disruption began, but no event
	// of it lies inside the window or within Criteria.ExplainWithinMs
	// before it.
	Unexplained bool `json:"unexplained,omitempty"`
	// OutsideLimit: the run documents a platform limit
	// (Criteria.LimitOpens), the window lies after the disruption began,
	// and no event of the limit's mechanism lies inside it or within
	// Criteria.ExplainWithinMs before it.
	OutsideLimit bool `json:"outsideLimit,omitempty"`
	// NearestEvents are the events closest to the window: a few before it,
	// those during it and a few after, each with its offset from Start.
	NearestEvents []WindowEvent `json:"nearestEvents"`
}

// WindowEvent is an event placed relative to a failure window.
type WindowEvent struct {
	Event
	// OffsetMs is the event time minus the window start; negative before it.
	OffsetMs float64 `json:"offsetMs"`
}

// Verdict is a scenario's outcome with the reasons behind it.
type Verdict struct {
	Status  Status   `json:"status"`
	Reasons []Reason `json:"reasons"`
}

// LoadProblem is the message of the verdict's failing load check: what the
// load generator missed; "" when the check held or is absent.
func (v Verdict) LoadProblem() string {
	for _, r := range v.Reasons {
		if r.Check == CheckLoad && r.Status != Pass {
			return r.Message
		}
	}
	return ""
}

// Reason is one checked criterion (or a run problem) with the numbers it
// was decided on.
type Reason struct {
	// Check names the criterion: "run", "dropped", "dropped-ratio",
	// "client-ip", "forbidden-client-ip", "pods-served", "pod-share",
	// "served-unready", "served-draining", "p99".
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Observed and Limit are the figures compared, when the check is numeric.
	Observed *float64 `json:"observed,omitempty"`
	Limit    *float64 `json:"limit,omitempty"`
	// Windows are the indexes of the failure windows behind this reason;
	// their NearestEvents are the events tied to it.
	Windows []int `json:"windows,omitempty"`
}

// New returns an empty report with the schema version set.
func New(run RunMeta) *Report {
	return &Report{SchemaVersion: SchemaVersion, Run: run, Scenarios: []Scenario{}}
}

// Summarize recomputes Summary from the scenarios: FAIL or ERROR in an
// assertion scenario decides the suite; documentation scenarios are counted
// but do not.
func (r *Report) Summarize() {
	s := Summary{Status: Pass, Scenarios: len(r.Scenarios)}
	for _, sc := range r.Scenarios {
		if len(sc.Remeasured) > 0 {
			s.Remeasured++
		}
		if sc.Role == RoleDocumentation {
			s.Documentation++
			continue
		}
		switch sc.Verdict.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		default:
			s.Errored++
		}
		s.Status = Worst(s.Status, sc.Verdict.Status)
	}
	if s.Scenarios == 0 {
		// A report with nothing in it proves nothing.
		s.Status = Error
	}
	r.Summary = s
	r.Summary.Submission = r.SubmissionSummary()
}

// Validate checks what a reader relies on: the schema version and that every
// scenario has a name, a known role and a known verdict status.
func (r *Report) Validate() error {
	if r.SchemaVersion != SchemaVersion {
		return fmt.Errorf("report schemaVersion %q is not %q: produced by a different zerodrop version", r.SchemaVersion, SchemaVersion)
	}
	var errs []error
	if err := r.Implementation.Validate(); err != nil {
		errs = append(errs, err)
	}
	for i, sc := range r.Scenarios {
		if sc.Name == "" {
			errs = append(errs, fmt.Errorf("scenario %d has no name", i))
		}
		if sc.Role != RoleAssertion && sc.Role != RoleDocumentation {
			errs = append(errs, fmt.Errorf("scenario %q has role %q, want %q or %q", sc.Name, sc.Role, RoleAssertion, RoleDocumentation))
		}
		if !sc.Verdict.Status.Known() {
			errs = append(errs, fmt.Errorf("scenario %q has verdict status %q, want PASS, FAIL or ERROR", sc.Name, sc.Verdict.Status))
		}
	}
	return errors.Join(errs...)
}

// WriteFile writes the report as indented JSON. It writes a temporary file
// next to path and renames it, so a reader never sees half a report and a
// failed write leaves the previous report (or nothing) behind. Credentials
// are redacted first (in r too), so no writer of report.json can leak one.
func (r *Report) WriteFile(path string) error {
	r.Redact()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report for %s: %w", path, err)
	}
	data = append(data, '\n')
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// ReadFile reads and validates a report.json.
func ReadFile(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &r, nil
}
