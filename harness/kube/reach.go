package kube

import (
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Reach connects to the cluster of kubeconfig, waiting at most ten seconds
// for its API server, and returns a client for it and its Kubernetes
// version; an error means there is no reachable cluster there.
func Reach(kubeconfig string) (kubernetes.Interface, string, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, "", err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 10 * time.Second
	// Dozens of witnesses act through one client at the same moment: the
	// default client-side limit (5 requests/s) would stagger them by
	// seconds.
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, "", fmt.Errorf("API server of %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 0
	cs, err = kubernetes.NewForConfig(cfg)
	return cs, v.GitVersion, err
}
