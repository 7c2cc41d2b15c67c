package zerodrop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
)

func TestUnderLoadRefusesBadInput(t *testing.T) {
	noop := Disruption{Name: "nothing", Do: func(context.Context) error { return nil }}
	web := Service{Namespace: "shop", Name: "web"}
	cs := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}})
	cases := []struct {
		name   string
		client kubernetes.Interface
		svc    Service
		d      Disruption
		opts   func(dir string) Options
		want   string
	}{
		{"no client", nil, web, noop, func(dir string) Options { return Options{OutDir: dir} }, "needs a Kubernetes client"},
		{"no Do", cs, web, Disruption{Name: "x"}, func(dir string) Options { return Options{OutDir: dir} }, "has no Do"},
		{"no OutDir", cs, web, noop, func(string) Options { return Options{} }, "OutDir is required"},
		{"negative rate", cs, web, noop, func(dir string) Options { return Options{OutDir: dir, Rate: -1} }, "cannot be negative"},
		{"name not a directory", cs, web, noop, func(dir string) Options { return Options{OutDir: dir, Name: "My Run"} }, "lower-case letters"},
		{"not a LoadBalancer", cs, web, noop, func(dir string) Options { return Options{OutDir: dir} }, "must be of type LoadBalancer"},
		{"no such Service", cs, Service{Namespace: "shop", Name: "api"}, noop, func(dir string) Options { return Options{OutDir: dir} }, "create it before measuring it"},
		{"no such key", cs, web, noop, func(dir string) Options {
			return Options{OutDir: dir, SignKey: filepath.Join(dir, "..", "missing.pem")}
		}, "SignKey"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, err := UnderLoad(context.Background(), c.client, c.svc, c.d, c.opts(dir))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			// Bad input leaves nothing behind: not even the output
			// directory.
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s exists after bad input", dir)
			}
		})
	}
}

// A run that cannot start (the Service never gets a ready endpoint) says
// so, keeps its evidence, and leaves the caller's objects as they were:
// UnderLoad deploys and removes nothing.
func TestUnderLoadLeavesTheCallersObjects(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}})
	called := false
	dir := t.TempDir()
	key, err := evidence.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "key.pem")
	if err := evidence.WriteKey(key, keyPath); err != nil {
		t.Fatal(err)
	}
	_, err = UnderLoad(context.Background(), cs, Service{Namespace: "shop", Name: "web"},
		Disruption{Name: "never", Do: func(context.Context) error { called = true; return nil }},
		Options{OutDir: dir, ReadyTimeout: time.Second, SignKey: keyPath})
	if err == nil || !strings.Contains(err.Error(), "ready endpoints") {
		t.Fatalf("err = %v, want the wait for ready endpoints to time out", err)
	}
	if called {
		t.Error("the disruption ran although the Service never served")
	}
	if _, err := cs.CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the caller's Service: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("the caller's namespace: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "under-load-shop-web", "run.jsonl"))
	if err != nil {
		t.Fatalf("the broken run's evidence: %v", err)
	}
	if !strings.Contains(string(raw), "ready endpoints") {
		t.Errorf("the run file does not say why the run ended:\n%s", raw)
	}
	// Broken or not, the evidence is signed with the key given.
	if _, err := os.Stat(evidence.SignatureFile(filepath.Join(dir, "under-load-shop-web", "run.jsonl"))); err != nil {
		t.Errorf("the run file is not signed: %v", err)
	}
}

func TestResultString(t *testing.T) {
	r := Result{RunFile: "out/under-load/run.jsonl", Scenario: zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "under-load"},
		Results:      zdv1.Results{Total: 500, Dropped: 3, Errors: 3, AchievedRate: 50},
		Verdict: zdv1.Verdict{Status: zdv1.Fail, Reasons: []zdv1.Reason{
			{Check: "run", Status: zdv1.Pass, Message: "measured"},
			{Check: "dropped", Status: zdv1.Fail, Message: "3 dropped, at most 0"},
		}},
	}}
	got := r.String()
	for _, want := range []string{"FAIL under-load: 500 requests at 50.0/s, 3 dropped", "FAIL dropped: 3 dropped, at most 0", "evidence: out/under-load/run.jsonl"} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, want it to hold %q", got, want)
		}
	}
	if strings.Contains(got, "measured") {
		t.Errorf("String() lists a passing check: %q", got)
	}
	if r.Passed() {
		t.Error("a FAIL passed")
	}
}
