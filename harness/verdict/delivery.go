package verdict

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// maxListed bounds the short seconds and stalls a report lists.
const maxListed = 100

// delivery judges the instrument from the run file alone: every result's
// scheduled time (send time minus lag), the generator's own "unsent" events,
// and the load's rate from the header. Memory grows with the run's seconds
// and stalls, never with its requests.
type delivery struct {
	settings *zdv1.LoadSettings
	bound    time.Duration

	perSecond  map[int64]int64 // unix second of the scheduled time -> sends
	lo, hi     time.Time       // the schedule's extent
	late       int64
	maxLag     time.Duration
	unsent     int64
	stallSlots map[int64]*stallSlot
	// pauses are the instrument-pause events (the maxPauses longest).
	pauses []zdv1.ProcessPause
}

// maxPauses bounds the instrument-pause events kept for joining with
// stalls; a run with more keeps its longest.
const maxPauses = 1000

type stallSlot struct {
	start, end time.Time
	unsent     int64
	late       int64
	maxLag     time.Duration
	reason     string
}

func newDelivery(s *zdv1.LoadSettings) *delivery {
	if s == nil || s.Rate <= 0 {
		return nil
	}
	return &delivery{settings: s, bound: s.SendLagBound(), perSecond: map[int64]int64{}, stallSlots: map[int64]*stallSlot{}}
}

func (d *delivery) widen(t time.Time) {
	if t.IsZero() {
		return
	}
	if d.lo.IsZero() || t.Before(d.lo) {
		d.lo = t
	}
	if t.After(d.hi) {
		d.hi = t
	}
}

func (d *delivery) addResult(r *zdv1.Result) {
	due := r.Due()
	d.widen(due)
	d.perSecond[due.Unix()]++
	d.maxLag = max(d.maxLag, r.Lag)
	if r.Lag > d.bound {
		d.late++
		d.stall(due, due, 0, 1, r.Lag, "")
	}
}

func (d *delivery) addEvent(e zdv1.Event) {
	if e.Source != zdv1.SourceLoad {
		return
	}
	switch e.Type {
	case zdv1.EventLoadStart:
		d.widen(e.Time)
	case zdv1.EventLoadStop:
		if t, err := time.Parse(time.RFC3339Nano, e.Fields["last_due"]); err == nil {
			d.widen(t)
		}
	case zdv1.EventInstrumentPause:
		p := parsePause(e)
		if len(d.pauses) < maxPauses {
			d.pauses = append(d.pauses, p)
			break
		}
		// Full: keep the longest, which are the ones that explain stalls,
		// wherever in the run they fall.
		shortest := 0
		for i := range d.pauses {
			if d.pauses[i].LateMs < d.pauses[shortest].LateMs {
				shortest = i
			}
		}
		if p.LateMs > d.pauses[shortest].LateMs {
			d.pauses[shortest] = p
		}
	case zdv1.EventUnsent:
		from, err1 := time.Parse(time.RFC3339Nano, e.Fields["from"])
		to, err2 := time.Parse(time.RFC3339Nano, e.Fields["to"])
		n, err3 := strconv.ParseInt(e.Fields["requests"], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || n < 1 {
			// A generator that says it skipped requests but not which is
			// still a generator that skipped requests.
			from, to, n = e.Time, e.Time, max(n, 1)
		}
		d.widen(from)
		d.widen(to)
		d.unsent += n
		d.stall(from, to, n, 0, 0, e.Fields["reason"])
	}
}

// stall records a span of the schedule that was not kept, in slots one lag
// bound wide so that memory stays bounded; report merges them.
func (d *delivery) stall(from, to time.Time, unsent, late int64, lag time.Duration, reason string) {
	key := from.UnixNano() / int64(d.bound)
	s := d.stallSlots[key]
	if s == nil {
		s = &stallSlot{start: from, end: to}
		d.stallSlots[key] = s
	}
	if from.Before(s.start) {
		s.start = from
	}
	if to.After(s.end) {
		s.end = to
	}
	s.unsent += unsent
	s.late += late
	s.maxLag = max(s.maxLag, lag)
	if s.reason == "" {
		s.reason = reason
	}
}

func (d *delivery) report() *zdv1.Delivery {
	if d == nil {
		return nil
	}
	rate := float64(d.settings.Rate)
	out := &zdv1.Delivery{
		RequestedRate: rate,
		ShortSeconds:  []zdv1.DeliverySecond{},
		Stalls:        []zdv1.Stall{},
		Unsent:        d.unsent,
		Late:          d.late,
		MaxLagMs:      ms(d.maxLag.Nanoseconds()),
		LagBoundMs:    ms(d.bound.Nanoseconds()),
		MinSecondRate: math.NaN(),
	}
	// Whole seconds only: the schedule's first and last seconds are partial.
	if !d.lo.IsZero() {
		first, last := d.lo.Unix()+1, d.hi.Unix()-1
		if d.lo.Equal(time.Unix(d.lo.Unix(), 0)) {
			first = d.lo.Unix()
		}
		for s := first; s <= last; s++ {
			n := d.perSecond[s]
			out.Seconds++
			if math.IsNaN(out.MinSecondRate) || float64(n) < out.MinSecondRate {
				out.MinSecondRate = float64(n)
			}
			if float64(n) < zdv1.MinDeliveredRatio*rate {
				out.ShortSecondsTotal++
				if len(out.ShortSeconds) < maxListed {
					out.ShortSeconds = append(out.ShortSeconds, zdv1.DeliverySecond{Start: time.Unix(s, 0).UTC(), Sent: n})
				}
			}
		}
	}
	if math.IsNaN(out.MinSecondRate) {
		out.MinSecondRate = 0
	}
	keys := make([]int64, 0, len(d.stallSlots))
	for k := range d.stallSlots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var cur *zdv1.Stall
	for _, k := range keys {
		s := d.stallSlots[k]
		if cur != nil && s.start.Sub(cur.End) <= d.bound {
			cur.End = maxTime(cur.End, s.end)
			cur.Unsent += s.unsent
			cur.Late += s.late
			cur.MaxLagMs = max(cur.MaxLagMs, ms(s.maxLag.Nanoseconds()))
			if cur.Reason == "" {
				cur.Reason = s.reason
			}
			continue
		}
		if cur != nil {
			out.Stalls = d.appendStall(out.Stalls, *cur)
		}
		cur = &zdv1.Stall{Start: s.start.UTC(), End: s.end.UTC(), Unsent: s.unsent, Late: s.late,
			MaxLagMs: ms(s.maxLag.Nanoseconds()), Reason: s.reason}
	}
	if cur != nil {
		out.Stalls = d.appendStall(out.Stalls, *cur)
	}
	return out
}

func (d *delivery) appendStall(ss []zdv1.Stall, s zdv1.Stall) []zdv1.Stall {
	if len(ss) >= maxListed {
		return ss
	}
	s.DurationMs = ms(s.End.Sub(s.Start).Nanoseconds())
	s.Pause = d.pauseNear(s)
	return append(ss, s)
}

// pauseNear is the longest process pause that can explain the stall: it
// ended no earlier than the stall's first late request was due and began
// no later than one lag bound after its last (stall times are scheduled
// times; a request is late when the process resumes after it was due).
func (d *delivery) pauseNear(s zdv1.Stall) *zdv1.ProcessPause {
	if strings.Contains(s.Reason, "in-flight cap") {
		return nil // requests unsent for want of a slot: not a pause
	}
	var best *zdv1.ProcessPause
	for i := range d.pauses {
		p := &d.pauses[i]
		if s.MaxLagMs > 0 && p.LateMs < s.MaxLagMs/2 {
			continue // too short to account for the lag
		}
		end := p.Start.Add(time.Duration(p.LateMs*float64(time.Millisecond)) + d.bound)
		if end.Before(s.Start) || p.Start.After(s.End.Add(d.bound)) {
			continue
		}
		if best == nil || p.LateMs > best.LateMs {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	cp := *best
	return &cp
}

// parsePause reads an instrument-pause event; fields it cannot read are
// zero (a pause it cannot explain is still a pause).
func parsePause(e zdv1.Event) zdv1.ProcessPause {
	f := func(k string) float64 {
		v, _ := strconv.ParseFloat(e.Fields[k], 64)
		return v
	}
	p := zdv1.ProcessPause{Start: e.Time.UTC(), LateMs: f("late_ms"), Cause: e.Fields["cause"], GCSTWMs: f("gc_stw_ms"), GCCycles: int64(f("gc_cycles"))}
	switch p.Cause {
	case "cpu", "irq", "busy", "gc", "steal":
	default:
		p.Cause = "unexplained"
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Fields["from"]); err == nil {
		p.Start = t.UTC()
	}
	if v, err := strconv.ParseFloat(e.Fields["run_delay_ms"], 64); err == nil {
		p.RunDelayMs = &v
	}
	if v, err := strconv.ParseFloat(e.Fields["exec_ms"], 64); err == nil {
		p.ExecMs = &v
	}
	if v, err := strconv.ParseFloat(e.Fields["steal_ms"], 64); err == nil {
		p.StealMs = &v
	}
	if _, ok := e.Fields["machine_tasks_ms"]; ok {
		p.Machine = &zdv1.MachineCPU{TasksMs: f("machine_tasks_ms"), SystemMs: f("machine_system_ms"), IRQMs: f("machine_irq_ms"), IdleMs: f("machine_idle_ms"), StealMs: f("machine_steal_ms")}
	}
	return p
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// deliveryReason is the "load" check: the run passes only where the load
// generator kept its schedule, since a span it missed is a span it did not
// measure (a blackhole shorter than a stall can fall between requests).
func deliveryReason(d *zdv1.Delivery) zdv1.Reason {
	if d.OK() {
		return zdv1.Reason{Check: zdv1.CheckLoad, Status: zdv1.Pass, Observed: f64(d.MinSecondRate), Limit: f64(zdv1.MinDeliveredRatio * d.RequestedRate),
			Message: fmt.Sprintf("load delivered as scheduled: %d whole seconds, each at least %.0f of %.0f/s; no request unsent; max send lag %.1f ms (bound %.0f ms)",
				d.Seconds, d.MinSecondRate, d.RequestedRate, d.MaxLagMs, d.LagBoundMs)}
	}
	var parts []string
	if d.ShortSecondsTotal > 0 {
		secs := make([]string, 0, min(len(d.ShortSeconds), 5))
		for i, s := range d.ShortSeconds {
			if i == 5 {
				secs = append(secs, fmt.Sprintf("%d more", d.ShortSecondsTotal-i))
				break
			}
			secs = append(secs, fmt.Sprintf("%s %d/s", clock(s.Start), s.Sent))
		}
		parts = append(parts, fmt.Sprintf("%d of %d whole seconds below %.0f%% of %.0f/s (%s)",
			d.ShortSecondsTotal, d.Seconds, 100*zdv1.MinDeliveredRatio, d.RequestedRate, strings.Join(secs, ", ")))
	}
	if d.Unsent > 0 {
		parts = append(parts, fmt.Sprintf("%d requests due were never sent", d.Unsent))
	}
	if d.Late > 0 {
		parts = append(parts, fmt.Sprintf("%d sent more than %.0f ms late (max %.0f ms)", d.Late, d.LagBoundMs, d.MaxLagMs))
	}
	for i, s := range d.Stalls {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more stalls", len(d.Stalls)-i))
			break
		}
		t := fmt.Sprintf("stalled %s-%s (%.0f ms", clock(s.Start), clock(s.End), s.DurationMs)
		if s.Reason != "" {
			t += ": " + s.Reason
		}
		if s.Pause != nil {
			t += "; " + s.Pause.String()
		}
		parts = append(parts, t+")")
	}
	// The figure that broke goes with its limit (a headline shows them):
	// the slowest second's rate when a second fell short, else the largest
	// send lag, else the unsent requests.
	observed, limit := d.MinSecondRate, zdv1.MinDeliveredRatio*d.RequestedRate
	switch {
	case d.ShortSecondsTotal > 0:
	case d.Late > 0:
		observed, limit = d.MaxLagMs, d.LagBoundMs
	case d.Unsent > 0:
		observed, limit = float64(d.Unsent), 0
	}
	return zdv1.Reason{Check: zdv1.CheckLoad, Status: zdv1.Error, Observed: f64(observed), Limit: f64(limit),
		Message: "the load generator could not deliver the load, so these spans were not measured and the run cannot pass: " + strings.Join(parts, "; ")}
}
