package render

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// MaxMarkdownBytes keeps the summary within a GitHub comment (65,536
// characters) with room to spare; the job summary allows more, a comment
// does not.
const MaxMarkdownBytes = 60000

// MarkdownOptions configure Markdown.
type MarkdownOptions struct {
	// OutDir is where the Markdown is written: evidence links are made
	// relative to it.
	OutDir string
	// HTMLName is the HTML report next to it, linked from the summary
	// ("" for none).
	HTMLName string
}

// Markdown writes the summary: the overall verdict, the readiness matrix
// when there is more than one environment or run, a table per run, and the
// details of every scenario that did not pass. It stays under
// MaxMarkdownBytes by dropping the details first and then cutting the
// tables with a note.
func Markdown(w io.Writer, runs []*Run, opt MarkdownOptions) error {
	full := markdown(runs, opt, true)
	if len(full) > MaxMarkdownBytes {
		full = markdown(runs, opt, false)
	}
	if len(full) > MaxMarkdownBytes {
		cut := bytes.LastIndexByte(full[:MaxMarkdownBytes-200], '\n')
		full = append(full[:cut+1], []byte("\n_… summary cut to fit a comment; the HTML report has everything._\n")...)
	}
	if _, err := w.Write([]byte(zdv1.ScrubText(string(full)))); err != nil {
		return fmt.Errorf("write markdown summary: %w", err)
	}
	return nil
}

func markdown(runs []*Run, opt MarkdownOptions, details bool) []byte {
	var b bytes.Buffer
	t := Total(runs)
	head := badgeFor(zdv1.RoleAssertion, t.Status)
	fmt.Fprintf(&b, "## %s zerodrop: %s\n\n", head.Emoji, t.Status)
	fmt.Fprintf(&b, "%d run(s), %d scenario(s): **%d passed**, **%d failed**, **%d errored**, %d documentation (hazards measured, never failing).",
		t.Runs, t.Scenarios, t.Passed, t.Failed, t.Errored, t.Documentation)
	if opt.HTMLName != "" {
		fmt.Fprintf(&b, " Plots and evidence: `%s`.", opt.HTMLName)
	}
	fmt.Fprintf(&b, " Evidence: %d scenario(s) re-derived from their run files", t.Verified)
	if t.Unverified > 0 {
		fmt.Fprintf(&b, ", **%d unverified** (no run file to check)", t.Unverified)
	}
	if t.OtherVersion > 0 {
		fmt.Fprintf(&b, ", %d written by another zerodrop version (same verdict and counts, details differ)", t.OtherVersion)
	}
	if t.Signed > 0 {
		fmt.Fprintf(&b, "; %d run file(s) carry a signature verified with a trusted key", t.Signed)
	}
	b.WriteString(".\n\n")

	m := BuildMatrix(runs)
	if len(m.Columns) > 1 || len(runs) > 1 {
		b.WriteString("### Readiness matrix\n\n| scenario / policy / profile | role |")
		for _, c := range m.Columns {
			b.WriteString(" " + mdCell(c.String()) + " |")
		}
		b.WriteString("\n| --- | --- |" + strings.Repeat(" :---: |", len(m.Columns)) + "\n")
		for _, r := range m.Rows {
			fmt.Fprintf(&b, "| %s | %s |", mdCell(r.Label()), r.Role)
			for _, cell := range r.Cells {
				b.WriteString(" ")
				if len(cell) == 0 {
					b.WriteString("–")
				}
				for i, sc := range cell {
					if i > 0 {
						b.WriteString(" ")
					}
					bd := sc.Badge()
					text := bd.Emoji + " " + bd.Text + sc.AgainMark()
					if link := evidenceLink(sc, opt.OutDir); link != "" {
						text = "[" + text + "](" + link + ")"
					}
					b.WriteString(text)
				}
				b.WriteString(" |")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}

	for _, run := range runs {
		rm := run.Report.Run
		fmt.Fprintf(&b, "### %s\n\n", mdCell(run.Heading()))
		fmt.Fprintf(&b, "`%s` · zerodrop %s · %s – %s", mdCell(run.Dir), mdCell(rm.ToolVersion),
			rm.Start.UTC().Format("2006-01-02 15:04:05"), rm.End.UTC().Format("15:04:05 UTC"))
		if rm.Host != "" {
			fmt.Fprintf(&b, " · load host: %s", mdCell(rm.Host))
		}
		b.WriteString("\n\n")
		v := vendorOf(run)
		fmt.Fprintf(&b, "> **Submission summary:** %s\n", mdCell(v.Submission))
		if len(v.Missing) > 0 {
			fmt.Fprintf(&b, ">\n> _Not given: %s (zerodrop analyze --org --project --project-version --contact)._\n", strings.Join(v.Missing, ", "))
		}
		if v.Note != "" {
			fmt.Fprintf(&b, ">\n> ⚠️ %s\n", v.Note)
		}
		b.WriteString("\n")
		if len(run.Scenarios) == 0 {
			b.WriteString("⚠️ The report holds no scenario: it proves nothing.\n\n")
			continue
		}
		b.WriteString("| verdict | scenario | requests | dropped | windows | p99 | pods | why |\n")
		b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
		for _, sc := range run.Scenarios {
			r := sc.Results
			bd := sc.Badge()
			pods := fmt.Sprintf("%d", len(r.Pods))
			if n := len(r.ZeroTrafficPods); n > 0 {
				pods += fmt.Sprintf(" (%d idle)", n)
			}
			fmt.Fprintf(&b, "| %s %s%s | %s | %s | %s | %d | %s | %s | %s |\n",
				bd.Emoji, bd.Text, sc.AgainMark(), mdCell(sc.Name), formatCount(r.Total), formatCount(r.Dropped),
				len(sc.FailureWindows), formatMs(r.Latency.P99Ms), pods, mdCell(truncate(sc.why(), 160)))
		}
		b.WriteString("\n")
		if !details {
			continue
		}
		for _, sc := range run.Scenarios {
			if sc.Verdict.Status == zdv1.Pass && len(sc.Earlier) == 0 {
				continue
			}
			bd := sc.Badge()
			fmt.Fprintf(&b, "<details><summary>%s %s — %s</summary>\n\n", bd.Emoji, htmlText(sc.Name), htmlText(bd.Text))
			if sc.Role == zdv1.RoleDocumentation {
				b.WriteString("_Documentation scenario: it measures a known hazard and never fails the suite._\n\n")
				if sc.PlatformLimit != "" {
					fmt.Fprintf(&b, "_Platform limit: %s_\n\n", mdCell(sc.PlatformLimit))
				}
			}
			for _, rs := range sc.Verdict.Reasons {
				if rs.Status != zdv1.Pass {
					fmt.Fprintf(&b, "- **%s** `%s`: %s\n", rs.Status, rs.Check, mdCell(rs.Message))
				}
			}
			for i, w := range sc.FailureWindows {
				if i == 10 {
					fmt.Fprintf(&b, "- … %d more window(s) in the HTML report\n", len(sc.FailureWindows)-i)
					break
				}
				fmt.Fprintf(&b, "- W%d at %s for %s: %s failed (%s)", w.Index, w.Start.UTC().Format("15:04:05.000"),
					windowLength(w), formatCount(w.Failed), classesText(w.Classes))
				fmt.Fprintf(&b, "; events inside it or within ±%s of its edges, closest to its start first: %s\n",
					formatMs(msOf(edgeMargin(&sc.Scenario))), mdCell(causesText(w, edgeMargin(&sc.Scenario), 120)))
			}
			if nodes := nodesOf(sc.Results); len(nodes) > 0 {
				parts := make([]string, 0, len(nodes))
				for _, n := range nodes {
					p := fmt.Sprintf("%s %s (%s)", n.Name, formatCount(n.Count.Count), pct(n.Share))
					if n.ServedUnready+n.ServedDraining > 0 {
						p += fmt.Sprintf(", %s while unready, %s while draining", formatCount(n.ServedUnready), formatCount(n.ServedDraining))
					}
					parts = append(parts, p)
				}
				fmt.Fprintf(&b, "- 2xx per node: %s\n", mdCell(truncate(strings.Join(parts, "; "), 600)))
			}
			if sc.TimelineNote != "" {
				fmt.Fprintf(&b, "- %s\n", mdCell(sc.TimelineNote))
			}
			fmt.Fprintf(&b, "- evidence %s: %s\n", sc.Evidence, mdCell(sc.EvidenceNote))
			for k, e := range sc.Earlier {
				fmt.Fprintf(&b, "- measured again after a spoiled %s (run file `%s`)\n", mdCell(e.Text(k)), mdCell(e.RunFile))
			}
			if o := sc.OverridesText(); o != "" {
				fmt.Fprintf(&b, "- **criteria overridden** when this report was made, not the run's own: `%s`\n", o)
			}
			b.WriteString("\n</details>\n\n")
		}
	}
	return b.Bytes()
}

// evidenceLink is where a scenario's evidence lives, relative to outDir:
// its run file when there is one, else its report.json.
func evidenceLink(sc *Scenario, outDir string) string {
	target := filepath.Join(sc.Run.Dir, ReportFileName)
	if sc.RunFileExists {
		target = sc.RunFilePath
	}
	return relLink(target, outDir)
}

// relLink is target as a URL path relative to outDir. Both are made
// absolute first: filepath.Rel cannot relate a relative path to an absolute
// one, and a link left as given breaks as soon as --out is elsewhere.
func relLink(target, outDir string) string {
	if outDir != "" {
		at, err1 := filepath.Abs(target)
		ao, err2 := filepath.Abs(outDir)
		if err1 == nil && err2 == nil {
			if rel, err := filepath.Rel(ao, at); err == nil {
				target = rel
			}
		}
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "#", "%23", "?", "%3F").Replace(filepath.ToSlash(target))
}

// mdCell makes s safe inside a Markdown table cell: no pipes breaking the
// table, no newlines, no HTML, no links or images (a pod named
// "[x](javascript:...)" is text), no code spans or emphasis.
func mdCell(s string) string {
	s = strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;",
		`\`, `\\`, "[", `\[`, "]", `\]`, "`", "\\`", "*", `\*`, "_", `\_`).Replace(s)
	return strings.TrimSpace(s)
}

// htmlText escapes s for the HTML that GitHub allows in Markdown.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", " ", "[", "&#91;", "]", "&#93;").Replace(s)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
