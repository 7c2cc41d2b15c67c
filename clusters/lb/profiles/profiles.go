// Package profiles holds the stock cloud load-balancer profiles of zerodrop's
// cloud-style LB (harness/lb) as data files, embedded so the controller binary
// carries them. Each YAML file documents itself; README.md explains the schema.
package profiles

import "embed"

// FS holds every stock profile as <name>.yaml at its root.
//
//go:embed *.yaml
var FS embed.FS
