package suites

import (
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// The node-lifecycle scenarios as data: which ones can assert zero drops,
// what the Pods are hardened for, what the doctor judges them by, and
// what each costs beyond its own steps.
func TestDepartures(t *testing.T) {
	models, err := Settings{LB: "all", Provider: "kind"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Scenario{}
	for _, sc := range Scenarios() {
		byName[sc.Name] = sc
	}
	tests := []struct {
		name string
		// asserts: hardened cells assert zero drops somewhere (no limit
		// covers every model).
		asserts  bool
		fate     recipe.Fate
		shutdown *recipe.ShutdownGrace
	}{
		{"node-shutdown", false, recipe.ShutsDown, &nodeShutdownGrace},
		{"spot-interruption", false, recipe.ShutsDown, &recipe.ShutdownGrace{}},
		{"spot-interruption-handled", true, recipe.Leaves, nil},
		{"consolidation", true, recipe.Leaves, nil},
		{"consolidation-autoscaler", true, recipe.Leaves, nil},
	}
	for _, tt := range tests {
		sc, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s is not registered", tt.name)
			continue
		}
		if !sc.Own || !sc.NeedsNodepools || sc.Fate != tt.fate || sc.Cost == nil {
			t.Errorf("%s: own %t, needs nodepools %t, fate %s, cost set %t", tt.name, sc.Own, sc.NeedsNodepools, sc.Fate, sc.Cost != nil)
		}
		if (sc.NodeShutdown == nil) != (tt.shutdown == nil) || (sc.NodeShutdown != nil && *sc.NodeShutdown != *tt.shutdown) {
			t.Errorf("%s: doctor judges it for shutdown grace %v, want %v", tt.name, sc.NodeShutdown, tt.shutdown)
		}
		asserts := false
		for _, c := range sc.Cells(models) {
			if c.Role == zdv1.RoleAssertion {
				asserts = true
			}
			if !c.KeepAlive {
				t.Errorf("%s: %s opens a connection per request, which saturates this bench at a batch's size", tt.name, c.Name())
			}
		}
		if asserts != tt.asserts {
			t.Errorf("%s: some hardened cell asserts: %t, want %t", tt.name, asserts, tt.asserts)
		}
	}
	// The notice is the departure's own time: the handled interruption
	// costs the two minutes whatever its drain takes.
	k := DefaultCosts()
	d := departure{Notice: spotNotice, Drain: true}
	if got := d.duration(k, cellTimes{accepting: 10 * time.Second}); got < spotNotice {
		t.Errorf("a departure with a %s notice lasts %s", spotNotice, got)
	}
	// Without the kubelet's grace and without a drain, systemd's SIGTERM
	// reaches the Pods, which keep their own delays up to its stop timeout.
	unhandled := departure{Notice: spotNotice}
	for _, tt := range []struct{ accepting, off time.Duration }{
		{0, k.PowerOff}, {30 * time.Second, 30*time.Second + k.Terminate}, {time.Hour, systemdStopTimeout},
	} {
		if got, want := unhandled.duration(k, cellTimes{accepting: tt.accepting}), spotNotice+tt.off+tmNodeDeletion; got != want {
			t.Errorf("an unhandled interruption of Pods that keep serving %s lasts %s, want %s", tt.accepting, got, want)
		}
	}
	shutdown := departure{Grace: nodeShutdownGrace}
	if got, want := shutdown.duration(k, cellTimes{accepting: time.Hour}), nodeShutdownGrace.Period+k.PowerOff+tmNodeDeletion; got != want {
		t.Errorf("a shutdown whose Pods outlast the grace lasts %s, want the grace's %s", got, want)
	}
}
