package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Where an event lies relative to a failure window.
const (
	placeInside = "inside"
	placeBefore = "before"
	placeAfter  = "after"
)

// minEdgeMargin is the least edge margin: event and send times are taken
// by different processes, whose clock readings may be a scheduler tick
// apart.
const minEdgeMargin = time.Millisecond

// maxCauses bounds the events listed per window.
const maxCauses = 5

// cause is an event placed against a failure window.
type cause struct {
	zdv1.WindowEvent
	// Place is placeInside, placeBefore (its start) or placeAfter (its end);
	// Distance how far outside the window it lies (0 inside).
	Place    string
	Distance time.Duration
}

// windowCauses are the events inside the window w and within margin of
// its edges, ranked by how close they are to the window's start, an event
// inside before one outside at the same distance: a window starts with
// what failed its first request, while what happens later inside it is as
// often the recovery (a restart) as a cause. More than maxCauses are cut;
// more says how many. When none is that close, nearest is the closest
// event further away, for context and never called a cause.
//
// Why the margin: a window spans the send times of its failed requests, but
// what failed them happened while they were in flight, up to a request
// latency after they were sent (a kill 15 ms after the first failed
// request was sent is its cause); and an event a latency before the first
// failed send met requests already under way.
func windowCauses(w zdv1.FailureWindow, margin time.Duration) (near []cause, more int, nearest *cause) {
	var far []cause
	for _, e := range w.NearestEvents {
		c := cause{WindowEvent: e, Place: placeInside}
		switch {
		case e.Time.Before(w.Start):
			c.Place, c.Distance = placeBefore, w.Start.Sub(e.Time)
		case e.Time.After(w.End):
			c.Place, c.Distance = placeAfter, e.Time.Sub(w.End)
		}
		if c.Distance <= margin {
			near = append(near, c)
		} else {
			far = append(far, c)
		}
	}
	fromStart := func(c cause) time.Duration {
		if d := c.Time.Sub(w.Start); d > 0 {
			return d
		}
		return w.Start.Sub(c.Time)
	}
	slices.SortStableFunc(near, func(a, b cause) int {
		if c := cmp.Compare(fromStart(a), fromStart(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Distance, b.Distance); c != 0 {
			return c // inside (0) first
		}
		return a.Time.Compare(b.Time)
	})
	if len(near) > maxCauses {
		more = len(near) - maxCauses
		near = near[:maxCauses]
	}
	if len(near) == 0 && len(far) > 0 {
		best := slices.MinFunc(far, func(a, b cause) int { return cmp.Compare(a.Distance, b.Distance) })
		nearest = &best
	}
	return near, more, nearest
}

// edgeMargin is how far around a window events are taken as its causes:
// the longest any request of the run was in flight (its maximum latency),
// so no event that met a request of the window is left out, and at least
// minEdgeMargin.
func edgeMargin(sc *zdv1.Scenario) time.Duration {
	m := time.Duration(sc.Results.Latency.MaxMs * float64(time.Millisecond))
	return max(m, minEdgeMargin)
}

// causeWhere is "at +15.0 ms", "12.0 ms before", "8.0 ms after its end".
func causeWhere(c cause) string {
	switch c.Place {
	case placeBefore:
		return formatMs(msOf(c.Distance)) + " before"
	case placeAfter:
		return formatMs(msOf(c.Distance)) + " after its end"
	}
	return "at +" + formatMs(c.OffsetMs)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// causesText is the ranked events of a window in one line, for Markdown
// and JUnit: "at +15.0 ms action: kill -9 echo; 3.0 ms before sigstop",
// or "no event within ±51.0 ms; nearest: load-start 1.99 s before".
// maxText bounds each event's text.
func causesText(w zdv1.FailureWindow, margin time.Duration, maxText int) string {
	near, more, nearest := windowCauses(w, margin)
	if len(near) == 0 {
		s := "no event within ±" + formatMs(msOf(margin))
		if nearest != nil {
			s += "; nearest: " + truncate(eventText(nearest.Event), maxText) + " " + causeWhere(*nearest)
		}
		return s
	}
	parts := make([]string, 0, len(near)+1)
	for _, c := range near {
		parts = append(parts, causeWhere(c)+" "+truncate(eventText(c.Event), maxText))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	return strings.Join(parts, "; ")
}
