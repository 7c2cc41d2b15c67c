//go:build e2e

package suites

import . "github.com/onsi/ginkgo/v2"

// configureCloudLB wires the cloud-style LB (LB=cloud) into the suite.
func configureCloudLB(s *Suite) {
	Fail("LB=" + s.Settings.LB + " is not wired into the suite yet; use LB=metallb")
}
