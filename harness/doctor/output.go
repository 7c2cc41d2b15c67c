package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Format is an output format of the report.
type Format string

const (
	FormatText  Format = "text"
	FormatJSON  Format = "json"
	FormatSARIF Format = "sarif"
)

// ParseFormat reads "text", "json" or "sarif".
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case FormatText, FormatJSON, FormatSARIF:
		return f, nil
	}
	return "", fmt.Errorf("unknown output %q: want text, json or sarif", s)
}

// Write renders the report in the given format.
func Write(w io.Writer, r *Report, f Format) error {
	switch f {
	case FormatJSON:
		return WriteJSON(w, r)
	case FormatSARIF:
		return WriteSARIF(w, r)
	default:
		return WriteText(w, r)
	}
}

// WriteText renders the report for people: per Service, its findings with
// location, incident and fix, then a summary line. The findings are
// grouped by Service once, in report order, so the text costs what the
// report holds, not Services x Findings (36,000 Services took minutes).
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	if len(r.Services) == 0 {
		ew.printf("no Service of type LoadBalancer (or behind an Ingress or a Gateway API route) in the input; nothing to check\n")
	}
	byService := make(map[string][]int, len(r.Services))
	for i, f := range r.Findings {
		byService[f.Service] = append(byService[f.Service], i)
	}
	for _, s := range r.Services {
		ew.printf("%s  %s  externalTrafficPolicy=%s  lb=%s (%s; %s)", s.Service, s.Type, s.Policy, s.Profile, s.LBLag, s.LBChoice)
		if s.L7 != "" {
			ew.printf("  l7=%s", s.L7)
		}
		if s.L4 != "" {
			ew.printf("  l4=%s", s.L4)
		}
		ew.printf("\n")
		for _, g := range s.Gateways {
			ew.printf("  parent %s\n", g)
		}
		if len(s.Workloads) > 0 {
			ew.printf("  workloads: %s\n", strings.Join(s.Workloads, ", "))
		}
		n := 0
		for _, i := range byService[s.Service] {
			f := &r.Findings[i]
			n++
			ew.printf("  %-7s %s %s  %s  [incident %s]\n", strings.ToUpper(f.Severity.String()), f.RuleID, f.Rule, f.Location(), strings.Join(f.Seeds, ", "))
			if f.Object != f.Service && !strings.HasPrefix(f.Object, "service/") {
				ew.printf("          %s: %s\n", f.Object, f.Message)
			} else {
				ew.printf("          %s\n", f.Message)
			}
			ew.printf("          fix: %s\n", f.Fix)
		}
		if n == 0 {
			ew.printf("  no findings\n")
		}
		ew.printf("\n")
	}
	for i, n := range r.NotJudged {
		if i == maxNotJudged {
			// A cluster read whole names every ClusterIP Service it has.
			ew.printf("not judged: %d more (-o json lists every one)\n", len(r.NotJudged)-i)
			break
		}
		ew.printf("not judged %s (%s): %s\n", n.Service, n.Source, n.Reason)
	}
	for _, s := range r.Warnings {
		ew.printf("warning %s: %s\n", s.Source, s.Reason)
	}
	for _, s := range r.Skipped {
		ew.printf("skipped %s: %s\n", s.Source, s.Reason)
	}
	ew.printf("summary: %d error(s), %d warning(s), %d info over %d Service(s); default LB profile %s; Kubernetes %s\n",
		r.Count(Error), r.Count(Warning), r.Count(Info), len(r.Services), r.Profile, r.Kubernetes)
	return ew.err
}

// maxNotJudged bounds the Services the text lists as not judged.
const maxNotJudged = 20

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// JSONVersion is the version of the JSON output's shape.
const JSONVersion = 1

// WriteJSON renders the report as one JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	out := struct {
		Version int `json:"version"`
		*Report
		Summary map[string]int `json:"summary"`
	}{
		Version: JSONVersion,
		Report:  r,
		Summary: map[string]int{"error": r.Count(Error), "warning": r.Count(Warning), "info": r.Count(Info)},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("doctor: write JSON report: %w", err)
	}
	return nil
}

// SARIF 2.1.0, the subset code-scanning tools read.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration map[string]any `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	default:
		return "note"
	}
}

// WriteSARIF renders the report as SARIF 2.1.0 with one result per finding,
// located by file and line where the input was a file.
func WriteSARIF(w io.Writer, r *Report) error {
	driver := sarifDriver{Name: "zerodrop doctor", InformationURI: "https://github.com/zerodrop/zerodrop"}
	index := map[string]int{}
	for i, rule := range catalogue {
		index[rule.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID: rule.ID, Name: rule.Name,
			ShortDescription:     sarifText{Text: rule.Summary},
			FullDescription:      sarifText{Text: rule.Description},
			Help:                 sarifText{Text: "Fix: " + rule.Fix + " (incident " + strings.Join(rule.Seeds, ", ") + ", see docs/incidents.md)"},
			DefaultConfiguration: map[string]any{"level": sarifLevel(rule.Severity)},
			Properties:           map[string]any{"seeds": rule.Seeds, "tags": []string{"kubernetes", "load-balancer", "zero-downtime"}},
		})
	}
	results := []sarifResult{}
	for _, f := range r.Findings {
		loc := sarifLocation{LogicalLocations: []sarifLogical{{FullyQualifiedName: f.Object, Kind: "object"}}}
		if f.File != "" && f.File != StdinName {
			loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(f.File)}}
			if f.Line > 0 {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line}
			}
		}
		results = append(results, sarifResult{
			RuleID: f.RuleID, RuleIndex: index[f.RuleID], Level: sarifLevel(f.Severity),
			Message:   sarifText{Text: f.Message + " Fix: " + f.Fix},
			Locations: []sarifLocation{loc},
		})
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(log); err != nil {
		return fmt.Errorf("doctor: write SARIF report: %w", err)
	}
	return nil
}

// fileURI keeps relative paths relative (code-scanning tools resolve them
// against the checkout) and turns absolute ones into file:// URIs.
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	if strings.HasPrefix(p, "/") {
		return "file://" + p
	}
	return strings.TrimPrefix(p, "./")
}
