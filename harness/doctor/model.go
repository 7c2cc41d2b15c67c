package doctor

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"zerodrop.dev/zerodrop/apis/contract"
)

// poolLabelKeys are node labels that name a node pool on the platforms the
// incidents ran on, plus zerodrop's own.
var poolLabelKeys = []string{
	contract.PoolLabel,
	"cloud.google.com/gke-nodepool",
	"agentpool",
	"kubernetes.azure.com/agentpool",
	"eks.amazonaws.com/nodegroup",
	"alpha.eksctl.io/nodegroup-name",
	"karpenter.sh/nodepool",
	"node.kubernetes.io/pool",
	"nodepool.banzaicloud.io/name", // incident nodepool-backend
}

func isPoolKey(k string) bool {
	for _, p := range poolLabelKeys {
		if k == p {
			return true
		}
	}
	return false
}

// Severity orders findings.
type Severity int

const (
	SeverityNone Severity = iota
	Info
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	default:
		return "none"
	}
}

// MarshalJSON writes the name.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the name.
func (s *Severity) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	v, err := ParseSeverity(name)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity reads "error", "warning", "info" or "none".
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error":
		return Error, nil
	case "warning", "warn":
		return Warning, nil
	case "info", "note":
		return Info, nil
	case "none", "never":
		return SeverityNone, nil
	}
	return SeverityNone, fmt.Errorf("unknown severity %q: want error, warning, info or none", s)
}

// workload is a Deployment, StatefulSet or DaemonSet reduced to what the
// rules read. tpl is the YAML path to the Pod template.
type workload struct {
	obj      *Object
	kind     string
	replicas *int32 // nil for a DaemonSet: one per eligible node
	// hpa is the HorizontalPodAutoscaler that scales the workload; replicas
	// then holds its minReplicas, the fewest Pods a drain can meet.
	hpa      *Object
	template *corev1.PodTemplateSpec
	minReady int32
	selector *metav1.LabelSelector
}

var tplPath = []any{"spec", "template"}

func asWorkload(o *Object) (*workload, bool) {
	switch t := o.Obj.(type) {
	case *appsv1.Deployment:
		r := int32(1)
		if t.Spec.Replicas != nil {
			r = *t.Spec.Replicas
		}
		return &workload{obj: o, kind: "Deployment", replicas: &r, template: &t.Spec.Template, minReady: t.Spec.MinReadySeconds, selector: t.Spec.Selector}, true
	case *appsv1.StatefulSet:
		r := int32(1)
		if t.Spec.Replicas != nil {
			r = *t.Spec.Replicas
		}
		return &workload{obj: o, kind: "StatefulSet", replicas: &r, template: &t.Spec.Template, minReady: t.Spec.MinReadySeconds, selector: t.Spec.Selector}, true
	case *appsv1.DaemonSet:
		return &workload{obj: o, kind: "DaemonSet", template: &t.Spec.Template, minReady: t.Spec.MinReadySeconds, selector: t.Spec.Selector}, true
	case *corev1.ReplicationController:
		r := int32(1)
		if t.Spec.Replicas != nil {
			r = *t.Spec.Replicas
		}
		if t.Spec.Template == nil {
			return nil, false
		}
		return &workload{obj: o, kind: "ReplicationController", replicas: &r, template: t.Spec.Template, minReady: t.Spec.MinReadySeconds,
			selector: &metav1.LabelSelector{MatchLabels: t.Spec.Selector}}, true
	case *argoRollout:
		if t.Spec.Template == nil {
			// A workloadRef Rollout takes its template from a Deployment
			// the doctor reads on its own.
			return nil, false
		}
		r := int32(1)
		if t.Spec.Replicas != nil {
			r = *t.Spec.Replicas
		}
		return &workload{obj: o, kind: "Rollout", replicas: &r, template: t.Spec.Template, minReady: t.Spec.MinReadySeconds, selector: t.Spec.Selector}, true
	}
	return nil, false
}

// scaledBy applies the HorizontalPodAutoscaler that targets w (nil: none):
// the HPA owns the replica count, which goes as low as minReplicas (default
// 1, autoscaling/v2 HorizontalPodAutoscalerSpec).
func (w *workload) scaledBy(o *Object) {
	if w.replicas == nil || o == nil {
		return
	}
	h := o.Obj.(*autoscalingv2.HorizontalPodAutoscaler)
	min := int32(1)
	if h.Spec.MinReplicas != nil {
		min = *h.Spec.MinReplicas
	}
	w.replicas, w.hpa = &min, o
}

// argoRollout is the part of an Argo Rollouts Rollout (argoproj.io/v1alpha1)
// the rules read: it has a Deployment's replicas, selector and Pod template
// (github.com/argoproj/argo-rollouts pkg/apis/rollouts/v1alpha1 RolloutSpec).
type argoRollout struct {
	Spec struct {
		Replicas        *int32                  `json:"replicas,omitempty"`
		Selector        *metav1.LabelSelector   `json:"selector,omitempty"`
		Template        *corev1.PodTemplateSpec `json:"template,omitempty"`
		MinReadySeconds int32                   `json:"minReadySeconds,omitempty"`
	} `json:"spec"`
}

func (w *workload) podLabels() labels.Set { return labels.Set(w.template.Labels) }

// TargetPort is the Pods' port a Service port sends to: its targetPort, or
// its port when the manifest sets none (the API server's default; k8s.io/api
// core/v1 ServicePort.TargetPort), 0 or an empty name alike.
func TargetPort(sp corev1.ServicePort) intstr.IntOrString {
	if tp := sp.TargetPort; (tp.Type == intstr.Int && tp.IntVal == 0) || (tp.Type == intstr.String && tp.StrVal == "") {
		return intstr.FromInt32(sp.Port)
	}
	return sp.TargetPort
}

// Declares reports whether container port cp is the target tp: by name for
// a named target, by number otherwise.
func Declares(cp corev1.ContainerPort, tp intstr.IntOrString) bool {
	if tp.Type == intstr.String {
		return cp.Name == tp.StrVal
	}
	return cp.ContainerPort == tp.IntVal
}

// servingContainer picks the container the Service sends traffic to: the one
// owning the Service's target port (by name or number), else the first that
// declares a port (a port-less sidecar such as Contour's shutdown-manager
// serves nothing), else the first.
func (w *workload) servingContainer(svc *corev1.Service) (int, *corev1.Container) {
	cs := w.template.Spec.Containers
	if len(cs) == 0 {
		return -1, nil
	}
	for _, sp := range svc.Spec.Ports {
		tp := TargetPort(sp)
		for i := range cs {
			for _, cp := range cs[i].Ports {
				if Declares(cp, tp) {
					return i, &cs[i]
				}
			}
		}
	}
	for i := range cs {
		if len(cs[i].Ports) > 0 {
			return i, &cs[i]
		}
	}
	return 0, &cs[0]
}

// preStop describes a container's preStop hook for the timing rules.
type preStop struct {
	kind     string // "none", "sleep", "exec", "httpGet", "tcpSocket"
	duration time.Duration
	known    bool // duration is a lower bound we can rely on
	// what names a known program's hook ("ingress-nginx /wait-shutdown").
	what string
	// accepts says who keeps accepting for duration ("nginx keeps accepting").
	accepts string
	// signalsApp: the hook itself sends the app its termination signal
	// when it starts (ingress-nginx's /wait-shutdown), so the app's
	// shutdown begins at the start of termination, not after the hook.
	signalsApp bool
	// stopsApp: the hook stops the app itself when its duration is over
	// (HAProxy's soft stop), whatever the app does with the kubelet's
	// signal after it.
	stopsApp bool
}

// sleepRE finds "sleep 10" (or "sleep 10s") in an exec preStop command such
// as ["/bin/sh", "-c", "sleep 15 && nginx -s quit"].
var sleepRE = regexp.MustCompile(`(?:^|[\s;&|(/"'])sleep\s+(\d{1,6})(s?)(?:$|[\s;&|)"'])`)

func containerPreStop(c *corev1.Container) preStop {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return preStop{kind: "none", known: true}
	}
	h := c.Lifecycle.PreStop
	switch {
	case h.Sleep != nil:
		return preStop{kind: "sleep", duration: time.Duration(h.Sleep.Seconds) * time.Second, known: true}
	case h.Exec != nil:
		if p, ok := knownShutdownHook(c, h.Exec.Command); ok {
			return p
		}
		if m := sleepRE.FindStringSubmatch(strings.Join(h.Exec.Command, " ")); m != nil {
			n, _ := strconv.Atoi(m[1])
			return preStop{kind: "exec", duration: time.Duration(n) * time.Second, known: true}
		}
		return preStop{kind: "exec"}
	case h.HTTPGet != nil:
		return preStop{kind: "httpGet"}
	case h.TCPSocket != nil:
		return preStop{kind: "tcpSocket"}
	}
	return preStop{kind: "none", known: true}
}

// knownShutdownHook reads the preStop programs of common ingress
// controllers. ingress-nginx's /wait-shutdown (cmd/waitshutdown/main.go)
// sends the controller SIGTERM and waits for nginx to exit; the controller
// keeps nginx serving only for --shutdown-grace-period seconds (pkg/flags:
// default 0, "Seconds to wait after receiving the shutdown signal, before
// stopping the nginx process") before a graceful quit, which closes the
// listeners. So the time the Pod keeps accepting new connections is that
// flag, not the hook's run time.
//
// Kong's `kong quit` (Kong/kong kong/cmd/quit.lua) waits --wait seconds
// (default 0), then sends nginx SIGQUIT, a graceful quit that closes the
// listeners at once: the Pod accepts for any sleep before it plus --wait.
//
// nginx's own `nginx -s quit` (and `-s stop`) only signals the master and
// returns: on QUIT every worker closes its listening sockets at once and
// finishes what it has (nginx/nginx src/os/unix/ngx_process_cycle.c,
// ngx_worker_process_cycle: ngx_close_listening_sockets on ngx_quit;
// nginx.org/en/docs/control.html), on TERM it exits. The Pod accepts for
// any sleep before it and no longer.
func knownShutdownHook(c *corev1.Container, cmd []string) (preStop, bool) {
	if p, ok := kongQuitHook(cmd); ok {
		return p, true
	}
	if p, ok := haproxySoftStopHook(c, cmd); ok {
		return p, true
	}
	if p, ok := nginxSignalHook(cmd); ok {
		return p, true
	}
	if len(cmd) == 0 || !strings.HasSuffix(cmd[0], "/wait-shutdown") {
		return preStop{}, false
	}
	g := nginxShutdownGrace(c)
	return preStop{kind: "exec", duration: g, known: true, signalsApp: true, accepts: "nginx keeps accepting",
		what: fmt.Sprintf("ingress-nginx /wait-shutdown with --shutdown-grace-period=%d", int(g/time.Second))}, true
}

// kongQuitRE finds `kong quit` and its --wait / -w option in an exec hook
// such as ["/bin/bash", "-c", "kong quit --wait=15"].
var (
	kongQuitRE = regexp.MustCompile(`(?:^|[\s;&|(/"'])kong\s+quit\b([^;&|]*)`)
	kongWaitRE = regexp.MustCompile(`(?:^|\s)(?:--wait|-w)(?:=|\s+)(\d{1,6})\b`)
)

func kongQuitHook(cmd []string) (preStop, bool) {
	line := strings.Join(cmd, " ")
	m := kongQuitRE.FindStringSubmatch(line)
	if m == nil {
		return preStop{}, false
	}
	wait := 0
	if w := kongWaitRE.FindStringSubmatch(m[1]); w != nil {
		wait, _ = strconv.Atoi(w[1])
	}
	before := sleepsBefore(line[:strings.Index(line, m[0])+1])
	d := time.Duration(before+wait) * time.Second
	what := fmt.Sprintf("Kong `kong quit` with --wait=%d", wait)
	if before > 0 {
		what = fmt.Sprintf("sleep %d, then Kong `kong quit` with --wait=%d", before, wait)
	}
	return preStop{kind: "exec", duration: d, known: true, what: what, accepts: "Kong keeps accepting"}, true
}

// nginxSignalRE finds `nginx -s quit` or `nginx -s stop` in a shell line
// such as "sleep 5 && nginx -s quit"; options may stand between (-c, -p,
// -e and -g with a value, quoted or not; -q, -t, -T, -v, -V alone).
var nginxSignalRE = regexp.MustCompile(`(?:^|[\s;&|(/"'])nginx(?:-debug)?(?:\s+-[cgpe]\s+(?:'[^']*'|"[^"]*"|\S+)|\s+-[qtTvV])*\s+-s\s*(quit|stop)\b`)

// nginxSignalHook reads a preStop that has nginx quit or stop, in an exec
// of nginx itself (["nginx", "-g", "daemon off;", "-s", "quit"]) or in a
// shell line; a line that only prints it (echo, printf) is not one.
func nginxSignalHook(cmd []string) (preStop, bool) {
	signal, before := "", 0
	if len(cmd) > 1 && (path.Base(cmd[0]) == "nginx" || path.Base(cmd[0]) == "nginx-debug") {
		for i := 1; i+1 < len(cmd); i++ {
			if cmd[i] == "-s" && (cmd[i+1] == "quit" || cmd[i+1] == "stop") {
				signal = cmd[i+1]
			}
		}
	}
	if signal == "" {
		line := strings.Join(cmd, " ")
		loc := nginxSignalRE.FindStringSubmatchIndex(line)
		if loc == nil {
			return preStop{}, false
		}
		seg := line[:loc[0]+1]
		if i := strings.LastIndexAny(seg, ";&|("); i >= 0 {
			seg = seg[i+1:]
		}
		for _, f := range strings.Fields(seg) {
			if f == "echo" || f == "printf" {
				return preStop{}, false
			}
		}
		signal, before = line[loc[2]:loc[3]], sleepsBefore(line[:loc[0]+1])
	}
	what := fmt.Sprintf("`nginx -s %s`", signal)
	if signal == "stop" {
		what += " (a fast shutdown: requests in flight are cut too)"
	}
	if before > 0 {
		what = fmt.Sprintf("sleep %d, then %s", before, what)
	}
	return preStop{kind: "exec", duration: time.Duration(before) * time.Second, known: true, what: what, accepts: "nginx keeps accepting"}, true
}

// haproxyUSR1RE finds a shell's `kill -USR1 <pid>` (or -s USR1, -SIGUSR1,
// -10) in an exec hook such as "sleep 5; kill -USR1 1".
var haproxyUSR1RE = regexp.MustCompile(`(?:^|[\s;&|(])kill\s+(?:-s\s+(?:SIG)?(?:USR1|10)|-(?:SIG)?(?:USR1|10))\b`)

// haproxySoftStopHook reads a preStop that sends HAProxy SIGUSR1, its soft
// stop: HAProxy unbinds its listeners at once and lets the connections it
// holds finish (HAProxy 2.6 doc/management.txt, "Stopping and restarting
// HAProxy"), so the Pod accepts for the sleeps before the signal; what the
// hook does after (waiting for HAProxy to exit) holds the Pod, not its
// listeners. Only in a container the doctor knows runs HAProxy.
func haproxySoftStopHook(c *corev1.Container, cmd []string) (preStop, bool) {
	if !runsHAProxy(c) {
		return preStop{}, false
	}
	line := strings.Join(cmd, " ")
	loc := haproxyUSR1RE.FindStringIndex(line)
	if loc == nil {
		return preStop{}, false
	}
	before := sleepsBefore(line[:loc[0]+1])
	what := "HAProxy's soft stop (SIGUSR1)"
	if before > 0 {
		what = fmt.Sprintf("sleep %d, then HAProxy's soft stop (SIGUSR1)", before)
	}
	return preStop{kind: "exec", duration: time.Duration(before) * time.Second, known: true, what: what, accepts: "HAProxy keeps accepting",
		stopsApp: true}, true
}

// imageRepo is an image reference without its tag or digest
// ("registry:5000/library/traefik:v3.6@sha256:..." is
// "registry:5000/library/traefik").
func imageRepo(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}

// imageName is an image reference's last path element without its tag or
// digest ("docker.io/library/traefik:v3.6" is "traefik").
func imageName(ref string) string { return path.Base(imageRepo(ref)) }

// runs reports whether the container runs the program called name: its
// image is named so, or its command starts with it.
func runs(c *corev1.Container, name string) bool {
	if imageName(c.Image) == name {
		return true
	}
	return len(c.Command) > 0 && path.Base(c.Command[0]) == name
}

func runsHAProxy(c *corev1.Container) bool { return runs(c, "haproxy") }

// haproxyShutdown is what HAProxy does with the kubelet's stop signal,
// which depends on how the container starts it:
//   - The Docker library's image stops it with SIGUSR1
//     (docker-library/haproxy 2.6/Dockerfile STOPSIGNAL, quoting HAProxy's
//     management guide: SIGTERM "immediately quits and all established
//     connections are closed", SIGUSR1 is the graceful stop): its soft
//     stop, listeners closed at once, connections let finish.
//   - In master-worker mode (-W, or -Ws as Debian's systemd unit runs it:
//     usr/lib/systemd/system/haproxy.service), or under an init that
//     forwards signals, SIGTERM is the hard stop (measured: Debian's
//     2.6.12 with -W exits 0.1 s after it).
//   - As its container's PID 1 without -W, HAProxy has no SIGTERM handler
//     (its /proc/1/status SigCgt lacks signal 15, measured on Debian's
//     2.6.12), and a PID namespace's init gets from outside only the
//     signals it handles, SIGKILL and SIGSTOP aside (pid_namespaces(7)):
//     it ignores SIGTERM and serves until the kubelet's SIGKILL, which
//     cuts everything it holds (measured: 253 and 296 answers in the 30 s
//     after its Pod began terminating, in two runs). So does a shell that
//     is PID 1 without exec'ing it: the shell has no handler either.
//   - An image whose entrypoint the doctor cannot see, without -W: the
//     hard stop is assumed.
func haproxyShutdown(c *corev1.Container) appShutdown {
	line := commandLine(c)
	// A shell's line is one argument: its words are what HAProxy gets.
	words := strings.Fields(strings.Join(line, " "))
	mw := slices.Contains(words, "-W") || slices.Contains(words, "-Ws")
	hard := appShutdown{what: "HAProxy in master-worker mode (SIGTERM is its hard stop)", cutsInFlight: true}
	pid1 := appShutdown{what: "HAProxy as its container's PID 1 without master-worker mode (-W): it ignores SIGTERM and serves until SIGKILL",
		untilKilled: true}
	first := ""
	if len(c.Command) > 0 {
		first = path.Base(c.Command[0])
	}
	switch {
	case first == "" && dockerLibraryImage(c.Image, "haproxy"):
		return appShutdown{what: "HAProxy of the Docker library image (its stop signal is SIGUSR1, the soft stop)"}
	case shells[first] && !execHAProxyRE.MatchString(strings.Join(line, " ")):
		return appShutdown{what: "HAProxy under " + first + " as PID 1, which has no SIGTERM handler: it serves until SIGKILL", untilKilled: true}
	case inits[first]:
		return appShutdown{what: "HAProxy under " + first + ", which forwards SIGTERM: its hard stop", cutsInFlight: true}
	case mw:
		return hard
	case first == "haproxy" || shells[first]:
		return pid1
	}
	return appShutdown{what: "HAProxy (its image's entrypoint is not in the manifest: the hard stop assumed)", cutsInFlight: true}
}

// shells and inits are the first words of a command that put another
// process between the kubelet's signal and the app: a shell, which as
// PID 1 has no handler for it, or an init that forwards it.
var (
	shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true}
	inits  = map[string]bool{"tini": true, "dumb-init": true, "catatonit": true}
	// execHAProxyRE finds a shell line that replaces itself with HAProxy.
	execHAProxyRE = regexp.MustCompile(`(?:^|[\s;&|(])exec\s+(?:\S*/)?haproxy\b`)
)

// dockerLibraryImage reports whether ref is the Docker library's image
// called name ("haproxy:2.6", "docker.io/library/haproxy@sha256:...").
func dockerLibraryImage(ref, name string) bool {
	switch imageRepo(ref) {
	case name, "library/" + name, "docker.io/" + name, "docker.io/library/" + name, "index.docker.io/library/" + name:
		return true
	}
	return false
}

// traefikShutdown reads Traefik's static configuration from the
// container's flags and environment (Traefik takes both, their keys case
// insensitive: TRAEFIK_ENTRYPOINTS_WEB_ADDRESS is --entryPoints.web.address):
// its ping fails from its signal on unless terminatingStatusCode says
// otherwise (traefik/traefik v3.6.2 pkg/ping/ping.go: 503 by default), and
// each entry point keeps accepting for its
// transport.lifeCycle.requestAcceptGraceTimeout (default 0) before
// net/http's Shutdown closes its listener
// (pkg/server/server_entrypoint_tcp.go TCPEntryPoint.Shutdown). The
// Pod accepts for the shortest grace of the entry points it names
// besides Traefik's own "traefik" one (ping, API): a Service's port
// could reach any of them. A configuration file the doctor cannot see
// reads as the defaults.
func traefikShutdown(c *corev1.Container) appShutdown {
	opts := map[string]string{}
	for _, a := range commandLine(c) {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			v = "true"
		}
		opts[strings.ToLower(k)] = v
	}
	for _, e := range c.Env {
		if k, ok := strings.CutPrefix(e.Name, "TRAEFIK_"); ok && e.ValueFrom == nil {
			opts[strings.ToLower(strings.ReplaceAll(k, "_", "."))] = e.Value
		}
	}
	app := appShutdown{what: "Traefik"}
	// Setting any of ping's options enables it, as --ping does.
	ping, err := strconv.ParseBool(opts["ping"])
	if err != nil {
		for k := range opts {
			ping = ping || strings.HasPrefix(k, "ping.")
		}
	}
	if ping {
		code, err := strconv.Atoi(opts["ping.terminatingstatuscode"])
		if err != nil {
			code = 503
		}
		app.unreadyOnTerm = code < 200 || code > 399
	}
	var grace *time.Duration
	for k := range opts {
		rest, ok := strings.CutPrefix(k, "entrypoints.")
		if !ok {
			continue
		}
		name, field, ok := strings.Cut(rest, ".")
		if !ok || field != "address" || name == "traefik" {
			continue
		}
		g := traefikDuration(opts["entrypoints."+name+".transport.lifecycle.requestacceptgracetimeout"])
		if grace == nil || g < *grace {
			grace = &g
		}
	}
	if grace != nil {
		app.keepAccepting = *grace
		app.what = fmt.Sprintf("Traefik (requestAcceptGraceTimeout %v)", *grace)
	}
	return app
}

// traefikDuration reads a Traefik duration: whole seconds, or a Go
// duration (traefik/paerser types.Duration Set); anything else is the
// default, 0.
func traefikDuration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n < 1<<31 {
		return time.Duration(n) * time.Second
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return 0
}

// sleepsBefore sums the shell sleeps in a command line's prefix ("sleep 5;
// sleep 10; nginx -s quit" waits 15 s before nginx quits).
func sleepsBefore(prefix string) int {
	n := 0
	for _, m := range sleepRE.FindAllStringSubmatch(prefix, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// nginxShutdownGrace reads ingress-nginx's --shutdown-grace-period (seconds,
// default 0) from the container's command line.
func nginxShutdownGrace(c *corev1.Container) time.Duration {
	secs := 0
	args := commandLine(c)
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--shutdown-grace-period=")
		if !ok && a == "--shutdown-grace-period" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				secs = n
			}
		}
	}
	return time.Duration(secs) * time.Second
}

// commandLine is the container's command followed by its args.
func commandLine(c *corev1.Container) []string {
	return append(append([]string(nil), c.Command...), c.Args...)
}

// appShutdown is what a server the doctor knows does when its termination
// signal arrives.
type appShutdown struct {
	what string
	// unreadyOnTerm: its readiness handler fails from the signal on.
	unreadyOnTerm bool
	// keepAccepting: it still accepts new connections this long after the
	// signal, then closes its listeners.
	keepAccepting time.Duration
	// untilKilled: it ignores the signal and accepts until the kubelet's
	// SIGKILL (Shutdown.UntilKilled).
	untilKilled bool
	// cutsInFlight: the signal ends every connection at once, requests in
	// flight included (Shutdown.CutsInFlight).
	cutsInFlight bool
}

// knownApp recognises servers whose shutdown is documented in their source:
//   - ingress-nginx's controller: on SIGTERM its health check fails at once
//     (kubernetes/ingress-nginx internal/ingress/controller/checker.go,
//     Check returns an error while isShuttingDown) and nginx keeps
//     accepting for --shutdown-grace-period before its graceful quit;
//   - Traefik (traefikShutdown) and HAProxy, whose SIGTERM is its hard
//     stop (its SIGUSR1 soft stop from a preStop: haproxySoftStopHook);
//   - zerodrop's own echo server (echo-server/echo/config.go):
//     ECHO_UNREADY_ON_TERM and ECHO_SHUTDOWN_DELAY say the same two things.
//
// Any other server is unknown: the timing rules then assume it stops
// accepting when the signal arrives and never fails readiness before it
// exits, which is what ZD002 checks.
func knownApp(c *corev1.Container) (appShutdown, bool) {
	switch {
	case runs(c, "traefik"):
		return traefikShutdown(c), true
	case runsHAProxy(c):
		return haproxyShutdown(c), true
	}
	for _, a := range commandLine(c) {
		if a == "/nginx-ingress-controller" || strings.HasSuffix(a, "/nginx-ingress-controller") {
			g := nginxShutdownGrace(c)
			return appShutdown{what: "the ingress-nginx controller", unreadyOnTerm: true, keepAccepting: g}, true
		}
	}
	var app appShutdown
	found := false
	for _, e := range c.Env {
		v := strings.TrimSpace(e.Value)
		switch e.Name {
		case "ECHO_UNREADY_ON_TERM":
			found = true
			app.unreadyOnTerm, _ = strconv.ParseBool(v)
		case "ECHO_SHUTDOWN_DELAY":
			found = true
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				app.keepAccepting = d
			}
		}
	}
	if !found {
		return appShutdown{}, false
	}
	app.what = AppEchoServer
	return app, true
}

// AppEchoServer is Shutdown.App for the zerodrop echo server.
const AppEchoServer = "the zerodrop echo server"

// shutdownTimeline is when, counted from the moment a Pod starts
// terminating, its serving container stops accepting new connections and
// its endpoint can stop being "serving".
type shutdownTimeline struct {
	// accept: the container accepts new connections at least this long.
	accept time.Duration
	// servingEnds: the endpoint can stop serving while the Pod is alive,
	// at the earliest at serving.
	servingEnds bool
	serving     time.Duration
	// signal is when the app gets its termination signal; app is what the
	// doctor knows of it (zero when unknown).
	signal time.Duration
	app    appShutdown
	known  bool
	// ps is the preStop hook the timeline starts with.
	ps preStop
}

// timelineOf derives the shutdownTimeline of a container; ok is false when
// the preStop hook's duration cannot be read (ZD005 says so).
//
// The endpoint's conditions follow the Pod: a terminating Pod's endpoint is
// never "ready" and is "serving" while the Pod's Ready condition holds
// (k8s.io/endpointslice utils.go podToEndpoint: serving = IsPodReady,
// ready = serving && !terminating; v0.34.2 and v0.37.2). The kubelet marks
// the Pod unready after failureThreshold consecutive failed probes, one per
// period; the first can come right after the signal, so the earliest is
// signal + period x (failureThreshold - 1).
func timelineOf(c *corev1.Container, grace time.Duration) (shutdownTimeline, bool) {
	ps := containerPreStop(c)
	if !ps.known {
		return shutdownTimeline{}, false
	}
	tl := shutdownTimeline{accept: ps.duration, signal: ps.duration, ps: ps}
	if ps.signalsApp {
		tl.signal = 0
	}
	app, known := knownApp(c)
	if !known {
		return tl, true
	}
	tl.app, tl.known = app, true
	if !ps.signalsApp {
		tl.accept = tl.signal + app.keepAccepting
	}
	if app.untilKilled && !ps.stopsApp {
		tl.accept = max(tl.accept, grace)
	}
	if app.unreadyOnTerm && c.ReadinessProbe != nil {
		period, ft := probeTiming(c.ReadinessProbe)
		tl.servingEnds = true
		tl.serving = tl.signal + period*time.Duration(ft-1)
	}
	return tl, true
}

func (p preStop) String() string {
	switch {
	case p.what != "":
		return fmt.Sprintf("preStop %s (%s for %v)", p.what, p.accepts, p.duration)
	case p.kind == "none":
		return "no preStop hook (0s)"
	case p.known:
		return fmt.Sprintf("preStop %s %v", p.kind, p.duration)
	default:
		return fmt.Sprintf("preStop %s of unknown duration", p.kind)
	}
}

// grace is the Pod's terminationGracePeriodSeconds with the API default.
func (w *workload) grace() time.Duration {
	if g := w.template.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// probeTiming returns period and failureThreshold with the API defaults.
func probeTiming(p *corev1.Probe) (period time.Duration, failure int32) {
	period, failure = 10*time.Second, 3
	if p.PeriodSeconds > 0 {
		period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.FailureThreshold > 0 {
		failure = p.FailureThreshold
	}
	return period, failure
}

// sameHandler reports whether two probes check the same thing, resolving
// named ports against the container.
func sameHandler(c *corev1.Container, a, b *corev1.Probe) bool {
	norm := func(p *corev1.Probe) corev1.ProbeHandler {
		h := *p.ProbeHandler.DeepCopy()
		if h.HTTPGet != nil {
			h.HTTPGet.Port = resolvePort(c, h.HTTPGet.Port)
			if h.HTTPGet.Scheme == "" {
				h.HTTPGet.Scheme = corev1.URISchemeHTTP
			}
			if h.HTTPGet.Path == "" {
				h.HTTPGet.Path = "/"
			}
		}
		if h.TCPSocket != nil {
			h.TCPSocket.Port = resolvePort(c, h.TCPSocket.Port)
		}
		return h
	}
	ha, hb := norm(a), norm(b)
	ja, _ := json.Marshal(ha)
	jb, _ := json.Marshal(hb)
	return string(ja) == string(jb)
}

func resolvePort(c *corev1.Container, p intstr.IntOrString) intstr.IntOrString {
	if p.Type == intstr.String {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return intstr.FromInt32(cp.ContainerPort)
			}
		}
	}
	return p
}

// workloadPools returns the node pools the workload is pinned to (required
// node affinity In, or nodeSelector, on a pool label) and whether it is
// pinned at all.
func (w *workload) pools() ([]string, bool) {
	ps := w.template.Spec
	var out []string
	pinned := false
	for k, v := range ps.NodeSelector {
		if isPoolKey(k) {
			out, pinned = append(out, v), true
		}
	}
	if a := ps.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		// Terms are ORed: the workload is pinned only if every term pins it.
		allPinned := len(terms) > 0
		var vals []string
		for _, t := range terms {
			termPinned := false
			for _, e := range t.MatchExpressions {
				if isPoolKey(e.Key) && e.Operator == corev1.NodeSelectorOpIn {
					vals = append(vals, e.Values...)
					termPinned = true
				}
			}
			allPinned = allPinned && termPinned
		}
		if allPinned {
			out, pinned = append(out, vals...), true
		}
	}
	return dedupe(out), pinned
}

// servicePool returns the node pool the Service's LB backend is restricted
// to, if an annotation says so, and which annotation.
func servicePool(svc *corev1.Service) (pool, annotation string) {
	if v := strings.TrimSpace(svc.Annotations[contract.LBPoolAnnotation]); v != "" {
		return v, contract.LBPoolAnnotation
	}
	if v := strings.TrimSpace(svc.Annotations[annAWSTargets]); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
			if isPoolKey(k) && val != "" {
				return val, annAWSTargets
			}
		}
	}
	// The AKS annotation names an availability set, which embeds the pool
	// name ("pool-1-availabilitySet-27255451" in incident nodepool-backend); "__auto__" is
	// not a restriction.
	if v := strings.TrimSpace(svc.Annotations[annAzMode]); v != "" && !strings.EqualFold(v, "__auto__") {
		return v, annAzMode
	}
	return "", ""
}

func poolCovered(backend, annotation, pool string) bool {
	if annotation == annAzMode {
		return strings.Contains(strings.ToLower(backend), strings.ToLower(pool))
	}
	return backend == pool
}

// pdbSelects reports whether the PDB's selector matches the workload's Pods.
// A nil selector matches nothing; an empty one matches every Pod (policy/v1).
func pdbSelects(pdb *policyv1.PodDisruptionBudget, w *workload) bool {
	if pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return false
	}
	return sel.Matches(w.podLabels())
}

// serviceSelects reports whether a Service selector picks the workload.
func serviceSelects(svc *corev1.Service, w *workload) bool {
	if len(svc.Spec.Selector) == 0 {
		return false
	}
	return labels.SelectorFromSet(svc.Spec.Selector).Matches(w.podLabels())
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RolloutFenceposts resolves a Deployment's rolling update against its
// replicas as the deployment controller does (k8s.io/kubernetes
// pkg/controller/deployment/util, ResolveFenceposts): maxSurge and
// maxUnavailable default to 25%, surge rounds up, unavailable down, and
// when both come to 0 unavailable is 1. For Recreate both are 0.
func RolloutFenceposts(s appsv1.DeploymentStrategy, replicas int32) (surge, unavailable int32, err error) {
	if s.Type == appsv1.RecreateDeploymentStrategyType {
		return 0, 0, nil
	}
	var mu, ms *intstr.IntOrString
	if s.RollingUpdate != nil {
		mu, ms = s.RollingUpdate.MaxUnavailable, s.RollingUpdate.MaxSurge
	}
	if unavailable, err = scaledValue(mu, replicas, false, "25%"); err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge, err = scaledValue(ms, replicas, true, "25%"); err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	if unavailable == 0 && surge == 0 {
		unavailable = 1 // the controller's own fallback when both are 0
	}
	return surge, unavailable, nil
}

// scaledValue resolves an int-or-percent against total, rounding up for
// surge and down for unavailable, as the Deployment controller does.
func scaledValue(v *intstr.IntOrString, total int32, roundUp bool, def string) (int32, error) {
	x := intstr.Parse(def)
	if v != nil {
		x = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&x, int(total), roundUp)
	return int32(n), err
}
