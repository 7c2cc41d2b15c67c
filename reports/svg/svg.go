// Package svg writes small SVG documents by hand: rectangles, lines, paths,
// text and groups, with a linear scale and tick helper for plots.
//
// Why hand-built rather than a plotting library: the reports need a handful
// of shapes (stacked bars, shaded spans, vertical markers, axes), must embed
// inline in a single HTML file that works offline, and must be byte-for-byte
// deterministic so renderer tests can compare outputs and reviewers can diff
// them. The Go plotting libraries pull in font and image dependencies for far
// more than that, and their SVG back-ends embed fonts or vary with map order.
// This package is a few hundred lines, has no dependencies beyond the
// standard library, escapes every attribute value and text node, and formats
// numbers with a fixed precision.
package svg

import (
	"math"
	"strconv"
	"strings"
)

// Attr is one attribute. Attributes are written in the order given, which
// keeps the output deterministic.
type Attr struct{ Key, Value string }

// A builds attributes from key, value pairs: A("fill", "red", "class", "ok").
// A trailing key without a value is ignored.
func A(kv ...string) []Attr {
	out := make([]Attr, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Attr{kv[i], kv[i+1]})
	}
	return out
}

// Doc is an SVG document being written. The zero value is not usable; call
// New.
type Doc struct {
	b     strings.Builder
	w, h  float64
	depth int
}

// New starts a document of the given size in user units (pixels). attrs go
// on the root element (class, role, aria-label ...).
func New(width, height float64, attrs ...Attr) *Doc {
	d := &Doc{w: width, h: height}
	d.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="`)
	d.b.WriteString(Num(width))
	d.b.WriteString(`" height="`)
	d.b.WriteString(Num(height))
	d.b.WriteString(`" viewBox="0 0 `)
	d.b.WriteString(Num(width))
	d.b.WriteByte(' ')
	d.b.WriteString(Num(height))
	d.b.WriteByte('"')
	writeAttrs(&d.b, attrs)
	d.b.WriteString(">\n")
	return d
}

// Rect draws a rectangle. Negative sizes are normalised so the rectangle
// covers the same area (SVG rejects negative width/height).
func (d *Doc) Rect(x, y, w, h float64, attrs ...Attr) {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	d.elem("rect", []Attr{{"x", Num(x)}, {"y", Num(y)}, {"width", Num(w)}, {"height", Num(h)}}, attrs, "")
}

// Line draws a straight line.
func (d *Doc) Line(x1, y1, x2, y2 float64, attrs ...Attr) {
	d.elem("line", []Attr{{"x1", Num(x1)}, {"y1", Num(y1)}, {"x2", Num(x2)}, {"y2", Num(y2)}}, attrs, "")
}

// Path draws a path from p.
func (d *Doc) Path(p *Path, attrs ...Attr) {
	if p.Empty() {
		return
	}
	d.elem("path", []Attr{{"d", p.String()}}, attrs, "")
}

// Text writes s at (x, y); s is escaped.
func (d *Doc) Text(x, y float64, s string, attrs ...Attr) {
	d.elem("text", []Attr{{"x", Num(x)}, {"y", Num(y)}}, attrs, s)
}

// Title adds a <title> child to the element opened last: browsers show it
// as a tooltip and screen readers read it.
func (d *Doc) Title(s string) {
	d.indent()
	d.b.WriteString("<title>")
	d.b.WriteString(Escape(s))
	d.b.WriteString("</title>\n")
}

// Open starts a container element (g, a, defs, pattern, clipPath ...); Close
// ends it. Prefer Group for g.
func (d *Doc) Open(tag string, attrs ...Attr) {
	d.indent()
	d.b.WriteByte('<')
	d.b.WriteString(tag)
	writeAttrs(&d.b, attrs)
	d.b.WriteString(">\n")
	d.depth++
}

// Close ends the element opened last with tag.
func (d *Doc) Close(tag string) {
	if d.depth > 0 {
		d.depth--
	}
	d.indent()
	d.b.WriteString("</")
	d.b.WriteString(tag)
	d.b.WriteString(">\n")
}

// Group writes a <g> with attrs around what fn draws.
func (d *Doc) Group(fn func(), attrs ...Attr) {
	d.Open("g", attrs...)
	fn()
	d.Close("g")
}

// String ends the document and returns it. Call it once, after drawing.
func (d *Doc) String() string {
	for d.depth > 0 {
		// An unclosed group is a bug in the caller; closing it keeps the
		// output well-formed rather than silently dropping the content.
		d.Close("g")
	}
	return d.b.String() + "</svg>\n"
}

func (d *Doc) elem(tag string, geom, attrs []Attr, text string) {
	d.indent()
	d.b.WriteByte('<')
	d.b.WriteString(tag)
	writeAttrs(&d.b, geom)
	writeAttrs(&d.b, attrs)
	if text == "" && tag != "text" {
		d.b.WriteString("/>\n")
		return
	}
	d.b.WriteByte('>')
	d.b.WriteString(Escape(text))
	d.b.WriteString("</")
	d.b.WriteString(tag)
	d.b.WriteString(">\n")
}

func (d *Doc) indent() {
	for range d.depth {
		d.b.WriteByte(' ')
	}
}

func writeAttrs(b *strings.Builder, attrs []Attr) {
	for _, a := range attrs {
		if a.Key == "" || !validName(a.Key) {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteString(`="`)
		b.WriteString(Escape(a.Value))
		b.WriteByte('"')
	}
}

// validName accepts the attribute names this package's callers use (letters,
// digits, '-', ':', '_'), so a caller bug cannot inject markup via a key.
func validName(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == ':':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// Escape escapes s for XML text and double-quoted attribute values, and drops
// characters XML 1.0 does not allow.
func Escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#39;")
		default:
			if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF && (r < 0xD800 || r > 0xDFFF) {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// Num formats f with at most two decimals and no trailing zeros, the same on
// every platform. NaN and infinities become 0 so a bad figure cannot break
// the document.
func Num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	f = math.Round(f*100) / 100
	if f == 0 {
		return "0" // also turns -0 into 0
	}
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Path accumulates path data.
type Path struct{ b strings.Builder }

// MoveTo starts a subpath at (x, y).
func (p *Path) MoveTo(x, y float64) *Path { return p.cmd('M', x, y) }

// LineTo draws a line to (x, y).
func (p *Path) LineTo(x, y float64) *Path { return p.cmd('L', x, y) }

// Rect adds a closed rectangle subpath; many bars of one series can share a
// path, which keeps the document small.
func (p *Path) Rect(x, y, w, h float64) *Path {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	p.cmd('M', x, y)
	p.b.WriteString("h" + Num(w) + "v" + Num(h) + "h" + Num(-w) + "Z")
	return p
}

// ClosePath closes the current subpath.
func (p *Path) ClosePath() *Path { p.b.WriteByte('Z'); return p }

// Empty reports whether nothing was added.
func (p *Path) Empty() bool { return p.b.Len() == 0 }

// String is the path data.
func (p *Path) String() string { return p.b.String() }

func (p *Path) cmd(c byte, x, y float64) *Path {
	p.b.WriteByte(c)
	p.b.WriteString(Num(x))
	p.b.WriteByte(' ')
	p.b.WriteString(Num(y))
	return p
}

// Scale maps a domain interval linearly onto a range interval (for example
// seconds onto pixels; a range may be reversed for a y axis).
type Scale struct{ D0, D1, R0, R1 float64 }

// Map maps v; a degenerate domain maps everything to R0.
func (s Scale) Map(v float64) float64 {
	if s.D1 == s.D0 {
		return s.R0
	}
	return s.R0 + (v-s.D0)*(s.R1-s.R0)/(s.D1-s.D0)
}

// Ticks returns about n "nice" tick values (steps of 1, 2 or 5 times a power
// of ten, see NiceStep) covering [lo, hi], starting at the first multiple of the step at or
// above lo.
func Ticks(lo, hi float64, n int) []float64 {
	if n < 1 || math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		return []float64{lo}
	}
	step := NiceStep((hi - lo) / float64(n))
	var out []float64
	start := math.Ceil(lo/step-1e-9) * step
	for i := 0; ; i++ {
		v := start + float64(i)*step
		if v > hi+step*1e-9 || i > 1000 {
			break
		}
		out = append(out, roundTo(v, step))
	}
	return out
}

// roundTo removes float noise (0.30000000000000004) by rounding v to the
// decimals that step has.
func roundTo(v, step float64) float64 {
	dec := max(0, int(-math.Floor(math.Log10(step))))
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', dec, 64), 64)
	if err != nil || r == 0 {
		return 0 // also turns -0 into 0
	}
	return r
}

// NiceStep rounds raw to the nearest of 1, 2 or 5 times a power of ten.
func NiceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f < 1.5:
		return p
	case f < 3:
		return 2 * p
	case f < 7:
		return 5 * p
	default:
		return 10 * p
	}
}
