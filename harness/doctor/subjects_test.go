package doctor

import (
	"strings"
	"testing"
)

func TestSubjectsPairLikeCheck(t *testing.T) {
	const in = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: internal}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: sidecar, image: s}
      - {name: app, image: a, ports: [{name: http, containerPort: 8080}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 5}
---
apiVersion: v1
kind: Service
metadata: {name: orphan, namespace: other}
spec: {type: LoadBalancer, selector: {app: none}, ports: [{port: 80}]}
`
	m, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	subs := Subjects(m, "")
	if len(subs) != 2 {
		t.Fatalf("%d subjects, want the two LoadBalancer Services", len(subs))
	}
	web, orphan := subs[0], subs[1]
	if web.Service.Ref() != "service/default/web" || orphan.Service.Ref() != "service/other/orphan" {
		t.Fatalf("subjects %s, %s", web.Service.Ref(), orphan.Service.Ref())
	}
	if len(orphan.Backends) != 0 {
		t.Errorf("orphan has backends %v", orphan.Backends)
	}
	if len(web.Backends) != 1 {
		t.Fatalf("web: %d backends, want 1", len(web.Backends))
	}
	b := web.Backends[0]
	if b.Workload.Ref() != "deployment/default/web" || b.Kind != "Deployment" || b.Container != 1 {
		t.Errorf("backend %s kind %s container %d, want deployment/default/web, Deployment, 1 (the one owning the target port)", b.Workload.Ref(), b.Kind, b.Container)
	}
	if len(b.PDBs) != 1 || b.PDBs[0].Name != "web" || b.HPA == nil || b.HPA.Name != "web" {
		t.Errorf("PDBs %v HPA %v", b.PDBs, b.HPA)
	}
	// The input keeps its namespaces unset: Subjects defaults copies.
	if m.Objects[0].Namespace != "" {
		t.Errorf("Subjects changed the input's namespace to %q", m.Objects[0].Namespace)
	}
}

// Two Services in front of one workload each get its findings: the
// report is read per Service (zerodrop test predicts for one of them).
func TestFindingsPerService(t *testing.T) {
	const in = `apiVersion: v1
kind: Service
metadata: {name: admin}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: a, ports: [{containerPort: 80}]}]
`
	m, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := LookupProfile("gclb") // L7: the NodePort Service is judged too
	rep := Check(m, WithLBProfile(prof))
	per := map[string]int{}
	for _, f := range rep.Findings {
		if f.RuleID == "ZD006" {
			per[f.Service]++
		}
	}
	if per["service/default/admin"] != 1 || per["service/default/web"] != 1 {
		t.Errorf("ZD006 per Service %v, want one on each", per)
	}
}
