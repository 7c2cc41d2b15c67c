package doctor

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestContainerShutdown(t *testing.T) {
	exec := func(cmd ...string) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want Shutdown
	}{
		{"no hook, unknown app", corev1.Container{Name: "app"},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true}},
		{"sleep action", corev1.Container{Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 12}}}},
			Shutdown{Hook: "preStop sleep 12s", HookKind: "sleep", HookKnown: true, HookDuration: 12 * time.Second}},
		{"shell sleep", corev1.Container{Lifecycle: exec("/bin/sh", "-c", "sleep 15 && /usr/sbin/touch /tmp/done")},
			Shutdown{Hook: "preStop exec 15s", HookKind: "exec", HookKnown: true, HookDuration: 15 * time.Second}},
		{"shell sleep, then nginx quits", corev1.Container{Lifecycle: exec("/bin/sh", "-c", "sleep 15 && nginx -s quit")},
			Shutdown{Hook: "preStop sleep 15, then `nginx -s quit` (nginx keeps accepting for 15s)", HookKind: "exec", HookKnown: true, HookDuration: 15 * time.Second}},
		{"nginx quits at once", corev1.Container{Lifecycle: exec("nginx", "-s", "quit")},
			Shutdown{Hook: "preStop `nginx -s quit` (nginx keeps accepting for 0s)", HookKind: "exec", HookKnown: true}},
		{"unreadable exec", corev1.Container{Lifecycle: exec("/drain.sh")},
			Shutdown{Hook: "preStop exec of unknown duration", HookKind: "exec"}},
		{"ingress-nginx", corev1.Container{Args: []string{"/nginx-ingress-controller", "--shutdown-grace-period=20"}, Lifecycle: exec("/wait-shutdown")},
			Shutdown{Hook: "preStop ingress-nginx /wait-shutdown with --shutdown-grace-period=20 (nginx keeps accepting for 20s)", HookKind: "exec",
				HookKnown: true, HookDuration: 20 * time.Second, HookSignalsApp: true,
				App: "the ingress-nginx controller", UnreadyOnTerm: true, KeepAccepting: 20 * time.Second}},
		{"echo server", corev1.Container{Env: []corev1.EnvVar{{Name: "ECHO_UNREADY_ON_TERM", Value: "true"}, {Name: "ECHO_SHUTDOWN_DELAY", Value: "7s"}}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true,
				App: "the zerodrop echo server", UnreadyOnTerm: true, KeepAccepting: 7 * time.Second}},
		{"traefik on its defaults", corev1.Container{Image: "traefik:v3.6", Args: []string{"--entryPoints.web.address=:8000", "--ping"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true,
				App: "Traefik (requestAcceptGraceTimeout 0s)", UnreadyOnTerm: true}},
		{"traefik without ping, its flags in any case", corev1.Container{Image: "docker.io/library/traefik@sha256:0",
			Args: []string{"--entrypoints.web.address=:8000", "--entrypoints.web.transport.lifecycle.requestacceptgracetimeout=7"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true,
				App: "Traefik (requestAcceptGraceTimeout 7s)", KeepAccepting: 7 * time.Second}},
		{"traefik: the shortest grace of its entry points, its ping answering 200 while it stops",
			corev1.Container{Command: []string{"/usr/local/bin/traefik"}, Args: []string{"--ping.terminatingStatusCode=200"},
				Env: []corev1.EnvVar{{Name: "TRAEFIK_ENTRYPOINTS_WEB_ADDRESS", Value: ":80"},
					{Name: "TRAEFIK_ENTRYPOINTS_WEB_TRANSPORT_LIFECYCLE_REQUESTACCEPTGRACETIMEOUT", Value: "12s"},
					{Name: "TRAEFIK_ENTRYPOINTS_WEBSECURE_ADDRESS", Value: ":443"},
					{Name: "TRAEFIK_ENTRYPOINTS_WEBSECURE_TRANSPORT_LIFECYCLE_REQUESTACCEPTGRACETIMEOUT", Value: "5s"},
					{Name: "TRAEFIK_ENTRYPOINTS_TRAEFIK_ADDRESS", Value: ":9000"}}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true,
				App: "Traefik (requestAcceptGraceTimeout 5s)", KeepAccepting: 5 * time.Second}},
		{"haproxy in master-worker mode: SIGTERM is its hard stop", corev1.Container{Image: "zerodrop/haproxy:dev", Args: []string{"-W", "-db", "-f", "/c/h.cfg"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, App: "HAProxy in master-worker mode (SIGTERM is its hard stop)", CutsInFlight: true}},
		{"haproxy as PID 1 without master-worker mode ignores SIGTERM", corev1.Container{Image: "zerodrop/haproxy:dev", Command: []string{"/usr/sbin/haproxy"}, Args: []string{"-db", "-f", "/c/h.cfg"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, UntilKilled: true,
				App: "HAProxy as its container's PID 1 without master-worker mode (-W): it ignores SIGTERM and serves until SIGKILL"}},
		{"the Docker library's image stops it with SIGUSR1", corev1.Container{Image: "docker.io/library/haproxy:2.6@sha256:0", Args: []string{"-f", "/c/h.cfg"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, App: "HAProxy of the Docker library image (its stop signal is SIGUSR1, the soft stop)"}},
		{"an image whose entrypoint is unknown: the hard stop assumed", corev1.Container{Image: "registry.example/haproxy:2.6"},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, App: "HAProxy (its image's entrypoint is not in the manifest: the hard stop assumed)", CutsInFlight: true}},
		{"a shell as PID 1 has no SIGTERM handler either", corev1.Container{Image: "haproxy:2.6", Command: []string{"/bin/sh", "-c", "exec 3>&1; haproxy -W -db -f /c/h.cfg"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, UntilKilled: true,
				App: "HAProxy under sh as PID 1, which has no SIGTERM handler: it serves until SIGKILL"}},
		{"a shell that execs haproxy -W", corev1.Container{Image: "haproxy:2.6", Command: []string{"/bin/sh", "-c", "ulimit -n 4096; exec /usr/sbin/haproxy -W -db -f /c/h.cfg"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, App: "HAProxy in master-worker mode (SIGTERM is its hard stop)", CutsInFlight: true}},
		{"an init forwards SIGTERM", corev1.Container{Image: "haproxy:2.6", Command: []string{"/usr/bin/tini", "--", "haproxy", "-db"}},
			Shutdown{Hook: "no preStop hook (0s)", HookKind: "none", HookKnown: true, App: "HAProxy under tini, which forwards SIGTERM: its hard stop", CutsInFlight: true}},
		{"haproxy's soft stop after a sleep, as PID 1: the hook stops it, nothing is left to ignore", corev1.Container{Image: "zerodrop/haproxy:dev",
			Command: []string{"haproxy"}, Lifecycle: exec("/bin/sh", "-c", "sleep 8; kill -USR1 1; while kill -0 1; do sleep 1; done")},
			Shutdown{Hook: "preStop sleep 8, then HAProxy's soft stop (SIGUSR1) (HAProxy keeps accepting for 8s)", HookKind: "exec",
				HookKnown: true, HookDuration: 8 * time.Second,
				App: "HAProxy as its container's PID 1 without master-worker mode (-W): it ignores SIGTERM and serves until SIGKILL"}},
		{"kill 10 is SIGTERM to PID 10, no soft stop", corev1.Container{Image: "zerodrop/haproxy:dev", Args: []string{"-W"},
			Lifecycle: exec("/bin/sh", "-c", "sleep 3; kill 10")},
			Shutdown{Hook: "preStop exec 3s", HookKind: "exec", HookKnown: true, HookDuration: 3 * time.Second,
				App: "HAProxy in master-worker mode (SIGTERM is its hard stop)", CutsInFlight: true}},
		{"a SIGUSR1 to something that is not HAProxy is an ordinary hook", corev1.Container{Image: "myapp:1",
			Lifecycle: exec("/bin/sh", "-c", "sleep 8; kill -USR1 1")},
			Shutdown{Hook: "preStop exec 8s", HookKind: "exec", HookKnown: true, HookDuration: 8 * time.Second}},
	} {
		if got := ContainerShutdown(&tc.c); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// An app that ignores its signal accepts until the kubelet's SIGKILL: the
// grace period is how long it accepts, whatever its hook.
func TestTimelineUntilKilled(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want time.Duration
	}{
		{"HAProxy as PID 1", corev1.Container{Command: []string{"haproxy"}, Args: []string{"-db"}}, 30 * time.Second},
		{"HAProxy in master-worker mode", corev1.Container{Command: []string{"haproxy"}, Args: []string{"-W", "-db"}}, 0},
		{"HAProxy as PID 1 behind a longer hook", corev1.Container{Command: []string{"haproxy"},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 40}}}}, 40 * time.Second},
		{"HAProxy as PID 1 soft-stopped by its hook", corev1.Container{Command: []string{"haproxy"},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 6; kill -USR1 1"}}}}}, 6 * time.Second},
	} {
		tl, ok := timelineOf(&tc.c, 30*time.Second)
		if !ok || tl.accept != tc.want {
			t.Errorf("%s: accepts for %v (ok %t), want %v", tc.name, tl.accept, ok, tc.want)
		}
	}
}
