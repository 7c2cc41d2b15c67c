package kubeversion

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]Version{
		"1.34": {1, 34}, "v1.37.2": {1, 37}, "1.25.16": {1, 25}, " v1.35.0-rc.1\n": {1, 35},
		"v1.34.2-gke.1200": {1, 34}, "v1.33.4+k3s1": {1, 33}, " v1.30.0-eks-1234 ": {1, 30},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1", "v1", "2.1", "1.x", "v1.34.2.1", "latest", "vX.Y.Z"} {
		if v, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, accepted", bad, v)
		}
	}
}

func TestAtLeast(t *testing.T) {
	v := Version{1, 35}
	if !v.AtLeast(1, 35) || !v.AtLeast(1, 31) || v.AtLeast(1, 36) || v.AtLeast(2, 0) || !(Version{2, 0}).AtLeast(1, 99) {
		t.Errorf("AtLeast wrong for %v", v)
	}
}

func TestHasSleepAction(t *testing.T) {
	for v, want := range map[Version]bool{{}: true, {1, 37}: true, {1, 30}: true, {1, 29}: false, {1, 27}: false} {
		if got := v.HasSleepAction(); got != want {
			t.Errorf("%v.HasSleepAction() = %v, want %v", v, got, want)
		}
	}
}

func TestSpreadHonorsTaints(t *testing.T) {
	for v, want := range map[Version]bool{{}: true, {1, 37}: true, {1, 26}: true, {1, 25}: false, {1, 24}: false} {
		if got := v.SpreadHonorsTaints(); got != want {
			t.Errorf("%v.SpreadHonorsTaints() = %v, want %v", v, got, want)
		}
	}
}

func TestProxiesTerminating(t *testing.T) {
	for v, want := range map[Version][2]bool{{}: {true, true}, {1, 37}: {true, true}, {1, 28}: {true, true}, {1, 27}: {true, false}, {1, 26}: {true, false}, {1, 25}: {false, false}} {
		if got := [2]bool{v.ProxiesTerminatingByDefault(), v.ProxiesTerminatingLocked()}; got != want {
			t.Errorf("%v: by default, locked = %v, want %v", v, got, want)
		}
	}
}
