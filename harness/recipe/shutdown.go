package recipe

import (
	"fmt"
	"strings"
	"time"
)

// ShutdownGrace is the kubelet's graceful node shutdown (KubeletConfiguration
// shutdownGracePeriod and shutdownGracePeriodCriticalPods): on a shutdown the
// kubelet gives regular Pods Period minus CriticalPods, then critical Pods
// CriticalPods. Zero Period turns it off, the kubelet's default: the machine
// then shuts down without waiting for any Pod.
type ShutdownGrace struct {
	Period, CriticalPods time.Duration
}

// String is "30s (critical Pods 10s)" or "off".
func (g ShutdownGrace) String() string {
	if g.Period <= 0 {
		return "off"
	}
	return fmt.Sprintf("%s (critical Pods %s)", g.Period, g.CriticalPods)
}

// Validate refuses periods the kubelet refuses: negative ones, and critical
// Pods' time longer than the whole period (kubelet's
// validation.ValidateKubeletConfiguration).
func (g ShutdownGrace) Validate() error {
	if g.Period < 0 || g.CriticalPods < 0 {
		return fmt.Errorf("shutdown grace %s: periods must not be negative", g)
	}
	if g.CriticalPods > g.Period {
		return fmt.Errorf("shutdown grace: shutdownGracePeriodCriticalPods %s is longer than shutdownGracePeriod %s", g.CriticalPods, g.Period)
	}
	return nil
}

// Budget is what regular Pods get: Period minus CriticalPods (the kubelet
// kills them first, then the critical ones; kubernetes
// pkg/kubelet/nodeshutdown nodeshutdown_manager_linux.go
// migrateConfig). Zero when graceful node shutdown is off.
func (g ShutdownGrace) Budget() time.Duration {
	if g.Period <= 0 {
		return 0
	}
	return g.Period - g.CriticalPods
}

// ParseShutdownGrace reads "30s/15s" (shutdownGracePeriod, then
// shutdownGracePeriodCriticalPods), "30s" (no time for critical Pods) or
// "off".
func ParseShutdownGrace(s string) (ShutdownGrace, error) {
	if s == "off" || s == "0" {
		return ShutdownGrace{}, nil
	}
	var g ShutdownGrace
	p, c, hasC := strings.Cut(s, "/")
	var err error
	if g.Period, err = time.ParseDuration(p); err != nil {
		return ShutdownGrace{}, fmt.Errorf("shutdown grace %q: shutdownGracePeriod: %w (want e.g. 30s/15s, or off)", s, err)
	}
	if hasC {
		if g.CriticalPods, err = time.ParseDuration(c); err != nil {
			return ShutdownGrace{}, fmt.Errorf("shutdown grace %q: shutdownGracePeriodCriticalPods: %w (want e.g. 30s/15s, or off)", s, err)
		}
	}
	if err := g.Validate(); err != nil {
		return ShutdownGrace{}, err
	}
	return g, nil
}
