package doctor

import (
	"errors"
	"strings"
	"testing"
)

// TestPlaceholdersThatDecide: a quoted placeholder in a field that decides
// what a Service is judged against, or whether it is judged, is refused
// with the field's line and what it decides, as one in spec.type is; read
// as it stands it would be a literal (an LB annotation that picks the
// Classic ELB, a backend that names no Service). A placeholder in a field
// that decides nothing is read as it stands.
func TestPlaceholdersThatDecide(t *testing.T) {
	const svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n    %s\nspec:\n  type: LoadBalancer\n"
	ann := func(kv string) string { return strings.Replace(svc, "%s", kv, 1) }
	cases := []struct {
		name, in string
		line     int    // 0: read, not refused
		match    string // of the error
	}{
		{"zerodrop's LB profile", ann(`zerodrop.dev/lb-profile: "{{ .Values.lbProfile }}"`), 6, "annotation zerodrop.dev/lb-profile is a template placeholder"},
		{"the AWS LB type", ann(`service.beta.kubernetes.io/aws-load-balancer-type: "{{ .Values.lbType }}"`), 6, "which LB the Service is judged against"},
		{"the NLB target type", ann(`service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: "${TARGETS}"`), 6, "aws-load-balancer-nlb-target-type"},
		{"the ALB target type on the Service", ann(`alb.ingress.kubernetes.io/target-type: "{{ .Values.target }}"`), 6, "alb.ingress.kubernetes.io/target-type"},
		{"GKE's NEG", ann(`cloud.google.com/neg: '{"ingress": {{ .Values.neg }}}'`), 6, "cloud.google.com/neg"},
		{"the LB class", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: LoadBalancer\n  loadBalancerClass: '{{ .Values.class }}'\n",
			6, "spec.loadBalancerClass"},
		{"an Ingress backend", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec:\n  rules:\n  - http:\n      paths:\n" +
			"      - path: /\n        pathType: Prefix\n        backend:\n          service:\n            name: '{{ include \"web.fullname\" . }}'\n            port: {number: 80}\n",
			12, "spec.rules[0].http.paths[0].backend.service.name is a template placeholder"},
		{"an Ingress default backend", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec:\n  defaultBackend:\n    service:\n      name: ${SVC}\n      port: {number: 80}\n",
			7, "which Service the Ingress sends to"},
		{"a legacy Ingress backend", "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: i}\nspec:\n  backend:\n    serviceName: '{{ .Values.svc }}'\n    servicePort: 80\n",
			6, "spec.backend.serviceName"},
		{"the Ingress class", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec:\n  ingressClassName: '{{ .Values.class }}'\n",
			5, "spec.ingressClassName"},
		{"the Ingress class annotation", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: i\n  annotations:\n    kubernetes.io/ingress.class: '{{ .Values.class }}'\n",
			6, "annotation kubernetes.io/ingress.class"},
		{"a route backend", "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TCPRoute\nmetadata: {name: r}\nspec:\n  rules:\n  - backendRefs:\n    - name: '{{ .Values.svc }}'\n      port: 5432\n",
			7, "spec.rules[0].backendRefs[0].name"},
		{"a route's Gateway", "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs:\n  - name: '{{ .Values.gateway }}'\n",
			6, "which Gateway carries the route"},
		{"a Gateway's class", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec:\n  gatewayClassName: '{{ .Values.class }}'\n",
			5, "spec.gatewayClassName"},
		{"a class's controller", "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\nspec:\n  controllerName: '${CONTROLLER}'\n",
			5, "spec.controllerName"},
		// Decides nothing the rules read: read as it stands.
		{"an annotation no rule reads", ann(`prometheus.io/port: "{{ .Values.port }}"`), 0, ""},
		{"an AWS annotation whose value chooses nothing", ann(`service.beta.kubernetes.io/aws-load-balancer-internal: "{{ .Values.internal }}"`), 0, ""},
		{"a route backend that is no Service", "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  rules:\n" +
			"  - backendRefs:\n    - {group: net.gke.io, kind: ServiceImport, name: '{{ .Values.svc }}'}\n", 0, ""},
		{"a parent that is no Gateway", "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs:\n" +
			"  - {group: '', kind: Service, name: '{{ .Values.svc }}'}\n", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("in.yaml", strings.NewReader(c.in))
			if c.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			if ie.Line != c.line || !strings.Contains(err.Error(), c.match) || !strings.Contains(err.Error(), "render the template first") {
				t.Errorf("error at line %d: %v\nwant line %d and %q", ie.Line, err, c.line, c.match)
			}
		})
	}
}
