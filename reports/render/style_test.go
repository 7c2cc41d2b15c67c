package render

import (
	"math"
	"slices"
	"strconv"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// lab converts "#rrggbb" (sRGB, D65) to CIELAB.
func lab(t *testing.T, hex string) [3]float64 {
	t.Helper()
	if len(hex) != 7 || hex[0] != '#' {
		t.Fatalf("colour %q: want #rrggbb", hex)
	}
	var c [3]float64
	for i := range 3 {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", hex, err)
		}
		f := float64(v) / 255
		if f <= 0.04045 {
			c[i] = f / 12.92
		} else {
			c[i] = math.Pow((f+0.055)/1.055, 2.4)
		}
	}
	x := (0.4124*c[0] + 0.3576*c[1] + 0.1805*c[2]) / 0.95047
	y := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	z := (0.0193*c[0] + 0.1192*c[1] + 0.9505*c[2]) / 1.08883
	f := func(v float64) float64 {
		if v > 0.008856 {
			return math.Cbrt(v)
		}
		return 7.787*v + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// deltaE is the CIE76 colour difference; about 2.3 is just noticeable.
func deltaE(t *testing.T, a, b string) float64 {
	p, q := lab(t, a), lab(t, b)
	return math.Sqrt((p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1]) + (p[2]-q[2])*(p[2]-q[2]))
}

// hue is the CIELAB hue angle in degrees and the chroma.
func hue(t *testing.T, c string) (deg, chroma float64) {
	l := lab(t, c)
	deg = math.Atan2(l[2], l[1]) * 180 / math.Pi
	if deg < 0 {
		deg += 360
	}
	return deg, math.Hypot(l[1], l[2])
}

func TestColoursDistinct(t *testing.T) {
	classes := map[string]string{"ok": colorOK, "http-5xx": colorHTTP5xx, "http-4xx": colorHTTP4xx, "http-other": colorHTTPOther}
	for k, v := range classColors {
		classes[k] = v
	}
	events := map[string]string{}
	for k, v := range eventColors {
		events[k] = v
	}
	tests := []struct {
		name   string
		colors map[string]string
		// minDE is the least CIE76 distance between any two entries.
		minDE float64
	}{
		// Bars side by side in one stack: clearly different.
		{"failure classes and ok", classes, 20},
		// Thin lines, each labelled with its type: different at a glance.
		{"event types", events, 10},
		{"pods", func() map[string]string {
			m := map[string]string{}
			for i, c := range podPalette {
				m[strconv.Itoa(i)] = c
			}
			return m
		}(), 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys := sortedKeys(tc.colors)
			for i, a := range keys {
				for _, b := range keys[i+1:] {
					if d := deltaE(t, tc.colors[a], tc.colors[b]); d < tc.minDE {
						t.Errorf("%s %s and %s %s differ by ΔE %.1f, want at least %.0f", a, tc.colors[a], b, tc.colors[b], d, tc.minDE)
					}
				}
			}
		})
	}
}

// Every event type apis/v1 defines has a colour of its own.
func TestEveryEventTypeHasAColour(t *testing.T) {
	types := []string{
		zdv1.EventCordon, zdv1.EventUncordon, zdv1.EventDrainStart, zdv1.EventDrainEnd, zdv1.EventPodTerminating,
		zdv1.EventPodDeleted, zdv1.EventPodReady, zdv1.EventPodUnready, zdv1.EventEndpointRemoved, zdv1.EventEndpointAdded,
		zdv1.EventEndpointTerminating, zdv1.EventNodeAdded, zdv1.EventNodeRemoved, zdv1.EventRolloutStart, zdv1.EventRolloutEnd,
		zdv1.EventPoolAdded, zdv1.EventPoolRemoved, zdv1.EventLBBackendAdded, zdv1.EventLBBackendRemoved, zdv1.EventLBNodeHealthy,
		zdv1.EventLBNodeUnhealthy, zdv1.EventLoadStart, zdv1.EventLoadStop, zdv1.EventUnsent, zdv1.EventDisruption, zdv1.EventAction, zdv1.EventNote,
	}
	seen := map[string]string{}
	for _, typ := range types {
		c, ok := eventColors[typ]
		if !ok || !drawnEvent(typ) {
			t.Errorf("event type %s has no marker colour", typ)
			continue
		}
		if other, dup := seen[c]; dup {
			t.Errorf("%s and %s share %s", typ, other, c)
		}
		seen[c] = typ
	}
	if drawnEvent(zdv1.EventCriteria) {
		t.Error("criteria events are drawn; they record what is judged, not what happened")
	}
}

// Nothing that is not a failure looks like one: no pod is drawn red, and
// the pod-deleted marker stands out from the red of refused requests.
func TestNothingButFailuresIsRed(t *testing.T) {
	for i, c := range podPalette {
		h, chroma := hue(t, c)
		if chroma > 30 && (h < 50 || h > 340) {
			t.Errorf("pod colour %d %s is red or pink (hue %.0f°, chroma %.0f)", i, c, h, chroma)
		}
	}
	if d := deltaE(t, eventColors[zdv1.EventPodDeleted], classColors[zdv1.ClassRefused]); d < 40 {
		t.Errorf("pod-deleted marker is ΔE %.1f from refused bars, want at least 40", d)
	}
	if d := deltaE(t, classColors[zdv1.ClassRefused], classColors["http-503"]); d < 40 {
		t.Errorf("refused and http-503 are ΔE %.1f apart, want at least 40", d)
	}
}

func TestEventPalette(t *testing.T) {
	tests := []struct {
		name  string
		types []string
		want  []string
	}{
		{"known types keep theirs", []string{zdv1.EventPodDeleted, zdv1.EventAction},
			[]string{eventColors[zdv1.EventPodDeleted], eventColors[zdv1.EventAction]}},
		{"unknown types take spares in order", []string{"sigstop", zdv1.EventCordon, "sigcont"},
			[]string{spareEventColors[0], eventColors[zdv1.EventCordon], spareEventColors[1]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := eventPalette(tc.types)
			var got []string
			for _, typ := range tc.types {
				got = append(got, p[typ])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("eventPalette(%v) = %v, want %v", tc.types, got, tc.want)
			}
		})
	}
	// More unknown types than spares: each spare used once, then grey.
	var many []string
	for i := range len(spareEventColors) + 2 {
		many = append(many, "custom-"+strconv.Itoa(i))
	}
	p := eventPalette(many)
	seen := map[string]int{}
	for _, typ := range many {
		seen[p[typ]]++
	}
	if seen[colorOtherEvents] != 2 || len(seen) != len(spareEventColors)+1 {
		t.Errorf("palette for %d unknown types uses %v", len(many), seen)
	}
}
