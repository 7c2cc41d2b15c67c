package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/reports/svg"
)

// Plot geometry, in pixels. Both plots share the horizontal layout so their
// time axes line up when stacked in the page.
const (
	plotWidth   = 960.0
	marginLeft  = 56.0
	marginRight = 16.0
	labelBand   = 142.0 // room above the requests plot for marker labels
	reqHeight   = 170.0
	shareHeight = 130.0
	axisBand    = 34.0
	legendRow   = 18.0
	fontSize    = 11.0
	// minFailPx keeps a few failures among thousands of successes visible.
	minFailPx = 2.0
	// labelGap is the closest two marker labels may be; closer markers share
	// one label ("cordon node/x +2").
	labelGap = 12.0
)

// xScale maps time onto the plot's horizontal extent.
type xScale struct {
	t   *Timeline
	s   svg.Scale
	org time.Time // zero of the axis labels: the first request
}

func newXScale(t *Timeline) xScale {
	org := t.LoadStart
	if org.IsZero() {
		org = t.Start
	}
	return xScale{t: t, org: org, s: svg.Scale{
		D0: secs(t.Start.Sub(org)), D1: secs(t.End().Sub(org)),
		R0: marginLeft, R1: plotWidth - marginRight,
	}}
}

func (x xScale) at(tm time.Time) float64 { return x.s.Map(secs(tm.Sub(x.org))) }

// band is the horizontal extent of a span, at least 3 px wide so an instant
// still shows, clipped to the plot.
func (x xScale) band(from, to time.Time) (x0, x1 float64) {
	x0, x1 = x.at(from), x.at(to)
	if x1-x0 < 3 {
		mid := (x0 + x1) / 2
		x0, x1 = mid-1.5, mid+1.5
	}
	return math.Max(x0, marginLeft), math.Min(x1, plotWidth-marginRight)
}

func secs(d time.Duration) float64 { return d.Seconds() }

// TimelineSVG draws requests per bucket, stacked ok and failed by kind, with
// failure windows shaded and the events as labelled vertical markers.
func TimelineSVG(t *Timeline, windows []zdv1.FailureWindow, title string) string {
	legendItems := []legendItem{{"ok " + formatCount(sum(t.OK)), colorOK, false, false}}
	for i, c := range t.Classes {
		legendItems = append(legendItems, legendItem{c + " " + formatCount(sum(t.Failed[i])), classColor(c), false, false})
	}
	if len(windows) > 0 {
		legendItems = append(legendItems, legendItem{"failure window", colorWindow, true, false})
	}
	due := t.Requested * t.Step.Seconds() // requests due per bucket
	if due > 0 {
		legendItems = append(legendItems, legendItem{"requested " + formatCount(int64(math.Round(t.Requested))) + "/s", colorRequested, false, false})
	}
	if len(t.Stalls) > 0 {
		legendItems = append(legendItems, legendItem{"load not delivered (not measured)", colorStall, true, false})
	}
	palette, markerItems := markerLegend(t.Markers)
	rows1 := legendRows(legendItems)
	rows2 := legendRows(markerItems)
	band := labelBand
	if len(t.Markers) == 0 {
		band = 16 // no labels to make room for
	}
	height := band + reqHeight + axisBand + legendRow*float64(rows1+rows2) + 6
	d := svg.New(plotWidth, height, svg.A("class", "plot timeline", "role", "img", "aria-label", title,
		"font-family", "system-ui, -apple-system, Segoe UI, sans-serif", "font-size", svg.Num(fontSize))...)
	d.Title(title)
	x := newXScale(t)
	top, bottom := band, band+reqHeight

	// Y axis: requests per bucket.
	ymax := int64(1)
	for i := range t.OK {
		total := t.OK[i]
		for _, f := range t.Failed {
			total += f[i]
		}
		ymax = max(ymax, total)
	}
	ymax = max(ymax, int64(math.Ceil(due)))
	ticks := countTicks(ymax, 4)
	yTop := math.Max(float64(ymax), ticks[len(ticks)-1])
	y := svg.Scale{D0: 0, D1: yTop, R0: bottom, R1: top}
	gridY(d, ticks, y, func(v float64) string { return formatCount(int64(v)) })
	d.Text(14, (top+bottom)/2, "requests per "+formatStep(t.Step),
		svg.A("transform", fmt.Sprintf("rotate(-90 14 %s)", svg.Num((top+bottom)/2)), "text-anchor", "middle", "fill", colorAxis)...)

	// Stacked bars: one path per series keeps the document small.
	paths := make([]svg.Path, 1+len(t.Classes))
	for i := range t.OK {
		x0, x1 := barSpan(x, t, i)
		base := bottom
		if n := t.OK[i]; n > 0 {
			h := bottom - y.Map(float64(n))
			paths[0].Rect(x0, base-h, x1-x0, h)
			base -= h
		}
		for c, f := range t.Failed {
			if n := f[i]; n > 0 {
				h := math.Max(bottom-y.Map(float64(n)), minFailPx)
				paths[c+1].Rect(x0, base-h, x1-x0, h)
				base -= h
			}
		}
	}
	d.Path(&paths[0], svg.A("fill", colorOK, "class", "series-ok")...)
	for c, cl := range t.Classes {
		d.Path(&paths[c+1], svg.A("fill", classColor(cl), "class", "series-failed series-"+cl)...)
	}

	// Windows go over the bars, translucent, so they show even where the
	// bars fill the plot.
	shadeWindows(d, x, windows, top, bottom, true)
	shadeStalls(d, x, t.Stalls, top, bottom)
	if due > 0 {
		// What the bars should reach while the load runs: a bar below it
		// is load the generator did not send (see the stalls) or, in the
		// first and last bucket, a partial bucket.
		yd := y.Map(due)
		d.Line(math.Max(x.at(t.LoadStart), marginLeft), yd, math.Min(x.at(t.LoadEnd), plotWidth-marginRight), yd,
			svg.A("class", "requested", "stroke", colorRequested, "stroke-width", "1.5", "stroke-dasharray", "6 3")...)
	}
	drawMarkers(d, x, t.Markers, palette, top, bottom, true)
	axisX(d, x, bottom)
	ly := bottom + axisBand
	ly = drawLegend(d, legendItems, ly)
	drawLegend(d, markerItems, ly)
	return d.String()
}

// PodShareSVG draws each pod's share of the 2xx answers per bucket, stacked
// to 100%; buckets without an attributed answer stay empty.
func PodShareSVG(t *Timeline, windows []zdv1.FailureWindow, totals map[string]float64, title string) string {
	var items []legendItem
	for i, p := range t.Pods {
		label := p
		if share, ok := totals[p]; ok {
			label += " " + strconv.FormatFloat(100*share, 'f', 1, 64) + "%"
		}
		items = append(items, legendItem{label, podColor(i, p), false, false})
	}
	rows := legendRows(items)
	const top = 10.0
	bottom := top + shareHeight
	height := bottom + axisBand + legendRow*float64(rows) + 6
	d := svg.New(plotWidth, height, svg.A("class", "plot podshare", "role", "img", "aria-label", title,
		"font-family", "system-ui, -apple-system, Segoe UI, sans-serif", "font-size", svg.Num(fontSize))...)
	d.Title(title)
	x := newXScale(t)
	y := svg.Scale{D0: 0, D1: 1, R0: bottom, R1: top}
	gridY(d, []float64{0, 0.25, 0.5, 0.75, 1}, y, func(v float64) string { return strconv.Itoa(int(v*100)) + "%" })
	d.Text(14, (top+bottom)/2, "share of 2xx per pod",
		svg.A("transform", fmt.Sprintf("rotate(-90 14 %s)", svg.Num((top+bottom)/2)), "text-anchor", "middle", "fill", colorAxis)...)
	paths := make([]svg.Path, len(t.Pods))
	for i := range t.OK {
		var total int64
		for _, p := range t.PodOK {
			total += p[i]
		}
		if total == 0 {
			continue
		}
		x0, x1 := barSpan(x, t, i)
		base := bottom
		for p, counts := range t.PodOK {
			if n := counts[i]; n > 0 {
				h := (bottom - top) * float64(n) / float64(total)
				paths[p].Rect(x0, base-h, x1-x0, h)
				base -= h
			}
		}
	}
	for p, pod := range t.Pods {
		d.Path(&paths[p], svg.A("fill", podColor(p, pod), "class", "series-pod")...)
	}
	shadeWindows(d, x, windows, top, bottom, false)
	axisX(d, x, bottom)
	drawLegend(d, items, bottom+axisBand)
	return d.String()
}

// barSpan is bucket i's horizontal extent, with a gap between wide bars.
func barSpan(x xScale, t *Timeline, i int) (float64, float64) {
	x0 := x.at(t.BucketStart(i))
	x1 := x.at(t.BucketStart(i + 1))
	if w := x1 - x0; w > 4 {
		gap := math.Min(w*0.2, 3)
		x0 += gap / 2
		x1 -= gap / 2
	}
	return x0, x1
}

func gridY(d *svg.Doc, ticks []float64, y svg.Scale, label func(float64) string) {
	d.Group(func() {
		for _, v := range ticks {
			py := y.Map(v)
			d.Line(marginLeft, py, plotWidth-marginRight, py, svg.A("stroke", colorGrid)...)
			d.Text(marginLeft-6, py+4, label(v), svg.A("text-anchor", "end", "fill", colorAxis)...)
		}
	}, svg.A("class", "grid")...)
}

func axisX(d *svg.Doc, x xScale, bottom float64) {
	d.Group(func() {
		d.Line(marginLeft, bottom, plotWidth-marginRight, bottom, svg.A("stroke", colorAxis)...)
		for _, v := range svg.Ticks(x.s.D0, x.s.D1, 10) {
			px := x.s.Map(v)
			d.Line(px, bottom, px, bottom+4, svg.A("stroke", colorAxis)...)
			d.Text(px, bottom+16, formatOffset(v), svg.A("text-anchor", "middle", "fill", colorAxis)...)
		}
		d.Text(plotWidth-marginRight, bottom+30, "time since the first request, "+x.org.UTC().Format("15:04:05")+" UTC",
			svg.A("text-anchor", "end", "fill", colorAxis)...)
	}, svg.A("class", "axis")...)
}

func shadeWindows(d *svg.Doc, x xScale, windows []zdv1.FailureWindow, top, bottom float64, labels bool) {
	if len(windows) == 0 {
		return
	}
	d.Group(func() {
		for _, w := range windows {
			x0, x1 := x.band(w.Start, w.End)
			d.Open("g", svg.A("class", "window")...)
			d.Title(fmt.Sprintf("failure window W%d: %s failed, %s ok over %s", w.Index, formatCount(w.Failed), formatCount(w.OK), formatMs(w.DurationMs)))
			d.Rect(x0, top, x1-x0, bottom-top, svg.A("fill", colorWindow, "fill-opacity", "0.22")...)
			d.Rect(x0, bottom+1, x1-x0, 4, svg.A("fill", colorWindow)...)
			if labels {
				// A white halo keeps the label readable over the bars.
				d.Text(x0+2, top+12, fmt.Sprintf("W%d", w.Index), svg.A("fill", colorWindow, "font-weight", "700",
					"stroke", "#fff", "stroke-width", "3", "paint-order", "stroke")...)
			}
			d.Close("g")
		}
	}, svg.A("class", "windows")...)
}

// shadeStalls marks the spans where the load generator fell behind its
// schedule: hatched grey, because there the run measured nothing.
func shadeStalls(d *svg.Doc, x xScale, stalls []zdv1.Stall, top, bottom float64) {
	if len(stalls) == 0 {
		return
	}
	d.Group(func() {
		for _, s := range stalls {
			x0, x1 := x.band(s.Start, s.End)
			d.Open("g", svg.A("class", "stall")...)
			d.Title(fmt.Sprintf("load not delivered %s–%s (%s): %s unsent, %s late, max lag %s; %s",
				s.Start.UTC().Format("15:04:05.000"), s.End.UTC().Format("15:04:05.000"), formatMs(s.DurationMs),
				formatCount(s.Unsent), formatCount(s.Late), formatMs(s.MaxLagMs), s.Reason))
			d.Rect(x0, top, x1-x0, bottom-top, svg.A("fill", colorStall, "fill-opacity", "0.35")...)
			d.Rect(x0, bottom+1, x1-x0, 4, svg.A("fill", colorStall)...)
			d.Close("g")
		}
	}, svg.A("class", "stalls")...)
}

// markerLegend gives each event type among markers its colour and a
// legend entry ("pod-deleted ×3"), in the order the types first occur.
func markerLegend(markers []Marker) (map[string]string, []legendItem) {
	var types []string
	n := map[string]int{}
	for _, m := range markers {
		if n[m.Type] == 0 {
			types = append(types, m.Type)
		}
		n[m.Type]++
	}
	palette := eventPalette(types)
	items := make([]legendItem, 0, len(types))
	for _, typ := range types {
		label := typ
		if n[typ] > 1 {
			label += " ×" + strconv.Itoa(n[typ])
		}
		items = append(items, legendItem{label: label, color: palette[typ], line: true})
	}
	return palette, items
}

// drawMarkers draws a vertical line per event in its type's colour over a
// white halo, so it reads over bars of any colour, and, with labels, in
// the band above the plot a label per cluster of markers closer than
// labelGap.
func drawMarkers(d *svg.Doc, x xScale, markers []Marker, palette map[string]string, top, bottom float64, labels bool) {
	if len(markers) == 0 {
		return
	}
	lineTop := top
	if labels {
		lineTop = top - 4
	}
	d.Group(func() {
		for _, m := range markers {
			px := x.at(m.Time)
			d.Open("g", svg.A("class", "marker marker-"+m.Type)...)
			d.Title(markerTitle(m, x))
			d.Line(px, lineTop, px, bottom, svg.A("stroke", colorHalo, "stroke-width", "3.5", "stroke-opacity", "0.85")...)
			d.Line(px, lineTop, px, bottom, svg.A("stroke", palette[m.Type], "stroke-width", "1.6")...)
			d.Close("g")
		}
		if !labels {
			return
		}
		for _, l := range placeLabels(x, markers) {
			suffix := ""
			if n := len(l.members) - 1; n > 0 {
				suffix = fmt.Sprintf(" +%d", n)
			}
			first := l.members[0]
			label := markerLabel(first, maxLabelRunes-len(suffix)) + suffix
			ty := top - 8
			d.Open("g", svg.A("class", "marker-label")...)
			var all []string
			for _, m := range l.members {
				all = append(all, markerTitle(m, x))
			}
			d.Title(strings.Join(all, "\n"))
			d.Text(l.x, ty, label, svg.A("transform", fmt.Sprintf("rotate(-90 %s %s)", svg.Num(l.x), svg.Num(ty)),
				"fill", palette[first.Type], "font-size", "10", "font-weight", "600",
				"stroke", colorHalo, "stroke-width", "2.5", "paint-order", "stroke")...)
			d.Close("g")
		}
	}, svg.A("class", "markers")...)
}

// maxLabelShift is how far right of its marker a label may be pushed to
// make room for the one before: two label columns. A marker whose label
// would go further joins the previous label's "+N" (all of them are in
// its tooltip).
const maxLabelShift = 2 * labelGap

// markerLabelSlot is one label: where it is drawn and the markers it names.
type markerLabelSlot struct {
	x       float64
	members []Marker
}

// placeLabels gives each marker a label just right of its line, pushed
// right by up to maxLabelShift when markers are closer than labelGap, so
// a cause next to a load event keeps a label of its own.
func placeLabels(x xScale, markers []Marker) []markerLabelSlot {
	var out []markerLabelSlot
	for _, m := range markers {
		want := x.at(m.Time) + 4
		if n := len(out); n > 0 {
			last := &out[n-1]
			pos := math.Max(want, last.x+labelGap)
			if pos-want > maxLabelShift || pos > plotWidth-4 {
				last.members = append(last.members, m)
				continue
			}
			want = pos
		}
		out = append(out, markerLabelSlot{x: want, members: []Marker{m}})
	}
	return out
}

// maxLabelRunes is what fits in the label band at the labels' font size.
const maxLabelRunes = 22

// markerLabel is "drain-start kind-worker": the type and the object's last
// path element, cut to maxRunes.
func markerLabel(m Marker, maxRunes int) string {
	obj := m.Object
	if i := strings.LastIndex(obj, "/"); i >= 0 {
		obj = obj[i+1:]
	}
	s := m.Type
	if obj != "" {
		s += " " + obj
	}
	if r := []rune(s); len(r) > maxRunes {
		s = string(r[:maxRunes-1]) + "…"
	}
	return s
}

func markerTitle(m Marker, x xScale) string {
	s := formatOffset(secs(m.Time.Sub(x.org))) + " " + m.Type
	if m.Object != "" {
		s += " " + m.Object
	}
	if m.Message != "" {
		s += ": " + m.Message
	}
	return s
}

type legendItem struct {
	label  string
	color  string
	shaded bool
	// line draws the swatch as a vertical line: an event marker.
	line bool
}

// legendWidth estimates an item's width: swatch, gap and text at about 6.2
// px per character of the 11 px font.
func legendWidth(it legendItem) float64 { return 18 + 6.2*float64(len([]rune(it.label))) + 16 }

func legendRows(items []legendItem) int {
	if len(items) == 0 {
		return 0
	}
	rows, x := 1, marginLeft
	for _, it := range items {
		w := legendWidth(it)
		if x+w > plotWidth-marginRight && x > marginLeft {
			rows++
			x = marginLeft
		}
		x += w
	}
	return rows
}

// drawLegend lays items out in rows from y and returns the y after them.
func drawLegend(d *svg.Doc, items []legendItem, y float64) float64 {
	if len(items) == 0 {
		return y
	}
	x := marginLeft
	y += legendRow
	d.Group(func() {
		for _, it := range items {
			w := legendWidth(it)
			if x+w > plotWidth-marginRight && x > marginLeft {
				x = marginLeft
				y += legendRow
			}
			switch {
			case it.line:
				d.Rect(x+3, y-11, 6, 14, svg.A("fill", colorHalo)...)
				d.Line(x+6, y-11, x+6, y+3, svg.A("stroke", it.color, "stroke-width", "3")...)
			case it.shaded:
				d.Rect(x, y-10, 12, 12, svg.A("fill", it.color, "fill-opacity", "0.2", "stroke", it.color)...)
			default:
				d.Rect(x, y-10, 12, 12, svg.A("fill", it.color)...)
			}
			d.Text(x+18, y, it.label, svg.A("fill", "#222")...)
			x += w
		}
	}, svg.A("class", "legend")...)
	return y
}

func sum(v []int64) int64 {
	var s int64
	for _, n := range v {
		s += n
	}
	return s
}

// formatOffset is a tick label: "+12s", "+1m30s", "-2s".
func formatOffset(sec float64) string {
	sign := "+"
	if sec < 0 {
		sign, sec = "-", -sec
	}
	if sec < 60 {
		return sign + strconv.FormatFloat(math.Round(sec*10)/10, 'f', -1, 64) + "s"
	}
	d := time.Duration(math.Round(sec)) * time.Second
	m := int(d / time.Minute)
	s := int((d % time.Minute) / time.Second)
	if s == 0 {
		return fmt.Sprintf("%s%dm", sign, m)
	}
	return fmt.Sprintf("%s%dm%02ds", sign, m, s)
}

// formatStep is a bucket width in words: "1s", "250ms", "1m".
func formatStep(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	default:
		return strconv.FormatFloat(d.Minutes(), 'f', -1, 64) + " min"
	}
}

// formatCount groups thousands: 1234567 -> "1,234,567".
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatMs is a duration in milliseconds, in the unit that reads best.
func formatMs(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
}

// windowLength is a failure window's duration, said to be a lower bound
// when the window was still open as the load stopped (OpenAtEnd).
func windowLength(w zdv1.FailureWindow) string {
	if w.OpenAtEnd {
		return formatMs(w.DurationMs) + " or more (still open when the load stopped)"
	}
	return formatMs(w.DurationMs)
}
