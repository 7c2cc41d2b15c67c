package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatOffset(0), "+0s"}, {formatOffset(12.5), "+12.5s"}, {formatOffset(-2), "-2s"},
		{formatOffset(90), "+1m30s"}, {formatOffset(120), "+2m"},
		{formatCount(0), "0"}, {formatCount(999), "999"}, {formatCount(1234567), "1,234,567"}, {formatCount(-1000), "-1,000"},
		{formatStep(250 * time.Millisecond), "250 ms"}, {formatStep(2 * time.Second), "2 s"}, {formatStep(5 * time.Minute), "5 min"},
		{formatMs(0.25), "0.250 ms"}, {formatMs(12.34), "12.3 ms"}, {formatMs(1500), "1.50 s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestMarkerLabel(t *testing.T) {
	m := Marker{Type: "endpoint-terminating", Object: "pod/zd-rolling/echo-7d9f-a1"}
	if got := markerLabel(m, 40); got != "endpoint-terminating echo-7d9f-a1" {
		t.Errorf("markerLabel = %q", got)
	}
	if got := markerLabel(m, 10); got != "endpoint-…" {
		t.Errorf("markerLabel cut = %q", got)
	}
	if got := markerLabel(Marker{Type: "cordon"}, 22); got != "cordon" {
		t.Errorf("markerLabel without object = %q", got)
	}
}

func TestTimelineSVG(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tl := &Timeline{Start: start, Step: time.Second, LoadStart: start, LoadEnd: start.Add(9 * time.Second),
		OK:      []int64{10, 10, 10, 5, 0, 10, 10, 10, 10, 10},
		Classes: []string{"refused", "http-503"},
		Failed:  [][]int64{{0, 0, 0, 5, 10, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
		Pods:    []string{"a", OtherPods}, PodOK: [][]int64{{5, 5, 5, 5, 0, 5, 5, 5, 5, 5}, {5, 5, 5, 0, 0, 5, 5, 5, 5, 5}},
		Markers: []Marker{
			{Time: start.Add(3 * time.Second), Type: "drain-start", Object: "node/w2"},
			{Time: start.Add(3*time.Second + 10*time.Millisecond), Type: "pod-terminating", Object: "pod/ns/a"},
			{Time: start.Add(7 * time.Second), Type: "node-removed", Object: "node/w2", Message: `<b>"gone"</b>`},
		},
	}
	windows := []zdv1.FailureWindow{{Index: 0, Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Failed: 16}}
	for name, doc := range map[string]string{
		"timeline": TimelineSVG(tl, windows, "t <1>"),
		"podshare": PodShareSVG(tl, windows, map[string]float64{"a": 0.5, OtherPods: 0.5}, "p"),
	} {
		dec := xml.NewDecoder(strings.NewReader(doc))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v\n%s", name, err, doc)
			}
		}
	}
	doc := TimelineSVG(tl, windows, "t")
	for _, want := range []string{
		`class="series-failed series-refused"`, `class="series-failed series-http-503"`, `class="series-ok"`,
		`<g class="window">`, `>W0</text>`,
		`class="marker marker-drain-start"`, `class="marker marker-node-removed"`,
		`drain-start w2</text>`, `pod-terminating a</text>`, // 10 ms apart: the second label is pushed aside
		`&lt;b&gt;&#34;gone&#34;&lt;/b&gt;`,
		`ok 85`, `refused 15`, `http-503 1`,
	} {
		if !strings.Contains(doc, want) && !strings.Contains(doc, strings.ReplaceAll(want, "&#34;", "&quot;")) {
			t.Errorf("timeline SVG lacks %s", want)
		}
	}
}

// The requested rate is drawn as the line the bars should reach, and the
// spans the load generator did not keep its schedule are marked as not
// measured; a timeline without either draws neither.
func TestTimelineShowsRequestedRateAndStalls(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tl := &Timeline{Start: start, Step: time.Second, LoadStart: start, LoadEnd: start.Add(4 * time.Second),
		OK: []int64{200, 200, 120, 200, 200}, Requested: 200,
		Stalls: []zdv1.Stall{{Start: start.Add(2 * time.Second), End: start.Add(2*time.Second + 400*time.Millisecond),
			DurationMs: 400, Unsent: 80, Reason: "in-flight cap 1024 reached"}},
	}
	doc := TimelineSVG(tl, nil, "t")
	for _, want := range []string{`class="requested"`, `<g class="stall">`, `requested 200/s`, `load not delivered (not measured)`,
		`80 unsent`, `in-flight cap 1024 reached`} {
		if !strings.Contains(doc, want) {
			t.Errorf("timeline SVG lacks %s", want)
		}
	}
	tl.Requested, tl.Stalls = 0, nil
	doc = TimelineSVG(tl, nil, "t")
	for _, bad := range []string{`class="requested"`, `class="stall"`, `load not delivered`} {
		if strings.Contains(doc, bad) {
			t.Errorf("timeline without requested rate or stalls draws %s", bad)
		}
	}
}

// A run whose only fault was one answer from an unready pod leaves a mark
// in the pod-state plot; one whose answers carry no pod state gets none.
// The latency plot draws p50, p99 and max, breaking where a bucket is empty.
func TestOverTimePlots(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 5
	tl := &Timeline{Start: start, Step: time.Second, LoadStart: start, LoadEnd: start.Add(4 * time.Second),
		OK:            []int64{10, 10, 10, 10, 10},
		ServedUnready: []int64{0, 0, 1, 0, 0}, ServedDraining: make([]int64, n),
		NewConnections: []int64{2, 0, 0, 0, 0}, Attributed: []int64{10, 10, 10, 10, 10}, HasPodState: true,
		Latency: LatencySeries{Count: []int64{10, 10, 0, 10, 10}, P50Ms: []float64{1, 1, 0, 1, 1},
			P99Ms: []float64{2, 2, 0, 50, 2}, MaxMs: []float64{3, 3, 0, 50, 3}},
		Markers: []Marker{{Time: start.Add(2 * time.Second), Type: zdv1.EventPodUnready, Object: "pod/ns/a"}},
	}
	ps := PodStateSVG(tl, nil, "p")
	for _, want := range []string{`class="series-unready"`, `served while unready 1`, `new connections 2`, `class="marker marker-pod-unready"`} {
		if !strings.Contains(ps, want) {
			t.Errorf("pod-state SVG lacks %s", want)
		}
	}
	unready := regexp.MustCompile(`<path d="([^"]*)" class="series-unready"`).FindStringSubmatch(ps)
	if unready == nil || !strings.Contains(unready[1], "M") {
		t.Errorf("the one answer while unready draws nothing: %v", unready)
	}
	lat := LatencySVG(tl, nil, 5000, "l")
	for _, want := range []string{`class="series-p50"`, `class="series-p99"`, `class="series-max"`, `request timeout 5.00 s`, `>1 ms</text>`, `>1 s</text>`} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency SVG lacks %s", want)
		}
	}
	p50 := regexp.MustCompile(`<path d="([^"]*)" class="series-p50"`).FindStringSubmatch(lat)
	if p50 == nil || strings.Count(p50[1], "M") != 2 {
		t.Errorf("p50 path should break at the empty bucket (two moves): %v", p50)
	}
	tl.HasPodState = false
	if got := PodStateSVG(tl, nil, "p"); got != "" {
		t.Errorf("pod-state plot drawn for answers without pod state")
	}
}

func TestCountTicks(t *testing.T) {
	tests := []struct {
		ymax int64
		want string
	}{{1, "[0 1]"}, {2, "[0 1 2]"}, {20, "[0 5 10 15 20]"}, {3, "[0 1 2 3]"}}
	for _, tc := range tests {
		if got := fmt.Sprint(countTicks(tc.ymax, 4)); got != tc.want {
			t.Errorf("countTicks(%d) = %s, want %s", tc.ymax, got, tc.want)
		}
	}
}

// Markers closer than a label's width get labels pushed aside, up to two
// columns; beyond that they join the previous label's "+N".
func TestPlaceLabels(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tl := &Timeline{Start: start, Step: time.Second, LoadStart: start, OK: make([]int64, 10)}
	x := newXScale(tl)
	at := func(ms int) Marker {
		return Marker{Time: start.Add(time.Duration(ms) * time.Millisecond), Type: strconv.Itoa(ms)}
	}
	tests := []struct {
		name    string
		markers []Marker
		want    string // members per label
	}{
		{"far apart", []Marker{at(0), at(5000)}, "[1 1]"},
		{"two close: both labelled", []Marker{at(2000), at(2010)}, "[1 1]"},
		{"three close: all labelled", []Marker{at(2000), at(2010), at(2020)}, "[1 1 1]"},
		{"four close: the fourth joins", []Marker{at(2000), at(2010), at(2020), at(2030)}, "[1 1 2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			prev := -1.0
			for _, l := range placeLabels(x, tc.markers) {
				got = append(got, len(l.members))
				if prev >= 0 && l.x-prev < labelGap {
					t.Errorf("labels %.1f px apart, want at least %v", l.x-prev, labelGap)
				}
				prev = l.x
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("label members %v, want %s", got, tc.want)
			}
		})
	}
}
