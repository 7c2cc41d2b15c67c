package standin

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// every is a workload with every knob the stand-in keeps set to a value
// no default has, so a knob lost on the way shows as a difference.
const every = `apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: prod, labels: {team: web}}
spec:
  replicas: 5
  minReadySeconds: 7
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop, tier: front}}
    spec:
      terminationGracePeriodSeconds: 47
      nodeSelector: {pool: edge}
      tolerations: [{key: dedicated, operator: Equal, value: edge, effect: NoSchedule}]
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 50
            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: shop}}}
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: shop}}}
      containers:
      - name: app
        image: registry.example/shop:1.2
        args: [--port=8443]
        ports: [{name: web, containerPort: 8443}, {name: metrics, containerPort: 9090}]
        readinessProbe: {httpGet: {path: /ready, port: web}, periodSeconds: 3, failureThreshold: 4, timeoutSeconds: 2, successThreshold: 2, initialDelaySeconds: 1}
        livenessProbe: {tcpSocket: {port: 9090}, periodSeconds: 11, failureThreshold: 6}
        startupProbe: {httpGet: {path: /started, port: 9090}, periodSeconds: 1, failureThreshold: 30}
        lifecycle: {preStop: {sleep: {seconds: 13}}}
---
apiVersion: v1
kind: Service
metadata:
  name: shop
  namespace: prod
  annotations: {service.beta.kubernetes.io/aws-load-balancer-type: nlb, service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled: "true"}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  internalTrafficPolicy: Local
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
  publishNotReadyAddresses: false
  selector: {app: shop}
  ports: [{name: http, port: 80, targetPort: web, nodePort: 31234}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: shop, namespace: prod}
spec: {minAvailable: 4, selector: {matchLabels: {app: shop}}, unhealthyPodEvictionPolicy: AlwaysAllow}
`

func build(t *testing.T, yaml string, opts Options) *StandIn {
	t.Helper()
	ss, err := fromYAML(yaml, opts)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d stand-ins, want 1", len(ss))
	}
	return ss[0]
}

func fromYAML(yaml string, opts Options) ([]*StandIn, error) {
	m, err := doctor.Read("in.yaml", strings.NewReader(yaml))
	if err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		opts.Namespace = "zd-test"
	}
	return FromManifests(m, opts)
}

// Every knob of the input survives into the stand-in: the same getter
// reads equal values on both, and the values are really set (a knob that
// reads nil on the input would pass vacuously).
func TestEveryKnobSurvives(t *testing.T) {
	s := build(t, every, Options{})
	want := len(podKnobs) + len(containerKnobs)
	if len(s.Knobs) != want {
		t.Fatalf("%d knob states, want %d (pod knobs + one container's)", len(s.Knobs), want)
	}
	for _, k := range s.Knobs {
		if !k.Kept {
			t.Errorf("knob %s changed: was %s, now %s", k.Name, k.Was, k.Now)
		}
	}
	d := s.WorkloadObj.(*appsv1.Deployment)
	in := mustDeployment(t, every)
	for _, k := range podKnobs {
		if k.Name == "readinessGates" || k.Name == "publishNotReadyAddresses" {
			continue // unset in the input on purpose: gates are dropped (see below); false is the default
		}
		v := deploymentView(in)
		v.svc, v.pdbs = mustService(t, every), s.PDBSpecs()
		if isZero(k.get(v)) {
			t.Errorf("the test input leaves knob %s unset: the test could not see it lost", k.Name)
		}
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "zerodrop/echo-server:dev" || c.ImagePullPolicy != corev1.PullNever || len(c.Args) != 0 {
		t.Errorf("container image %s pull %s args %v, want the echo server, Never, none", c.Image, c.ImagePullPolicy, c.Args)
	}
	if d.Namespace != "zd-test" || s.ServiceObj.Namespace != "zd-test" || s.PDBs[0].Namespace != "zd-test" {
		t.Errorf("namespaces %s %s %s, want zd-test", d.Namespace, s.ServiceObj.Namespace, s.PDBs[0].Namespace)
	}
	env := envOf(c)
	for k, v := range map[string]string{
		"ECHO_LISTEN": ":8443,:9090", "ECHO_READY_PATH": "/ready", "ECHO_LIVE_PATH": "/started",
		"ECHO_ADMIN_LISTEN": ":18081", "ECHO_UNREADY_ON_TERM": "false", "ECHO_SHUTDOWN_DELAY": "0s", "ECHO_DRAIN_TIMEOUT": "0s",
	} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if s.Port != 80 || s.Path != "/" || s.Replicas != 5 || s.Serving.Name != "app" {
		t.Errorf("port %d path %s replicas %d serving %s", s.Port, s.Path, s.Replicas, s.Serving.Name)
	}
	if p := s.ServiceObj.Spec.Ports[0]; p.NodePort != 0 {
		t.Errorf("node port %d kept: the test cluster allocates its own", p.NodePort)
	}
	if !strings.Contains(s.Serving.BehaviourFrom, "assumption") {
		t.Errorf("behaviour from %q, want the doctor's assumption", s.Serving.BehaviourFrom)
	}
}

func (s *StandIn) PDBSpecs() (out []policyv1.PodDisruptionBudgetSpec) {
	for _, p := range s.PDBs {
		out = append(out, p.Spec)
	}
	return out
}

func isZero(v any) bool {
	if v == nil {
		return true
	}
	b := show(v)
	return b == "null" || b == "{}" || b == "[]" || b == `""` || b == "0" || b == "false" || b == "[null,null]" || b == `["",null]`
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func mustDeployment(t *testing.T, yaml string) *appsv1.Deployment {
	m, err := doctor.Read("in.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Objects {
		if d, ok := o.Obj.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatal("no Deployment")
	return nil
}

func mustService(t *testing.T, yaml string) *corev1.Service {
	m, err := doctor.Read("in.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Objects {
		if s, ok := o.Obj.(*corev1.Service); ok {
			return s
		}
	}
	t.Fatal("no Service")
	return nil
}

// What the stand-in cannot run as written it turns into what the doctor
// reads it as, and says so.
func TestHandlersItCannotRun(t *testing.T) {
	y := strings.NewReplacer(
		"readinessProbe: {httpGet: {path: /ready, port: web}", "readinessProbe: {exec: {command: [cat, /tmp/ready]}",
		"livenessProbe: {tcpSocket: {port: 9090}", "livenessProbe: {httpGet: {path: /, port: 9090, scheme: HTTPS}",
		"lifecycle: {preStop: {sleep: {seconds: 13}}}", `lifecycle: {preStop: {exec: {command: [/bin/sh, -c, "sleep 20; kill -QUIT 1"]}}, postStart: {exec: {command: [touch, /x]}}}`,
	).Replace(every)
	s := build(t, y, Options{})
	c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if h := c.ReadinessProbe.HTTPGet; h == nil || h.Path != readyPath || h.Port.IntVal != 8443 || c.ReadinessProbe.PeriodSeconds != 3 || c.ReadinessProbe.FailureThreshold != 4 {
		t.Errorf("exec readiness became %+v, want httpGet %s on 8443 with the same timing", c.ReadinessProbe, readyPath)
	}
	if h := c.LivenessProbe.HTTPGet; h == nil || h.Scheme != corev1.URISchemeHTTP || h.Path != "/" {
		t.Errorf("HTTPS liveness became %+v, want HTTP /", c.LivenessProbe)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 20 || c.Lifecycle.PostStart != nil {
		t.Errorf("lifecycle %+v, want a 20 s sleep action and no postStart", c.Lifecycle)
	}
	// A probe on "/" moves the load to a path no probe answers.
	if s.Path != loadPath {
		t.Errorf("load path %s with a liveness probe on /, want %s", s.Path, loadPath)
	}
	env := envOf(c)
	if env["ECHO_READY_PATH"] != readyPath || env["ECHO_LIVE_PATH"] != "/,/started" {
		t.Errorf("paths ready %q live %q", env["ECHO_READY_PATH"], env["ECHO_LIVE_PATH"])
	}
	changed := map[string]bool{}
	for _, k := range s.Knobs {
		if !k.Kept {
			changed[k.Name] = true
		}
	}
	for _, k := range []string{"containers[app].readinessProbe", "containers[app].livenessProbe", "containers[app].lifecycle"} {
		if !changed[k] {
			t.Errorf("knob %s reported kept", k)
		}
	}
	if len(changed) != 3 {
		t.Errorf("changed knobs %v, want only the three handlers", changed)
	}
	var why []string
	for _, c := range s.Changes {
		why = append(why, c.String())
	}
	all := strings.Join(why, "\n")
	for _, want := range []string{"readinessProbe: exec -> httpGet", "livenessProbe.httpGet.scheme: HTTPS -> HTTP", "preStop: /bin/sh -c sleep 20; kill -QUIT 1 -> sleep 20s", "postStart", "image: registry.example/shop:1.2 -> zerodrop/echo-server:dev"} {
		if !strings.Contains(all, want) {
			t.Errorf("changes lack %q:\n%s", want, all)
		}
	}
}

// ingress-nginx's hook signals the controller at once and nginx keeps
// accepting for --shutdown-grace-period: the stand-in has no hook and an
// echo server that fails readiness at once and accepts that long.
func TestKnownServerEndsAsTheDoctorReadsIt(t *testing.T) {
	y := strings.NewReplacer(
		"args: [--port=8443]", "args: [/nginx-ingress-controller, --shutdown-grace-period=25]",
		"lifecycle: {preStop: {sleep: {seconds: 13}}}", "lifecycle: {preStop: {exec: {command: [/wait-shutdown]}}}",
	).Replace(every)
	s := build(t, y, Options{App: &Behaviour{KeepAccepting: time.Hour}})
	c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	env := envOf(c)
	if c.Lifecycle != nil || env["ECHO_UNREADY_ON_TERM"] != "true" || env["ECHO_SHUTDOWN_DELAY"] != "25s" {
		t.Errorf("lifecycle %+v unready %s delay %s, want no hook, true, 25s (the known server wins over --app)", c.Lifecycle, env["ECHO_UNREADY_ON_TERM"], env["ECHO_SHUTDOWN_DELAY"])
	}
	if !strings.Contains(s.Serving.BehaviourFrom, "ingress-nginx") {
		t.Errorf("behaviour from %q", s.Serving.BehaviourFrom)
	}
}

func TestAppFlagsAndUnknownHook(t *testing.T) {
	y := strings.Replace(every, "lifecycle: {preStop: {sleep: {seconds: 13}}}", "lifecycle: {preStop: {exec: {command: [/drain.sh]}}}", 1)
	s := build(t, y, Options{App: &Behaviour{UnreadyOnTerm: true, KeepAccepting: 5 * time.Second, Drain: 8 * time.Second}, UnknownHook: 12500 * time.Millisecond})
	c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	env := envOf(c)
	if c.Lifecycle.PreStop.Sleep.Seconds != 13 || env["ECHO_SHUTDOWN_DELAY"] != "5s" || env["ECHO_DRAIN_TIMEOUT"] != "8s" || env["ECHO_KEEPALIVE"] != "false" {
		t.Errorf("hook %+v env %v", c.Lifecycle.PreStop, env)
	}
	s = build(t, y, Options{})
	c = s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if c.Lifecycle != nil {
		t.Errorf("unreadable hook without --hook kept as %+v, want none", c.Lifecycle)
	}
}

func TestHPAAndStatefulSet(t *testing.T) {
	y := strings.Replace(every, "kind: Deployment\nmetadata: {name: shop", "kind: StatefulSet\nmetadata: {name: shop", 1)
	y = strings.Replace(y, "  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}\n",
		"  serviceName: shop-headless\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}\n  volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]\n", 1)
	y += `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: shop, namespace: prod}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: shop}, minReplicas: 3, maxReplicas: 9}
`
	s := build(t, y, Options{})
	st, ok := s.WorkloadObj.(*appsv1.StatefulSet)
	if !ok {
		t.Fatalf("workload %T, want a StatefulSet", s.WorkloadObj)
	}
	if *st.Spec.Replicas != 3 || s.Replicas != 3 || st.Spec.UpdateStrategy.RollingUpdate.Partition == nil || *st.Spec.UpdateStrategy.RollingUpdate.Partition != 1 || len(st.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("replicas %d, strategy %+v, claims %d", *st.Spec.Replicas, st.Spec.UpdateStrategy, len(st.Spec.VolumeClaimTemplates))
	}
	for _, k := range s.Knobs {
		if k.Kept == (k.Name == "replicas") {
			t.Errorf("knob %s kept=%v", k.Name, k.Kept)
		}
	}
}

func TestBadInput(t *testing.T) {
	noLB := strings.Replace(every, "type: LoadBalancer", "type: ClusterIP", 1)
	two := every + "---\n" + strings.Replace(strings.Split(every, "---")[0], "name: shop, namespace: prod", "name: shop-canary, namespace: prod", 1)
	ds := strings.Replace(strings.Replace(every, "kind: Deployment", "kind: DaemonSet", 1), "  replicas: 5\n", "", 1)
	ds = strings.Replace(ds, "  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}\n", "", 1)
	host := strings.Replace(every, "      terminationGracePeriodSeconds: 47\n", "      terminationGracePeriodSeconds: 47\n      hostNetwork: true\n", 1)
	badPort := strings.Replace(every, "readinessProbe: {httpGet: {path: /ready, port: web}", "readinessProbe: {httpGet: {path: /ready, port: nope}", 1)
	udp := strings.Replace(every, "ports: [{name: http, port: 80, targetPort: web, nodePort: 31234}]", "ports: [{name: dns, port: 53, protocol: UDP}]", 1)
	orphan := strings.Replace(every, "selector: {app: shop}\n  ports", "selector: {app: other}\n  ports", 1)
	for _, tc := range []struct{ name, yaml, want string }{
		{"no LoadBalancer Service", noLB, "in.yaml: input: no Service of type LoadBalancer"},
		{"two workloads", two, "in.yaml:32: service/prod/shop: selector app=shop picks 2 workloads (deployment/prod/shop (in.yaml:1), deployment/prod/shop-canary (in.yaml:53))"},
		{"DaemonSet", ds, "daemonset/prod/shop: DaemonSet is not supported"},
		{"host network", host, "hostNetwork: true"},
		{"missing named port", badPort, `names port "nope", which container app does not declare`},
		{"UDP only", udp, "service/prod/shop: no TCP port"},
		{"selects nothing", orphan, "selector app=other picks no Deployment or StatefulSet"},
	} {
		_, err := fromYAML(tc.yaml, Options{})
		var se *Error
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a standin.Error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestInMovesEveryObject(t *testing.T) {
	s := build(t, every, Options{})
	c := s.In("zd-other")
	for _, o := range c.Objects() {
		if ns := o.(interface{ GetNamespace() string }).GetNamespace(); ns != "zd-other" {
			t.Errorf("%T in %q", o, ns)
		}
	}
	if s.ServiceObj.Namespace != "zd-test" || s.WorkloadObj.(*appsv1.Deployment).Namespace != "zd-test" || s.PDBs[0].Namespace != "zd-test" {
		t.Error("In changed the original")
	}
}

func TestPlaceable(t *testing.T) {
	s := build(t, every, Options{}) // nodeSelector pool=edge, tolerates dedicated=edge:NoSchedule
	node := func(name string, labels map[string]string, taints ...corev1.Taint) corev1.Node {
		n := corev1.Node{}
		n.Name, n.Labels, n.Spec.Taints = name, labels, taints
		return n
	}
	edge := map[string]string{"pool": "edge"}
	fit, why := s.Placeable([]corev1.Node{
		node("plain", map[string]string{"pool": "a"}),
		node("edge-tainted", edge, corev1.Taint{Key: "dedicated", Value: "edge", Effect: corev1.TaintEffectNoSchedule}),
		node("edge-other-taint", edge, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoExecute}),
		node("edge-soft-taint", edge, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}),
	})
	if strings.Join(fit, ",") != "edge-soft-taint,edge-tainted" || why != "" {
		t.Errorf("fit %v why %q", fit, why)
	}
	fit, why = s.Placeable([]corev1.Node{node("plain", map[string]string{"pool": "a"})})
	if len(fit) != 0 || why != "plain: lacks pool=edge" {
		t.Errorf("fit %v why %q", fit, why)
	}
}

// An unset replica count is the API default, 1: the stand-in's explicit 1
// is the same knob.
func TestUnsetReplicasIsKept(t *testing.T) {
	s := build(t, strings.Replace(every, "  replicas: 5\n", "", 1), Options{})
	found := false
	for _, k := range s.Knobs {
		if k.Name == "replicas" {
			found = true
			if !k.Kept {
				t.Errorf("replicas: was %s now %s", k.Was, k.Now)
			}
		}
	}
	if !found {
		t.Error("no replicas knob")
	}
	if s.Replicas != 1 {
		t.Errorf("replicas %d", s.Replicas)
	}
}

// The provider's health-check timing annotations are left out, with a
// Change: the test cluster's LBs do not read them, and the doctor would.
func TestTimingAnnotationsLeftOut(t *testing.T) {
	y := strings.Replace(every, "aws-load-balancer-type: nlb,", "aws-load-balancer-type: nlb, service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval: \"10\",", 1)
	s := build(t, y, Options{})
	if _, kept := s.ServiceObj.Annotations["service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"]; kept {
		t.Error("timing annotation kept")
	}
	found := false
	for _, c := range s.Changes {
		found = found || strings.Contains(c.Field, "aws-load-balancer-healthcheck-interval")
	}
	if !found {
		t.Errorf("no Change for the timing annotation: %v", s.Changes)
	}
}

func TestMoreBadInput(t *testing.T) {
	noContainers := strings.Replace(every, "      containers:\n      - name: app", "      containers: []\n      initContainers:\n      - name: app", 1)
	exprSel := strings.Replace(every, "  selector: {matchLabels: {app: shop}}\n  template:", "  selector: {matchExpressions: [{key: app, operator: In, values: [shop]}]}\n  template:", 1)
	onDelete := strings.Replace(strings.Replace(every, "kind: Deployment\nmetadata: {name: shop", "kind: StatefulSet\nmetadata: {name: shop", 1),
		"  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}\n", "  updateStrategy: {type: OnDelete}\n", 1)
	for _, tc := range []struct{ name, yaml, want string }{
		{"no containers", noContainers, "no containers"},
		{"expression selector", exprSel, "matchLabels only"},
		{"OnDelete", onDelete, "OnDelete"},
	} {
		_, err := fromYAML(tc.yaml, Options{})
		var se *Error
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a standin.Error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadPort(t *testing.T) {
	for _, tc := range []struct {
		ports []corev1.ServicePort
		want  int32
	}{
		{[]corev1.ServicePort{{Name: "web", Port: 80}, {Name: "http", Port: 8080}}, 8080},
		{[]corev1.ServicePort{{Name: "https", Port: 443}, {Name: "plain", Port: 80}}, 80},
		{[]corev1.ServicePort{{Name: "grpc", Port: 9000}}, 9000},
	} {
		if got := loadPort(tc.ports); got != tc.want {
			t.Errorf("loadPort(%v) = %d, want %d", tc.ports, got, tc.want)
		}
	}
}

func TestHooksAndPathsAsTheKubeletReadsThem(t *testing.T) {
	y := strings.NewReplacer(
		"terminationGracePeriodSeconds: 47", "terminationGracePeriodSeconds: 30",
		"lifecycle: {preStop: {sleep: {seconds: 13}}}", "lifecycle: {preStop: {exec: {command: [sleep, \"45\"]}}}",
		"readinessProbe: {httpGet: {path: /ready, port: web}", "readinessProbe: {exec: {command: [/check]}",
		"livenessProbe: {tcpSocket: {port: 9090}", "livenessProbe: {exec: {command: [/check]}",
		"startupProbe: {httpGet: {path: /started, port: 9090}", "startupProbe: {httpGet: {path: \"started?full=1\", port: 9090}",
	).Replace(every)
	s := build(t, y, Options{})
	c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 30 {
		t.Errorf("a 45 s hook with a 30 s grace: %+v, want a 30 s sleep (the API server rejects a longer one)", c.Lifecycle)
	}
	env := envOf(c)
	if env["ECHO_READY_PATH"] != readyPath || env["ECHO_LIVE_PATH"] != readyPath+",/started" {
		t.Errorf("ready %q live %q: one exec handler behind both probes must stay one path; the startup path is the kubelet's", env["ECHO_READY_PATH"], env["ECHO_LIVE_PATH"])
	}
}

// own is a workload that names a ConfigMap, a Secret (twice: volume and
// env), an optional ConfigMap the input lacks, a pull secret the input
// lacks and a ServiceAccount.
const own = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: prod}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      serviceAccountName: api
      imagePullSecrets: [{name: regcred}]
      priorityClassName: critical
      volumes:
      - {name: conf, configMap: {name: api-conf}}
      - {name: extra, configMap: {name: api-extra, optional: true}}
      - {name: tls, secret: {secretName: api-tls}}
      containers:
      - name: api
        image: registry.example/api:2.0
        imagePullPolicy: Always
        command: [/api, --port=8080]
        env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: api-tls, key: token}}}]
        ports: [{containerPort: 8080}, {containerPort: 9000, protocol: UDP}]
        resources: {requests: {cpu: "4"}}
        readinessProbe: {exec: {command: [/api, health]}, periodSeconds: 2}
        lifecycle: {preStop: {exec: {command: [/api, drain]}}}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: prod}
spec: {type: LoadBalancer, selector: {app: api}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-conf, namespace: prod}
data: {mode: strict}
---
apiVersion: v1
kind: Secret
metadata: {name: api-tls, namespace: prod}
stringData: {token: t0k}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: api, namespace: prod}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-conf, namespace: staging}
data: {mode: lax}
`

// With OwnImage the containers run as written: image, command, probes and
// hooks untouched (the doctor models nothing), what the Pod names comes
// along into the test namespace, and what the test cluster cannot honour
// is a change with its reason.
func TestOwnImageRunsAsWritten(t *testing.T) {
	s := build(t, own, Options{OwnImage: true, PullPolicy: corev1.PullNever, Path: "/v1/ping"})
	in := mustDeployment(t, own)
	d := s.WorkloadObj.(*appsv1.Deployment)
	c, ic := d.Spec.Template.Spec.Containers[0], in.Spec.Template.Spec.Containers[0]
	if c.Image != ic.Image || strings.Join(c.Command, " ") != "/api --port=8080" || c.ReadinessProbe.Exec == nil || c.Lifecycle.PreStop.Exec == nil {
		t.Errorf("container changed: image %s command %v probe %+v hook %+v", c.Image, c.Command, c.ReadinessProbe, c.Lifecycle)
	}
	if c.ImagePullPolicy != corev1.PullNever || len(c.Resources.Requests) != 0 {
		t.Errorf("pull %s resources %v: want Never (loaded) and none (small nodes)", c.ImagePullPolicy, c.Resources)
	}
	if !s.Own || s.Path != "/v1/ping" || s.Serving.Admin != 0 || s.Serving.Image != ic.Image || len(s.Serving.Listen) != 1 || s.Serving.Listen[0] != 8080 {
		t.Errorf("own %v path %s serving %+v", s.Own, s.Path, s.Serving)
	}
	if len(s.Images) != 1 || s.Images[0] != ic.Image {
		t.Errorf("images %v", s.Images)
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "api" || len(spec.Volumes) != 3 || spec.PriorityClassName != "" || spec.ImagePullSecrets != nil {
		t.Errorf("pod spec: sa %q volumes %d priority %q pull secrets %v", spec.ServiceAccountName, len(spec.Volumes), spec.PriorityClassName, spec.ImagePullSecrets)
	}
	var got []string
	for _, o := range s.Referenced {
		m := o.(interface {
			GetNamespace() string
			GetName() string
		})
		got = append(got, fmt.Sprintf("%T %s/%s", o, m.GetNamespace(), m.GetName()))
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Data["mode"] != "strict" {
			t.Errorf("the ConfigMap of another namespace was taken: %v", cm.Data)
		}
	}
	want := "*v1.ConfigMap zd-test/api-conf,*v1.Secret zd-test/api-tls,*v1.ServiceAccount zd-test/api"
	if strings.Join(got, ",") != want {
		t.Errorf("referenced %v, want %s", got, want)
	}
	if objs := s.Objects(); len(objs) != 5 {
		t.Errorf("%d objects, want 3 referenced + workload + service", len(objs))
	}
	var changes []string
	for _, ch := range s.Changes {
		changes = append(changes, ch.Field)
	}
	for _, f := range []string{"imagePullPolicy", "resources", "priorityClassName", "imagePullSecrets", "serviceAccountName"} {
		if !strings.Contains(strings.Join(changes, " "), f) {
			t.Errorf("no change recorded for %s: %v", f, changes)
		}
	}
	for _, k := range s.Knobs {
		if !k.Kept {
			t.Errorf("knob %s changed: was %s, now %s", k.Name, k.Was, k.Now)
		}
	}
	moved := s.In("zd-other")
	for _, o := range moved.Objects() {
		if ns := o.(interface{ GetNamespace() string }).GetNamespace(); ns != "zd-other" {
			t.Errorf("In: %T in %q", o, ns)
		}
	}
	if s.Referenced[0].(*corev1.ConfigMap).Namespace != "zd-test" {
		t.Error("In changed the original's referenced objects")
	}
}

// A name the Pod needs and the input lacks is refused before anything is
// deployed: the Pod would never start.
func TestOwnImageMissingReference(t *testing.T) {
	in := strings.Replace(own, "kind: Secret\nmetadata: {name: api-tls", "kind: Secret\nmetadata: {name: other", 1)
	_, err := fromYAML(in, Options{OwnImage: true})
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "secret/prod/api-tls") || strings.Contains(err.Error(), "api-extra") {
		t.Fatalf("err = %v, want a stand-in error naming secret/prod/api-tls and not the optional ConfigMap", err)
	}
	// Without --image=own the echo server names nothing.
	if _, err := fromYAML(in, Options{}); err != nil {
		t.Errorf("echo stand-in: %v", err)
	}
}

// The stand-in stops accepting, and ends HTTP/2 connections, as the
// user's server would: no echo close grace and no HTTP/2 shutdown notice
// for a server that is not the echo server; the echo server's own setting
// (or its default) for one that is.
func TestEchoNiceties(t *testing.T) {
	for _, tc := range []struct{ image, env, wantGrace, wantNotice string }{
		{"registry.example/shop:1.2", "", "0s", "0s"},
		{"zerodrop/echo-server:dev", "\n        env: [{name: ECHO_SHUTDOWN_DELAY, value: 3s}]", "auto", "1s"},
		{"zerodrop/echo-server:dev", "\n        env: [{name: ECHO_SHUTDOWN_DELAY, value: 3s}, {name: ECHO_CLOSE_GRACE, value: 2s}, {name: ECHO_H2_NOTICE, value: 0s}]", "2s", "0s"},
	} {
		y := strings.Replace(every, "image: registry.example/shop:1.2", "image: "+tc.image+tc.env, 1)
		s := build(t, y, Options{})
		env := envOf(s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0])
		if env["ECHO_CLOSE_GRACE"] != tc.wantGrace || env["ECHO_H2_NOTICE"] != tc.wantNotice {
			t.Errorf("%s%s: ECHO_CLOSE_GRACE=%q, ECHO_H2_NOTICE=%q; want %q, %q (behaviour from %s)", tc.image, tc.env,
				env["ECHO_CLOSE_GRACE"], env["ECHO_H2_NOTICE"], tc.wantGrace, tc.wantNotice, s.Serving.BehaviourFrom)
		}
	}
}

func TestOnePerNode(t *testing.T) {
	anti := func(key, app string) string {
		return strings.Replace(every, "        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 50\n            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: shop}}}",
			"        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - {topologyKey: "+key+", labelSelector: {matchLabels: {app: "+app+"}}}", 1)
	}
	for _, tc := range []struct {
		name, yaml string
		want       bool
	}{
		{"preferred only", every, false},
		{"required on hostname, own Pods", anti("kubernetes.io/hostname", "shop"), true},
		{"required on zone", anti("topology.kubernetes.io/zone", "shop"), false},
		{"required against other Pods", anti("kubernetes.io/hostname", "db"), false},
	} {
		if tc.name != "preferred only" && tc.yaml == every {
			t.Fatalf("%s: the replacement did not apply", tc.name)
		}
		if got := build(t, tc.yaml, Options{}).OnePerNode(); got != tc.want {
			t.Errorf("%s: OnePerNode %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The user's containers still mount their claims: with their own image the
// claims become emptyDir volumes of the same names, or no Pod is admitted.
func TestOwnImageClaims(t *testing.T) {
	y := strings.NewReplacer(
		"kind: Deployment\nmetadata: {name: api", "kind: StatefulSet\nmetadata: {name: api",
		"  replicas: 2\n", "  replicas: 2\n  serviceName: api\n  volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]\n",
		"      - {name: tls, secret: {secretName: api-tls}}", "      - {name: tls, secret: {secretName: api-tls}}\n      - {name: cache, persistentVolumeClaim: {claimName: api-cache}}",
		"        command: [/api, --port=8080]", "        command: [/api, --port=8080]\n        volumeMounts: [{name: data, mountPath: /data}, {name: cache, mountPath: /cache}]",
	).Replace(own)
	s := build(t, y, Options{OwnImage: true, PullPolicy: corev1.PullNever})
	st := s.WorkloadObj.(*appsv1.StatefulSet)
	if len(st.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("claim templates kept: %v", st.Spec.VolumeClaimTemplates)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range st.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, name := range []string{"data", "cache"} {
		if v, ok := vols[name]; !ok || v.EmptyDir == nil {
			t.Errorf("volume %s: %+v, want an emptyDir for the container's mount", name, v)
		}
	}
}

func TestRolloutNodes(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		want     int
	}{
		{"strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}", 7}, // every's 5 replicas + 2 surge first
		{"strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}", 5}, // one may go first
		{"strategy: {}", 5}, // 25% of 5: surge 2, unavailable 1
		{"strategy: {type: Recreate}", 5},
		{"strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 10%}}", 5}, // both resolve to 0: unavailable 1
	} {
		y := strings.Replace(every, "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}", tc.strategy, 1)
		if got := build(t, y, Options{}).RolloutNodes(); got != tc.want {
			t.Errorf("%s: RolloutNodes %d, want %d", tc.strategy, got, tc.want)
		}
	}
}

// A pull secret the input lacks is dropped when the image is loaded, and
// refused when the cluster must pull with it.
func TestOwnImagePullSecret(t *testing.T) {
	if _, err := fromYAML(own, Options{OwnImage: true, PullPolicy: corev1.PullNever}); err != nil {
		t.Errorf("loaded image: %v", err)
	}
	_, err := fromYAML(own, Options{OwnImage: true})
	if err == nil || !strings.Contains(err.Error(), "secret/prod/regcred") {
		t.Errorf("pulled image: err %v, want the missing pull secret named", err)
	}
}

// A release without the kubelet's sleep action (before 1.30) rejects a Pod
// that has one: there every preStop sleep of the stand-in, the user's own
// and those it makes of hooks it reads, is the echo server's sleep command.
func TestPreStopSleepPerRelease(t *testing.T) {
	exec := func(secs string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{fixtures.EchoBinary, "sleep", secs}}}
	}
	sleep := func(secs int64) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: secs}}
	}
	readHook := `lifecycle: {preStop: {exec: {command: [sleep, "20"]}}}`
	for _, tc := range []struct {
		name    string
		hook    string // replaces the input's 13 s sleep action ("" keeps it)
		release kubeversion.Version
		own     bool
		want    *corev1.LifecycleHandler
	}{
		{name: "sleep action, release unknown", want: sleep(13)},
		{name: "sleep action, 1.30", release: kubeversion.Version{Major: 1, Minor: 30}, want: sleep(13)},
		{name: "sleep action, 1.27", release: kubeversion.Version{Major: 1, Minor: 27}, want: exec("13")},
		{name: "read hook, 1.37", hook: readHook, release: kubeversion.Version{Major: 1, Minor: 37}, want: sleep(20)},
		{name: "read hook, 1.29", hook: readHook, release: kubeversion.Version{Major: 1, Minor: 29}, want: exec("20")},
		{name: "own image keeps the user's hook, 1.27", release: kubeversion.Version{Major: 1, Minor: 27}, own: true, want: sleep(13)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := every
			if tc.hook != "" {
				y = strings.Replace(y, "lifecycle: {preStop: {sleep: {seconds: 13}}}", tc.hook, 1)
			}
			s := build(t, y, Options{Kubernetes: tc.release, OwnImage: tc.own})
			c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			if c.Lifecycle == nil || !equality.Semantic.DeepEqual(c.Lifecycle.PreStop, tc.want) {
				t.Errorf("preStop %+v, want %+v", c.Lifecycle, tc.want)
			}
		})
	}
}

// The BackendConfig a user's Service names comes with its stand-in, in
// the stand-in's namespace; a check that asked the input Service's pinned
// healthCheckNodePort asks the one the test cluster allocates, any other
// port stays as written.
func TestBackendConfigComesAlong(t *testing.T) {
	svc := func(hcnp string) string {
		return strings.Replace(strings.Replace(every, "  externalTrafficPolicy: Local\n", "  externalTrafficPolicy: Local\n"+hcnp, 1),
			"annotations: {service.beta.kubernetes.io/aws-load-balancer-type: nlb,",
			"annotations: {cloud.google.com/backend-config: '{\"default\": \"hc\"}',", 1)
	}
	bc := func(port string) string {
		return "---\napiVersion: cloud.google.com/v1\nkind: BackendConfig\nmetadata: {name: hc, namespace: prod}\n" +
			"spec: {healthCheck: {port: " + port + ", requestPath: /healthz, checkIntervalSec: 3, timeoutSec: 1}, timeoutSec: 40}\n"
	}
	tests := []struct {
		name string
		in   string
		asks bool
		want int64 // the port of BackendConfigFor(31555)
	}{
		{"asks the pinned healthCheckNodePort", svc("  healthCheckNodePort: 30123\n") + bc("30123"), true, 31555},
		{"asks another port", svc("  healthCheckNodePort: 30123\n") + bc("30999"), false, 30999},
		{"the port is not pinned", svc("") + bc("30123"), false, 30123},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := build(t, tc.in, Options{})
			if s.BackendConfig == nil || s.BackendConfigAsksHealthCheckNodePort != tc.asks {
				t.Fatalf("BackendConfig %v, asks the healthCheckNodePort %v; want one, %v", s.BackendConfig, s.BackendConfigAsksHealthCheckNodePort, tc.asks)
			}
			if s.ServiceObj.Spec.HealthCheckNodePort != 0 {
				t.Errorf("the stand-in's Service pins healthCheckNodePort %d", s.ServiceObj.Spec.HealthCheckNodePort)
			}
			w := s.In("zd-cell")
			u := w.BackendConfigFor(31555)
			port, _, _ := unstructured.NestedInt64(u.Object, "spec", "healthCheck", "port")
			other, _, _ := unstructured.NestedInt64(u.Object, "spec", "timeoutSec")
			if u.GetNamespace() != "zd-cell" || u.GetName() != "hc" || port != tc.want || other != 40 {
				t.Errorf("BackendConfigFor: %s/%s port %d, spec.timeoutSec %d; want zd-cell/hc, port %d, 40", u.GetNamespace(), u.GetName(), port, other, tc.want)
			}
			if s.BackendConfig.GetNamespace() != "zd-test" {
				t.Errorf("In changed the original's namespace to %q", s.BackendConfig.GetNamespace())
			}
		})
	}
	if s := build(t, every, Options{}); s.BackendConfig != nil {
		t.Errorf("a Service that names none got %v", s.BackendConfig)
	}
}

// The stand-in serves every port the Service sends to, declared or not
// (container ports are informational: the app listens on its own), and
// refuses a name no container declares, which Kubernetes would not route.
func TestServesWhatTheServiceTargets(t *testing.T) {
	undeclared := strings.NewReplacer(
		"ports: [{name: web, containerPort: 8443}, {name: metrics, containerPort: 9090}]", "ports: []",
		"readinessProbe: {httpGet: {path: /ready, port: web}", "readinessProbe: {httpGet: {path: /ready, port: 8081}",
		"livenessProbe: {tcpSocket: {port: 9090}", "livenessProbe: {tcpSocket: {port: 8081}",
		"startupProbe: {httpGet: {path: /started, port: 9090}", "startupProbe: {httpGet: {path: /started, port: 8081}",
		"targetPort: web", "targetPort: 8080",
	).Replace(every)
	s := build(t, undeclared, Options{})
	c := s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if l := envOf(c)["ECHO_LISTEN"]; !strings.Contains(l, ":8080") || !strings.Contains(l, ":8081") {
		t.Errorf("ECHO_LISTEN %q, want the Service's target 8080 and the probes' 8081", l)
	}
	said := false
	for _, ch := range s.Changes {
		said = said || strings.Contains(ch.String(), "Service port http sends to 8080")
	}
	if !said {
		t.Errorf("no change says why 8080 is served: %v", s.Changes)
	}

	_, err := fromYAML(strings.Replace(every, "targetPort: web", "targetPort: api", 1), Options{})
	if err == nil || !strings.Contains(err.Error(), `port named "api", which no container of the Pod declares`) {
		t.Errorf("a target name no container declares: err %v", err)
	}
}

// The rolling-update-local write-up's recipe (3 replicas, maxSurge 1,
// maxUnavailable 0, a DoNotSchedule spread per hostname) on three workers
// and a tainted control plane: the control plane is an empty domain, so
// the surge Pod fits nowhere; with nodeTaintsPolicy Honor, a fourth
// worker, an unavailable budget or a ScheduleAnyway spread it fits. A
// drained node is an empty domain itself (cordoned): its Pod fits nowhere
// whenever the other nodes are full, tainted node or not.
func TestSpreadStalls(t *testing.T) {
	const base = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}POLICY}
      containers:
      - {name: web, image: web:1, ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`
	node := func(name string, taints ...corev1.Taint) corev1.Node {
		n := corev1.Node{}
		n.Name, n.Labels, n.Spec.Taints = name, map[string]string{corev1.LabelHostname: name}, taints
		return n
	}
	cp := node("control-plane", corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
	three := []corev1.Node{cp, node("w1"), node("w2"), node("w3")}
	for _, tc := range []struct {
		name, yaml     string
		nodes          []corev1.Node
		rollout, drain bool
	}{
		{"the write-up's recipe, a tainted control plane", strings.Replace(base, "POLICY", "", 1), three, true, true},
		{"nodeTaintsPolicy Honor", strings.Replace(base, "POLICY", ", nodeTaintsPolicy: Honor", 1), three, false, false},
		{"a fourth worker takes the surge and the drained Pod", strings.Replace(base, "POLICY", "", 1), append(three, node("w4")), false, false},
		{"no tainted node: the drained node is the empty domain", strings.Replace(base, "POLICY", "", 1), three[1:], false, true},
		{"ScheduleAnyway", strings.Replace(strings.Replace(base, "POLICY", "", 1), "DoNotSchedule", "ScheduleAnyway", 1), three, false, false},
		{"one may go first", strings.Replace(strings.Replace(base, "POLICY", "", 1), "maxUnavailable: 0", "maxUnavailable: 1", 1), three, false, true},
		{"matchLabelKeys counts the new ReplicaSet only", strings.Replace(base, "POLICY", ", matchLabelKeys: [pod-template-hash]", 1), three, false, true},
		{"maxSkew 2 leaves room", strings.Replace(strings.Replace(base, "POLICY", "", 1), "maxSkew: 1", "maxSkew: 2", 1), three, false, false},
	} {
		s := build(t, tc.yaml, Options{})
		fit, _ := s.Placeable(tc.nodes)
		rollout, drain := s.SpreadStalls(tc.nodes, fit)
		if (rollout != "") != tc.rollout || (drain != "") != tc.drain {
			t.Errorf("%s: rollout %q, drain %q; want rollout stalls=%v, drain stalls=%v", tc.name, rollout, drain, tc.rollout, tc.drain)
		}
		if tc.rollout && !strings.Contains(rollout, "control-plane") {
			t.Errorf("%s: %q does not name the empty domain", tc.name, rollout)
		}
	}
}
