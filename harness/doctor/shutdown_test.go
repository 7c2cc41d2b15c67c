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
	} {
		if got := ContainerShutdown(&tc.c); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
