package verdict

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// evaluate applies the criteria to the numbers. Every set criterion yields a
// reason, passing or not, so a PASS shows what it was checked against. Run
// problems yield ERROR reasons; the verdict is the worst reason.
func evaluate(c zdv1.Criteria, problems []string, r zdv1.Results, ws []zdv1.FailureWindow, controls []zdv1.Event) zdv1.Verdict {
	var reasons []zdv1.Reason
	for _, p := range problems {
		reasons = append(reasons, zdv1.Reason{Check: "run", Status: zdv1.Error, Message: p})
	}
	if len(problems) == 0 {
		reasons = append(reasons, zdv1.Reason{Check: "run", Status: zdv1.Pass, Message: fmt.Sprintf(
			"run complete: %d results sent %s to %s (%.1f/s)",
			r.Total, clock(r.FirstSend), clock(r.LastSend), r.AchievedRate)})
	}
	if r.Delivery != nil {
		reasons = append(reasons, deliveryReason(r.Delivery))
	}
	allWindows := make([]int, len(ws))
	for i := range ws {
		allWindows[i] = i
	}
	// The ground under the run comes before what the run measured on it:
	// a reader of the first reason that is not PASS learns why first.
	if rs, ok := groundReason(c, r, ws); ok {
		reasons = append(reasons, rs)
	}
	if rs, ok := controlReason(controls); ok {
		reasons = append(reasons, rs)
	}
	if rs, ok := explainedReason(c, ws); ok {
		reasons = append(reasons, rs)
	}
	if rs, ok := limitOpensReason(c, ws); ok {
		reasons = append(reasons, rs)
	}

	if c.MaxDropped != nil {
		reasons = append(reasons, limitReason("dropped", float64(r.Dropped), float64(*c.MaxDropped),
			droppedText(r, ws)+fmt.Sprintf("; at most %d allowed", *c.MaxDropped), allWindows))
	}
	if c.MaxDroppedRatio != nil {
		ratio := 0.0
		if r.Total > 0 {
			ratio = float64(r.Dropped) / float64(r.Total)
		}
		reasons = append(reasons, limitReason("dropped-ratio", ratio, *c.MaxDroppedRatio,
			fmt.Sprintf("dropped %.4f%% of requests (%d of %d); at most %.4f%% allowed",
				100*ratio, r.Dropped, r.Total, 100**c.MaxDroppedRatio), allWindows))
	}
	attributed := r.OK - r.Unattributed
	if c.ExpectedClientIP != "" {
		rs := zdv1.Reason{Check: "client-ip", Observed: f64(float64(r.ClientIPMismatches)), Limit: f64(0)}
		switch {
		case attributed == 0 || len(r.ClientIPs) == 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("expected client IP %s, but no response reported a client IP", c.ExpectedClientIP)
		case r.ClientIPMismatches > 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("expected client IP %s; %d responses saw another: %s",
				c.ExpectedClientIP, r.ClientIPMismatches, countsText(r.ClientIPs))
		default:
			rs.Status = zdv1.Pass
			rs.Message = fmt.Sprintf("every attributed response (%d) saw client IP %s", attributed, c.ExpectedClientIP)
		}
		reasons = append(reasons, rs)
	}
	if c.ForbiddenClientIP != "" {
		var n int64
		for _, ip := range r.ClientIPs {
			if ip.Name == c.ForbiddenClientIP {
				n = ip.Count
			}
		}
		msg := fmt.Sprintf("client IP %s seen by %d responses (must be hidden); seen: %s", c.ForbiddenClientIP, n, countsText(r.ClientIPs))
		reasons = append(reasons, limitReason("forbidden-client-ip", float64(n), 0, msg, nil))
	}
	if c.ForwardedClientIP != "" {
		rs := zdv1.Reason{Check: "forwarded-client-ip", Observed: f64(float64(r.ForwardedMismatches)), Limit: f64(0)}
		switch {
		case attributed == 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("expected client IP %s in X-Forwarded-For, but no response was attributed", c.ForwardedClientIP)
		case r.ForwardedMismatches > 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("expected client IP %s in X-Forwarded-For; %d responses lacked it; headers seen: %s",
				c.ForwardedClientIP, r.ForwardedMismatches, quotedCounts(r.ForwardedFor))
		default:
			rs.Status = zdv1.Pass
			rs.Message = fmt.Sprintf("every attributed response (%d) carried client IP %s in X-Forwarded-For", attributed, c.ForwardedClientIP)
		}
		reasons = append(reasons, rs)
	}
	if l := c.ServedAfterRemoval; l != nil {
		rs := zdv1.Reason{Check: "served-after-endpoint-removed", Limit: f64(float64(l.Max))}
		switch ar := r.AfterRemoval; {
		case ar == nil:
			rs.Status = zdv1.Error
			rs.Message = fmt.Sprintf("what pod %s served after its endpoint was removed was not measured", l.Pod)
			rs.Limit = nil
		case ar.EndpointRemoved == nil:
			rs.Status = zdv1.Error
			rs.Message = fmt.Sprintf("the run file records no endpoint removal of pod %s, so nothing can be said about traffic after it", l.Pod)
			rs.Limit = nil
		default:
			rs.Observed = f64(float64(ar.Served))
			rs.Status = zdv1.Pass
			if ar.Served > l.Max {
				rs.Status = zdv1.Fail
			}
			rs.Message = fmt.Sprintf("pod %s answered %d requests sent more than %s after its endpoint was removed at %s "+
				"(%d over reused keep-alive connections, %d on new connections); at most %d allowed",
				l.Pod, ar.Served, formatGrace(l.GraceMs), clock(*ar.EndpointRemoved), ar.Reused, ar.NewConnections, l.Max)
		}
		reasons = append(reasons, rs)
	}
	if c.RequireAllPodsServed {
		rs := zdv1.Reason{Check: "pods-served", Observed: f64(float64(len(r.ZeroTrafficPods))), Limit: f64(0)}
		switch {
		case len(c.ExpectedPods) == 0:
			rs.Status = zdv1.Error
			rs.Message = "requireAllPodsServed is set but no expected pods were given, so pods that got nothing cannot be found"
			rs.Observed, rs.Limit = nil, nil
		case len(r.ZeroTrafficPods) > 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("%d of %d expected pods got no traffic: %s; served: %s",
				len(r.ZeroTrafficPods), len(c.ExpectedPods), strings.Join(r.ZeroTrafficPods, ", "), podsText(r.Pods))
		default:
			rs.Status = zdv1.Pass
			rs.Message = fmt.Sprintf("all %d expected pods served traffic: %s", len(c.ExpectedPods), podsText(r.Pods))
		}
		reasons = append(reasons, rs)
	}
	if c.MinPodShare != nil {
		var low []string
		lowest := 1.0
		for _, p := range r.Pods {
			lowest = min(lowest, p.Share)
			if p.Share < *c.MinPodShare {
				low = append(low, fmt.Sprintf("%s %.1f%%", p.Pod, 100*p.Share))
			}
		}
		rs := zdv1.Reason{Check: "pod-share", Observed: f64(lowest), Limit: f64(*c.MinPodShare)}
		switch {
		case len(r.Pods) == 0:
			rs.Status = zdv1.Fail
			rs.Message = "no pod served any attributed request"
			rs.Observed = nil
		case len(low) > 0:
			rs.Status = zdv1.Fail
			rs.Message = fmt.Sprintf("pods below the %.1f%% minimum share: %s; all: %s", 100**c.MinPodShare, strings.Join(low, ", "), podsText(r.Pods))
		default:
			rs.Status = zdv1.Pass
			rs.Message = fmt.Sprintf("every pod got at least %.1f%%: %s", 100**c.MinPodShare, podsText(r.Pods))
		}
		reasons = append(reasons, rs)
	}
	if c.MaxServedUnready != nil {
		reasons = append(reasons, limitReason("served-unready", float64(r.ServedUnready), float64(*c.MaxServedUnready),
			fmt.Sprintf("%d requests answered by pods reporting ready=false, %d of them over reused connections; at most %d allowed",
				r.ServedUnready, r.ServedUnreadyReused, *c.MaxServedUnready), nil))
	}
	if c.MaxServedDraining != nil {
		reasons = append(reasons, limitReason("served-draining", float64(r.ServedDraining), float64(*c.MaxServedDraining),
			fmt.Sprintf("%d requests answered by pods reporting draining=true, %d of them over reused connections; at most %d allowed",
				r.ServedDraining, r.ServedDrainingReused, *c.MaxServedDraining), nil))
	}
	if c.MaxP99Ms != nil {
		reasons = append(reasons, limitReason("p99", r.Latency.P99Ms, *c.MaxP99Ms,
			fmt.Sprintf("p99 latency %.1f ms over %d requests (p50 %.1f, max %.1f); at most %.1f ms allowed",
				r.Latency.P99Ms, r.Latency.Count, r.Latency.P50Ms, r.Latency.MaxMs, *c.MaxP99Ms), allWindows))
	}
	v := zdv1.Verdict{Status: zdv1.Pass, Reasons: reasons}
	for _, rs := range reasons {
		v.Status = zdv1.Worst(v.Status, rs.Status)
	}
	return v
}

// limitOpensReason is the limit's-own-windows check (Criteria.LimitOpens):
// a cell that documents a platform limit instead of asserting may drop
// only where the limit's mechanism acts, so a window after the disruption
// began that no event of the mechanism opens is not the limit's, and the
// limit cannot excuse it: ERROR. ok is false when the run documents no
// limit (or asks for no explanation).
func limitOpensReason(c zdv1.Criteria, ws []zdv1.FailureWindow) (zdv1.Reason, bool) {
	if len(c.LimitOpens) == 0 || c.ExplainWithinMs == nil {
		return zdv1.Reason{}, false
	}
	within := time.Duration(*c.ExplainWithinMs * float64(time.Millisecond)).Round(time.Millisecond)
	opens := strings.Join(c.LimitOpens, ", ")
	rs, n, listed := windowsWhere(zdv1.CheckLimit, ws, func(w zdv1.FailureWindow) bool { return w.OutsideLimit })
	switch {
	case len(ws) == 0:
		rs.Message = "no failure window for the platform limit to open"
		return rs, true
	case n == 0:
		rs.Message = fmt.Sprintf("every failure window after the disruption began is the platform limit's: opened by %s inside it or within %s before", opens, within)
		return rs, true
	}
	rs.Status = zdv1.Error
	rs.Message = fmt.Sprintf("outside the limit: %d failure window(s) after the disruption began have no event of the platform limit's mechanism (%s) inside or within %s before%s. "+
		"The limit does not excuse them: they are the workload's or something the run did not watch, and the cell cannot document the limit. "+
		"Read the windows' nearest events; if the limit's mechanism opens them by another event, its text and its events are wrong", n, opens, within, listed)
	return rs, true
}

// windowsWhere starts check's reason (PASS, limit 0) with the windows
// marked (their indices and count observed), and returns how many there
// are and the first three described, each after "; " (then how many more).
func windowsWhere(check string, ws []zdv1.FailureWindow, marked func(zdv1.FailureWindow) bool) (zdv1.Reason, int, string) {
	rs := zdv1.Reason{Check: check, Status: zdv1.Pass, Limit: f64(0)}
	var b strings.Builder
	n := 0
	for i, w := range ws {
		if !marked(w) {
			continue
		}
		rs.Windows = append(rs.Windows, i)
		if n++; n <= 3 {
			b.WriteString("; ")
			b.WriteString(WindowText(w))
		}
	}
	if n > 3 {
		fmt.Fprintf(&b, "; %d more windows", n-3)
	}
	rs.Observed = f64(float64(n))
	return rs, n, b.String()
}

// explainedReason is the every-window-explained check
// (Criteria.ExplainWithinMs): a window after the disruption began with no
// event of the disruption inside it or shortly before was dropped by
// something the run did not watch, so it cannot be charged to the
// workload: ERROR. ok is false when the criteria do not ask for it.
func explainedReason(c zdv1.Criteria, ws []zdv1.FailureWindow) (zdv1.Reason, bool) {
	if c.ExplainWithinMs == nil {
		return zdv1.Reason{}, false
	}
	within := time.Duration(*c.ExplainWithinMs * float64(time.Millisecond)).Round(time.Millisecond)
	rs, n, listed := windowsWhere(zdv1.CheckExplained, ws, func(w zdv1.FailureWindow) bool { return w.Unexplained })
	switch {
	case len(ws) == 0:
		rs.Message = "no failure window to explain"
		return rs, true
	case n == 0:
		rs.Message = fmt.Sprintf("every failure window after the disruption began has an event of it inside or within %s before", within)
		return rs, true
	}
	rs.Status = zdv1.Error
	rs.Message = fmt.Sprintf("unexplained: %d failure window(s) after the disruption began have no event of it inside or within %s before%s. "+
		"What dropped them is not what the run watched (the cluster, the load balancer or this machine), so they are not the workload's: "+
		"read the windows' nearest events, and the column's control", n, within, listed)
	return rs, true
}

// groundReason is the still-ground check: a request that failed while
// nothing was being disrupted (before the run's disruption event, or in a
// run that disrupts nothing) was dropped by the ground under the workload
// (the cluster, the LB, the machine), so the run cannot say what the
// disruption did: ERROR, never FAIL and never "hazard reproduced". ok is
// false for a run that says neither when its disruption began nor that it
// has none: it cannot be checked.
func groundReason(c zdv1.Criteria, r zdv1.Results, ws []zdv1.FailureWindow) (zdv1.Reason, bool) {
	var when string
	switch {
	case c.Undisturbed:
		when = "while nothing was disrupted"
	case r.DisruptionStart != nil:
		when = "before the disruption began at " + clock(*r.DisruptionStart)
	default:
		return zdv1.Reason{}, false
	}
	rs := zdv1.Reason{Check: zdv1.CheckGround, Status: zdv1.Pass, Observed: f64(float64(r.GroundMoved)), Limit: f64(0)}
	if r.GroundMoved == 0 {
		rs.Message = "the ground held: no request failed " + when
		return rs, true
	}
	rs.Status = zdv1.Error
	var b strings.Builder
	fmt.Fprintf(&b, "the ground moved: %d of %d requests failed %s", r.GroundMoved, r.Total, when)
	n := 0
	for i, w := range ws {
		if w.GroundMoved == 0 {
			continue
		}
		rs.Windows = append(rs.Windows, i)
		if n++; n <= 3 {
			b.WriteString("; ")
			b.WriteString(WindowText(w))
		}
	}
	if n > 3 {
		fmt.Fprintf(&b, "; %d more windows", n-3)
	}
	b.WriteString(". What dropped them is under the workload (the cluster, the load balancer or this machine), " +
		"not what the run disrupts, so the run cannot judge the workload: find the cause in the windows' events, " +
		"or run the scenario's control to see whether the ground holds without a disruption")
	rs.Message = b.String()
	return rs, true
}

// controlReason is the control check: every control the run file records
// for the cell's column (the same LB model, policy and keep-alive with
// nothing disrupted) must have passed and dropped nothing, or the ground
// under the column moves and the cell cannot be judged (ERROR). ok is
// false when the run file records no control.
func controlReason(events []zdv1.Event) (zdv1.Reason, bool) {
	if len(events) == 0 {
		return zdv1.Reason{}, false
	}
	f := zdv1.ControlFields
	rs := zdv1.Reason{Check: zdv1.CheckControl, Status: zdv1.Pass, Limit: f64(0)}
	var held, moved []string
	var dropped int64
	for _, e := range events {
		name, file := e.Fields[f.Name], e.Fields[f.RunFile]
		total, errT := strconv.ParseInt(e.Fields[f.Total], 10, 64)
		d, errD := strconv.ParseInt(e.Fields[f.Dropped], 10, 64)
		status := zdv1.Status(e.Fields[f.Status])
		switch {
		case name == "" || errT != nil || errD != nil || total < 0 || d < 0 || !status.Known():
			moved = append(moved, fmt.Sprintf("a control event at %s is unreadable (fields %v)", clock(e.Time), e.Fields))
			rs.Status = zdv1.Error
		case d > 0 || status != zdv1.Pass:
			dropped += d
			moved = append(moved, fmt.Sprintf("%s dropped %d of %d requests with nothing disrupted (%s, run file %s)", name, d, total, status, file))
			rs.Status = zdv1.Error
		default:
			held = append(held, fmt.Sprintf("%s: 0 of %d dropped (run file %s)", name, total, file))
		}
	}
	rs.Observed = f64(float64(dropped))
	if rs.Status == zdv1.Pass {
		rs.Message = "the control of this column held with nothing disrupted: " + strings.Join(held, "; ")
		return rs, true
	}
	rs.Message = "the ground moves under this column: " + strings.Join(moved, "; ") +
		". What this cell measured cannot be told from what the substrate drops on its own, so it is not judged; " +
		"the control's failure windows say when and how"
	return rs, true
}

func f64(v float64) *float64 { return &v }

func limitReason(check string, observed, limit float64, msg string, windows []int) zdv1.Reason {
	rs := zdv1.Reason{Check: check, Status: zdv1.Pass, Message: msg, Observed: f64(observed), Limit: f64(limit)}
	if observed > limit {
		rs.Status = zdv1.Fail
		rs.Windows = windows
	}
	return rs
}

func droppedText(r zdv1.Results, ws []zdv1.FailureWindow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dropped %d of %d requests", r.Dropped, r.Total)
	if r.Dropped == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, " (errors %d%s, non-2xx %d%s) in %d failure window(s)",
		r.Errors, mapText(r.ErrorClasses), r.Non2xx, non2xxText(r.StatusCodes), len(ws))
	for i, w := range ws {
		if i == 5 {
			fmt.Fprintf(&b, "; %d more windows", len(ws)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(WindowText(w))
	}
	return b.String()
}

// WindowText describes a failure window and the event closest before it,
// the usual suspect.
func WindowText(w zdv1.FailureWindow) string {
	s := fmt.Sprintf("window %d %s-%s (%.0f ms): %d failed%s, %d ok",
		w.Index, clock(w.Start), clock(w.End), w.DurationMs, w.Failed, mapText(w.Classes), w.OK)
	if w.GroundMoved > 0 {
		s += fmt.Sprintf(" (%d of them with nothing disrupted)", w.GroundMoved)
	}
	if w.Unexplained {
		s += " (unexplained: no event of the disruption near it)"
	}
	if w.OutsideLimit {
		s += " (outside the limit: no event of its mechanism near it)"
	}
	var before, during *zdv1.WindowEvent
	for i := range w.NearestEvents {
		e := &w.NearestEvents[i]
		if e.OffsetMs < 0 {
			before = e
		} else if during == nil && e.Time.Compare(w.End) <= 0 {
			during = e
		}
	}
	if before != nil {
		s += fmt.Sprintf(", %.0f ms after %s", -before.OffsetMs, eventText(before.Event))
	}
	if during != nil {
		s += fmt.Sprintf(", %s at +%.0f ms", eventText(during.Event), during.OffsetMs)
	}
	return s
}

func eventText(e zdv1.Event) string {
	s := e.Source + " " + e.Type
	if e.Object != "" {
		s += " " + e.Object
	}
	if e.Message != "" {
		s += fmt.Sprintf(" (%q)", e.Message)
	}
	return s
}

func mapText(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

func non2xxText(codes map[string]int64) string {
	m := map[string]int64{}
	for k, v := range codes {
		// 101 is a whole WebSocket session's (zdv1.Result.OK); a session
		// that failed has status 0, or the one its upgrade got instead.
		if (len(k) != 3 || k[0] != '2') && k != "101" {
			m["http-"+k] = v
		}
	}
	return mapText(m)
}

func countsText(cs []zdv1.Count) string { return joinCounts(cs, "%s %d") }

// quotedCounts is countsText for names that may hold commas (headers).
func quotedCounts(cs []zdv1.Count) string { return joinCounts(cs, "%q %d") }

// joinCounts writes each count with format (its name, then its count),
// "none" for none.
func joinCounts(cs []zdv1.Count, format string) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf(format, c.Name, c.Count)
	}
	return strings.Join(parts, ", ")
}

func podsText(ps []zdv1.PodCount) string {
	if len(ps) == 0 {
		return "none"
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s %d (%.1f%%)", p.Pod, p.Count, 100*p.Share)
	}
	return strings.Join(parts, ", ")
}

func clock(t interface{ Format(string) string }) string {
	return t.Format("15:04:05.000")
}

func formatGrace(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).String()
}
