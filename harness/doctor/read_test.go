package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		refs     []string // Object refs in order
		lines    []int    // Source lines in order
		skipped  int
		typed    []bool // Obj != nil
		errLine  int    // >0: want an InputError at this line
		errMatch string
	}{
		{
			name:  "multi-document with leading separator and comments",
			in:    "# comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n# empty doc\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\n  namespace: x\n",
			refs:  []string{"service//a", "deployment/x/b"},
			lines: []int{3, 9},
			typed: []bool{true, true},
		},
		{
			name:  "v1 List with items",
			in:    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata: {name: p}\n",
			refs:  []string{"service//a", "poddisruptionbudget//p"},
			lines: []int{4, 7},
			typed: []bool{true, true},
		},
		{
			name:  "typed List (kubectl get -o yaml) and nested List",
			in:    "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: d}\n",
			refs:  []string{"deployment//d"},
			lines: []int{7},
			typed: []bool{true},
		},
		{
			name:  "empty List",
			in:    "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n",
			refs:  nil,
			typed: nil,
		},
		{
			name:  "JSON document",
			in:    `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "j"}, "spec": {"type": "LoadBalancer"}}`,
			refs:  []string{"service//j"},
			lines: []int{1},
			typed: []bool{true},
		},
		{
			name:    "unknown kinds and non-objects are skipped, not kept",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\nreplicaCount: 3\n---\n- a\n- b\n---\njust a string\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			refs:    []string{"service//s"},
			lines:   []int{12},
			typed:   []bool{true},
			skipped: 4,
		},
		{
			name:     "broken YAML in the second document names the stream line",
			in:       "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n   namespace: bad\n",
			errLine:  9,
			errMatch: "invalid YAML",
		},
		{
			name:     "unterminated flow mapping",
			in:       "apiVersion: v1\nkind: Service\nmetadata: {name: a\n",
			errLine:  3,
			errMatch: "invalid YAML",
		},
		{
			name:     "wrong type names the field's line",
			in:       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: three\n",
			errLine:  6,
			errMatch: "replicas",
		},
		{
			// Quoted, a placeholder is a string: read as it stands it would
			// be no LoadBalancer, and the chart "nothing to check".
			name:     "a quoted template placeholder as the Service type",
			in:       "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  type: \"{{ .Values.service.type }}\"\n",
			errLine:  6,
			errMatch: "spec.type is a template placeholder",
		},
		{
			name:     "an envsubst placeholder as the traffic policy",
			in:       "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  type: LoadBalancer\n  externalTrafficPolicy: ${POLICY}\n",
			errLine:  7,
			errMatch: "spec.externalTrafficPolicy is a template placeholder",
		},
		{
			name:     "a quoted template placeholder as the traffic policy",
			in:       "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  type: LoadBalancer\n  externalTrafficPolicy: '{{ .Values.policy }}'\n",
			errLine:  7,
			errMatch: "spec.externalTrafficPolicy is a template placeholder",
		},

		{
			name:     "kind of the wrong type",
			in:       "apiVersion: v1\nkind: [Service]\n",
			errLine:  2,
			errMatch: "kind must be a string",
		},
		{
			name:     "metadata.name of the wrong type",
			in:       "apiVersion: v1\nkind: Service\nmetadata:\n  name: 12\n",
			errLine:  4,
			errMatch: "metadata.name must be a string",
		},
		{
			name:     "items that are not a list",
			in:       "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			errLine:  3,
			errMatch: "must be a list",
		},
		{
			name:  "aliases and merge keys resolve",
			in:    "apiVersion: v1\nkind: Service\nmetadata: &m {name: a, namespace: ns}\nspec:\n  <<: {type: LoadBalancer}\n",
			refs:  []string{"service/ns/a"},
			lines: []int{1},
			typed: []bool{true},
		},
		{
			name:  "non-string keys are stringified like sigs.k8s.io/yaml",
			in:    "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  labels:\n    1: one\n",
			refs:  []string{"service//a"},
			lines: []int{1},
			typed: []bool{true},
		},
		{
			name:     "NaN has no JSON form",
			in:       "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {x: .nan}\n",
			errLine:  1,
			errMatch: "JSON",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Read("in.yaml", strings.NewReader(tc.in))
			if tc.errLine > 0 {
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Fatalf("err = %v, want an InputError", err)
				}
				if ie.File != "in.yaml" || ie.Line != tc.errLine {
					t.Errorf("error at %s:%d, want in.yaml:%d (%v)", ie.File, ie.Line, tc.errLine, err)
				}
				if !strings.Contains(err.Error(), tc.errMatch) || !strings.HasPrefix(err.Error(), "in.yaml:") {
					t.Errorf("error %q should start with the file and mention %q", err, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var refs []string
			var lines []int
			var typed []bool
			for _, o := range ms.Objects {
				refs = append(refs, o.Ref())
				lines = append(lines, o.Source.Line)
				typed = append(typed, o.Obj != nil)
			}
			if strings.Join(refs, " ") != strings.Join(tc.refs, " ") {
				t.Errorf("refs = %v, want %v", refs, tc.refs)
			}
			if tc.lines != nil && !equalInts(lines, tc.lines) {
				t.Errorf("lines = %v, want %v", lines, tc.lines)
			}
			if len(typed) != len(tc.typed) {
				t.Errorf("typed = %v, want %v", typed, tc.typed)
			} else {
				for i := range typed {
					if typed[i] != tc.typed[i] {
						t.Errorf("typed = %v, want %v", typed, tc.typed)
						break
					}
				}
			}
			if len(ms.Skipped) != tc.skipped {
				t.Errorf("skipped = %+v, want %d", ms.Skipped, tc.skipped)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadTypes(t *testing.T) {
	in := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 4\n  template:\n    spec:\n      containers: [{name: c, image: i}]\n" +
		"---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer, externalTrafficPolicy: Local}\n"
	ms, err := Read("x", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ms.Objects[0].Obj.(*appsv1.Deployment)
	if !ok || *d.Spec.Replicas != 4 || d.Spec.Template.Spec.Containers[0].Name != "c" {
		t.Errorf("deployment = %#v", ms.Objects[0].Obj)
	}
	s, ok := ms.Objects[1].Obj.(*corev1.Service)
	if !ok || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("service = %#v", ms.Objects[1].Obj)
	}
}

func TestObjectLine(t *testing.T) {
	in := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n      - name: b\n        readinessProbe:\n          periodSeconds: 5\n"
	ms, err := Read("x", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	o := ms.Objects[0]
	tests := []struct {
		path []any
		want int
	}{
		{nil, 1},
		{[]any{"spec"}, 4},
		{[]any{"spec", "template", "spec", "containers", 1, "readinessProbe", "periodSeconds"}, 11},
		{[]any{"spec", "template", "spec", "containers", 0, "readinessProbe"}, 8}, // deepest existing: item 0
		{[]any{"spec", "template", "spec", "containers", 7}, 7},
		{[]any{"spec", "nope", "deeper"}, 4},
	}
	for _, tc := range tests {
		if got := o.Line(tc.path...); got != tc.want {
			t.Errorf("Line(%v) = %d, want %d", tc.path, got, tc.want)
		}
	}
	if got := o.FirstLine([]any{"spec", "missing"}, []any{"spec", "template"}); got != 5 {
		t.Errorf("FirstLine = %d, want 5", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc := func(name string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + "}\n"
	}
	write("a.yaml", svc("a"))
	write("sub/b.yml", svc("b"))
	write("sub/c.json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"c"}}`)
	write("sub/readme.md", "not yaml: [")
	write(".hidden/d.yaml", "broken: [")
	write("sub/.e.yaml", "broken: [")

	ms, err := Load([]string{dir, "-"}, strings.NewReader(svc("stdin")))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var names, files []string
	for _, o := range ms.Objects {
		names = append(names, o.Name)
		files = append(files, filepath.Base(o.Source.File))
	}
	if got := strings.Join(names, ","); got != "a,b,c,stdin" {
		t.Errorf("objects = %s, want a,b,c,stdin (hidden entries and non-manifests skipped)", got)
	}
	if files[3] != StdinName {
		t.Errorf("stdin source = %q", files[3])
	}

	errCases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"no input", nil, "no input"},
		{"stdin twice", []string{"-", "-"}, "more than once"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.paths, strings.NewReader(""))
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want an InputError mentioning %q", err, tc.want)
			}
		})
	}

	write("bad/x.yaml", svc("ok")+"---\nmetadata: [\n")
	_, err = Load([]string{filepath.Join(dir, "bad")}, nil)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.HasSuffix(ie.File, "x.yaml") || ie.Line != 5 {
		t.Errorf("bad dir: err = %v, want x.yaml:5", err)
	}
}

func TestReadTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("#"), MaxFileSize+1)
	_, err := Read("big", bytes.NewReader(big))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err = %v, want a size error", err)
	}
}

// TestReadAliasFanOut: a few hundred bytes of aliases naming nested Lists
// must not turn into millions of objects.
func TestReadAliasFanOut(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n- &l0 {apiVersion: v1, kind: Service, metadata: {name: x}}\n")
	for lvl := 1; lvl <= 6; lvl++ {
		prev := "*l" + string(rune('0'+lvl-1))
		b.WriteString("- &l" + string(rune('0'+lvl)) + " {apiVersion: v1, kind: List, items: [")
		b.WriteString(strings.TrimSuffix(strings.Repeat(prev+", ", 10), ", "))
		b.WriteString("]}\n")
	}
	if b.Len() > 1000 {
		t.Fatalf("bomb is %d bytes; the point is that it is small", b.Len())
	}
	_, err := Read("bomb.yaml", strings.NewReader(b.String()))
	var ie *InputError
	// go-yaml's alias-ratio guard or the doctor's object budget, whichever
	// trips first; both are bad input naming the file.
	if !errors.As(err, &ie) || ie.File != "bomb.yaml" ||
		!(strings.Contains(err.Error(), "more than") || strings.Contains(err.Error(), "excessive aliasing")) {
		t.Fatalf("err = %v, want an alias or object budget error", err)
	}
}

// TestReadAliasExpansion: aliases that multiply a document far beyond its
// written size are refused before decoding.
func TestReadAliasExpansion(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	b.WriteString("l0: &l0 [a, b, c, d, e, f, g, h]\n")
	for lvl := 1; lvl <= 6; lvl++ {
		prev := "*l" + string(rune('0'+lvl-1))
		b.WriteString("l" + string(rune('0'+lvl)) + ": &l" + string(rune('0'+lvl)) + " [")
		b.WriteString(strings.TrimSuffix(strings.Repeat(prev+", ", 8), ", "))
		b.WriteString("]\n")
	}
	_, err := Read("wide.yaml", strings.NewReader(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expand") {
		t.Fatalf("err = %v, want an alias expansion error", err)
	}
	// A few aliases that expand modestly are fine.
	ok := "apiVersion: v1\nkind: Service\nmetadata: &m {name: a, labels: {x: y}}\nspec:\n  selector: {x: y}\nextra: [*m, *m, *m]\n"
	if _, err := Read("ok.yaml", strings.NewReader(ok)); err != nil {
		t.Errorf("modest aliases refused: %v", err)
	}
}

// TestDuplicateObjectsLastWins: like kubectl apply, the later definition of an
// object is the one that counts, and the earlier one is reported as skipped.
func TestDuplicateObjectsLastWins(t *testing.T) {
	good := m{}.yaml(t)
	bad := m{Readiness: "-"}.yaml(t)
	r := checkYAML(t, append(append(bad, []byte("---\n")...), good...))
	if _, ok := bySeverity(r)["ZD030"]; ok {
		t.Errorf("the earlier, replaced Deployment was checked: %s", summary(r))
	}
	if len(r.Services) != 1 || len(r.Skipped) != 3 {
		t.Errorf("services %d, skipped %+v; want 1 Service and the 3 earlier objects skipped", len(r.Services), r.Skipped)
	}
	r = checkYAML(t, append(append(good, []byte("---\n")...), bad...))
	if got := bySeverity(r)["ZD030"]; got != Error {
		t.Errorf("the later Deployment without readiness probe was not checked: %s", summary(r))
	}
}

// What a Pod can name is kept (decoded) besides being skipped by the
// rules; other unanalysed kinds and other API groups are not.
func TestReferencedKinds(t *testing.T) {
	in := `apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: tls, namespace: prod}
stringData: {k: v}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: api}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
---
apiVersion: example.com/v1
kind: ConfigMap
metadata: {name: other}
`
	ms, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Skipped) != 5 || len(ms.Objects) != 0 {
		t.Errorf("skipped %d objects %d, want 5 and 0: the rules read none of them", len(ms.Skipped), len(ms.Objects))
	}
	var got []string
	for _, o := range ms.Referenced {
		got = append(got, fmt.Sprintf("%s/%s/%s", o.Kind, o.Namespace, o.Name))
	}
	if strings.Join(got, ",") != "ConfigMap//conf,Secret/prod/tls,ServiceAccount//api" {
		t.Errorf("referenced %v", got)
	}
	if cm := ms.Referenced[0].Obj.(*corev1.ConfigMap); cm.Data["a"] != "b" {
		t.Errorf("ConfigMap data %v", cm.Data)
	}
}

// A key defined twice is read as kubectl applies it, the last value, with a
// warning naming both lines; nested mappings and List items alike.
func TestDuplicateKeysReadAsTheClusterDoes(t *testing.T) {
	in := "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\nspec:\n  type: ClusterIP\n  ports: [{port: 80, port: 81}]\n  type: LoadBalancer\n"
	ms, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(ms.Objects) != 1 || ms.Objects[0].Name != "b" {
		t.Fatalf("objects %+v, want service b", ms.Objects)
	}
	svc := ms.Objects[0].Obj.(*corev1.Service)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 81 {
		t.Errorf("spec %+v, want the last values", svc.Spec)
	}
	want := []string{`in.yaml:4: key "name" is defined again at line 5`, `in.yaml:7: key "type" is defined again at line 9`, `in.yaml:8: key "port" is defined again at line 8`}
	var got []string
	for _, w := range ms.Warnings {
		got = append(got, w.Source.String()+": "+w.Reason)
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d: %q, want %q...", i, got[i], want[i])
		}
	}
}

// The warnings of every file reach the report: Load gathers them.
func TestLoadKeepsWarnings(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: "+f[:1]+"\n  name: x"+f[:1]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 2 || len(Check(m).Warnings) != 2 {
		t.Errorf("warnings %+v, want one per file in the manifests and the report", m.Warnings)
	}
}

// A file over the per-file cap, or files over the run's budget together,
// are refused before any is parsed: the error names the file that crossed.
func TestInputBudget(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: the size counts, not the bytes written.
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	big := write("big.yaml", MaxFileSize+1)
	_, err := Load([]string{big}, nil)
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != big || !strings.Contains(err.Error(), "larger than 32 MiB") {
		t.Errorf("one file over the cap: %v", err)
	}
	os.Remove(big)
	sub := filepath.Join(dir, "many")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range 3 {
		last = filepath.Join("many", fmt.Sprintf("%d.yaml", i))
		write(last, MaxInputSize/2)
	}
	_, err = Load([]string{sub}, nil)
	if !errors.As(err, &ie) || ie.File != filepath.Join(dir, last) || !strings.Contains(err.Error(), "more than the 32 MiB one run reads") {
		t.Errorf("files over the budget together: %v", err)
	}
}
