package doctor

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Shutdown is what the doctor reads of how a container ends, the model its
// timing rules judge (see timelineOf): the preStop hook and, for a server
// it knows, what that server does on its termination signal. It is
// exported for tools that must behave as the doctor assumes (the stand-in
// of `zerodrop test` runs the echo server with exactly these numbers), so
// a disagreement between a prediction and a measurement is never a second
// reading of the same manifest.
type Shutdown struct {
	// Hook describes the preStop hook ("no preStop hook (0s)", "preStop
	// exec 15s", "preStop httpGet of unknown duration").
	Hook string
	// HookKind is "none", "sleep", "exec", "httpGet" or "tcpSocket".
	HookKind string
	// HookKnown says HookDuration could be read from the manifest.
	HookKnown    bool
	HookDuration time.Duration
	// HookSignalsApp: the hook sends the app its termination signal when
	// it starts (ingress-nginx's /wait-shutdown), so the app's shutdown
	// begins when the Pod starts terminating, not after the hook.
	HookSignalsApp bool
	// App names the server when the doctor knows its shutdown ("the
	// ingress-nginx controller"); "" when not, and the two fields below are
	// then the doctor's assumption for an unknown server: it stops
	// accepting when the signal arrives and keeps its readiness.
	App string
	// UnreadyOnTerm: readiness fails from the signal on.
	UnreadyOnTerm bool
	// KeepAccepting: new connections are still accepted this long after
	// the signal.
	KeepAccepting time.Duration
	// UntilKilled: the app has no handler for its termination signal and
	// runs as its container's PID 1, so the kernel ignores the signal and
	// the app serves until the kubelet's SIGKILL at the end of the grace
	// period (KeepAccepting is then 0: the grace period is the Pod's).
	UntilKilled bool
	// CutsInFlight: the signal ends every connection at once, requests in
	// flight included (HAProxy's hard stop).
	CutsInFlight bool
}

// ContainerShutdown reads c's shutdown as the timing rules do.
func ContainerShutdown(c *corev1.Container) Shutdown {
	ps := containerPreStop(c)
	s := Shutdown{Hook: ps.String(), HookKind: ps.kind, HookKnown: ps.known, HookDuration: ps.duration, HookSignalsApp: ps.signalsApp}
	if app, ok := knownApp(c); ok {
		s.App, s.UnreadyOnTerm, s.KeepAccepting, s.CutsInFlight = app.what, app.unreadyOnTerm, app.keepAccepting, app.cutsInFlight
		// A hook that stops the app itself (HAProxy's soft stop) leaves
		// no signal for it to ignore.
		s.UntilKilled = app.untilKilled && !ps.stopsApp
	}
	return s
}
