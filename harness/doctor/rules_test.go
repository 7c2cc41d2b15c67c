package doctor

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// m is a manifest under test: a Service, a workload and extra documents. The
// zero value of every field is the safe choice, so the base manifest is
// clean and each case changes only what its rule looks at.
type m struct {
	SvcType        string // LoadBalancer
	Policy         string // Local
	SvcAnnotations string // "key: value" lines
	SvcSpec        string // further Service spec lines
	Kind           string // Deployment
	Replicas       string // 3; "-" omits the field
	MinReady       string // 20; "-" omits
	Strategy       string // surge rollout
	Grace          string // 50; "-" omits
	Lifecycle      string // preStop sleep 35
	Readiness      string // /readyz period 10 failure 3; "-" omits
	Liveness       string // /healthz; "-" omits
	Env            string
	PodExtra       string // spread over nodes
	Extra          string // further documents (PDB, Ingress)
	PDB            string // maxUnavailable 1 AlwaysAllow; "-" omits
	HostPort       string // hostPort of the http port; "" none
	Args           string // container args, a YAML flow list; "" none
	Image          string // web:1
	PodLabels      string // extra Pod template labels, "key: value" lines
}

const manifestTmpl = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
{{- if .SvcAnnotations}}
  annotations:
{{indent 4 .SvcAnnotations}}
{{- end}}
spec:
  type: {{or .SvcType "LoadBalancer"}}
  externalTrafficPolicy: {{or .Policy "Local"}}
{{- if .SvcSpec}}
{{indent 2 .SvcSpec}}
{{- end}}
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
---
apiVersion: apps/v1
kind: {{or .Kind "Deployment"}}
metadata:
  name: web
  namespace: shop
spec:
{{- if ne .Kind "DaemonSet"}}{{if ne .Replicas "-"}}
  replicas: {{or .Replicas "3"}}
{{- end}}{{end}}
{{- if ne .MinReady "-"}}
  minReadySeconds: {{or .MinReady "20"}}
{{- end}}
  selector:
    matchLabels:
      app: web
{{indent 2 (or .Strategy (strategy .Kind))}}
  template:
    metadata:
      labels:
        app: web
{{- if .PodLabels}}
{{indent 8 .PodLabels}}
{{- end}}
    spec:
{{- if ne .Grace "-"}}
      terminationGracePeriodSeconds: {{or .Grace "50"}}
{{- end}}
{{- if ne .PodExtra "-"}}
{{indent 6 (or .PodExtra "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  nodeTaintsPolicy: Honor\n  labelSelector:\n    matchLabels:\n      app: web")}}
{{- end}}
      containers:
      - name: web
        image: {{or .Image "web:1"}}
{{- if .Args}}
        args: {{.Args}}
{{- end}}
        ports:
        - name: http
          containerPort: 8080
{{- if .HostPort}}
          hostPort: {{.HostPort}}
{{- end}}
{{- if ne .Lifecycle "-"}}
{{indent 8 (or .Lifecycle "lifecycle:\n  preStop:\n    sleep:\n      seconds: 35")}}
{{- end}}
{{- if ne .Readiness "-"}}
{{indent 8 (or .Readiness "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  periodSeconds: 10\n  failureThreshold: 3")}}
{{- end}}
{{- if ne .Liveness "-"}}
{{indent 8 (or .Liveness "livenessProbe:\n  httpGet:\n    path: /healthz\n    port: 8080")}}
{{- end}}
{{- if .Env}}
{{indent 8 .Env}}
{{- end}}
{{- if ne .PDB "-"}}
---
{{or .PDB "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  maxUnavailable: 1\n  unhealthyPodEvictionPolicy: AlwaysAllow\n  selector:\n    matchLabels:\n      app: web"}}
{{- end}}
{{- if .Extra}}
---
{{.Extra}}
{{- end}}
`

var tmpl = template.Must(template.New("m").Funcs(template.FuncMap{
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
	},
	"strategy": func(kind string) string {
		switch kind {
		case "StatefulSet":
			return "updateStrategy:\n  type: RollingUpdate"
		case "DaemonSet":
			return "updateStrategy:\n  type: RollingUpdate\n  rollingUpdate:\n    maxSurge: 1\n    maxUnavailable: 0"
		}
		return "strategy:\n  type: RollingUpdate\n  rollingUpdate:\n    maxUnavailable: 0\n    maxSurge: 1"
	},
}).Parse(manifestTmpl))

func (x m) yaml(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tmpl.Execute(&b, x); err != nil {
		t.Fatalf("template: %v", err)
	}
	return b.Bytes()
}

// checkYAML checks doc against generic, the LB the test manifests were
// written for, unless opts say otherwise (TestLBInference covers the default).
func checkYAML(t testing.TB, doc []byte, opts ...Option) *Report {
	t.Helper()
	if len(opts) == 0 {
		g, _ := LookupProfile(DefaultProfile)
		opts = []Option{WithLBProfile(g)}
	}
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("Read: %v\n%s", err, doc)
	}
	return Check(ms, opts...)
}

func bySeverity(r *Report) map[string]Severity {
	out := map[string]Severity{}
	for _, f := range r.Findings {
		out[f.RuleID] = max(out[f.RuleID], f.Severity)
	}
	return out
}

func TestBaseManifestIsClean(t *testing.T) {
	for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet"} {
		t.Run(kind, func(t *testing.T) {
			x := m{Kind: kind}
			if kind == "StatefulSet" {
				x.Replicas = "3"
			}
			r := checkYAML(t, x.yaml(t))
			// ZD041 (info) is on every Pod whose readiness can flip while
			// keep-alive is on: the base has a readiness probe of its own.
			r.Findings = slices.DeleteFunc(r.Findings, func(f Finding) bool { return f.RuleID == "ZD041" })
			if len(r.Findings) != 0 {
				t.Fatalf("base %s manifest has findings: %+v\n%s", kind, r.Findings, x.yaml(t))
			}
			if len(r.Services) != 1 || len(r.Services[0].Workloads) != 1 {
				t.Fatalf("want 1 Service with 1 workload, got %+v", r.Services)
			}
		})
	}
}

const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
spec:
  rules:
  - http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80`

// the keepalive-unready incident's own Ingress, extensions/v1beta1 with serviceName.
const legacyIngress = `apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: ready-test
  namespace: shop
  annotations:
    kubernetes.io/ingress.class: "gce"
spec:
  rules:
  - http:
      paths:
      - path: /
        backend:
          serviceName: web
          servicePort: 80`

// httpRoute is a Gateway API HTTPRoute in namespace shop sending to
// Service web (backendRef namespace ns when given).
func httpRoute(kind, ns string) string {
	ref := "    - name: web\n      port: 80"
	if ns != "" {
		ref += "\n      namespace: " + ns
	}
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: web\n  namespace: shop\nspec:\n" +
		"  parentRefs:\n  - name: gw\n  rules:\n  - backendRefs:\n" + ref
}

// hpa is an autoscaling/v2 HPA scaling Deployment name with minReplicas min.
func hpa(name string, min int) string {
	return fmt.Sprintf("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: %s\n  namespace: shop\nspec:\n"+
		"  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: %s\n  minReplicas: %d\n  maxReplicas: 10", name, name, min)
}

const secondPDB = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web-extra
  namespace: shop
spec:
  minAvailable: 1
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      app: web`

func pdb(spec string) string {
	return "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  namespace: shop\nspec:\n" +
		"  selector:\n    matchLabels:\n      app: web\n" + spec
}

// noHonor is the base manifest's spread without nodeTaintsPolicy: Honor.
const noHonor = "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector:\n    matchLabels:\n      app: web"

// Container settings the ZD001 cases share.
const (
	nginxArgs      = `["/nginx-ingress-controller"]`
	sleep10        = "lifecycle:\n  preStop:\n    sleep:\n      seconds: 10"
	waitShutdown   = "lifecycle:\n  preStop:\n    exec:\n      command: [\"/wait-shutdown\"]"
	echoUnready20s = "env:\n- name: ECHO_UNREADY_ON_TERM\n  value: \"true\"\n- name: ECHO_SHUTDOWN_DELAY\n  value: 20s"
	fastReadiness  = "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  periodSeconds: 1\n  failureThreshold: 3"
)

func TestRules(t *testing.T) {
	tests := []struct {
		name    string
		in      m
		opts    []Option
		fire    map[string]Severity
		quiet   []string
		lineHas string // the first finding of the first fired rule points at a line containing this
	}{
		// ZD001: the endpoint stops serving before the LB has moved.
		{name: "ZD001 quiet: the incident's numbers with a long grace (a longer grace keeps only established connections, which readiness never cuts)",
			in:    m{Args: nginxArgs, Lifecycle: sleep10, Grace: "120", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD001", "ZD002", "ZD003"}},
		{name: "ZD001 quiet: the rolling-update-local incident's own configuration", in: m{Args: nginxArgs, Lifecycle: sleep10, Grace: "30", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD001", "ZD002", "ZD003"}},
		{name: "ZD001 fires: /wait-shutdown fails nginx's readiness at once (10s x 2 = 20s < gcp-nlb 24s)",
			in:   m{Args: `["/nginx-ingress-controller", "--shutdown-grace-period=35"]`, Lifecycle: waitShutdown, Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			fire: map[string]Severity{"ZD001": Error}, quiet: []string{"ZD002", "ZD005"}, lineHas: "readinessProbe"},
		{name: "ZD001 quiet: the same behind gke-l4 (6s)",
			in:    m{Args: `["/nginx-ingress-controller", "--shutdown-grace-period=35"]`, Lifecycle: waitShutdown, Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD001", "ZD002"}},
		{name: "ZD001 fires: echo server unready on SIGTERM, accepting 20s, probe 1s x 2 = 2s < gke-l4 6s",
			in:   m{Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "-", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			fire: map[string]Severity{"ZD001": Error}, quiet: []string{"ZD002"}},
		{name: "ZD001 quiet: the same with a preStop sleep covering the lag",
			in:    m{Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 6", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD001", "ZD002"}},
		{name: "ZD001 quiet with Cluster", in: m{Policy: "Cluster", Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "-", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD001"}},
		{name: "ZD001 quiet for a server whose shutdown is unknown", in: m{Readiness: fastReadiness, Lifecycle: "-", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD001"}},
		{name: "ZD001 quiet behind MetalLB, which follows the serving condition", in: m{Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "-", SvcAnnotations: "zerodrop.dev/lb-profile: metallb"},
			quiet: []string{"ZD001", "ZD002", "ZD003"}},
		{name: "ZD001 quiet and ZD002 fires whatever the preStop on Kubernetes 1.25 (no KEP-1669)",
			in:   m{Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 40", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			opts: []Option{WithKubernetesMinor(25)}, fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD001"}},
		{name: "ZD002 quiet on Kubernetes 1.26 with the same preStop",
			in:   m{Env: echoUnready20s, Readiness: fastReadiness, Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 40", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			opts: []Option{WithKubernetesMinor(26)}, quiet: []string{"ZD001", "ZD002"}},
		{name: "ZD002 counts nginx's --shutdown-grace-period after a preStop sleep (5s + 20s >= gcp-nlb 24s)",
			in:    m{Args: `["/nginx-ingress-controller", "--shutdown-grace-period=20"]`, Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 5", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			quiet: []string{"ZD002", "ZD001"}},

		// ZD025: a node's shutdown against the kubelet's budget.
		{name: "ZD025 quiet without the nodes' setting", in: m{Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 29", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			quiet: []string{"ZD025"}},
		{name: "ZD025 fires: the measured cell, a 29s preStop against GKE's 15s for regular Pods",
			in:   m{Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 29", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			opts: []Option{WithNodeShutdown(recipe.ShutdownGrace{Period: 30 * time.Second, CriticalPods: 15 * time.Second})},
			fire: map[string]Severity{"ZD025": Error}, lineHas: "preStop"},
		{name: "ZD025 quiet: no preStop and a grace period within the 15s",
			in:    m{Policy: "Cluster", Lifecycle: "-", Grace: "15", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			opts:  []Option{WithNodeShutdown(recipe.ShutdownGrace{Period: 30 * time.Second, CriticalPods: 15 * time.Second})},
			quiet: []string{"ZD025"}},
		{name: "ZD025 fires as a warning: a 10s preStop fits, the 30s grace period does not",
			in:   m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 10", Grace: "30", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			opts: []Option{WithNodeShutdown(recipe.ShutdownGrace{Period: 30 * time.Second, CriticalPods: 15 * time.Second})},
			fire: map[string]Severity{"ZD025": Warning}},
		{name: "ZD025 fires: graceful node shutdown off", in: m{Policy: "Cluster", Lifecycle: "-", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			opts: []Option{WithNodeShutdown(recipe.ShutdownGrace{})}, fire: map[string]Severity{"ZD025": Error}},

		// ZD026: Cluster behind an LB whose check misses the autoscaler's taint.
		{name: "ZD026 fires: Cluster behind aws-nlb (TCP to the traffic port), the measured cell",
			in:   m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb"},
			fire: map[string]Severity{"ZD026": Warning}, lineHas: "externalTrafficPolicy"},
		{name: "ZD026 quiet: aws-nlb with the check on kube-proxy's /healthz",
			in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb\n" +
				"service.beta.kubernetes.io/aws-load-balancer-healthcheck-port: \"10256\"\n" +
				"service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol: HTTP\n" +
				"service.beta.kubernetes.io/aws-load-balancer-healthcheck-path: /healthz"},
			quiet: []string{"ZD026"}},
		{name: "ZD026 fires: port 10256 over TCP passes whatever kube-proxy answers",
			in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb\n" +
				"service.beta.kubernetes.io/aws-load-balancer-healthcheck-port: \"10256\""},
			fire: map[string]Severity{"ZD026": Warning}},
		{name: "ZD026 fires: Cluster behind azure-lb", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: azure-lb"},
			fire: map[string]Severity{"ZD026": Warning}},
		{name: "ZD026 quiet: Cluster behind gcp-nlb, whose check asks kube-proxy", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			quiet: []string{"ZD026"}},
		{name: "ZD026 quiet: Local behind aws-nlb (the healthCheckNodePort)", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb"},
			quiet: []string{"ZD026"}},
		{name: "ZD026 fires: Cluster behind gclb (the NodePort's serving path)", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: gclb"},
			fire: map[string]Severity{"ZD026": Warning}},
		{name: "ZD026 quiet: gclb with a BackendConfig on kube-proxy's :10256/healthz",
			in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: gclb\ncloud.google.com/backend-config: '{\"default\": \"hc\"}'",
				Extra: bcDoc("hc", "    port: 10256\n    requestPath: /healthz\n    checkIntervalSec: 3\n    timeoutSec: 1\n    unhealthyThreshold: 2")},
			quiet: []string{"ZD026", "ZD091"}},
		{name: "ZD026 quiet: Pod targets", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb-ip"},
			quiet: []string{"ZD026"}},
		{name: "ZD026 quiet: MetalLB", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: metallb"},
			quiet: []string{"ZD026"}},

		// ZD002: preStop vs LB lag, per profile.
		{name: "ZD002 fires: no preStop with Local", in: m{Lifecycle: "-", Grace: "30"},
			fire: map[string]Severity{"ZD002": Error}, lineHas: "- name: web"},
		{name: "ZD002 fires: 20s against gcp-nlb 24s", in: m{Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 20", Grace: "35", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD001", "ZD091"}, lineHas: "preStop"},
		{name: "ZD002 quiet: 25s against gcp-nlb 24s", in: m{Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 25", Grace: "40", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			quiet: []string{"ZD002", "ZD001"}},
		{name: "ZD002 fires from the --lb-profile flag", in: m{}, opts: []Option{WithLBProfile(mustProfile(t, "aws-elb"))},
			fire: map[string]Severity{"ZD002": Error}},
		{name: "ZD002 follows AWS health-check annotations", in: m{SvcAnnotations: "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval: \"30\"\nservice.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold: \"3\""},
			fire: map[string]Severity{"ZD002": Error}},
		{name: "ZD002 follows Azure probe annotations", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"sleep 12 && kill -QUIT 1\"]", Grace: "40",
			SvcAnnotations: "zerodrop.dev/lb-profile: azure-lb\nservice.beta.kubernetes.io/azure-load-balancer-health-probe-interval: \"5\"\nservice.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe: \"3\""},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD005"}},
		{name: "ZD002 quiet with Cluster", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 5", Grace: "40"},
			quiet: []string{"ZD002"}},
		{name: "ZD002 reads exec sleep", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"sleep\", \"35\"]"},
			quiet: []string{"ZD002", "ZD005"}},

		// ZD003: grace vs preStop.
		{name: "ZD003 fires: grace equals preStop", in: m{Grace: "35"},
			fire: map[string]Severity{"ZD003": Error}, lineHas: "terminationGracePeriodSeconds"},
		{name: "ZD003 fires: default grace below preStop", in: m{Grace: "-", Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 40"},
			fire: map[string]Severity{"ZD003": Error}},
		{name: "ZD003 quiet: grace above preStop", in: m{Grace: "36"}, quiet: []string{"ZD003"}},

		// ZD004: no preStop with Cluster.
		{name: "ZD004 fires", in: m{Policy: "Cluster", Lifecycle: "-", Grace: "-"},
			fire: map[string]Severity{"ZD004": Warning}, quiet: []string{"ZD002"}},
		{name: "ZD004 quiet with a hook", in: m{Policy: "Cluster"}, quiet: []string{"ZD004"}},
		{name: "ZD004 fires on a hook that stops the server at once (kong quit)", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/bash\", \"-c\", \"kong quit\"]"},
			fire: map[string]Severity{"ZD004": Warning}, quiet: []string{"ZD005"}, lineHas: "preStop"},
		{name: "ZD004 quiet on kong quit --wait=5", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"kong\", \"quit\", \"--wait=5\"]"},
			quiet: []string{"ZD004", "ZD005"}},
		{name: "ZD004 quiet with Local (ZD002 covers it)", in: m{Lifecycle: "-"}, quiet: []string{"ZD004"}},
		// nginx -s quit signals the master and returns; the workers close
		// their listeners at once.
		{name: "ZD004 fires on `nginx -s quit` (listeners close at once)", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"nginx\", \"-s\", \"quit\"]"},
			fire: map[string]Severity{"ZD004": Warning}, quiet: []string{"ZD005"}, lineHas: "preStop"},
		{name: "ZD004 fires on `nginx -c /etc/nginx/nginx.conf -s stop` in a shell", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"/usr/sbin/nginx -c /etc/nginx/nginx.conf -s stop\"]"},
			fire: map[string]Severity{"ZD004": Warning}, quiet: []string{"ZD005"}},
		{name: "ZD004 quiet on `sleep 5; nginx -s quit`", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"sleep 5; nginx -s quit\"]"},
			quiet: []string{"ZD004", "ZD005"}},
		{name: "ZD002 fires on `sleep 5 && nginx -s quit` behind gcp-nlb (5 < 24)", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"sleep 5 && nginx -s quit\"]", Grace: "40", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD005"}},
		{name: "ZD005 still warns on `nginx -s reload` (not a shutdown)", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"nginx\", \"-s\", \"reload\"]"},
			fire: map[string]Severity{"ZD005": Warning}},
		{name: "ZD005 still warns on a hook that only prints `nginx -s quit`", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"echo 'run nginx -s quit'; /drain.sh\"]"},
			fire: map[string]Severity{"ZD005": Warning}},
		{name: "ZD004 fires on nginx's own exec with -g 'daemon off;' -s quit", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"nginx\", \"-g\", \"daemon off;\", \"-s\", \"quit\"]"},
			fire: map[string]Severity{"ZD004": Warning}, quiet: []string{"ZD005"}},
		{name: "ZD002 quiet when the sleeps before `nginx -s quit` add up (15 + 15 > gcp-nlb 24)", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"sleep 15; sleep 15; nginx -g 'daemon off;' -s quit\"]", Grace: "60", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			quiet: []string{"ZD002", "ZD005"}},

		// ZD005: unknown hook duration.
		{name: "ZD005 fires as a warning on an httpGet hook behind Local", in: m{Lifecycle: "lifecycle:\n  preStop:\n    httpGet:\n      path: /shutdown\n      port: 8080"},
			fire: map[string]Severity{"ZD005": Warning}, quiet: []string{"ZD001", "ZD002", "ZD003"}},
		{name: "ZD005 informs on an httpGet hook with Cluster", in: m{Policy: "Cluster", Lifecycle: "lifecycle:\n  preStop:\n    httpGet:\n      path: /shutdown\n      port: 8080"},
			fire: map[string]Severity{"ZD005": Info}},
		{name: "ZD005 warns on exec without sleep", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/usr/local/bin/drain.sh\"]"},
			fire: map[string]Severity{"ZD005": Warning}, quiet: []string{"ZD002"}},
		// ZD007: gclb's default check passes while a terminating Pod serves.
		{name: "ZD007 fires behind gclb with Local, on the Service", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb", Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 605", Grace: "620"},
			fire: map[string]Severity{"ZD007": Error}, quiet: []string{"ZD002"}, lineHas: "annotations"},
		{name: "ZD007 quiet behind gclb with Cluster", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-profile: gclb"},
			quiet: []string{"ZD007"}},
		{name: "ZD007 quiet behind gclb with a BackendConfig that asks kube-proxy",
			in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb\ncloud.google.com/backend-config: '{\"default\": \"hc\"}'", SvcSpec: "healthCheckNodePort: 31000",
				Extra: bcDoc("hc", "    port: 31000\n    checkIntervalSec: 3\n    timeoutSec: 1\n    unhealthyThreshold: 2")},
			quiet: []string{"ZD007", "ZD002", "ZD091"}},
		{name: "ZD007 quiet behind an L4 LB", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"}, quiet: []string{"ZD007"}},
		// ingress-nginx: /wait-shutdown keeps nginx accepting only for --shutdown-grace-period (default 0).
		{name: "ZD002 fires on ingress-nginx's /wait-shutdown with the default grace period", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/wait-shutdown\"]"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD005"}},
		{name: "ZD002 quiet on /wait-shutdown with --shutdown-grace-period=35", in: m{Args: `["/nginx-ingress-controller", "--shutdown-grace-period=35"]`, Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/wait-shutdown\"]"},
			quiet: []string{"ZD002", "ZD005"}},
		{name: "ZD002 fires on Kong's `kong quit` (nginx quits at once)", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/bash\", \"-c\", \"kong quit\"]", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD005"}},
		{name: "ZD002 quiet on `kong quit --wait=15` behind gke-l4", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"kong quit --wait=15\"]", Grace: "40", SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4"},
			quiet: []string{"ZD002", "ZD005"}},
		{name: "ZD002 adds a sleep before `kong quit -w 10` (5 + 10 < gcp-nlb 24)", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/bin/sh\", \"-c\", \"sleep 5 && kong quit -w 10\"]", Grace: "40", SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb"},
			fire: map[string]Severity{"ZD002": Error}, quiet: []string{"ZD005"}},
		{name: "ZD002 reads --shutdown-grace-period as two args", in: m{Args: `["--shutdown-grace-period", "10"]`, Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [\"/wait-shutdown\"]"},
			fire: map[string]Severity{"ZD002": Error}},
		{name: "ZD005 quiet on sleep", in: m{}, quiet: []string{"ZD005"}},

		// ZD010: spread with Local.
		{name: "ZD010 fires", in: m{PodExtra: "-"}, fire: map[string]Severity{"ZD010": Warning}, lineHas: "spec:"},
		{name: "ZD010 fires when the spread selects other Pods", in: m{PodExtra: "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector:\n    matchLabels:\n      app: api"},
			fire: map[string]Severity{"ZD010": Warning}, lineHas: "topologySpreadConstraints"},
		{name: "ZD010 fires on a spread without a labelSelector (it counts no Pods)", in: m{PodExtra: "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule"},
			fire: map[string]Severity{"ZD010": Warning}},
		{name: "ZD010 fires when the anti-affinity selects other Pods", in: m{PodExtra: "affinity:\n  podAntiAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n    - topologyKey: kubernetes.io/hostname\n      labelSelector:\n        matchLabels:\n          app: api"},
			fire: map[string]Severity{"ZD010": Warning}},
		{name: "ZD010 quiet with anti-affinity", in: m{PodExtra: "affinity:\n  podAntiAffinity:\n    preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: 100\n      podAffinityTerm:\n        topologyKey: kubernetes.io/hostname\n        labelSelector:\n          matchLabels:\n            app: web"},
			quiet: []string{"ZD010"}},
		{name: "ZD010 quiet with zone spread", in: m{PodExtra: "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n  whenUnsatisfiable: ScheduleAnyway\n  labelSelector:\n    matchLabels:\n      app: web"},
			quiet: []string{"ZD010"}},
		{name: "ZD010 quiet with Cluster", in: m{Policy: "Cluster", PodExtra: "-"}, quiet: []string{"ZD010"}},
		{name: "ZD010 quiet for a DaemonSet", in: m{Kind: "DaemonSet", PodExtra: "-"}, quiet: []string{"ZD010"}},

		// ZD013: a DoNotSchedule spread before 1.26 (the base manifest has one).
		{name: "ZD013 fires on 1.25", in: m{}, opts: []Option{WithKubernetesMinor(25)}, fire: map[string]Severity{"ZD013": Warning}, lineHas: "topologySpreadConstraints"},
		{name: "ZD013 quiet from 1.26 with nodeTaintsPolicy Honor", in: m{}, opts: []Option{WithKubernetesMinor(26)}, quiet: []string{"ZD013"}},
		{name: "ZD013 quiet with Honor when the release is unknown", in: m{}, quiet: []string{"ZD013"}},
		// Without Honor a constraint is Ignore on every release: a tainted
		// node is still an empty domain.
		{name: "ZD013 fires on 1.37 without nodeTaintsPolicy", in: m{PodExtra: noHonor}, opts: []Option{WithKubernetesMinor(37)}, fire: map[string]Severity{"ZD013": Warning}, lineHas: "topologySpreadConstraints"},
		{name: "ZD013 fires with nodeTaintsPolicy Ignore", in: m{PodExtra: strings.Replace(noHonor, "whenUnsatisfiable: DoNotSchedule", "whenUnsatisfiable: DoNotSchedule\n  nodeTaintsPolicy: Ignore", 1)}, fire: map[string]Severity{"ZD013": Warning}},
		{name: "ZD013 quiet when the Pods tolerate every taint", in: m{PodExtra: noHonor + "\ntolerations:\n- operator: Exists"}, quiet: []string{"ZD013"}},
		{name: "ZD013 quiet on 1.25 with ScheduleAnyway", in: m{PodExtra: "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: ScheduleAnyway\n  labelSelector:\n    matchLabels:\n      app: web"},
			opts: []Option{WithKubernetesMinor(25)}, quiet: []string{"ZD013"}},
		{name: "ZD013 fires with Cluster too (a rollout's Pods stay Pending either way)", in: m{Policy: "Cluster"}, opts: []Option{WithKubernetesMinor(24)}, fire: map[string]Severity{"ZD013": Warning}},

		// ZD011: pools (incident nodepool-backend).
		{name: "ZD011 fires: LB pinned, Pods not", in: m{SvcAnnotations: "zerodrop.dev/lb-pool: pool-1"},
			fire: map[string]Severity{"ZD011": Error}},
		{name: "ZD011 fires: the nodepool-backend incident's AKS annotation, Pods on another pool", in: m{
			SvcAnnotations: "service.beta.kubernetes.io/azure-load-balancer-mode: pool-1-availabilitySet-27255451",
			PodExtra:       "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - key: nodepool.banzaicloud.io/name\n          operator: In\n          values: [system]"},
			fire: map[string]Severity{"ZD011": Error}},
		{name: "ZD011 quiet: the nodepool-backend incident's fix (affinity + annotation)", in: m{
			SvcAnnotations: "service.beta.kubernetes.io/azure-load-balancer-mode: pool-1-availabilitySet-27255451",
			PodExtra:       "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - key: nodepool.banzaicloud.io/name\n          operator: In\n          values: [pool-1]\ntopologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector:\n    matchLabels:\n      app: web"},
			quiet: []string{"ZD011", "ZD010"}},
		{name: "ZD011 warns: Pods pinned, single-pool LB unpinned", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: azure-basic",
			PodExtra: "nodeSelector:\n  zerodrop.dev/pool: pool-b\ntopologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector:\n    matchLabels:\n      app: web"},
			fire: map[string]Severity{"ZD011": Warning}, quiet: []string{"ZD010"}},
		{name: "ZD011 info: Pods pinned, LB takes all nodes", in: m{
			PodExtra: "nodeSelector:\n  zerodrop.dev/pool: pool-b\ntopologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector:\n    matchLabels:\n      app: web"},
			fire: map[string]Severity{"ZD011": Info}},
		{name: "ZD011 quiet with Cluster", in: m{Policy: "Cluster", SvcAnnotations: "zerodrop.dev/lb-pool: pool-1"}, quiet: []string{"ZD011"}},

		// ZD012: one replica.
		{name: "ZD012 fires", in: m{Replicas: "1", PDB: "-"}, fire: map[string]Severity{"ZD012": Warning}, quiet: []string{"ZD023", "ZD010"}, lineHas: "replicas"},
		{name: "ZD012 fires when replicas defaults to 1", in: m{Replicas: "-", PDB: "-"}, fire: map[string]Severity{"ZD012": Warning}},
		{name: "ZD012 quiet", in: m{Replicas: "2"}, quiet: []string{"ZD012"}},

		// ZD020: PDB that never allows an eviction (incident drain-local-pdb).
		{name: "ZD020 fires: maxUnavailable 0", in: m{PDB: pdb("  maxUnavailable: 0\n")}, fire: map[string]Severity{"ZD020": Error}, quiet: []string{"ZD022"}, lineHas: "maxUnavailable"},
		{name: "ZD020 fires: minAvailable = replicas", in: m{PDB: pdb("  minAvailable: 3\n")}, fire: map[string]Severity{"ZD020": Error}},
		{name: "ZD020 fires: the drain-local-pdb incident's chart default (minAvailable 1, one replica)", in: m{Replicas: "1", PDB: pdb("  minAvailable: 1\n")}, fire: map[string]Severity{"ZD020": Error}},
		// ingress-nginx's chart with autoscaling on: replicas unset, HPA minReplicas 3.
		{name: "ZD020 and ZD012 quiet: an HPA keeps at least 3", in: m{Replicas: "-", PDB: pdb("  minAvailable: 1\n"), Extra: hpa("web", 3)}, quiet: []string{"ZD020", "ZD012"}},
		{name: "ZD020 fires: HPA minReplicas 1 with minAvailable 1", in: m{Replicas: "5", PDB: pdb("  minAvailable: 1\n"), Extra: hpa("web", 1)}, fire: map[string]Severity{"ZD020": Error}},
		{name: "an HPA of another workload changes nothing", in: m{Replicas: "1", PDB: pdb("  minAvailable: 1\n"), Extra: hpa("api", 3)}, fire: map[string]Severity{"ZD020": Error}},
		{name: "ZD020 fires: minAvailable 100%", in: m{PDB: pdb("  minAvailable: 100%\n")}, fire: map[string]Severity{"ZD020": Error}},
		{name: "ZD020 fires: minAvailable 90% rounds up to all", in: m{PDB: pdb("  minAvailable: 90%\n")}, fire: map[string]Severity{"ZD020": Error}},
		{name: "ZD020 quiet: minAvailable 2 of 3", in: m{PDB: pdb("  minAvailable: 2\n  unhealthyPodEvictionPolicy: AlwaysAllow\n")}, quiet: []string{"ZD020", "ZD022"}},
		{name: "ZD020 quiet: PDB selecting other Pods", in: m{PDB: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: other\n  namespace: shop\nspec:\n  maxUnavailable: 0\n  selector:\n    matchLabels:\n      app: other"},
			quiet: []string{"ZD020"}, fire: map[string]Severity{"ZD023": Info}},
		{name: "ZD020 reads policy/v1beta1", in: m{PDB: strings.Replace(pdb("  maxUnavailable: 0\n"), "policy/v1", "policy/v1beta1", 1)}, fire: map[string]Severity{"ZD020": Error}},

		// ZD021: overlapping PDBs.
		{name: "ZD021 fires", in: m{Extra: secondPDB}, fire: map[string]Severity{"ZD021": Error}},
		{name: "ZD021 quiet", in: m{}, quiet: []string{"ZD021"}},

		// ZD022: unhealthy pod eviction policy.
		{name: "ZD022 fires", in: m{PDB: pdb("  maxUnavailable: 1\n")}, fire: map[string]Severity{"ZD022": Warning}, lineHas: "spec:"},
		{name: "ZD022 fires on IfHealthyBudget", in: m{PDB: pdb("  maxUnavailable: 1\n  unhealthyPodEvictionPolicy: IfHealthyBudget\n")}, fire: map[string]Severity{"ZD022": Warning}, lineHas: "unhealthyPodEvictionPolicy"},
		{name: "ZD022 quiet", in: m{}, quiet: []string{"ZD022"}},

		// ZD023: no PDB.
		{name: "ZD023 fires", in: m{PDB: "-"}, fire: map[string]Severity{"ZD023": Info}},
		{name: "ZD023 quiet", in: m{}, quiet: []string{"ZD023"}},

		// ZD092: a container written at admission.
		{name: "ZD092 fires: Istio gateway injection (image: auto)", in: m{Image: "auto", PodLabels: "sidecar.istio.io/inject: \"true\"", Readiness: "-", Lifecycle: "-"},
			fire: map[string]Severity{"ZD092": Info}, quiet: []string{"ZD030", "ZD002"}},
		{name: "ZD092 quiet: image auto without injection is judged as written", in: m{Image: "auto", Readiness: "-"},
			fire: map[string]Severity{"ZD030": Error}, quiet: []string{"ZD092"}},

		// ZD030: no readiness probe.
		{name: "ZD030 fires", in: m{Readiness: "-"}, fire: map[string]Severity{"ZD030": Error}, quiet: []string{"ZD001", "ZD031"}, lineHas: "- name: web"},
		{name: "ZD030 quiet", in: m{}, quiet: []string{"ZD030"}},

		// ZD031: readiness = liveness.
		{name: "ZD031 fires (named vs numbered port, liveness gives up with readiness)", in: m{Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: 8080\n  periodSeconds: 10"},
			fire: map[string]Severity{"ZD031": Warning}, lineHas: "readinessProbe"},
		{name: "ZD031 fires when liveness gives up first", in: m{Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  periodSeconds: 5\n  failureThreshold: 3"},
			fire: map[string]Severity{"ZD031": Warning}},
		{name: "ZD031 quiet: same handler, higher liveness failureThreshold (Kubernetes' probe guide)", in: m{Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: 8080\n  failureThreshold: 5"},
			quiet: []string{"ZD031"}},
		{name: "ZD031 quiet", in: m{}, quiet: []string{"ZD031"}},
		{name: "ZD031 quiet without liveness", in: m{Liveness: "-"}, quiet: []string{"ZD031"}},

		// ZD032: rollouts that reach zero.
		{name: "ZD032 fires: Recreate", in: m{Strategy: "strategy:\n  type: Recreate"}, fire: map[string]Severity{"ZD032": Error}, lineHas: "type: Recreate"},
		{name: "ZD032 fires: maxUnavailable 100%", in: m{Strategy: "strategy:\n  rollingUpdate:\n    maxUnavailable: 100%"}, fire: map[string]Severity{"ZD032": Error}, lineHas: "maxUnavailable"},
		{name: "ZD032 fires: one replica, maxUnavailable 1", in: m{Replicas: "1", PDB: "-", Strategy: "strategy:\n  rollingUpdate:\n    maxUnavailable: 1\n    maxSurge: 0"}, fire: map[string]Severity{"ZD032": Error}},
		{name: "ZD032 quiet: API default 25% with 3 replicas", in: m{Strategy: "strategy: {}"}, quiet: []string{"ZD032"}},
		{name: "ZD032 quiet: one replica with the default surge", in: m{Replicas: "1", PDB: "-", Strategy: "strategy: {}"}, quiet: []string{"ZD032"}},
		{name: "ZD032 fires: StatefulSet with one replica", in: m{Kind: "StatefulSet", Replicas: "1", PDB: "-"}, fire: map[string]Severity{"ZD032": Error}},
		{name: "ZD032 quiet: StatefulSet with 3 replicas", in: m{Kind: "StatefulSet"}, quiet: []string{"ZD032"}},
		{name: "ZD032 warns: DaemonSet without surge, Local", in: m{Kind: "DaemonSet", Strategy: "updateStrategy:\n  type: RollingUpdate"}, fire: map[string]Severity{"ZD032": Warning}},
		{name: "ZD032 quiet: DaemonSet without surge, Cluster", in: m{Kind: "DaemonSet", Policy: "Cluster", Strategy: "updateStrategy:\n  type: RollingUpdate"}, quiet: []string{"ZD032"}},

		// ZD033: minReadySeconds with Local.
		{name: "ZD033 fires", in: m{MinReady: "-"}, fire: map[string]Severity{"ZD033": Warning}},
		{name: "ZD033 fires on 0", in: m{MinReady: "0"}, fire: map[string]Severity{"ZD033": Warning}, lineHas: "minReadySeconds"},
		{name: "ZD033 quiet with Cluster", in: m{Policy: "Cluster", MinReady: "-"}, quiet: []string{"ZD033"}},
		{name: "ZD033 quiet", in: m{}, quiet: []string{"ZD033"}},

		// ZD024: a pool drain against the LB's lags.
		{name: "ZD024 fires: no PDB, a readiness probe that starts late", in: m{PDB: "-", Readiness: "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  initialDelaySeconds: 30\n  periodSeconds: 10"},
			fire: map[string]Severity{"ZD024": Error}, lineHas: "replicas"},
		{name: "ZD024 fires (warning): no PDB, aws-nlb adds as slowly as it removes", in: m{PDB: "-", SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb"},
			fire: map[string]Severity{"ZD024": Warning}},
		{name: "ZD024 fires: a PDB that lets every replica go", in: m{PDB: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  maxUnavailable: 100%\n  selector:\n    matchLabels:\n      app: web",
			Readiness: "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  initialDelaySeconds: 30"}, fire: map[string]Severity{"ZD024": Error}},
		{name: "ZD024 quiet with a PDB that keeps Pods", in: m{Readiness: "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  initialDelaySeconds: 30"}, quiet: []string{"ZD024"}},
		{name: "ZD024 quiet with Cluster", in: m{Policy: "Cluster", PDB: "-", Readiness: "readinessProbe:\n  httpGet:\n    path: /readyz\n    port: http\n  initialDelaySeconds: 30"}, quiet: []string{"ZD024"}},
		{name: "ZD024 quiet when the new nodes join before the old leave", in: m{PDB: "-"}, quiet: []string{"ZD024"}},

		// ZD006: grace 0 (Emissary's manifest ships it).
		{name: "ZD006 fires on grace 0", in: m{Grace: "0", Lifecycle: "-"}, fire: map[string]Severity{"ZD006": Error}, lineHas: "terminationGracePeriodSeconds"},
		{name: "ZD006 quiet by default", in: m{Grace: "-"}, quiet: []string{"ZD006"}},

		// ZD040: keep-alive behind L7 (incident keepalive-unready).
		{name: "ZD040 fires behind an Ingress", in: m{Extra: ingress}, fire: map[string]Severity{"ZD040": Warning}, lineHas: "readinessProbe"},
		{name: "ZD040 fires behind the keepalive-unready incident's extensions/v1beta1 Ingress on a NodePort Service", in: m{SvcType: "NodePort", Policy: "Cluster", Extra: legacyIngress},
			fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD040 fires with the gclb profile", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb", Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 605", Grace: "620"},
			fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD040 quiet with container-native (NEG) backends", in: m{Extra: ingress, SvcAnnotations: "cloud.google.com/neg: '{\"ingress\": true}'"}, quiet: []string{"ZD040"}},
		// ingress-nginx balances over Pod IPs (no kube-proxy NAT pins its
		// connections) unless service-upstream sends it through the ClusterIP.
		{name: "ZD040 quiet behind ingress-nginx", in: m{Extra: strings.Replace(ingress, "spec:\n  rules:", "spec:\n  ingressClassName: nginx\n  rules:", 1)},
			quiet: []string{"ZD040"}},
		{name: "ZD040 fires behind ingress-nginx with service-upstream", in: m{Extra: strings.Replace(ingress, "  namespace: shop\nspec:\n  rules:",
			"  namespace: shop\n  annotations: {nginx.ingress.kubernetes.io/service-upstream: \"true\"}\nspec:\n  ingressClassName: nginx\n  rules:", 1)},
			fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD040 quiet with the gclb-neg profile", in: m{Extra: ingress, SvcAnnotations: "zerodrop.dev/lb-profile: gclb-neg"}, quiet: []string{"ZD040"}},
		// Container-native backends skip only the kube-proxy keep-alive
		// rules: the Service is still judged.
		{name: "ZD030 fires on a ClusterIP Service behind a NEG Ingress", in: m{SvcType: "ClusterIP", Policy: "Cluster", Extra: ingress,
			SvcAnnotations: "cloud.google.com/neg: '{\"ingress\": true}'", Readiness: "-"},
			fire: map[string]Severity{"ZD030": Error}, quiet: []string{"ZD040", "ZD041"}},
		{name: "ZD041 quiet with container-native backends", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb-neg"}, quiet: []string{"ZD040", "ZD041"}},
		// An NLB with IP targets NATs the client's connection to one Pod and
		// keeps it through the deregistration delay: no proxy between.
		// An LB that checks each Pod target before it sends keeps a Pod
		// that does not listen yet out by itself (doctor study, set C).
		{name: "ZD030 is an info behind Pod targets", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: aws-alb-ip", Readiness: "-"},
			fire: map[string]Severity{"ZD030": Info}},
		{name: "ZD030 is an info behind NEGs", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb-neg", Readiness: "-"},
			fire: map[string]Severity{"ZD030": Info}},
		{name: "ZD030 is an error behind nodes", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: gcp-nlb", Readiness: "-"},
			fire: map[string]Severity{"ZD030": Error}},
		{name: "ZD041 fires behind an NLB with IP targets", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: aws-nlb-ip"},
			fire: map[string]Severity{"ZD041": Info}, quiet: []string{"ZD040"}},
		// GKE puts the NEG annotation on Services by default: without an
		// L7 front end the LB Service's own clients still meet kube-proxy.
		{name: "ZD041 fires on an L4 Service with the NEG annotation and no Ingress", in: m{SvcAnnotations: "cloud.google.com/neg: '{\"ingress\": true}'"},
			fire: map[string]Severity{"ZD041": Info}},
		{name: "ZD040 quiet with keep-alive off", in: m{Extra: ingress, Env: "env:\n- name: ECHO_KEEPALIVE\n  value: \"false\""}, quiet: []string{"ZD040"}},
		{name: "ZD040 quiet without L7", in: m{}, quiet: []string{"ZD040"}},
		// A route's backends are read from the decoded route, so a Service
		// behind one is judged like a Service behind an Ingress.
		{name: "ZD040 fires behind an HTTPRoute on a ClusterIP Service", in: m{SvcType: "ClusterIP", Policy: "Cluster", Extra: httpRoute("HTTPRoute", "")},
			fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD030 fires behind an HTTPRoute on a ClusterIP Service without readiness", in: m{SvcType: "ClusterIP", Policy: "Cluster", Readiness: "-", Extra: httpRoute("HTTPRoute", "")},
			fire: map[string]Severity{"ZD030": Error}},
		{name: "ZD040 fires behind a GRPCRoute", in: m{Extra: httpRoute("GRPCRoute", "")}, fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD040 fires behind a route naming the Service's namespace", in: m{Extra: httpRoute("HTTPRoute", "shop")}, fire: map[string]Severity{"ZD040": Warning}},
		{name: "ZD040 quiet behind a route to the same name in another namespace", in: m{Extra: httpRoute("HTTPRoute", "other")}, quiet: []string{"ZD040"}},

		// ZD041: the clients' own keep-alive behind an L4 LB.
		{name: "ZD041 fires (info) behind an L4 LB", in: m{}, fire: map[string]Severity{"ZD041": Info}, lineHas: "readinessProbe"},
		{name: "ZD041 fires (info) with Cluster too", in: m{Policy: "Cluster"}, fire: map[string]Severity{"ZD041": Info}},
		{name: "ZD041 quiet behind L7 (ZD040 says it)", in: m{Extra: ingress}, quiet: []string{"ZD041"}},
		{name: "ZD041 quiet with keep-alive off", in: m{Env: "env:\n- name: ECHO_KEEPALIVE\n  value: \"false\""}, quiet: []string{"ZD041"}},
		{name: "ZD041 quiet without a readiness probe", in: m{Readiness: "-"}, quiet: []string{"ZD041"}},
		{name: "ZD041 quiet when readiness cannot flip on its own", in: m{Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: http"}, quiet: []string{"ZD041"}},
		{name: "ZD040 quiet when readiness cannot flip on its own", in: m{Extra: ingress, Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: http"}, quiet: []string{"ZD040"}},
		{name: "ZD040 quiet for an Ingress to another Service", in: m{Extra: strings.Replace(ingress, "name: web\n            port", "name: api\n            port", 1)}, quiet: []string{"ZD040"}},

		// ZD090 / ZD091.
		{name: "ZD090 fires", in: m{Extra: "apiVersion: v1\nkind: Service\nmetadata:\n  name: lonely\n  namespace: shop\nspec:\n  type: LoadBalancer\n  selector:\n    app: nobody\n  ports:\n  - port: 80"},
			fire: map[string]Severity{"ZD090": Info}},
		{name: "ZD090 quiet", in: m{}, quiet: []string{"ZD090"}},
		{name: "ZD091 fires on an unknown profile", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: nimbus"}, fire: map[string]Severity{"ZD091": Warning}, lineHas: "annotations"},
		{name: "ZD091 fires on a bad number", in: m{SvcAnnotations: "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval: often"}, fire: map[string]Severity{"ZD091": Warning}},
		{name: "ZD091 quiet", in: m{SvcAnnotations: "zerodrop.dev/lb-profile: generic"}, quiet: []string{"ZD091"}},

		// Scope: ClusterIP Services are not checked.
		{name: "ClusterIP Service is out of scope", in: m{SvcType: "ClusterIP", Readiness: "-"}, quiet: []string{"ZD030", "ZD090"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.in.yaml(t)
			r := checkYAML(t, doc, tc.opts...)
			got := bySeverity(r)
			for id, sev := range tc.fire {
				if got[id] != sev {
					t.Errorf("%s: got severity %v, want %v; findings: %s", id, got[id], sev, summary(r))
				}
			}
			for _, id := range tc.quiet {
				if _, ok := got[id]; ok {
					t.Errorf("%s fired, want quiet; findings: %s", id, summary(r))
				}
			}
			if tc.lineHas != "" {
				checkLine(t, r, doc, firstKey(tc.fire), tc.lineHas)
			}
			if t.Failed() {
				t.Logf("manifest:\n%s", doc)
			}
		})
	}
}

func firstKey(m map[string]Severity) string {
	for k := range m {
		return k
	}
	return ""
}

func checkLine(t *testing.T, r *Report, doc []byte, id, want string) {
	t.Helper()
	lines := strings.Split(string(doc), "\n")
	for _, f := range r.Findings {
		if f.RuleID != id {
			continue
		}
		if f.Line < 1 || f.Line > len(lines) {
			t.Errorf("%s: line %d out of range", id, f.Line)
			return
		}
		if !strings.Contains(lines[f.Line-1], want) {
			t.Errorf("%s points at line %d %q, want a line containing %q", id, f.Line, lines[f.Line-1], want)
		}
		return
	}
	t.Errorf("%s: no finding to check the line of", id)
}

func summary(r *Report) string {
	var parts []string
	for _, f := range r.Findings {
		parts = append(parts, f.RuleID+"/"+f.Severity.String()+": "+f.Message)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return "\n  " + strings.Join(parts, "\n  ")
}

func mustProfile(t testing.TB, name string) LBProfile {
	t.Helper()
	p, ok := LookupProfile(name)
	if !ok {
		t.Fatalf("profile %q missing", name)
	}
	return p
}

// TestEveryRuleIsTested keeps the catalogue and TestRules in step: every rule
// needs a firing case.
func TestEveryRuleHasMetadataAndCases(t *testing.T) {
	src := testSourceNames(t)
	for _, r := range Rules() {
		if r.ID == "" || r.Name == "" || r.Summary == "" || r.Description == "" || r.Fix == "" || len(r.Seeds) == 0 || r.Severity == SeverityNone {
			t.Errorf("rule %+v lacks metadata", r)
		}
		for _, s := range r.Seeds {
			if !incident.Known(s) {
				t.Errorf("%s cites %q, which is not an incident of %s", r.ID, s, incident.Doc)
			}
		}
		if !strings.Contains(src, `"`+r.ID+` fires`) {
			t.Errorf("%s has no firing case in TestRules", r.ID)
		}
		if !strings.Contains(src, `"`+r.ID+` quiet`) {
			t.Errorf("%s has no quiet case in TestRules", r.ID)
		}
	}
}

func testSourceNames(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("rules_test.go")
	if err != nil {
		t.Fatalf("read own source: %v", err)
	}
	return string(b)
}

// TestServingContainer: the rules look at the container behind the
// Service's target port, not at a sidecar listed first.
func TestServingContainer(t *testing.T) {
	doc := `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: sidecar
        image: proxy:1
      - name: app
        image: web:1
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: 8080}}
`
	got := bySeverity(checkYAML(t, []byte(doc)))
	if _, ok := got["ZD030"]; ok {
		t.Errorf("ZD030 fired on the sidecar; the serving container has a readiness probe")
	}
	bad := strings.Replace(doc, "        readinessProbe: {httpGet: {path: /ready, port: 8080}}\n", "", 1)
	if got := bySeverity(checkYAML(t, []byte(bad))); got["ZD030"] != Error {
		t.Errorf("ZD030 = %v without a readiness probe on the serving container", got["ZD030"])
	}
	// A Service whose targetPort names no container port (Contour's envoy
	// Service): the container that declares ports serves, not the port-less
	// sidecar before it.
	unmatched := strings.Replace(doc, "targetPort: 8080", "targetPort: 9999", 1)
	if _, ok := bySeverity(checkYAML(t, []byte(unmatched)))["ZD030"]; ok {
		t.Errorf("ZD030 fired on the port-less sidecar when no container owns the target port")
	}
}

// TestLBInference: without --lb-profile the LB comes from the Service's
// annotations and class, and a Service that names none is judged against
// every plausible cloud LB, each finding saying where it holds.
func TestLBInference(t *testing.T) {
	prestop := func(s int) string { return fmt.Sprintf("lifecycle:\n  preStop:\n    sleep:\n      seconds: %d", s) }
	cases := []struct {
		name      string
		ann       string
		lifecycle string
		profile   string // ServiceSummary.Profile
		choice    string // substring of ServiceSummary.LBChoice
		zd002     string // "" quiet, else a substring of its message
	}{
		{"aws nlb annotation", "service.beta.kubernetes.io/aws-load-balancer-type: nlb", "", "aws-nlb", "cloud-provider-aws", ""},
		{"aws nlb with IP targets", "service.beta.kubernetes.io/aws-load-balancer-type: external\nservice.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip",
			"", "aws-nlb-ip", "each Pod is a target", ""},
		{"aws nlb-ip, the legacy type", "service.beta.kubernetes.io/aws-load-balancer-type: nlb-ip", "", "aws-nlb-ip", "legacy type nlb-ip", ""},
		// Without type external the AWS Load Balancer Controller leaves the
		// Service to cloud-provider-aws, whose Classic ELB ignores it.
		{"nlb-target-type alone: the Classic ELB", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip", "", "aws-elb", "Classic ELB", "60s"},
		{"other aws annotation: the Classic ELB", `service.beta.kubernetes.io/aws-load-balancer-internal: "true"`, "", "aws-elb", "Classic ELB", "60s"},
		{"azure annotation", `service.beta.kubernetes.io/azure-load-balancer-internal: "true"`, "", "azure-lb", "cloud-provider-azure", ""},
		// Rolling-update-local's own recommendation: preStop 10 s for GKE L4's 3 s x 2.
		{"gke l4-rbs, rolling-update-local's preStop", "cloud.google.com/l4-rbs: enabled", prestop(10), "gke-l4", "ingress-gce", ""},
		{"gke internal: either GKE LB", "networking.gke.io/load-balancer-type: Internal", prestop(10), "any of gcp-nlb|gke-l4", "depending on the cluster",
			"holds on gcp-nlb; not on gke-l4"},
		{"metallb pool annotation: either mode", "metallb.io/address-pool: production", "", "any of metallb", "L2Advertisement or BGPAdvertisement", ""},
		{"metallb's deprecated annotation", "metallb.universe.tf/loadBalancerIPs: 192.0.2.10", "", "any of metallb", "L2Advertisement or BGPAdvertisement", ""},
		{"kube-vip address annotation", "kube-vip.io/loadbalancerIPs: 192.0.2.20", "", "kube-vip-arp", "kube-vip's class or annotations", ""},
		{"zerodrop annotation wins", "zerodrop.dev/lb-profile: gcp-nlb\nservice.beta.kubernetes.io/aws-load-balancer-type: nlb", "", "gcp-nlb", "annotation zerodrop.dev/lb-profile", ""},
		{"neg annotation names no LB", `cloud.google.com/neg: '{"ingress": true}'`, "", "any of aws-elb|", "no LB named", "holds on aws-elb; not on"},
		{"nothing named", "", "", "any of aws-elb|", "every plausible cloud LB", "holds on aws-elb; not on gcp-nlb, aws-nlb, azure-lb, gke-l4"},
		{"nothing named, preStop 5s", "", prestop(5), "any of aws-elb|", "no LB named", "holds on every plausible one (aws-elb, gcp-nlb, aws-nlb, azure-lb, gke-l4)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := m{SvcAnnotations: c.ann, Lifecycle: c.lifecycle}.yaml(t)
			ms, err := Read("test.yaml", bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(ms)
			if r.Profile != ProfilePerService || len(r.Services) != 1 {
				t.Fatalf("report profile %q, %d services", r.Profile, len(r.Services))
			}
			s := r.Services[0]
			if !strings.HasPrefix(s.Profile, c.profile) || !strings.Contains(s.LBChoice, c.choice) {
				t.Errorf("lb = %q (%s), want %q (%s)", s.Profile, s.LBChoice, c.profile, c.choice)
			}
			var msg string
			for _, f := range r.Findings {
				if f.RuleID == "ZD002" {
					msg = f.Message
				}
			}
			if (c.zd002 == "") != (msg == "") || !strings.Contains(msg, c.zd002) {
				t.Errorf("ZD002 = %q, want %q", msg, c.zd002)
			}
		})
	}
}

// A Service of kube-vip's class is judged on kube-vip's ARP model, with no
// annotation of its own.
func TestKubeVIPClass(t *testing.T) {
	doc := m{SvcSpec: "loadBalancerClass: kube-vip.io/kube-vip-class"}.yaml(t)
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	r := Check(ms)
	if len(r.Services) != 1 || r.Services[0].Profile != "kube-vip-arp" {
		t.Fatalf("services %+v; want one judged on kube-vip-arp", r.Services)
	}
}

// EKS Auto Mode's own NLB controller (class eks.amazonaws.com/nlb) reads
// nlb-target-type as the AWS Load Balancer Controller does.
func TestEKSAutoModeIPTargets(t *testing.T) {
	doc := m{SvcAnnotations: "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip", SvcSpec: "loadBalancerClass: eks.amazonaws.com/nlb"}.yaml(t)
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	r := Check(ms)
	if len(r.Services) != 1 || r.Services[0].Profile != "aws-nlb-ip" {
		t.Fatalf("services %+v; want one judged on aws-nlb-ip", r.Services)
	}
}

// TestDaemonSetSurgeWithHostPort: a surge Pod cannot schedule next to an old
// Pod holding the same hostPort, so ZD032 must not offer maxSurge as the fix.
func TestDaemonSetSurgeWithHostPort(t *testing.T) {
	for _, hp := range []string{"", "80"} {
		r := checkYAML(t, m{Kind: "DaemonSet", Strategy: "updateStrategy:\n  type: RollingUpdate", HostPort: hp}.yaml(t))
		var msg string
		for _, f := range r.Findings {
			if f.RuleID == "ZD032" {
				msg = f.Message
			}
		}
		if msg == "" {
			t.Fatalf("hostPort %q: ZD032 quiet", hp)
		}
		if got := strings.Contains(msg, "maxSurge cannot help: the Pods bind hostPort 80"); got != (hp != "") {
			t.Errorf("hostPort %q: message %q", hp, msg)
		}
	}
}

// TestOtherWorkloadKinds: ReplicationControllers and Argo Rollouts are
// workloads like Deployments (they were "selects nothing" before).
func TestOtherWorkloadKinds(t *testing.T) {
	for _, kind := range []string{"ReplicationController", "Rollout"} {
		doc := string(m{Readiness: "-", PDB: "-"}.yaml(t))
		doc = strings.Replace(doc, "apiVersion: apps/v1\nkind: Deployment", map[string]string{
			"ReplicationController": "apiVersion: v1\nkind: ReplicationController",
			"Rollout":               "apiVersion: argoproj.io/v1alpha1\nkind: Rollout",
		}[kind], 1)
		if kind == "ReplicationController" {
			doc = strings.Replace(doc, "  selector:\n    matchLabels:\n      app: web", "  selector:\n    app: web", 1)
		}
		r := checkYAML(t, []byte(doc))
		got := bySeverity(r)
		if _, ok := got["ZD090"]; ok {
			t.Errorf("%s: the Service selects nothing?\n%s", kind, doc)
		}
		if got["ZD030"] != Error {
			t.Errorf("%s: no ZD030 for the missing readiness probe: %v", kind, got)
		}
	}
}

func TestParseKubernetesVersion(t *testing.T) {
	tests := []struct {
		in      string
		minor   int
		wantErr bool
	}{
		{in: "1.34", minor: 34},
		{in: "v1.37.2", minor: 37},
		{in: "1.25.16", minor: 25},
		{in: "v1.34.2-gke.1200", minor: 34},
		{in: "v1.33.4+k3s1", minor: 33},
		{in: " v1.30.0-eks-1234 ", minor: 30},
		{in: "2.1", wantErr: true},
		{in: "1", wantErr: true},
		{in: "1.x", wantErr: true},
		{in: "v1.34.2.1", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseKubernetesVersion(tc.in)
		if (err != nil) != tc.wantErr || got != tc.minor {
			t.Errorf("ParseKubernetesVersion(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.minor, tc.wantErr)
		}
	}
}

// TestInjectedContainer: Istio's gateway chart renders the proxy as
// `image: auto`; the container rules skip it, the Pod-level ones do not.
func TestInjectedContainer(t *testing.T) {
	doc := `apiVersion: v1
kind: Service
metadata: {name: gw, namespace: istio}
spec:
  type: LoadBalancer
  selector: {app: gw}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gw, namespace: istio}
spec:
  selector: {matchLabels: {app: gw}}
  template:
    metadata:
      annotations: {inject.istio.io/templates: gateway}
      labels: {app: gw, sidecar.istio.io/inject: "true"}
    spec:
      containers:
      - name: istio-proxy
        image: auto
        ports: [{containerPort: 80}]
`
	got := bySeverity(checkYAML(t, []byte(doc)))
	if got["ZD092"] != Info {
		t.Errorf("ZD092 = %v, want info", got["ZD092"])
	}
	for _, id := range []string{"ZD030", "ZD004"} {
		if _, ok := got[id]; ok {
			t.Errorf("%s judged the injected placeholder", id)
		}
	}
	if got["ZD012"] != Warning {
		t.Errorf("ZD012 (one replica, a Pod-level rule) = %v, want warning", got["ZD012"])
	}
	plain := strings.Replace(doc, "image: auto", "image: istio/proxyv2:1.24.0", 1)
	if got := bySeverity(checkYAML(t, []byte(plain))); got["ZD030"] != Error || got["ZD092"] != SeverityNone {
		t.Errorf("with a real image: ZD030 = %v, ZD092 = %v; want error and none", got["ZD030"], got["ZD092"])
	}
}

// TestReadinessGatedBySibling: a serving container without a probe of its
// own, beside one whose probe gates the Pod's readiness (a Pod is ready
// only while all its containers are), is a risk, not a certain drop.
func TestReadinessGatedBySibling(t *testing.T) {
	doc := `apiVersion: v1
kind: Service
metadata: {name: gw}
spec:
  type: LoadBalancer
  selector: {app: gw}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gw}
spec:
  replicas: 2
  selector: {matchLabels: {app: gw}}
  template:
    metadata: {labels: {app: gw}}
    spec:
      containers:
      - name: controller
        image: ctl:1
        readinessProbe: {httpGet: {path: /readyz, port: 8081}}
      - name: nginx
        image: nginx:1
        ports: [{containerPort: 80}]
`
	if got := bySeverity(checkYAML(t, []byte(doc)))["ZD030"]; got != Warning {
		t.Errorf("ZD030 = %v with the controller's probe gating the Pod, want a warning", got)
	}
	alone := strings.Replace(doc, "        readinessProbe: {httpGet: {path: /readyz, port: 8081}}\n", "", 1)
	if got := bySeverity(checkYAML(t, []byte(alone)))["ZD030"]; got != Error {
		t.Errorf("ZD030 = %v with no probe in the Pod, want an error", got)
	}
}

// A rule the plausible LBs judge differently is one finding at its worst
// severity, the milder ones said beside it, not one finding per severity.
func TestOneFindingWhateverTheProfilesMakeOfIt(t *testing.T) {
	sev := map[string]Severity{"a": Error, "b": Warning, "c": Warning}
	rule := Rule{check: func(t *target) []result {
		if s, ok := sev[t.profile.Name]; ok {
			return []result{{sev: s, line: 7, msg: "too slow for " + t.profile.Name}}
		}
		return nil
	}}
	choice := lbChoice{profiles: []LBProfile{{Name: "b"}, {Name: "a"}, {Name: "c"}, {Name: "d"}}}
	hits := runRule(rule, &target{}, choice)
	if len(hits) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(hits), hits)
	}
	h := hits[0]
	want := "holds on b, a, c (a warning on b, c); not on d."
	if h.res.sev != Error || h.res.msg != "too slow for a" || !strings.Contains(h.suffix, want) {
		t.Errorf("got %s %q%s, want error %q with %q", h.res.sev, h.res.msg, h.suffix, "too slow for a", want)
	}
	// Every profile fires, with one message: the milder ones are still said.
	same := Rule{check: func(t *target) []result {
		return []result{{sev: sev[t.profile.Name], line: 7, msg: "pinned"}}
	}}
	hits = runRule(same, &target{}, lbChoice{profiles: []LBProfile{{Name: "a"}, {Name: "b"}}})
	if len(hits) != 1 || hits[0].res.sev != Error || !strings.Contains(hits[0].suffix, "holds on every plausible one (a, b; a warning on b)") {
		t.Errorf("every profile firing: %+v", hits)
	}
}

// A route without a namespace sends to a Service of the input's default
// namespace, known only once that is applied.
func TestRouteWithoutNamespace(t *testing.T) {
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n" +
		"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: x, ports: [{containerPort: 8080}]}]\n---\n" +
		"apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80, targetPort: 8080}]\n---\n" +
		"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: web}\nspec:\n  rules:\n  - backendRefs: [{name: web, port: 80}]\n"
	r := checkYAML(t, []byte(doc))
	if len(r.Services) != 1 || r.Services[0].Service != "service/default/web" || len(r.NotJudged) != 0 {
		t.Errorf("services %+v, not judged %+v: want service/default/web judged", r.Services, r.NotJudged)
	}
}

// A StatefulSet has no maxSurge: ZD032's fix for one says what it can do
// instead; a Deployment's keeps the surge.
func TestRolloutFixFollowsTheKind(t *testing.T) {
	for _, tc := range []struct {
		kind, want, not string
	}{
		{"StatefulSet", "cannot surge", "maxSurge"},
		{"Deployment", "maxSurge 1", "cannot surge"},
	} {
		in := m{Kind: tc.kind, Replicas: "1", PDB: "-"}
		if tc.kind == "Deployment" {
			in.Strategy = "strategy:\n  type: Recreate"
		}
		r := checkYAML(t, in.yaml(t))
		var fix string
		for _, f := range r.Findings {
			if f.RuleID == "ZD032" {
				fix = f.Fix
			}
		}
		if !strings.Contains(fix, tc.want) || strings.Contains(fix, tc.not) {
			t.Errorf("%s: ZD032 fix %q, want %q and not %q", tc.kind, fix, tc.want, tc.not)
		}
	}
}

// Every Service the input names is judged or said not to be, with why: a
// ClusterIP Service nothing fronts, and a Service an Ingress or route sends
// to that the input does not hold.
func TestNotJudgedSaysWhy(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: internal\n  namespace: shop\nspec:\n  selector:\n    app: x\n---\n" +
		strings.Replace(ingress, "name: web\n            port", "name: api\n            port", 1) + "\n---\n" + httpRoute("HTTPRoute", "other")
	r := checkYAML(t, []byte(doc))
	want := map[string]string{
		"service/shop/internal": "type ClusterIP, and no Ingress or Gateway API route",
		"service/shop/api":      "ingress/shop/web sends to it, but the input has no such Service",
		"service/other/web":     "httproute/shop/web sends to it, but the input has no such Service",
	}
	if len(r.NotJudged) != len(want) {
		t.Fatalf("not judged %+v, want %d", r.NotJudged, len(want))
	}
	for _, n := range r.NotJudged {
		if w, ok := want[n.Service]; !ok || !strings.Contains(n.Reason, w) {
			t.Errorf("%s: %q, want %q", n.Service, n.Reason, w)
		}
	}
	var buf strings.Builder
	if err := WriteText(&buf, r); err != nil || !strings.Contains(buf.String(), "not judged service/shop/api") {
		t.Errorf("text output (err %v) does not say what was not judged:\n%s", err, buf.String())
	}
}

// ingressWith is the test Ingress with annotations (YAML "key: value"
// lines) and an ingressClassName ("" none).
func ingressWith(ann, class string) string {
	doc := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: shop\n"
	if ann != "" {
		doc += "  annotations:\n" + "    " + strings.ReplaceAll(ann, "\n", "\n    ") + "\n"
	}
	doc += "spec:\n"
	if class != "" {
		doc += "  ingressClassName: " + class + "\n"
	}
	return doc + "  defaultBackend:\n    service:\n      name: web\n      port:\n        number: 80"
}

// TestPodTargetInference: a Service only an Ingress exposes is judged
// against the LB the Ingress's controller builds when its annotations say
// the LB sends to the Pods.
func TestPodTargetInference(t *testing.T) {
	const albIP = "alb.ingress.kubernetes.io/target-type: ip"
	const neg = `cloud.google.com/neg: '{"ingress": true}'`
	cases := []struct {
		name, svcAnn, ingress string
		profile, choice       string
	}{
		{"ALB ip on the Ingress", "", ingressWith(albIP, "alb"), "aws-alb-ip", "on ingress/shop/web"},
		{"ALB ip on the Service", albIP, ingressWith("", "alb"), "aws-alb-ip", "on the Service"},
		// The Service's annotation wins over the Ingress's (the controller's
		// annotation priority): instance targets are nodes.
		{"ALB instance on the Service wins over ip on the Ingress", "alb.ingress.kubernetes.io/target-type: instance", ingressWith(albIP, "alb"),
			"any of aws-elb|", "every plausible"},
		{"NEG behind a gce Ingress", neg, ingressWith("kubernetes.io/ingress.class: gce", ""), "gclb-neg", "container-native"},
		{"NEG behind an Ingress with no class", neg, ingressWith("", ""), "gclb-neg", "container-native"},
		{"NEG behind an nginx Ingress: not GKE's LB", neg, ingressWith("", "nginx"), "any of aws-elb|", "every plausible"},
		{"no annotation", "", ingressWith("", "alb"), "any of aws-elb|", "every plausible"},
		{"ALB ip asked of an nginx Ingress: not the ALB", albIP, ingressWith("", "nginx"), "any of aws-elb|", "every plausible"},
		// GKE annotations of the Service's own (a BackendConfig) say
		// nothing of an L4 LB when an Ingress alone exposes it.
		{"NEG with a BackendConfig behind a gce Ingress", neg + "\ncloud.google.com/backend-config: '{\"default\": \"web\"}'",
			ingressWith("kubernetes.io/ingress.class: gce", ""), "gclb-neg", "container-native"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := m{SvcType: "ClusterIP", Policy: "Cluster", SvcAnnotations: c.svcAnn, Extra: c.ingress}.yaml(t)
			ms, err := Read("test.yaml", bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(ms)
			if len(r.Services) != 1 {
				t.Fatalf("%d services judged, want 1: %+v", len(r.Services), r.Findings)
			}
			s := r.Services[0]
			if !strings.HasPrefix(s.Profile, c.profile) || !strings.Contains(s.LBChoice, c.choice) {
				t.Errorf("lb = %q (%s), want %q (%s)", s.Profile, s.LBChoice, c.profile, c.choice)
			}
		})
	}
}

// TestGateByNamespaceLabel: the AWS Load Balancer Controller injects its
// readiness gate into the Pods of a namespace labelled for it, so a
// workload there needs no minReadySeconds (ZD033) and its fix adds no gate.
func TestGateByNamespaceLabel(t *testing.T) {
	const ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    elbv2.k8s.aws/pod-readiness-gate-inject: %s\n---\n"
	const gate = "readinessGates:\n- conditionType: target-health.elbv2.k8s.aws/k8s-shop-web"
	ing := ingressWith("alb.ingress.kubernetes.io/target-type: ip", "alb")
	cases := []struct {
		name      string
		extra     string
		podExtra  string
		fires     bool
		fixesGate bool // the fix writes the gate into the template
		labels    bool // the fix labels the Namespace for injection
	}{
		// The gate is named after a binding the manifests cannot know: the
		// fix adds the Namespace, labelled, rather than write one.
		{"no Namespace in the input", ing, "", true, false, true},
		{"Namespace labelled for injection", fmt.Sprintf(ns, "enabled") + ing, "", false, false, false},
		{"Namespace labelled otherwise", fmt.Sprintf(ns, "disabled") + ing, "", true, false, true},
		{"gate written in the template", ing, gate, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := m{SvcType: "ClusterIP", Policy: "Cluster", MinReady: "-", Extra: c.extra, PodExtra: c.podExtra}.yaml(t)
			ms, err := Read("test.yaml", bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(ms)
			if len(r.Services) != 1 || r.Services[0].Profile != "aws-alb-ip" {
				t.Fatalf("services %+v, want one judged on aws-alb-ip", r.Services)
			}
			if _, got := bySeverity(r)["ZD033"]; got != c.fires {
				t.Errorf("ZD033 fired %v, want %v: %+v", got, c.fires, r.Findings)
			}
			fixed, applied := Fix(ms)
			var added, labelled bool
			for _, o := range fixed.Objects {
				switch v := o.Obj.(type) {
				case *appsv1.Deployment:
					added = len(v.Spec.Template.Spec.ReadinessGates) > 0 && c.podExtra == ""
				case *corev1.Namespace:
					labelled = c.fires && v.Labels["elbv2.k8s.aws/pod-readiness-gate-inject"] == "enabled"
				}
			}
			if added != c.fixesGate || labelled != c.labels {
				t.Errorf("fix added a readiness gate: %v, want %v; labelled the namespace: %v, want %v (applied %v)", added, c.fixesGate, labelled, c.labels, applied)
			}
			if c.labels {
				// Judged again, the fixed input needs no gate written.
				if _, still := bySeverity(Check(fixed))["ZD033"]; still {
					t.Errorf("ZD033 still fires on the fixed input (applied %v)", applied)
				}
			}
		})
	}
}

// TestGateSaysWhatItLeavesOut: on gated Pods without a preStop, ZD004 says
// that the gate holds the rollout and not the old Pod's termination.
func TestGateSaysWhatItLeavesOut(t *testing.T) {
	for _, gated := range []bool{false, true} {
		x := m{SvcType: "ClusterIP", Policy: "Cluster", Lifecycle: "-", Grace: "-",
			Extra: ingressWith("alb.ingress.kubernetes.io/target-type: ip", "alb")}
		if gated {
			x.PodExtra = "readinessGates:\n- conditionType: target-health.elbv2.k8s.aws/k8s-shop-web"
		}
		ms, err := Read("test.yaml", bytes.NewReader(x.yaml(t)))
		if err != nil {
			t.Fatal(err)
		}
		var msg string
		for _, f := range Check(ms).Findings {
			if f.RuleID == "ZD004" {
				msg = f.Message
			}
		}
		if msg == "" {
			t.Fatalf("gated %v: ZD004 quiet on a Pod-targeted workload without a preStop", gated)
		}
		if says := strings.Contains(msg, "does not delay an old Pod's termination"); says != gated {
			t.Errorf("gated %v: ZD004 names the gate's limit: %v (%q)", gated, says, msg)
		}
	}
}

// TestGateFixWithoutNamespace: objects that name no namespace are in the
// default one (as kubectl apply puts them), so ZD033's fix on an LB whose
// gate is injected by namespace label adds Namespace default, labelled,
// and writes no gate.
func TestGateFixWithoutNamespace(t *testing.T) {
	doc := m{SvcType: "ClusterIP", Policy: "Cluster", MinReady: "-", Extra: ingressWith("alb.ingress.kubernetes.io/target-type: ip", "alb")}.yaml(t)
	doc = bytes.ReplaceAll(doc, []byte("  namespace: shop\n"), nil)
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	fixed, applied := Fix(ms)
	var labelled bool
	for _, o := range fixed.Objects {
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			if len(v.Spec.Template.Spec.ReadinessGates) != 0 {
				t.Errorf("gates %v written (applied %v)", v.Spec.Template.Spec.ReadinessGates, applied)
			}
		case *corev1.Namespace:
			labelled = v.Name == "default" && v.Labels["elbv2.k8s.aws/pod-readiness-gate-inject"] == "enabled"
		}
	}
	if !labelled {
		t.Errorf("no Namespace default labelled for injection (applied %v)", applied)
	}
}

// A hook that stops the server at once is blamed on what still sends to
// the Pod: kube-proxy behind nodes, the LB itself behind Pod targets.
func TestQuitHookNamesTheSender(t *testing.T) {
	hook := "lifecycle:\n  preStop:\n    exec:\n      command: [nginx, -s, quit]"
	for _, tc := range []struct{ ann, want string }{
		{"zerodrop.dev/lb-profile: gcp-nlb", "kube-proxy on other nodes"},
		{"zerodrop.dev/lb-profile: gclb-neg", "the LB (profile gclb-neg) may still send it new requests"},
		{"zerodrop.dev/lb-profile: aws-nlb-ip", "the LB (profile aws-nlb-ip) may still send it new requests"},
	} {
		ms, err := Read("test.yaml", bytes.NewReader(m{SvcAnnotations: tc.ann, Policy: "Cluster", Lifecycle: hook}.yaml(t)))
		if err != nil {
			t.Fatal(err)
		}
		var msg string
		for _, f := range Check(ms).Findings {
			if f.RuleID == "ZD004" {
				msg = f.Message
			}
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: ZD004 %q, want it to say %q", tc.ann, msg, tc.want)
		}
	}
}
