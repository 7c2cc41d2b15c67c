package profiles

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestServingReadinessProbe(t *testing.T) {
	get := func(port intstr.IntOrString, scheme corev1.URIScheme) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: port, Scheme: scheme}}}
	}
	container := func(p *corev1.Probe) corev1.Container {
		return corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}, ReadinessProbe: p}
	}
	for _, c := range []struct {
		name  string
		probe *corev1.Probe
		port  int32
		want  bool
	}{
		{"by number", get(intstr.FromInt32(8080), ""), 8080, true},
		{"by the port's name", get(intstr.FromString("http"), corev1.URISchemeHTTP), 8080, true},
		{"another port", get(intstr.FromInt32(9090), ""), 8080, false},
		{"HTTPS", get(intstr.FromInt32(8080), corev1.URISchemeHTTPS), 8080, false},
		{"not the serving port's container", get(intstr.FromInt32(8080), ""), 8081, false},
		{"exec probe", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, 8080, false},
		{"no probe", nil, 8080, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ServingReadinessProbe(corev1.PodSpec{Containers: []corev1.Container{container(c.probe)}}, c.port)
			if (got != nil) != c.want {
				t.Fatalf("probe found = %v, want %v", got != nil, c.want)
			}
		})
	}
}

func TestWithReadinessProbe(t *testing.T) {
	neg := MustStock("gclb-neg")
	probe := &corev1.Probe{PeriodSeconds: 2, TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "readyz"}}}
	eff, ok := neg.WithReadinessProbe(probe)
	h := eff.HealthCheck
	if !ok || h.Path != "/readyz" || h.Interval.D() != 2*time.Second || h.Timeout.D() != time.Second || h.HealthyThreshold != 1 || h.UnhealthyThreshold != 2 {
		t.Fatalf("NEG check from the probe: %+v (changed %v); want /readyz every 2s, timeout 1s, thresholds 1/2", h, ok)
	}
	// Instance groups add 60 s to the period (ApplyProbeSettingsToHC).
	ig := MustStock("gclb")
	ig.HealthCheck.FromReadinessProbe = true
	if eff, _ := ig.WithReadinessProbe(probe); eff.HealthCheck.Interval.D() != 62*time.Second {
		t.Fatalf("instance-group interval %v, want 62s", eff.HealthCheck.Interval.D())
	}
	// A profile that does not infer, or no HTTP probe: unchanged.
	if _, ok := MustStock("gcp-nlb").WithReadinessProbe(probe); ok {
		t.Fatal("gcp-nlb took a check from a readiness probe")
	}
	if _, ok := neg.WithReadinessProbe(&corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}); ok {
		t.Fatal("a TCP probe changed the check")
	}
}
