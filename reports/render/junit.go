package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// JUnitFileName is the JUnit file `zerodrop report` writes. It is not
// "junit.xml" because Ginkgo writes that name into the same directory for
// suite runs, and the two must not overwrite each other.
const JUnitFileName = "junit-zerodrop.xml"

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes one testsuite per run and one testcase per scenario.
// Assertion scenarios that FAIL get a <failure>, those that ERROR an
// <error>; documentation scenarios are passing test cases whose output says
// what they documented, so a CI dashboard agrees with the exit status.
func JUnit(w io.Writer, runs []*Run) error {
	top := junitSuites{Name: "zerodrop"}
	var total float64
	for _, run := range runs {
		rm := run.Report.Run
		s := junitSuite{
			Name: "zerodrop " + run.Key().String(),
			Properties: []junitProperty{
				{"provider", rm.Provider}, {"kubernetesVersion", rm.KubernetesVersion},
				{"kubeProxyFeatureGates", rm.KubeProxyFeatureGates}, {"lbImplementation", rm.LBImplementation}, {"toolVersion", rm.ToolVersion}, {"dir", run.Dir},
			},
		}
		if !rm.Start.IsZero() {
			s.Timestamp = rm.Start.UTC().Format("2006-01-02T15:04:05")
		}
		// The environment is part of every test's identity: merged runs of
		// several environments would otherwise repeat classname and name,
		// and CI dashboards fold such repeats into one test.
		env := junitEnv(run.Key())
		var suiteTime float64
		for _, sc := range run.Scenarios {
			dur := sc.End.Sub(sc.Start).Seconds()
			if dur < 0 {
				dur = 0
			}
			suiteTime += dur
			family := sc.Labels["scenario"]
			if family == "" {
				family, _, _ = strings.Cut(sc.Name, "/")
			}
			c := junitCase{Name: sc.Name, Classname: "zerodrop." + env + "." + family, Time: fmt.Sprintf("%.3f", dur), SystemOut: caseOutput(sc)}
			if sc.Role != zdv1.RoleDocumentation {
				switch sc.Verdict.Status {
				case zdv1.Pass:
				case zdv1.Fail:
					c.Failure = &junitProblem{Message: sc.headline(), Type: "FAIL", Text: reasonsText(sc)}
					s.Failures++
				default:
					c.Error = &junitProblem{Message: sc.headline(), Type: string(sc.Verdict.Status), Text: reasonsText(sc)}
					s.Errors++
				}
			}
			s.Cases = append(s.Cases, c)
		}
		if len(run.Scenarios) == 0 {
			s.Cases = append(s.Cases, junitCase{Name: "report", Classname: "zerodrop", Time: "0",
				Error: &junitProblem{Message: "the report holds no scenario: it proves nothing", Type: "ERROR"}})
			s.Errors++
		}
		s.Tests = len(s.Cases)
		s.Time = fmt.Sprintf("%.3f", suiteTime)
		total += suiteTime
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Errors += s.Errors
		top.Suites = append(top.Suites, s)
	}
	top.Time = fmt.Sprintf("%.3f", total)
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(top); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	b.WriteByte('\n')
	if _, err := io.WriteString(w, zdv1.ScrubText(b.String())); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

func reasonsText(sc *Scenario) string {
	var b strings.Builder
	for _, r := range sc.Verdict.Reasons {
		fmt.Fprintf(&b, "%s %s: %s\n", r.Status, r.Check, r.Message)
	}
	for _, w := range sc.FailureWindows {
		fmt.Fprintf(&b, "window W%d %s +%s: %d failed (%s)", w.Index, w.Start.UTC().Format("15:04:05.000"),
			windowLength(w), w.Failed, classesText(w.Classes))
		fmt.Fprintf(&b, "; events: %s\n", causesText(w, edgeMargin(&sc.Scenario), 200))
	}
	return b.String()
}

func caseOutput(sc *Scenario) string {
	r := sc.Results
	var b strings.Builder
	if sc.Role == zdv1.RoleDocumentation {
		fmt.Fprintf(&b, "documentation scenario (measures a hazard, never fails the suite): %s\n", sc.OutcomeText())
	}
	fmt.Fprintf(&b, "requests %d, ok %d, dropped %d (errors %d, non-2xx %d), %d failure window(s), p50 %s p99 %s max %s\n",
		r.Total, r.OK, r.Dropped, r.Errors, r.Non2xx, len(sc.FailureWindows),
		formatMs(r.Latency.P50Ms), formatMs(r.Latency.P99Ms), formatMs(r.Latency.MaxMs))
	if sc.Role == zdv1.RoleDocumentation {
		b.WriteString(reasonsText(sc))
	}
	if sc.RunFile != "" {
		fmt.Fprintf(&b, "run file: %s\n", sc.RunFile)
	}
	for k, e := range sc.Earlier {
		fmt.Fprintf(&b, "measured again after a spoiled %s (run file %s)\n", e.Text(k), e.RunFile)
	}
	return b.String()
}

// junitEnv is the run's environment as one classname segment
// ("kind_v1_34_2_metallb"): dots would read as package separators.
func junitEnv(c Column) string {
	s := strings.NewReplacer(" · ", "_", ".", "_", " ", "_", "=", "_", ",", "_").Replace(c.String())
	if c == (Column{}) {
		s = "unknown"
	}
	return s
}
