// Package profiles owns zerodrop's load-balancer profiles: one YAML file per
// vendor behaviour (health-check timing, node eligibility, what flows do),
// each number with its source, embedded so every binary carries them. The
// cloud-style LB (harness/lb) runs them, the fixtures derive the hardened
// workload from their timing and the doctor checks manifests against them,
// so a vendor's number is written once. README.md explains the schema.
package profiles

import "embed"

// FS holds every stock profile as <name>.yaml at its root.
//
//go:embed *.yaml
var FS embed.FS
