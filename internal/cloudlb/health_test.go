package cloudlb

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

func hc(interval time.Duration, healthy, unhealthy int) profiles.HealthCheck {
	return profiles.HealthCheck{Target: profiles.TargetKubeProxy, Interval: profiles.Duration(interval), Timeout: profiles.Duration(interval / 2),
		HealthyThreshold: healthy, UnhealthyThreshold: unhealthy}
}

func TestHealthStateThresholds(t *testing.T) {
	cases := []struct {
		name               string
		healthy, unhealthy int
		results            string // '+' pass, '-' fail
		want               string // verdict after each result: 'H' or 'U'
	}{
		{"starts unhealthy, needs healthy threshold", 2, 3, "++", "UH"},
		{"single pass with threshold 1", 1, 3, "+", "H"},
		{"needs consecutive failures", 1, 3, "+--+---", "HHHHHHU"},
		{"flapping never flips", 2, 2, "+-+-+-+-", "UUUUUUUU"},
		{"flapping once healthy stays healthy", 1, 2, "+-+-+-", "HHHHHH"},
		{"recovers after healthy threshold", 1, 2, "+--++", "HHUHH"},
		{"recovery needs consecutive passes", 3, 1, "+++-++-+++", "UUHUUUUUUH"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewHealthState(hc(time.Second, c.healthy, c.unhealthy))
			var got strings.Builder
			for _, r := range c.results {
				s.Observe(cloudlbv1.CheckResult{OK: r == '+'})
				if s.Healthy() {
					got.WriteByte('H')
				} else {
					got.WriteByte('U')
				}
			}
			if got.String() != c.want {
				t.Fatalf("verdicts = %s, want %s", got.String(), c.want)
			}
		})
	}
}

// scripted is a Checker that hands each call's URL to the test and returns what
// the test answers, so the test advances the fake clock in lock step.
type scripted struct {
	clk   *clocktesting.FakeClock
	calls chan string
	reply chan bool
}

func (s scripted) check(_ context.Context, url string) cloudlbv1.CheckResult {
	now := s.clk.Now()
	s.calls <- url
	return cloudlbv1.CheckResult{Time: now, URL: url, OK: <-s.reply}
}

func TestMonitorFlipsAfterIntervalTimesThreshold(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	sc := scripted{clk: clk, calls: make(chan string), reply: make(chan bool)}
	var mu sync.Mutex
	var flips []Transition
	var flipTimes []time.Duration
	m := NewMonitor(clk, sc.check, func(tr Transition) {
		mu.Lock()
		defer mu.Unlock()
		flips = append(flips, tr)
		flipTimes = append(flipTimes, tr.Result.Time.Sub(time.Unix(0, 0)))
	})
	defer m.Stop()
	key := ProbeKey{Service: "ns/s", Node: "n1"}
	m.Set(context.Background(), []Probe{{Key: key, URL: "http://n1/", HealthCheck: hc(8*time.Second, 1, 3)}})

	// Answer one check, then advance one interval. The loop checks again only
	// after it has handled the previous result (and notified), so receiving the
	// next call is the synchronisation point.
	next := func() {
		t.Helper()
		select {
		case <-sc.calls:
		case <-time.After(5 * time.Second):
			t.Fatal("timed out waiting 5s for the monitor to run a check")
		}
	}
	step := func(ok bool) {
		t.Helper()
		next()
		sc.reply <- ok
		clk.Step(8 * time.Second)
	}
	step(true) // t=0: healthy at once (threshold 1)
	for i := 0; i < 3; i++ {
		step(false) // t=8,16,24
	}
	step(true) // t=32
	next()     // the t=32 result has been handled
	sc.reply <- true
	mu.Lock()
	defer mu.Unlock()
	if len(flips) != 3 {
		t.Fatalf("flips = %+v, want healthy, unhealthy, healthy", flips)
	}
	if !flips[0].Healthy || flips[1].Healthy || !flips[2].Healthy {
		t.Fatalf("flip order wrong: %+v", flips)
	}
	// first failure at t=8s; unhealthy after the third at t=24s: 2 intervals after
	// the first failed check, 3 intervals after the last pass (interval x threshold).
	if flipTimes[1] != 24*time.Second {
		t.Errorf("unhealthy at %v, want 24s", flipTimes[1])
	}
	if len(flips[1].Recent) != 3 {
		t.Errorf("unhealthy flip carries %d results, want the 3 failures", len(flips[1].Recent))
	}
	if !m.Healthy(key) {
		t.Errorf("Healthy() = false after recovery")
	}
}

func TestMonitorSetKeepsRunningLoops(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	var mu sync.Mutex
	calls := map[string]int{}
	m := NewMonitor(clk, func(_ context.Context, url string) cloudlbv1.CheckResult {
		mu.Lock()
		calls[url]++
		mu.Unlock()
		return cloudlbv1.CheckResult{URL: url, OK: true}
	}, nil)
	defer m.Stop()
	a := Probe{Key: ProbeKey{"s", "a"}, URL: "http://a/", HealthCheck: hc(time.Second, 1, 1)}
	b := Probe{Key: ProbeKey{"s", "b"}, URL: "http://b/", HealthCheck: hc(time.Second, 1, 1)}
	m.Set(context.Background(), []Probe{a})
	waitFor(t, "a healthy", func() bool { return m.Healthy(a.Key) })
	m.Set(context.Background(), []Probe{a, b})
	waitFor(t, "b healthy", func() bool { return m.Healthy(b.Key) })
	mu.Lock()
	if calls["http://a/"] != 1 {
		t.Errorf("a was checked %d times; adding b must not restart a", calls["http://a/"])
	}
	mu.Unlock()
	m.Set(context.Background(), []Probe{b})
	if m.Healthy(a.Key) {
		t.Errorf("a still reported after removal")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 5s waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHTTPChecker(t *testing.T) {
	status := http.StatusOK
	var mu sync.Mutex
	slow := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-slow
		}
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	defer close(slow)
	check := HTTPChecker(clocktesting.NewFakeClock(time.Now()), nil)
	ctx := context.Background()

	if r := check(ctx, srv.URL+"/"); !r.OK || r.Status != 200 {
		t.Fatalf("200: %+v", r)
	}
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if r := check(ctx, srv.URL+"/"); r.OK || r.Status != 503 || !strings.Contains(r.String(), "503") {
		t.Fatalf("503: %+v", r)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if r := check(tctx, srv.URL+"/slow"); r.OK || r.Error != "timeout" {
		t.Fatalf("slow answer must fail as timeout: %+v", r)
	}
	closed := fmt.Sprintf("http://127.0.0.1:%d/", freePort(t)) // nothing listens there any more
	if r := check(ctx, closed); r.OK || r.Error == "" {
		t.Fatalf("refused connection must fail: %+v", r)
	}
}
