package svg

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNum(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{1.5, "1.5"},
		{1.005, "1"}, // binary 1.005 is just below, rounds down
		{2.345, "2.35"},
		{-3.1, "-3.1"},
		{1234567.891, "1234567.89"},
		{0.001, "0"},
		{math.NaN(), "0"},
		{math.Inf(1), "0"},
	}
	for _, tc := range tests {
		if got := Num(tc.in); got != tc.want {
			t.Errorf("Num(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEscape(t *testing.T) {
	got := Escape(`<b a="x">'&'</b>` + "\x00\x07ok\n")
	want := "&lt;b a=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;ok\n"
	if got != want {
		t.Errorf("Escape = %q, want %q", got, want)
	}
}

// wellFormed parses doc as XML and returns the element names in order.
func wellFormed(t *testing.T, doc string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var names []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			names = append(names, se.Name.Local)
		}
	}
}

func TestDocIsWellFormedAndDeterministic(t *testing.T) {
	draw := func() string {
		d := New(200, 100, A("class", "plot", "role", "img", "aria-label", `a "quoted" <label>`)...)
		d.Group(func() {
			d.Title("tooltip & more")
			d.Rect(10, 90, 20, -30, A("fill", "#0a0")...)
			d.Line(0, 0, 200, 100, A("stroke", "red")...)
			var p Path
			p.Rect(1, 2, 3, 4).MoveTo(5, 6).LineTo(7.125, 8).ClosePath()
			d.Path(&p, A("fill", "blue")...)
			d.Path(&Path{}) // empty: nothing written
			d.Text(5, 10, "<script>alert(1)</script>", A("font-size", "10", "bad key", "x", `on"x`, "y")...)
			d.Text(5, 20, "")
		}, A("class", "g1")...)
		return d.String()
	}
	a, b := draw(), draw()
	if a != b {
		t.Fatalf("two identical drawings differ:\n%s\n%s", a, b)
	}
	names := wellFormed(t, a)
	want := []string{"svg", "g", "title", "rect", "line", "path", "text", "text"}
	if !slices.Equal(names, want) {
		t.Errorf("elements = %v, want %v", names, want)
	}
	for _, s := range []string{
		`<rect x="10" y="60" width="20" height="30" fill="#0a0"/>`, // negative height normalised
		`d="M1 2h3v4h-3ZM5 6L7.13 8Z"`,
		`&lt;script&gt;`,
		`viewBox="0 0 200 100"`,
	} {
		if !strings.Contains(a, s) {
			t.Errorf("output lacks %s:\n%s", s, a)
		}
	}
	if strings.Contains(a, "bad key") || strings.Contains(a, `on"x`) {
		t.Errorf("invalid attribute names were written:\n%s", a)
	}
}

func TestUnclosedGroupIsClosed(t *testing.T) {
	d := New(10, 10)
	d.Open("g")
	d.Rect(0, 0, 1, 1)
	wellFormed(t, d.String())
}

func TestScale(t *testing.T) {
	s := Scale{D0: 0, D1: 10, R0: 100, R1: 0} // reversed, like a y axis
	for _, tc := range []struct{ in, want float64 }{{0, 100}, {10, 0}, {2.5, 75}, {-1, 110}} {
		if got := s.Map(tc.in); got != tc.want {
			t.Errorf("Map(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := (Scale{D0: 3, D1: 3, R0: 7, R1: 9}).Map(3); got != 7 {
		t.Errorf("degenerate Map = %v, want 7", got)
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 100, 5, []float64{0, 20, 40, 60, 80, 100}},
		{0, 1, 4, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0, 0.3, 3, []float64{0, 0.1, 0.2, 0.3}},
		{3, 97, 4, []float64{20, 40, 60, 80}},
		{5, 5, 4, []float64{5}},
		{10, 0, 2, []float64{0, 5, 10}},
		{0, 10, 0, nil},
		{0, math.Inf(1), 3, nil},
	}
	for _, tc := range tests {
		if got := Ticks(tc.lo, tc.hi, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Ticks(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0.8, 1}, {1, 1}, {1.2, 1}, {1.6, 2}, {3, 5}, {7, 10}, {23, 20}, {0, 1}, {-4, 1}} {
		if got := NiceStep(tc.in); got != tc.want {
			t.Errorf("NiceStep(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
