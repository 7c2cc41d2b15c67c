package render

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// HTMLFileName is the page `zerodrop report` writes.
const HTMLFileName = "report.html"

//go:embed report.html.tmpl
var htmlTemplate string

//go:embed report.css
var htmlCSS string

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": formatCount,
	"ms":    formatMs,
	"pct":   pct,
	"pctw":  func(share float64) string { return fmt.Sprintf("%.1f", 100*share) },
}).Parse(htmlTemplate))

// HTMLOptions configure HTML.
type HTMLOptions struct {
	// Title heads the page (default "zerodrop readiness report").
	Title string
	// OutDir is where the page is written: links to run files and reports
	// are made relative to it ("" leaves them as given).
	OutDir string
}

// docLegend explains the documentation badge in the page header.
var docLegend = Badge{Class: "doc", Text: "DOC · hazard reproduced / not reproduced",
	Title: "documentation scenario: measures a known hazard (e.g. what a naive profile drops) and says whether this run reproduced it; never fails the suite"}

// attention is an assertion scenario that did not pass, listed at the top.
type attention struct {
	*Scenario
	Column string
	Badge  Badge
	// Checks names the checks that did not pass, with their figures.
	Checks string
}

type pageView struct {
	Attention []attention
	Title     string
	CSS       template.CSS
	Totals    Totals
	Badge     Badge
	Matrix    *Matrix
	Runs      []runView
	Legend    []Badge
	Classes   []string
}

type runView struct {
	*Run
	Column    string
	Heading   string
	Vendor    vendorView
	Meta      zdv1.RunMeta
	Start     string
	End       string
	Scenarios []scenarioView
}

type scenarioView struct {
	*Scenario
	Badge    Badge
	RoleText string
	// Headline is said above the verdict table only when no reason says
	// it; Why is the main clause of the headline for the run's list.
	Headline string
	Why      string
	// BinResolution is the latency plot's bin width.
	BinResolution string
	ClientIP      string
	Timeline      template.HTML
	PodShare      template.HTML
	Latency       template.HTML
	PodState      template.HTML
	// Margin is how far around a window events are listed.
	Margin      string
	Nodes       []nodeView
	Windows     []windowView
	Reasons     []reasonView
	Events      []eventView
	Config      []kv
	Labels      []kv
	Load        []kv
	ErrorCodes  string
	StatusCodes string
	Start       string
	// RunFileLink and ReportLink point at the evidence, relative to the page.
	RunFileLink string
	ReportLink  string
	// Earlier are the measurements the load generator spoiled, which this
	// one replaced.
	Earlier []earlierView
}

// earlierView is a spoiled measurement: what it was and its run file.
type earlierView struct {
	Text, RunFileLink string
}

type windowView struct {
	zdv1.FailureWindow
	Start   string
	Length  string
	Classes string
	// Causes are the events inside the window and around its edges,
	// ranked (see windowCauses); More counts those cut; Nearest, when none
	// is that close, is the closest one further off, for context.
	Causes  []causeView
	More    int
	Nearest string
	Margin  string
}

type causeView struct {
	Place, Where, Type, Text, Color string
}

type reasonView struct {
	zdv1.Reason
	Badge    Badge
	Observed string
	Limit    string
}

type eventView struct {
	Offset, Source, Type, Object, Message string
	// Color is the type's marker colour when it is drawn on the timeline.
	Color string
}

type nodeView struct {
	zdv1.Count
	Pods                                []string
	ServedUnready, ServedDraining       int64
	ServedUnreadyReused, DrainingReused int64
}

type kv struct{ Key, Value string }

// HTML writes the report page: a single file with inline CSS and SVG that
// needs no network and no JavaScript. It holds the overall verdict, the
// readiness matrix (each cell links to its scenario's section), and per run
// and scenario the numbers, the verdict's reasons, the timeline and pod
// share plots, failure windows, pods and events.
func HTML(w io.Writer, runs []*Run, opt HTMLOptions) error {
	if opt.Title == "" {
		opt.Title = "zerodrop readiness report"
	}
	t := Total(runs)
	v := pageView{
		Title:  opt.Title,
		CSS:    template.CSS(htmlCSS),
		Totals: t,
		Badge:  badgeFor(zdv1.RoleAssertion, t.Status),
		Matrix: BuildMatrix(runs),
		Legend: []Badge{
			badgeFor(zdv1.RoleAssertion, zdv1.Pass), badgeFor(zdv1.RoleAssertion, zdv1.Fail),
			badgeFor(zdv1.RoleAssertion, zdv1.Error), docLegend, badgeFor(zdv1.RoleDocumentation, zdv1.Error),
		},
	}
	for _, run := range runs {
		for _, sc := range run.Scenarios {
			if sc.Role == zdv1.RoleAssertion && sc.Verdict.Status != zdv1.Pass {
				v.Attention = append(v.Attention, attention{Scenario: sc, Column: run.Key().String(), Badge: sc.Badge(), Checks: sc.failedChecks()})
			}
		}
	}
	for _, run := range runs {
		rv := runView{Run: run, Column: run.Key().String(), Heading: run.Heading(), Vendor: vendorOf(run), Meta: run.Report.Run,
			Start: run.Report.Run.Start.UTC().Format("2006-01-02 15:04:05 UTC"),
			End:   run.Report.Run.End.UTC().Format("2006-01-02 15:04:05 UTC")}
		for _, sc := range run.Scenarios {
			sv := scenarioViewOf(sc)
			if sc.RunFileExists {
				sv.RunFileLink = relLink(sc.RunFilePath, opt.OutDir)
			}
			sv.ReportLink = relLink(filepath.Join(run.Dir, ReportFileName), opt.OutDir)
			for k, e := range sc.Earlier {
				ev := earlierView{Text: e.Text(k)}
				if e.RunFileExists {
					ev.RunFileLink = relLink(e.RunFilePath, opt.OutDir)
				}
				sv.Earlier = append(sv.Earlier, ev)
			}
			rv.Scenarios = append(rv.Scenarios, sv)
		}
		v.Runs = append(v.Runs, rv)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, v); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	if _, err := io.WriteString(w, zdv1.ScrubText(b.String())); err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

func scenarioViewOf(sc *Scenario) scenarioView {
	v := scenarioView{Scenario: sc, Badge: sc.Badge(), Headline: sc.ownHeadline(), Why: sc.why(), ClientIP: sc.clientIPCheck(),
		BinResolution: fmt.Sprintf("%.2f%%", 100*BinResolution),
		ErrorCodes:    classesText(sc.Results.ErrorClasses), StatusCodes: classesText(sc.Results.StatusCodes),
		Start: sc.Start.UTC().Format("2006-01-02 15:04:05 UTC")}
	if sc.Role == zdv1.RoleDocumentation {
		v.RoleText = "Documentation scenario: it measures a known hazard (for example a naive profile) and never fails the suite. Its verdict records what happens, not a defect of this run."
		if sc.PlatformLimit != "" {
			v.RoleText = "Documentation scenario: a hardened workload on a platform that cannot give zero drops here. Platform limit: " + sc.PlatformLimit
		}
	} else {
		v.RoleText = "Assertion scenario: its verdict counts toward the suite's outcome."
	}
	if tl := sc.Timeline; tl != nil {
		// The plots are built by this package's svg writer, which escapes
		// every text and attribute: safe to embed as markup.
		v.Timeline = template.HTML(TimelineSVG(tl, sc.FailureWindows, "requests per "+formatStep(tl.Step)+" of "+sc.Name+": ok and failed by kind, with events")) //nolint:gosec
		totals := map[string]float64{}
		var other float64
		for _, p := range sc.Results.Pods {
			totals[p.Pod] = p.Share
			other += p.Share
		}
		for _, p := range tl.Pods {
			if p != OtherPods {
				other -= totals[p]
			}
		}
		if other > 0.0005 {
			totals[OtherPods] = other
		}
		if len(tl.Pods) > 0 {
			v.PodShare = template.HTML(PodShareSVG(tl, sc.FailureWindows, totals, "share of 2xx answers per pod over time, "+sc.Name)) //nolint:gosec
		}
		v.Latency = template.HTML(LatencySVG(tl, sc.FailureWindows, sc.Load.TimeoutMs, "latency per "+formatStep(tl.Step)+" of "+sc.Name+": p50, p99 and max"))           //nolint:gosec
		v.PodState = template.HTML(PodStateSVG(tl, sc.FailureWindows, "answers from unready or draining pods and new connections per "+formatStep(tl.Step)+", "+sc.Name)) //nolint:gosec
	}
	margin := edgeMargin(&sc.Scenario)
	v.Margin = formatMs(msOf(margin))
	var palette map[string]string
	if sc.Timeline != nil {
		palette, _ = markerLegend(sc.Timeline.Markers)
	}
	for _, w := range sc.FailureWindows {
		wv := windowView{FailureWindow: w, Start: w.Start.UTC().Format("15:04:05.000"), Length: windowLength(w), Classes: classesText(w.Classes), Margin: v.Margin}
		near, more, nearest := windowCauses(w, margin)
		for _, c := range near {
			wv.Causes = append(wv.Causes, causeView{Place: c.Place, Where: causeWhere(c), Type: c.Type,
				Text: strings.TrimPrefix(eventText(c.Event), c.Type), Color: palette[c.Type]})
		}
		wv.More = more
		if nearest != nil {
			wv.Nearest = eventText(nearest.Event) + ", " + causeWhere(*nearest)
		}
		v.Windows = append(v.Windows, wv)
	}
	v.Nodes = nodesOf(sc.Results)
	for _, r := range sc.Verdict.Reasons {
		rv := reasonView{Reason: r, Badge: badgeFor(zdv1.RoleAssertion, r.Status)}
		if sc.Role == zdv1.RoleDocumentation && r.Status != zdv1.Pass {
			// A documented hazard is not a failure: keep it out of red.
			rv.Badge = badgeFor(sc.Role, r.Status)
		}
		if r.Observed != nil {
			rv.Observed = trimFloat(*r.Observed)
		}
		if r.Limit != nil {
			rv.Limit = trimFloat(*r.Limit)
		}
		v.Reasons = append(v.Reasons, rv)
	}
	org := sc.Results.FirstSend
	if org.IsZero() {
		org = sc.Start
	}
	for _, e := range sc.Events {
		v.Events = append(v.Events, eventView{Offset: formatOffset(e.Time.Sub(org).Seconds()), Source: e.Source,
			Type: e.Type, Object: e.Object, Message: e.Message, Color: palette[e.Type]})
	}
	for _, k := range sortedKeys(sc.Config) {
		v.Config = append(v.Config, kv{k, sc.Config[k]})
	}
	for _, k := range sortedKeys(sc.Labels) {
		v.Labels = append(v.Labels, kv{k, sc.Labels[k]})
	}
	l := sc.Load
	v.Load = []kv{
		{"targets", strings.Join(l.Targets, ", ")}, {"rate", fmt.Sprintf("%d/s", l.Rate)},
		{"duration", formatMs(l.DurationMs)}, {"connections", fmt.Sprint(l.Connections)},
		{"keep-alive", fmt.Sprint(l.KeepAlive)}, {"timeout", formatMs(l.TimeoutMs)},
	}
	if l.Host != "" {
		v.Load = append(v.Load, kv{"host", l.Host})
	}
	if l.Protocol != "" {
		v.Load = append(v.Load, kv{"protocol", l.Protocol})
	}
	if l.Scheduling != "" {
		v.Load = append(v.Load, kv{"scheduling", l.Scheduling})
	}
	return v
}

// nodesOf is the per-node table: report.json's nodes with the pods each
// ran and what they served while unready or draining.
func nodesOf(r zdv1.Results) []nodeView {
	out := make([]nodeView, 0, len(r.Nodes))
	idx := map[string]int{}
	for _, n := range r.Nodes {
		idx[n.Name] = len(out)
		out = append(out, nodeView{Count: n})
	}
	for _, p := range r.Pods {
		i, ok := idx[p.Node]
		if !ok {
			continue
		}
		nv := &out[i]
		nv.Pods = append(nv.Pods, p.Pod)
		nv.ServedUnready += p.ServedUnready
		nv.ServedUnreadyReused += p.ServedUnreadyReused
		nv.ServedDraining += p.ServedDraining
		nv.DrainingReused += p.ServedDrainingReused
	}
	return out
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.4f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
