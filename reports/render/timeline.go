package render

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
)

// DefaultMaxBuckets bounds the time buckets of a timeline: enough to see a
// one-second outage in a ten-minute run, few enough that every bar is at
// least a pixel and a half wide in the HTML.
const DefaultMaxBuckets = 600

// bucketSteps are the bucket widths a timeline may use; the smallest one that
// keeps the bucket count within the limit wins.
var bucketSteps = []time.Duration{
	100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

const (
	// maxClasses bounds the failure series; rarer classes merge into "other".
	maxClasses = 8
	// maxPods bounds the per-pod series; the rest merge into OtherPods.
	maxPods = 11
	// maxMarkers bounds the event markers drawn.
	maxMarkers = 300
	// OtherPods names the series of pods beyond the first maxPods.
	OtherPods = "(other pods)"
)

// Marker is an event drawn on the timeline.
type Marker struct {
	Time    time.Time
	Source  string
	Type    string
	Object  string
	Message string
}

// Timeline is a run file folded into fixed time buckets: requests that
// succeeded and failed (by failure kind), per-pod successes, and the events
// worth a marker. Its size depends on the bucket, class, pod and marker
// limits, never on the length of the run.
type Timeline struct {
	// Start is the start of bucket 0; Step the bucket width.
	Start time.Time
	Step  time.Duration
	// LoadStart and LoadEnd are the first and last send times; the plotted
	// span may extend beyond them to show events just before or after.
	LoadStart, LoadEnd time.Time
	// OK counts 2xx responses per bucket, by send time.
	OK []int64
	// Classes are the failure kinds seen (refused, reset, timeout, dns,
	// other, http-NNN) in display order; Failed[i] counts Classes[i] per
	// bucket.
	Classes []string
	Failed  [][]int64
	// Pods are the pods with a series, the busiest first, and OtherPods last
	// when there were more; PodOK[i] counts Pods[i]'s 2xx answers per bucket.
	Pods  []string
	PodOK [][]int64
	// Markers are the events of the marker types within the plotted span,
	// in time order; MarkersOmitted counts those beyond the limit and
	// EventsOutside the marker events outside the span.
	Markers        []Marker
	MarkersOmitted int
	EventsOutside  int
	// Requested is the load's requested rate per second (0 when the report
	// does not say); the plot draws it as the line the bars should reach.
	Requested float64
	// Stalls are the spans the load generator did not keep its schedule
	// (from the report's delivery check): nothing was measured there.
	Stalls []zdv1.Stall
	// Latency is the latency per bucket.
	Latency LatencySeries
	// ServedUnready, ServedDraining and NewConnections count per bucket the
	// 2xx answers from a pod that said it was unready or draining, and
	// the answers that came on a connection's first request (the echo
	// server's conn_request 1): a keep-alive client's new connections.
	// Attributed counts the 2xx answers per bucket whose body said anything
	// about readiness or connections, the base of those counts;
	// HasPodState says at least one did.
	ServedUnready, ServedDraining, NewConnections, Attributed []int64
	HasPodState                                               bool
	// Results counts the result lines read; Truncated says the run file's
	// last line was cut off.
	Results   int64
	Truncated bool
	// Corrupt counts run-file lines that did not decode and were skipped.
	Corrupt runfile.Corrupt
}

// Buckets is the number of buckets.
func (t *Timeline) Buckets() int { return len(t.OK) }

// BucketStart is the start time of bucket i.
func (t *Timeline) BucketStart(i int) time.Time { return t.Start.Add(time.Duration(i) * t.Step) }

// End is the end of the last bucket.
func (t *Timeline) End() time.Time { return t.BucketStart(len(t.OK)) }

// TimelineOption configures BuildTimeline.
type TimelineOption func(*timelineConfig)

type timelineConfig struct{ maxBuckets int }

// WithMaxBuckets bounds the number of buckets (default DefaultMaxBuckets).
func WithMaxBuckets(n int) TimelineOption {
	return func(c *timelineConfig) {
		if n > 0 {
			c.maxBuckets = n
		}
	}
}

// BuildTimeline streams the run file at path into a Timeline. sc supplies
// the send span and the pods (busiest first) so one pass suffices; when it
// has no span, a first pass over the file finds it. Memory stays bounded by
// the limits above whatever the file's length.
func BuildTimeline(ctx context.Context, path string, sc *zdv1.Scenario, opts ...TimelineOption) (*Timeline, error) {
	cfg := timelineConfig{maxBuckets: DefaultMaxBuckets}
	for _, o := range opts {
		o(&cfg)
	}
	lo, hi := sc.Results.FirstSend, sc.Results.LastSend
	if lo.IsZero() || hi.Before(lo) {
		var err error
		if lo, hi, err = scanSpan(ctx, path); err != nil {
			return nil, err
		}
	}
	start, end := plotSpan(lo, hi, sc.Events)
	rate := sc.Results.AchievedRate
	if rate <= 0 {
		rate = float64(sc.Load.Rate)
	}
	step := chooseStep(end.Sub(start), rate, cfg.maxBuckets)
	start = start.Truncate(step)
	n := int(end.Sub(start)/step) + 1
	t := &Timeline{Start: start, Step: step, LoadStart: lo, LoadEnd: hi, OK: make([]int64, n), Requested: float64(sc.Load.Rate),
		ServedUnready: make([]int64, n), ServedDraining: make([]int64, n), NewConnections: make([]int64, n), Attributed: make([]int64, n)}
	lat := newBucketLatency(n)
	if d := sc.Results.Delivery; d != nil {
		if d.RequestedRate > 0 {
			t.Requested = d.RequestedRate
		}
		t.Stalls = d.Stalls
	}

	podIndex := map[string]int{}
	for _, p := range busiestPods(sc.Results.Pods) {
		podIndex[p] = len(t.Pods)
		t.Pods = append(t.Pods, p)
		t.PodOK = append(t.PodOK, make([]int64, n))
	}
	// A report without pods (an older one, or none attributed): take the
	// first pods the file names.
	dynamicPods := len(t.Pods) == 0
	other := -1
	podSeries := func(pod string) int {
		if i, ok := podIndex[pod]; ok {
			return i
		}
		if dynamicPods && len(t.Pods) < maxPods {
			podIndex[pod] = len(t.Pods)
			t.Pods = append(t.Pods, pod)
			t.PodOK = append(t.PodOK, make([]int64, n))
			return len(t.Pods) - 1
		}
		if other < 0 {
			other = len(t.Pods)
			t.Pods = append(t.Pods, OtherPods)
			t.PodOK = append(t.PodOK, make([]int64, n))
		}
		return other
	}
	classIndex := map[string]int{}
	classSeries := func(kind string) int {
		if i, ok := classIndex[kind]; ok {
			return i
		}
		if len(t.Classes) >= maxClasses-1 && kind != zdv1.ClassOther {
			kind = zdv1.ClassOther
			if i, ok := classIndex[kind]; ok {
				return i
			}
		}
		classIndex[kind] = len(t.Classes)
		t.Classes = append(t.Classes, kind)
		t.Failed = append(t.Failed, make([]int64, n))
		return len(t.Classes) - 1
	}
	bucket := func(at time.Time) int {
		i := int(at.Sub(start) / step)
		return min(max(i, 0), n-1)
	}

	var lines int64
	stats, err := runfile.ReadFile(path, func(rec runfile.Record) error {
		if lines++; lines%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("timeline of %s: %w", path, err)
			}
		}
		switch {
		case rec.Result != nil:
			r := rec.Result
			t.Results++
			b := bucket(r.Time)
			lat.add(b, r.Latency)
			if kind := r.FailureKind(); kind != "" {
				t.Failed[classSeries(kind)][b]++
				return nil
			}
			t.OK[b]++
			if r.Ready != nil || r.Draining != nil || r.ConnRequest > 0 {
				t.HasPodState = true
				t.Attributed[b]++
			}
			if r.Ready != nil && !*r.Ready {
				t.ServedUnready[b]++
			}
			if r.Draining != nil && *r.Draining {
				t.ServedDraining[b]++
			}
			if r.ConnRequest == 1 {
				t.NewConnections[b]++
			}
			if r.Pod != "" {
				t.PodOK[podSeries(r.Pod)][b]++
			}
		case rec.Event != nil:
			e := rec.Event
			if !drawnEvent(e.Type) {
				return nil
			}
			if e.Time.Before(start) || !e.Time.Before(t.End()) {
				t.EventsOutside++
				return nil
			}
			if len(t.Markers) >= maxMarkers {
				t.MarkersOmitted++
				return nil
			}
			t.Markers = append(t.Markers, Marker{Time: e.Time, Source: e.Source, Type: e.Type,
				Object: zdv1.RedactString(e.Object), Message: zdv1.RedactString(e.Message)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("timeline of %s: %w", path, err)
	}
	t.Truncated = stats.Truncated
	t.Corrupt = stats.Corrupt
	t.Latency = lat.series()
	t.sortClasses()
	slices.SortStableFunc(t.Markers, func(a, b Marker) int { return a.Time.Compare(b.Time) })
	return t, nil
}

// scanSpan finds the first and last send time in the run file, or the event
// span when it has no results.
func scanSpan(ctx context.Context, path string) (lo, hi time.Time, err error) {
	var elo, ehi time.Time
	widen := func(l, h *time.Time, at time.Time) {
		if l.IsZero() || at.Before(*l) {
			*l = at
		}
		if at.After(*h) {
			*h = at
		}
	}
	var lines int64
	_, err = runfile.ReadFile(path, func(rec runfile.Record) error {
		if lines++; lines%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case rec.Result != nil:
			widen(&lo, &hi, rec.Result.Time)
		case rec.Event != nil:
			widen(&elo, &ehi, rec.Event.Time)
		}
		return nil
	})
	if err != nil {
		return lo, hi, fmt.Errorf("timeline of %s: %w", path, err)
	}
	if lo.IsZero() {
		lo, hi = elo, ehi
	}
	if lo.IsZero() {
		return lo, hi, fmt.Errorf("timeline of %s: the run file has no results and no events", path)
	}
	return lo, hi, nil
}

// plotSpan widens the load span [lo, hi] to take in marker events shortly
// before or after it (a cordon a few seconds before the load ends), but not
// the whole deploy and clean-up.
func plotSpan(lo, hi time.Time, events []zdv1.Event) (time.Time, time.Time) {
	margin := max(2*time.Second, hi.Sub(lo)/10)
	start, end := lo, hi
	for _, e := range events {
		if !drawnEvent(e.Type) {
			continue
		}
		if e.Time.Before(start) && !e.Time.Before(lo.Add(-margin)) {
			start = e.Time
		}
		if e.Time.After(end) && !e.Time.After(hi.Add(margin)) {
			end = e.Time
		}
	}
	return start, end
}

// minPerBucket is the fewest requests a bucket should hold on average: with
// fewer, round-robin over a few pods turns the share plot into stripes.
const minPerBucket = 20

// chooseStep is the smallest bucket width that keeps span within maxBuckets
// and, at the given rate (requests per second, 0 if unknown), holds about
// minPerBucket requests per bucket.
func chooseStep(span time.Duration, rate float64, maxBuckets int) time.Duration {
	for _, s := range bucketSteps {
		if rate > 0 && rate*s.Seconds() < minPerBucket && s < time.Second {
			continue
		}
		if int(span/s)+2 <= maxBuckets {
			return s
		}
	}
	// Longer than maxBuckets hours: whole hours, rounded up.
	return (span/time.Duration(maxBuckets-1)/time.Hour + 1) * time.Hour
}

// busiestPods returns up to maxPods pod names, the busiest first, then by
// name for a stable order.
func busiestPods(pods []zdv1.PodCount) []string {
	ps := slices.Clone(pods)
	slices.SortStableFunc(ps, func(a, b zdv1.PodCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Pod, b.Pod)
	})
	var out []string
	for _, p := range ps {
		if len(out) == maxPods {
			break
		}
		if p.Count > 0 {
			out = append(out, p.Pod)
		}
	}
	return out
}

// classOrder ranks the failure kinds: no response first (the LB or node
// dropped it), then HTTP errors by status.
func classOrder(c string) int {
	switch c {
	case zdv1.ClassRefused:
		return 0
	case zdv1.ClassReset:
		return 1
	case zdv1.ClassTimeout:
		return 2
	case zdv1.ClassDNS:
		return 3
	case zdv1.ClassOther:
		return 4
	}
	return 5
}

func (t *Timeline) sortClasses() {
	idx := make([]int, len(t.Classes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(classOrder(t.Classes[a]), classOrder(t.Classes[b])); c != 0 {
			return c
		}
		return strings.Compare(t.Classes[a], t.Classes[b])
	})
	classes := make([]string, len(idx))
	failed := make([][]int64, len(idx))
	for i, j := range idx {
		classes[i], failed[i] = t.Classes[j], t.Failed[j]
	}
	t.Classes, t.Failed = classes, failed
}
