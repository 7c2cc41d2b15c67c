package standin

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"zerodrop.dev/zerodrop/echo-server/echo"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// Paths the stand-in answers for probes whose handler it cannot run (exec,
// gRPC), and the load's path when a probe already uses "/".
const (
	readyPath = "/zerodrop-readyz"
	livePath  = "/zerodrop-livez"
	loadPath  = "/zerodrop"
)

// echoDrainForKnownApps is the in-flight budget of a known server that
// quits gracefully (the echo server's own default, echo.DefaultDrainTimeout).
const echoDrainForKnownApps = 10 * time.Second

type changeFunc func(obj, field, was, now, why string)

// podTemplate replaces every container of in by the echo server and keeps
// every knob the Pod's drops depend on.
func podTemplate(in *corev1.PodTemplateSpec, svc *corev1.Service, opts Options, wref string, change changeFunc) (*corev1.PodTemplateSpec, []Container, string, error) {
	tpl := in.DeepCopy()
	spec := &tpl.Spec
	tplField := "spec.template.spec."
	drop := func(field string, set bool, was, why string) {
		if set {
			change(wref, tplField+field, was, "", why)
		}
	}
	drop("volumes", len(spec.Volumes) > 0, fmt.Sprint(len(spec.Volumes), " volumes"), "the echo server reads no files")
	drop("initContainers", len(spec.InitContainers) > 0, names(spec.InitContainers), "they run the user's images; a native sidecar's readiness no longer gates the Pod")
	drop("serviceAccountName", spec.ServiceAccountName != "", spec.ServiceAccountName, "the echo server calls no API")
	drop("imagePullSecrets", len(spec.ImagePullSecrets) > 0, "set", "the echo image is loaded, not pulled")
	drop("securityContext", spec.SecurityContext != nil, "set", "the echo server binds the app's ports, some below 1024")
	dropClusterOwned(spec, drop)
	spec.Volumes, spec.InitContainers, spec.ServiceAccountName, spec.DeprecatedServiceAccount = nil, nil, "", ""
	spec.ImagePullSecrets, spec.SecurityContext = nil, nil
	spec.AutomountServiceAccountToken = nil

	// The load's path must reach the echo handler, not a probe's.
	path := "/"
	for i := range spec.Containers {
		for _, p := range probes(&spec.Containers[i]) {
			if p.HTTPGet != nil && (p.HTTPGet.Path == "" || p.HTTPGet.Path == "/") {
				path = loadPath
			}
		}
	}

	used := usedPorts(spec)
	targets, err := serviceTargets(spec, &in.Spec, svc)
	if err != nil {
		return nil, nil, "", err
	}
	var out []Container
	for i := range spec.Containers {
		orig := in.Spec.Containers[i]
		c := &spec.Containers[i]
		cref := fmt.Sprintf("%scontainers[%s]", tplField, c.Name)
		listen := map[int32]bool{}
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				listen[p.ContainerPort] = true
			}
		}
		for _, t := range targets[i] {
			if !listen[t.port] {
				listen[t.port] = true
				change(wref, cref+".ports", "", "listens on "+strconv.Itoa(int(t.port)),
					fmt.Sprintf("Service port %s sends to %d, which no container declares (ports are informational; the app listens on it)", t.svcPort, t.port))
			}
		}
		var readyPaths, livePaths []string
		first := func() int32 {
			if len(listen) == 0 {
				listen[freePort(used, 8080)] = true
			}
			return slices.Sorted(maps.Keys(listen))[0]
		}
		probe := func(p *corev1.Probe, field, fallback string, paths *[]string) error {
			if p == nil {
				return nil
			}
			switch {
			case p.HTTPGet != nil:
				port, err := resolve(c, p.HTTPGet.Port, cref+"."+field)
				if err != nil {
					return err
				}
				listen[port] = true
				*paths = append(*paths, probePath(p.HTTPGet.Path))
				if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
					change(wref, cref+"."+field+".httpGet.scheme", "HTTPS", "HTTP", "the echo server speaks plain HTTP; timing and path are kept")
					p.HTTPGet.Scheme = corev1.URISchemeHTTP
				}
			case p.TCPSocket != nil:
				port, err := resolve(c, p.TCPSocket.Port, cref+"."+field)
				if err != nil {
					return err
				}
				listen[port] = true
			default:
				was := "exec"
				if p.GRPC != nil {
					was = "grpc"
				}
				port := first()
				// One handler behind both probes stays one path, so the
				// stand-in fails both together as the app would (ZD031).
				if field != "readinessProbe" && c.ReadinessProbe != nil && orig.ReadinessProbe != nil &&
					equality.Semantic.DeepEqual(origHandler(&orig, field), orig.ReadinessProbe.ProbeHandler) {
					fallback = readyPath
				}
				*paths = append(*paths, fallback)
				p.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: fallback, Port: intstr.FromInt32(port)}}
				change(wref, cref+"."+field, was, "httpGet "+fallback+" on "+strconv.Itoa(int(port)),
					"the echo image has no shell or gRPC health service; the same timing on an HTTP handler that fails and succeeds as the app's would")
			}
			return nil
		}
		if err := probe(c.ReadinessProbe, "readinessProbe", readyPath, &readyPaths); err != nil {
			return nil, nil, "", err
		}
		if err := probe(c.LivenessProbe, "livenessProbe", livePath, &livePaths); err != nil {
			return nil, nil, "", err
		}
		if err := probe(c.StartupProbe, "startupProbe", livePath, &livePaths); err != nil {
			return nil, nil, "", err
		}

		sd := doctor.ContainerShutdown(&orig)
		if err := hooks(c, sd, opts, grace(spec), wref, cref, listen, change); err != nil {
			return nil, nil, "", err
		}
		b, from := behaviour(&orig, sd, opts, grace(spec))

		drop2 := func(field string, set bool, was, why string) {
			if set {
				change(wref, cref+"."+field, was, "", why)
			}
		}
		change(wref, cref+".image", orig.Image, opts.Image, "the stand-in: the echo server attributes every answer to a pod, a node and a moment")
		drop2("command/args", len(c.Command)+len(c.Args) > 0, strings.Join(append(append([]string{}, c.Command...), c.Args...), " "), "the echo server's own")
		drop2("env", len(c.Env)+len(c.EnvFrom) > 0, fmt.Sprint(len(c.Env)+len(c.EnvFrom), " entries"), "replaced by the echo server's configuration")
		drop2("volumeMounts", len(c.VolumeMounts)+len(c.VolumeDevices) > 0, fmt.Sprint(len(c.VolumeMounts)+len(c.VolumeDevices), " mounts"), "the Pod's volumes are not kept")
		drop2("resources", len(c.Resources.Requests)+len(c.Resources.Limits)+len(c.Resources.Claims) > 0, "set",
			"the echo server needs little, and the test cluster's nodes are small")
		drop2("securityContext", c.SecurityContext != nil, "set", "the echo server binds the app's ports, some below 1024")

		admin := freePort(used, adminBase)
		if len(listen) == 0 {
			first()
		}
		ports := slices.Sorted(maps.Keys(listen))
		env := []corev1.EnvVar{
			{Name: "ECHO_LISTEN", Value: joinPorts(ports)},
			{Name: "ECHO_ADMIN_LISTEN", Value: ":" + strconv.Itoa(int(admin))},
			{Name: "ECHO_READY_PATH", Value: pathsOr(readyPaths, readyPath)},
			{Name: "ECHO_LIVE_PATH", Value: pathsOr(livePaths, livePath)},
			{Name: "ECHO_UNREADY_ON_TERM", Value: strconv.FormatBool(b.UnreadyOnTerm)},
			{Name: "ECHO_SHUTDOWN_DELAY", Value: b.KeepAccepting.String()},
			{Name: "ECHO_DRAIN_TIMEOUT", Value: b.Drain.String()},
			{Name: "ECHO_KEEPALIVE", Value: strconv.FormatBool(b.KeepAlive)},
			// The echo server's own drain lets keep-alive clients close
			// before it stops accepting (a zerodrop nicety); the user's
			// server stops accepting when the doctor says it does, unless
			// it is the echo server, which keeps its own setting.
			{Name: "ECHO_CLOSE_GRACE", Value: echoNicety(&orig, sd, "ECHO_CLOSE_GRACE", "0s", "auto")},
			// Likewise RFC 9113's HTTP/2 shutdown notice: Go's and most
			// servers send one GOAWAY only.
			{Name: "ECHO_H2_NOTICE", Value: echoNicety(&orig, sd, "ECHO_H2_NOTICE", "0s", echo.DefaultH2Notice.String())},
		}
		c.Image, c.ImagePullPolicy = opts.Image, opts.PullPolicy
		c.Command, c.Args, c.WorkingDir = nil, nil, ""
		c.Env, c.EnvFrom = append(env, fixtures.DownwardEnv()...), nil
		c.VolumeMounts, c.VolumeDevices = nil, nil
		c.Resources, c.ResizePolicy = corev1.ResourceRequirements{}, nil
		c.SecurityContext = nil
		out = append(out, Container{Name: c.Name, Listen: ports, Admin: admin, Behaviour: b, Ends: b.String(), BehaviourFrom: from})
		if ports[0] < 1024 && spec.SecurityContext == nil {
			// The echo image runs unprivileged (USER 65532); a safe sysctl
			// (one the kubelet allows by default since Kubernetes 1.22, and
			// the Pod Security Standards' baseline lists) lets it bind the
			// app's low ports.
			spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}}
			change(wref, tplField+"securityContext.sysctls", "", "net.ipv4.ip_unprivileged_port_start=0",
				fmt.Sprintf("the echo image runs unprivileged and must bind port %d", ports[0]))
		}
	}
	return tpl, out, path, nil
}

type target struct {
	port    int32
	svcPort string // the Service port that sends to it, as the user names it
}

// serviceTargets are the ports each container must listen on for the
// Service to reach the Pod: every TCP Service port's target. A container
// declaring the port (by number, or the name a target names) owns it; an
// undeclared number goes to the serving container, the first that
// declares any port (else the first), since Kubernetes sends to the Pod's
// address whatever the declarations say. A name no container declares is
// an error: Kubernetes gives such a Pod no endpoint port for it
// (k8s.io/endpointslice v0.37.2 utils.go: getEndpointPorts skips a
// Service port FindPort cannot resolve, and FindPort looks a name up in
// the containers and native sidecars only), so no cell could reach it.
// orig is the Pod before the stand-in dropped its init containers.
func serviceTargets(spec, orig *corev1.PodSpec, svc *corev1.Service) (map[int][]target, error) {
	out := map[int][]target{}
	if svc == nil || len(spec.Containers) == 0 {
		return out, nil
	}
	serving := 0
	for i := range spec.Containers {
		if len(spec.Containers[i].Ports) > 0 {
			serving = i
			break
		}
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
			continue
		}
		name := sp.Name
		if name == "" {
			name = strconv.Itoa(int(sp.Port))
		}
		tp := doctor.TargetPort(sp)
		if tp.Type == intstr.String {
			found := false
			for i := range spec.Containers {
				for _, cp := range spec.Containers[i].Ports {
					if doctor.Declares(cp, tp) {
						out[i] = append(out[i], target{port: cp.ContainerPort, svcPort: name})
						found = true
					}
				}
			}
			if !found {
				for _, ic := range orig.InitContainers {
					for _, cp := range ic.Ports {
						if doctor.Declares(cp, tp) && ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
							return nil, fmt.Errorf("Service port %s targets the port named %q of native sidecar %s, which the stand-in does not run (it replaces the Pod's containers only)", name, tp.StrVal, ic.Name)
						}
					}
				}
				return nil, fmt.Errorf("Service port %s targets the port named %q, which no container of the Pod declares: Kubernetes gives the Pod no endpoint for it", name, tp.StrVal)
			}
			continue
		}
		owner := serving
		for i := range spec.Containers {
			for _, cp := range spec.Containers[i].Ports {
				if doctor.Declares(cp, tp) {
					owner = i
				}
			}
		}
		out[owner] = append(out[owner], target{port: tp.IntVal, svcPort: name})
	}
	return out, nil
}

// dropClusterOwned clears what belongs to the user's cluster rather than
// to the workload (a priority class, a scheduler, a runtime class, a node,
// readiness gates its controllers set), each a change with its reason.
func dropClusterOwned(spec *corev1.PodSpec, drop func(field string, set bool, was, why string)) {
	drop("priorityClassName", spec.PriorityClassName != "", spec.PriorityClassName, "the class is the user's cluster's")
	drop("schedulerName", spec.SchedulerName != "" && spec.SchedulerName != corev1.DefaultSchedulerName, spec.SchedulerName, "the test cluster runs the default scheduler")
	drop("runtimeClassName", spec.RuntimeClassName != nil, "set", "the runtime class is the user's cluster's")
	drop("nodeName", spec.NodeName != "", spec.NodeName, "a node of the user's cluster")
	drop("readinessGates", len(spec.ReadinessGates) > 0, gates(spec.ReadinessGates),
		"set by a controller the test cluster does not run: the stand-in's Pods are ready without them, except an LB's gate where the LB under test sets one of the same vendor (StandIn.GateFor)")
	spec.PriorityClassName, spec.Priority, spec.RuntimeClassName, spec.NodeName = "", nil, nil, ""
	spec.ReadinessGates, spec.EphemeralContainers = nil, nil
	if spec.SchedulerName != corev1.DefaultSchedulerName {
		spec.SchedulerName = ""
	}
}

// grace is the Pod's terminationGracePeriodSeconds with the API default.
func grace(spec *corev1.PodSpec) time.Duration {
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
}

// probePath is the path the kubelet requests for an httpGet probe's path:
// it builds the URL with url.Parse, so "healthz" is "/healthz" and a query
// is not part of the path the echo server matches.
func probePath(p string) string {
	u, err := url.Parse(p)
	if err == nil {
		p = u.Path
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

func origHandler(c *corev1.Container, field string) corev1.ProbeHandler {
	switch field {
	case "livenessProbe":
		if c.LivenessProbe != nil {
			return c.LivenessProbe.ProbeHandler
		}
	case "startupProbe":
		if c.StartupProbe != nil {
			return c.StartupProbe.ProbeHandler
		}
	}
	return corev1.ProbeHandler{}
}

func pathsOr(ps []string, def string) string {
	if len(ps) == 0 {
		return def
	}
	return strings.Join(ps, ",")
}

func probes(c *corev1.Container) []*corev1.Probe {
	var out []*corev1.Probe
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// resolve turns a named port into the container's number.
func resolve(c *corev1.Container, p intstr.IntOrString, field string) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return int32(n), nil
	}
	return 0, fmt.Errorf("%s names port %q, which container %s does not declare", field, p.StrVal, c.Name)
}

// hooks keeps each lifecycle hook the stand-in can honour and turns the
// others into what the doctor reads them as.
func hooks(c *corev1.Container, sd doctor.Shutdown, opts Options, grace time.Duration, wref, cref string, listen map[int32]bool, change changeFunc) error {
	if c.Lifecycle == nil {
		return nil
	}
	// The API server rejects a sleep action longer than the grace period
	// (and, before Kubernetes 1.33, one of 0 s; feature gates
	// PodLifecycleSleepAction, beta from 1.30, and
	// PodLifecycleSleepActionAllowZero, beta from 1.33, in the Kubernetes
	// docs' feature-gate reference): the kubelet would kill the container
	// at the grace period anyway, so the hook is capped there.
	sleepHook := func(d time.Duration) *corev1.LifecycleHandler {
		if d > grace {
			change(wref, cref+".lifecycle.preStop", d.String(), grace.String(),
				"a preStop sleep may not outlast terminationGracePeriodSeconds (the API server refuses a longer sleep action); the kubelet kills the container then anyway")
			d = grace
		}
		if d <= 0 {
			return nil
		}
		return sleepFor(opts.Kubernetes, d)
	}
	if ps := c.Lifecycle.PreStop; ps != nil {
		field := cref + ".lifecycle.preStop"
		switch {
		case ps.Sleep != nil:
			if !opts.OwnImage && !opts.Kubernetes.HasSleepAction() {
				// The user's sleep action, on a release that has none:
				// the echo server sleeps instead, as long.
				d := time.Duration(ps.Sleep.Seconds) * time.Second
				c.Lifecycle.PreStop = sleepFor(opts.Kubernetes, d)
				change(wref, field, fmt.Sprintf("sleep %s", d), fmt.Sprintf("exec %s sleep %d", fixtures.EchoBinary, ps.Sleep.Seconds),
					fmt.Sprintf("Kubernetes 1.%d has no kubelet sleep action (1.30 and later); the echo server's sleep command holds SIGTERM back as long", opts.Kubernetes.Minor))
			}
		case ps.HTTPGet != nil:
			port, err := resolve(c, ps.HTTPGet.Port, field)
			if err != nil {
				return err
			}
			listen[port] = true
			if ps.HTTPGet.Scheme == corev1.URISchemeHTTPS {
				change(wref, field+".httpGet.scheme", "HTTPS", "HTTP", "the echo server speaks plain HTTP")
				ps.HTTPGet.Scheme = corev1.URISchemeHTTP
			}
			if opts.UnknownHook > 0 {
				c.Lifecycle.PreStop = sleepHook(opts.UnknownHook)
				change(wref, field, "httpGet "+ps.HTTPGet.Path, fmt.Sprintf("sleep %s", opts.UnknownHook), "its duration cannot be read; the stand-in sleeps as long as asked (--hook)")
			} else {
				change(wref, field, "", "httpGet "+ps.HTTPGet.Path+" answered at once",
					"its duration cannot be read (the doctor's ZD005); the stand-in's server answers it at once: pass --hook to model a longer one")
			}
		case ps.TCPSocket != nil:
			port, err := resolve(c, ps.TCPSocket.Port, field)
			if err != nil {
				return err
			}
			listen[port] = true
		case ps.Exec != nil:
			cmd := strings.Join(ps.Exec.Command, " ")
			switch {
			case sd.HookSignalsApp:
				c.Lifecycle.PreStop = nil
				change(wref, field, cmd, "none",
					fmt.Sprintf("%s: the hook signals the app when termination starts, so the stand-in's server gets SIGTERM at once and ends as the doctor reads it", sd.Hook))
			case sd.HookKnown:
				c.Lifecycle.PreStop = sleepHook(sd.HookDuration)
				change(wref, field, cmd, fmt.Sprintf("sleep %s", sd.HookDuration),
					"the echo image has no shell; a sleep hook holds SIGTERM back as long as the doctor reads the command to")
			case opts.UnknownHook > 0:
				c.Lifecycle.PreStop = sleepHook(opts.UnknownHook)
				change(wref, field, cmd, fmt.Sprintf("sleep %s", opts.UnknownHook), "its duration cannot be read; the stand-in sleeps as long as asked (--hook)")
			default:
				c.Lifecycle.PreStop = nil
				change(wref, field, cmd, "none",
					"its duration cannot be read (the doctor's ZD005) and the echo image cannot run it: pass --hook to model its duration")
			}
		}
	}
	if ps := c.Lifecycle.PostStart; ps != nil && ps.Exec != nil {
		change(wref, cref+".lifecycle.postStart", strings.Join(ps.Exec.Command, " "), "", "the echo image has no shell")
		c.Lifecycle.PostStart = nil
	}
	if sig := c.Lifecycle.StopSignal; sig != nil && *sig != corev1.SIGTERM {
		change(wref, cref+".lifecycle.stopSignal", string(*sig), "SIGTERM", "the echo server ends on SIGTERM; the doctor reads the app's shutdown from its hook and known servers")
		c.Lifecycle.StopSignal = nil
	}
	if c.Lifecycle.PreStop == nil && c.Lifecycle.PostStart == nil && c.Lifecycle.StopSignal == nil {
		c.Lifecycle = nil
	}
	return nil
}

// sleepFor is a preStop hook of d, whole seconds rounded up, in the form
// release v runs (fixtures.PreStopSleep).
func sleepFor(v kubeversion.Version, d time.Duration) *corev1.LifecycleHandler {
	return fixtures.PreStopSleep(v, int64((d+time.Second-1)/time.Second))
}

// behaviour is how the stand-in of container orig ends: the doctor's
// model of a server it knows, else Options.App, else the doctor's
// assumption for a server it does not know.
func behaviour(orig *corev1.Container, sd doctor.Shutdown, opts Options, grace time.Duration) (Behaviour, string) {
	if sd.App != "" {
		b := Behaviour{UnreadyOnTerm: sd.UnreadyOnTerm, KeepAccepting: sd.KeepAccepting, Drain: echoDrainForKnownApps, KeepAlive: true}
		if sd.UntilKilled {
			// It serves until the SIGKILL, which cuts what it holds.
			b.KeepAccepting, b.Drain = grace, 0
		}
		if sd.CutsInFlight {
			b.Drain = 0
		}
		for _, e := range orig.Env {
			switch e.Name {
			case "ECHO_DRAIN_TIMEOUT":
				if d, err := time.ParseDuration(e.Value); err == nil {
					b.Drain = d
				}
			case "ECHO_KEEPALIVE":
				if v, err := strconv.ParseBool(e.Value); err == nil {
					b.KeepAlive = v
				}
			}
		}
		return b, "the doctor's model of " + sd.App
	}
	if opts.App != nil {
		return *opts.App, "the --app flags"
	}
	return Behaviour{KeepAlive: true}, "the doctor's assumption for a server it does not know (most servers without a SIGTERM handler stop at once)"
}

// echoNicety is the stand-in's value of an echo-server setting beyond what
// the doctor reads off a manifest: off for a server that is not the echo
// server, the user's own value (or the echo server's default) for one that
// is.
func echoNicety(orig *corev1.Container, sd doctor.Shutdown, name, off, echoDefault string) string {
	if sd.App != doctor.AppEchoServer {
		return off
	}
	for _, e := range orig.Env {
		if e.Name == name && e.Value != "" {
			return e.Value
		}
	}
	return echoDefault
}

func names(cs []corev1.Container) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return strings.Join(out, ",")
}

func gates(gs []corev1.PodReadinessGate) string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = string(g.ConditionType)
	}
	return strings.Join(out, ",")
}
