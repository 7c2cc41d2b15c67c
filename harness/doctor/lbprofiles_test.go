package doctor

import (
	"testing"

	"zerodrop/harness/lb"
)

// TestProfilesMatchTheCloudLB keeps one answer per vendor: where the cloud-style
// LB (clusters/lb/profiles) and the doctor both know a profile, their
// health-check timing must agree, or the doctor would pass a workload that the
// LB of the same name then breaks.
func TestProfilesMatchTheCloudLB(t *testing.T) {
	stock, err := lb.StockProfiles()
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, p := range stock {
		d, ok := LookupProfile(p.Name)
		if !ok {
			continue
		}
		shared++
		hc := p.HealthCheck
		if hc.Interval.D() != d.Interval || hc.HealthyThreshold != d.HealthyThreshold || hc.UnhealthyThreshold != d.UnhealthyThreshold {
			t.Errorf("profile %s: cloud LB %v x %d (healthy %d), doctor %v x %d (healthy %d)", p.Name,
				hc.Interval.D(), hc.UnhealthyThreshold, hc.HealthyThreshold, d.Interval, d.UnhealthyThreshold, d.HealthyThreshold)
		}
	}
	if shared < 3 {
		t.Errorf("only %d profiles shared between the doctor and the cloud LB; the test compares nothing useful", shared)
	}
}
