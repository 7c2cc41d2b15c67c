//go:build e2e

package e2eframework

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"zerodrop.dev/zerodrop"
	"zerodrop.dev/zerodrop/e2e"
)

const ns = "zd-example-e2efw"

func TestRollout(t *testing.T) {
	out := os.Getenv("ZERODROP_EXAMPLES_OUT")
	if out == "" {
		out = t.TempDir()
	}
	web := zerodrop.Service{Namespace: ns, Name: "web"}
	f := features.New("rollout of web").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := cfg.Client().Resources()
			if err := r.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			if err := decoder.DecodeEachFile(ctx, os.DirFS(".."), "web.yaml", decoder.CreateHandler(r), decoder.MutateNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("drops nothing", e2e.UnderLoad(web, e2e.RolloutRestart(ns, "web", 3*time.Minute),
			zerodrop.Options{Name: "e2eframework-rollout", OutDir: out})).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := cfg.Client().Resources()
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := r.Delete(ctx, namespace); err != nil {
				t.Errorf("remove namespace %s: %v", ns, err)
				return ctx
			}
			if err := wait.For(conditions.New(r).ResourceDeleted(namespace), wait.WithTimeout(2*time.Minute)); err != nil {
				t.Errorf("namespace %s still there after two minutes: %v", ns, err)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}
