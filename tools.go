//go:build tools

// Package zerodrop pins the libraries the design card names, so that
// `go mod tidy` keeps them in go.mod before every package that uses them has
// landed, and so that parallel work on different packages never fights over
// go.mod.
package zerodrop

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/tsenart/vegeta/v12/lib"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/kubectl/pkg/drain"
	_ "sigs.k8s.io/e2e-framework/pkg/envconf"
	_ "sigs.k8s.io/e2e-framework/pkg/features"
	_ "sigs.k8s.io/kind/pkg/cluster"
	_ "sigs.k8s.io/yaml"
)
