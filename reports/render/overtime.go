package render

import (
	"fmt"
	"math"
	"strconv"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/reports/svg"
)

// Heights of the plots under the timeline; they share its time axis.
const (
	latencyHeight  = 120.0
	podStateHeight = 110.0
)

// plotFrame is what every plot under the timeline starts with: the
// document, the time scale, the failure windows, the stalls and the
// event markers (lines only: the timeline above carries their labels).
func plotFrame(t *Timeline, windows []zdv1.FailureWindow, class, title string, plotH float64, items []legendItem) (d *svg.Doc, x xScale, top, bottom float64) {
	palette, _ := markerLegend(t.Markers) // the timeline's legend names them
	top = 10.0
	bottom = top + plotH
	height := bottom + axisBand + legendRow*float64(legendRows(items)) + 6
	d = svg.New(plotWidth, height, svg.A("class", "plot "+class, "role", "img", "aria-label", title,
		"font-family", "system-ui, -apple-system, Segoe UI, sans-serif", "font-size", svg.Num(fontSize))...)
	d.Title(title)
	x = newXScale(t)
	shadeWindows(d, x, windows, top, bottom, false)
	shadeStalls(d, x, t.Stalls, top, bottom)
	drawMarkers(d, x, t.Markers, palette, top, bottom, false)
	return d, x, top, bottom
}

// stepPath draws v per bucket as horizontal steps, broken where has is
// false.
func stepPath(x xScale, t *Timeline, v []float64, has func(i int) bool, y func(float64) float64) *svg.Path {
	var p svg.Path
	prev := false
	for i := range v {
		if !has(i) {
			prev = false
			continue
		}
		x0, x1 := x.at(t.BucketStart(i)), x.at(t.BucketStart(i+1))
		py := y(v[i])
		if prev {
			p.LineTo(x0, py)
		} else {
			p.MoveTo(x0, py)
		}
		p.LineTo(x1, py)
		prev = true
	}
	return &p
}

// LatencySVG draws the latency per bucket, p50, p99 and max, on a log
// scale, with the request timeout as a dashed line when it is known.
func LatencySVG(t *Timeline, windows []zdv1.FailureWindow, timeoutMs float64, title string) string {
	s := t.Latency
	items := []legendItem{
		{"p50", colorP50, false, true}, {"p99", colorP99, false, true}, {"max", colorMax, false, true},
	}
	if timeoutMs > 0 {
		items = append(items, legendItem{"request timeout " + formatMs(timeoutMs), colorRequested, false, true})
	}
	d, x, top, bottom := plotFrame(t, windows, "latency", title, latencyHeight, items)

	lo, hi := math.Inf(1), 0.0
	for i, n := range s.Count {
		if n == 0 {
			continue
		}
		if s.P50Ms[i] > 0 {
			lo = math.Min(lo, s.P50Ms[i])
		}
		hi = math.Max(hi, s.MaxMs[i])
	}
	if timeoutMs > 0 {
		hi = math.Max(hi, timeoutMs)
	}
	if math.IsInf(lo, 1) || hi <= 0 {
		lo, hi = 0.1, 1
	}
	// Whole decades, so every tick is a power of ten.
	d0 := math.Floor(math.Log10(lo))
	d1 := math.Max(math.Ceil(math.Log10(hi)), d0+1)
	ys := svg.Scale{D0: d0, D1: d1, R0: bottom, R1: top}
	y := func(ms float64) float64 {
		if ms <= 0 {
			return bottom
		}
		return ys.Map(math.Max(math.Log10(ms), d0))
	}
	var ticks []float64
	for e := d0; e <= d1; e++ {
		ticks = append(ticks, e)
	}
	gridY(d, ticks, ys, func(e float64) string { return formatMsTick(math.Pow(10, e)) })
	// The tick labels ("100 ms") fill the left margin: the axis title goes
	// inside the plot, over a white halo.
	d.Text(marginLeft+6, top+12, "latency, log scale", svg.A("fill", colorAxis,
		"stroke", colorHalo, "stroke-width", "3", "paint-order", "stroke")...)
	has := func(i int) bool { return s.Count[i] > 0 }
	if timeoutMs > 0 {
		yt := y(timeoutMs)
		d.Line(marginLeft, yt, plotWidth-marginRight, yt, svg.A("class", "timeout", "stroke", colorRequested, "stroke-width", "1", "stroke-dasharray", "6 3")...)
	}
	d.Path(stepPath(x, t, s.MaxMs, has, y), svg.A("class", "series-max", "fill", "none", "stroke", colorMax, "stroke-width", "1")...)
	d.Path(stepPath(x, t, s.P99Ms, has, y), svg.A("class", "series-p99", "fill", "none", "stroke", colorP99, "stroke-width", "1.6")...)
	d.Path(stepPath(x, t, s.P50Ms, has, y), svg.A("class", "series-p50", "fill", "none", "stroke", colorP50, "stroke-width", "1.6")...)
	axisX(d, x, bottom)
	drawLegend(d, items, bottom+axisBand)
	return d.String()
}

// formatMsTick is a decade of milliseconds: "0.01 ms", "1 ms", "1 s".
func formatMsTick(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + " ms"
}

// PodStateSVG draws per bucket the 2xx answers from pods that said they
// were unready or draining, and the answers on new connections: the
// faults that cost no request but show a pod serving when it should not,
// or clients moving to new connections. Nil when no answer carried that
// state (not the echo server).
func PodStateSVG(t *Timeline, windows []zdv1.FailureWindow, title string) string {
	if !t.HasPodState {
		return ""
	}
	items := []legendItem{
		{"served while unready " + formatCount(sum(t.ServedUnready)), colorServedUnready, false, false},
		{"served while draining " + formatCount(sum(t.ServedDraining)), colorServedDraining, false, false},
		{"new connections " + formatCount(sum(t.NewConnections)), colorNewConnections, false, true},
	}
	d, x, top, bottom := plotFrame(t, windows, "podstate", title, podStateHeight, items)
	ymax := int64(1)
	for i := range t.OK {
		ymax = max(ymax, t.ServedUnready[i], t.ServedDraining[i], t.NewConnections[i])
	}
	ticks := countTicks(ymax, 3)
	ys := svg.Scale{D0: 0, D1: math.Max(float64(ymax), ticks[len(ticks)-1]), R0: bottom, R1: top}
	gridY(d, ticks, ys, func(v float64) string { return formatCount(int64(v)) })
	d.Text(14, (top+bottom)/2, "answers per "+formatStep(t.Step),
		svg.A("transform", fmt.Sprintf("rotate(-90 14 %s)", svg.Num((top+bottom)/2)), "text-anchor", "middle", "fill", colorAxis)...)
	// Unready and draining are bars, drawn at least minFailPx tall: a
	// single answer from an unready pod must show.
	bars := func(v []int64, color, class string) {
		var p svg.Path
		for i, n := range v {
			if n == 0 {
				continue
			}
			x0, x1 := barSpan(x, t, i)
			h := math.Max(bottom-ys.Map(float64(n)), minFailPx)
			p.Rect(x0, bottom-h, x1-x0, h)
		}
		d.Path(&p, svg.A("class", class, "fill", color, "fill-opacity", "0.8")...)
	}
	bars(t.ServedUnready, colorServedUnready, "series-unready")
	bars(t.ServedDraining, colorServedDraining, "series-draining")
	conns := make([]float64, len(t.NewConnections))
	for i, n := range t.NewConnections {
		conns[i] = float64(n)
	}
	d.Path(stepPath(x, t, conns, func(i int) bool { return t.Attributed[i] > 0 || t.NewConnections[i] > 0 }, ys.Map),
		svg.A("class", "series-newconn", "fill", "none", "stroke", colorNewConnections, "stroke-width", "1.6")...)
	axisX(d, x, bottom)
	drawLegend(d, items, bottom+axisBand)
	return d.String()
}

// countTicks are about n ticks for a count axis from 0 to ymax: whole
// numbers only, since a count of 0.5 labelled "0" reads as a second zero.
func countTicks(ymax int64, n int) []float64 {
	var out []float64
	for _, v := range svg.Ticks(0, float64(ymax), n) {
		if v == math.Trunc(v) {
			out = append(out, v)
		}
	}
	return out
}
