package doctor

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"zerodrop.dev/zerodrop/fixtures"
)

// FuzzRead feeds arbitrary bytes to the manifest reader and then to the
// rules and every output format. Whatever the input: no panic, no hang, an
// error is an InputError naming the input and a line inside it, and a
// successful read yields objects with a source line.
//
//	go test ./harness/doctor -run '^$' -fuzz FuzzRead -fuzztime 5m
func FuzzRead(f *testing.F) {
	for _, p := range fixtures.Hardenings() {
		for _, pdb := range []fixtures.PDBMode{fixtures.PDBNone, fixtures.PDBBlocking} {
			w, err := fixtures.New(fixtures.WithHardening(p), fixtures.WithPDB(pdb), fixtures.WithPools("pool-a"))
			if err != nil {
				f.Fatal(err)
			}
			out, err := w.RenderYAML()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(out)
		}
	}
	f.Add(m{}.yaml(f))
	f.Add(m{Kind: "StatefulSet", Extra: ingress}.yaml(f))
	f.Add(m{Kind: "DaemonSet", Extra: legacyIngress, SvcType: "NodePort"}.yaml(f))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n"))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"DeploymentList","items":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1}}]}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: &m {name: a}\nspec: {<<: *m}\n"))
	f.Add([]byte("---\n---\n# nothing\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: a\n"))
	f.Add([]byte("\xff\xfe\x00a"))

	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Read("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an InputError", err, err)
			}
			if ie.File != "fuzz.yaml" {
				t.Fatalf("error names %q, want fuzz.yaml", ie.File)
			}
			if ie.Line < 0 || ie.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("error line %d outside the input (%d lines): %v", ie.Line, bytes.Count(data, []byte("\n"))+1, err)
			}
			return
		}
		for _, o := range ms.Objects {
			if o.Source.File != "fuzz.yaml" || o.Source.Line < 1 {
				t.Fatalf("object %s has source %+v", o.Ref(), o.Source)
			}
			_ = o.Line("spec", "template", "spec", "containers", 0, "readinessProbe")
		}
		rep := Check(ms)
		for _, format := range []Format{FormatText, FormatJSON, FormatSARIF} {
			if err := Write(io.Discard, rep, format); err != nil {
				t.Fatalf("write %s: %v", format, err)
			}
		}
	})
}
