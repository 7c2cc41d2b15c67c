package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Existing wraps a cluster somebody else runs, reached through a
// kubeconfig. It never creates or deletes anything, and nodepool changes are
// refused: they belong to whoever owns the cluster's machines.
type Existing struct {
	o options
}

var _ Provider = (*Existing)(nil)

// NewExisting returns a provider for the cluster in WithKubeconfig's file,
// else $KUBECONFIG's first file, else ~/.kube/config. The file must exist.
func NewExisting(opts ...Option) (*Existing, error) {
	o := buildOptions(opts)
	if o.kubeconfig == "" {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			o.kubeconfig = filepath.SplitList(env)[0]
		} else if home, err := os.UserHomeDir(); err == nil {
			o.kubeconfig = filepath.Join(home, ".kube", "config")
		}
	}
	if o.kubeconfig == "" {
		return nil, errors.New("existing cluster: no kubeconfig (set KUBECONFIG)")
	}
	if _, err := os.Stat(o.kubeconfig); err != nil {
		return nil, fmt.Errorf("existing cluster: kubeconfig %s: %w (set KUBECONFIG to the cluster's kubeconfig)", o.kubeconfig, err)
	}
	return &Existing{o: o}, nil
}

// Name implements Provider.
func (e *Existing) Name() string { return "existing" }

// Kubeconfig implements Provider.
func (e *Existing) Kubeconfig() string { return e.o.kubeconfig }

func (e *Existing) clientset() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", e.o.kubeconfig, err)
	}
	return kubernetes.NewForConfig(cfg)
}

// Create implements Provider: it creates nothing, and checks the cluster
// answers and has at least one Ready node.
func (e *Existing) Create(ctx context.Context) error {
	cs, err := e.clientset()
	if err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, e.o.readyTimeout); err != nil {
		return fmt.Errorf("existing cluster (%s): %w", e.o.kubeconfig, err)
	}
	e.o.progress("using the existing cluster of " + e.o.kubeconfig)
	return nil
}

// Delete implements Provider: an existing cluster is never deleted.
func (e *Existing) Delete(context.Context) error {
	e.o.progress("existing cluster: nothing to delete (zerodrop does not own it)")
	return nil
}

// LoadImages implements Provider: an existing cluster pulls from its
// registries; zerodrop cannot side-load into machines it does not own.
func (e *Existing) LoadImages(context.Context, ...string) error {
	return fmt.Errorf("existing cluster: loading images is %w; push them to a registry the cluster can pull from", ErrUnsupported)
}

// AddNodePool implements Provider by refusing.
func (e *Existing) AddNodePool(_ context.Context, name string, _ int, _ map[string]string, _ []corev1.Taint) error {
	return fmt.Errorf("existing cluster: adding nodepool %q is %w; scale nodepools with the cluster's own tooling, or use PROVIDER=kind", name, ErrUnsupported)
}

// RemoveNodePool implements Provider by refusing.
func (e *Existing) RemoveNodePool(_ context.Context, name string) error {
	return fmt.Errorf("existing cluster: removing nodepool %q is %w; remove nodepools with the cluster's own tooling, or use PROVIDER=kind", name, ErrUnsupported)
}

// SetShutdownGrace implements Provider by refusing.
func (e *Existing) SetShutdownGrace(_ context.Context, node string, _ ShutdownGrace) error {
	return fmt.Errorf("existing cluster: configuring node %s's kubelet is %w; use PROVIDER=kind", node, ErrUnsupported)
}

// PowerOff implements Provider by refusing.
func (e *Existing) PowerOff(_ context.Context, node string, _ time.Duration) error {
	return fmt.Errorf("existing cluster: powering off node %s is %w; use PROVIDER=kind", node, ErrUnsupported)
}

// RemoveNode implements Provider by refusing.
func (e *Existing) RemoveNode(_ context.Context, node string) error {
	return fmt.Errorf("existing cluster: removing node %s is %w; use PROVIDER=kind", node, ErrUnsupported)
}

// AddNode implements Provider by refusing.
func (e *Existing) AddNode(_ context.Context, pool, name string, _ map[string]string, _ []corev1.Taint) error {
	return fmt.Errorf("existing cluster: adding node %s to nodepool %s is %w; use PROVIDER=kind", name, pool, ErrUnsupported)
}

// Nodes implements Provider.
func (e *Existing) Nodes(ctx context.Context) ([]Node, error) {
	cs, err := e.clientset()
	if err != nil {
		return nil, err
	}
	return listNodes(ctx, cs)
}
