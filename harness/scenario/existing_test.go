package scenario

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

func TestExistingTarget(t *testing.T) {
	lb := func(edit func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
				{Name: "alt", Port: 8080, Protocol: corev1.ProtocolTCP},
			},
		}}
		if edit != nil {
			edit(s)
		}
		return s
	}
	cases := []struct {
		name    string
		svc     *corev1.Service
		ref     ServiceRef
		port    int32
		path    string
		policy  string
		wantErr string
	}{
		{"first TCP port, root path", lb(nil), ServiceRef{Namespace: "shop", Name: "web"}, 80, "/", "Cluster", ""},
		{"port and path given", lb(func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }),
			ServiceRef{Namespace: "shop", Name: "web", Port: 8080, Path: "/healthz"}, 8080, "/healthz", "Local", ""},
		{"no such service", nil, ServiceRef{Namespace: "shop", Name: "web"}, 0, "", "", "create it before measuring it"},
		{"no name", lb(nil), ServiceRef{Namespace: "shop"}, 0, "", "", "want a namespace and a name"},
		{"not a LoadBalancer", lb(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }),
			ServiceRef{Namespace: "shop", Name: "web"}, 0, "", "", "must be of type LoadBalancer"},
		{"no selector", lb(func(s *corev1.Service) { s.Spec.Selector = nil }), ServiceRef{Namespace: "shop", Name: "web"}, 0, "", "", "no selector"},
		{"a UDP port", lb(nil), ServiceRef{Namespace: "shop", Name: "web", Port: 53}, 0, "", "", "no TCP port 53"},
		{"an unknown port", lb(nil), ServiceRef{Namespace: "shop", Name: "web", Port: 443}, 0, "", "", "no TCP port 443"},
		{"UDP only", lb(func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }), ServiceRef{Namespace: "shop", Name: "web"}, 0, "", "", "no TCP port"},
		{"relative path", lb(nil), ServiceRef{Namespace: "shop", Name: "web", Path: "healthz"}, 0, "", "", "want an absolute path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			if c.svc != nil {
				cs = fake.NewClientset(c.svc)
			}
			got, knobs, err := existingTarget(context.Background(), cs, c.ref)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Port != c.port || got.Path != c.path || got.Service != "web" || got.Namespace != "shop" || got.Selector["app"] != "web" || got.Workload != "" {
				t.Errorf("target = %+v", got)
			}
			if knobs["externalTrafficPolicy"] != c.policy || knobs["service"] != "shop/web" {
				t.Errorf("knobs = %v", knobs)
			}
		})
	}
}
