//go:build e2e

// Package e2eframework is zerodrop inside a sigs.k8s.io/e2e-framework
// suite: a feature deploys a workload, an Assess step from
// zerodrop.dev/zerodrop/e2e rolls it under load and fails on one dropped
// request, a Teardown removes it. Copy it into your suite and run
//
//	ZERODROP_KUBECONFIG=out/kubeconfig go test -tags e2e ./examples/e2eframework/
//
// (or give the framework's own --kubeconfig flag) against a cluster whose
// Services of type LoadBalancer get an address this machine reaches.
package e2eframework

import (
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"zerodrop.dev/zerodrop/e2e"
)

var testenv env.Environment

// TestMain points the environment at zerodrop's kind cluster: the one
// that answers at ZERODROP_KUBECONFIG, or a new one (`make node-image` and
// `make image` build what it needs), removed again at the end if this
// suite made it. Without ZERODROP_KUBECONFIG the framework's own flags
// (--kubeconfig) name the cluster.
func TestMain(m *testing.M) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		panic(err)
	}
	testenv = env.NewWithConfig(cfg)
	if kubeconfig := os.Getenv("ZERODROP_KUBECONFIG"); kubeconfig != "" {
		kind := e2e.Kind{Name: os.Getenv("CLUSTER_NAME"), Kubeconfig: kubeconfig, Images: []string{"zerodrop/echo-server:dev"}}
		testenv.Setup(e2e.KindCluster(kind)).Finish(e2e.DeleteKindCluster(kind))
	}
	os.Exit(testenv.Run(m))
}
