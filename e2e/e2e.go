// Package e2e is zerodrop for suites written with
// sigs.k8s.io/e2e-framework: a step that asserts zero dropped requests
// through a Service's load balancer around the suite's own disruption, and
// environment functions that point the suite at a cluster: zerodrop's kind
// cluster, taken or made (KindCluster), or any cluster (UseCluster).
//
//	kind := e2e.Kind{Kubeconfig: "out/kubeconfig", Images: []string{"zerodrop/echo-server:dev"}}
//	testenv = env.NewWithConfig(envconf.New()).Setup(e2e.KindCluster(kind)).Finish(e2e.DeleteKindCluster(kind))
//	...
//	f := features.New("rollout of web").
//		Assess("zero drops", e2e.UnderLoad(
//			zerodrop.Service{Namespace: "shop", Name: "web"},
//			e2e.Disruption{Name: "rollout restart of web", Do: restartWeb},
//			zerodrop.Options{OutDir: outDir})).
//		Feature()
//	testenv.Test(t, f)
//
// The step is zerodrop.UnderLoad with the environment's cluster: every
// request attributed, the run file beside the verdict, a failure before the
// disruption charged to the ground rather than to the workload.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"zerodrop.dev/zerodrop"
)

// Disruption is what the feature does to the cluster while the load runs,
// with the test environment's configuration at hand.
type Disruption struct {
	// Name says what it is, in the run file and the verdict.
	Name string
	// Do disrupts and returns once the disruption is done; an error ends
	// the run (and fails the step).
	Do func(ctx context.Context, cfg *envconf.Config) error
}

// resultKey is the context key of a step's Result, per Service.
type resultKey struct{ namespace, name string }

// UnderLoad is an Assess step: zerodrop.UnderLoad on svc around d, on the
// environment's cluster. It fails the test unless the run passed, with the
// verdict's reasons and the run file's path, and stores the Result in the
// returned context (ResultFrom) for later steps.
func UnderLoad(svc zerodrop.Service, d Disruption, opts zerodrop.Options) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		t.Helper()
		if d.Do == nil {
			t.Fatal("zerodrop: the disruption has no Do")
		}
		client, err := clientOf(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := zerodrop.UnderLoad(ctx, client, svc, zerodrop.Disruption{
			Name: d.Name,
			Do:   func(ctx context.Context) error { return d.Do(ctx, cfg) },
		}, opts)
		if err != nil {
			t.Fatalf("%v", err)
		}
		t.Logf("%s", res)
		if !res.Passed() {
			t.Errorf("%s/%s dropped requests under %q:\n%s", svc.Namespace, svc.Name, d.Name, res)
		}
		return context.WithValue(ctx, resultKey{svc.Namespace, svc.Name}, res)
	}
}

// ResultFrom is the Result an UnderLoad step stored in ctx for svc.
func ResultFrom(ctx context.Context, svc zerodrop.Service) (zerodrop.Result, bool) {
	res, ok := ctx.Value(resultKey{svc.Namespace, svc.Name}).(zerodrop.Result)
	return res, ok
}

// RolloutRestart is zerodrop.RolloutRestart on the environment's cluster:
// `kubectl rollout restart deployment/name`, waited for (at most timeout).
func RolloutRestart(namespace, name string, timeout time.Duration) Disruption {
	return Disruption{
		Name: fmt.Sprintf("rollout restart of deployment %s/%s", namespace, name),
		Do: func(ctx context.Context, cfg *envconf.Config) error {
			client, err := clientOf(cfg)
			if err != nil {
				return err
			}
			return zerodrop.RolloutRestart(client, namespace, name, timeout).Do(ctx)
		},
	}
}

// UseCluster is an environment function that makes the cluster whose
// kubeconfig is at path the environment's (a zerodrop kind cluster writes
// its kubeconfig to out/kubeconfig: `make cluster`), and checks that it
// answers before any feature runs, within a minute.
func UseCluster(kubeconfig string) types.EnvFunc {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if kubeconfig == "" {
			return ctx, errors.New("zerodrop: UseCluster needs the path of a kubeconfig")
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			return ctx, fmt.Errorf("zerodrop: kubeconfig: %w (make cluster writes one to out/kubeconfig)", err)
		}
		cfg.WithKubeconfigFile(kubeconfig)
		rc, err := restConfigOf(cfg)
		if err != nil {
			return ctx, err
		}
		rc = rest.CopyConfig(rc)
		rc.Timeout = time.Minute
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return ctx, fmt.Errorf("zerodrop: kubeconfig %s: %w", kubeconfig, err)
		}
		if _, err := client.Discovery().ServerVersion(); err != nil {
			return ctx, fmt.Errorf("zerodrop: the cluster of %s does not answer (waited at most %s): %w", kubeconfig, rc.Timeout, err)
		}
		return ctx, nil
	}
}

// restConfigOf is the environment's connection to its cluster, as its
// configuration gives it (kubeconfig file and context, from UseCluster or
// the framework's flags).
func restConfigOf(cfg *envconf.Config) (*rest.Config, error) {
	if cfg.KubeconfigFile() == "" {
		return nil, errors.New("zerodrop: the test environment names no kubeconfig: give --kubeconfig, or set it up with UseCluster")
	}
	c, err := cfg.NewClient()
	if err != nil {
		return nil, fmt.Errorf("zerodrop: kubeconfig %s: %w", cfg.KubeconfigFile(), err)
	}
	return c.RESTConfig(), nil
}

// clientOf is a clientset for the environment's cluster.
func clientOf(cfg *envconf.Config) (kubernetes.Interface, error) {
	rc, err := restConfigOf(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("zerodrop: kubeconfig %s: %w", cfg.KubeconfigFile(), err)
	}
	return cs, nil
}
