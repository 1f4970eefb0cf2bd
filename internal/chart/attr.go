package chart

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Attr is one extra attribute of an element, such as data-cell="…" on a
// group or font-size on the svg itself. The value is escaped; the name is
// the caller's constant.
type Attr struct{ Name, Value string }

// Style is how an element is painted. A zero field is left out, so the SVG
// default (or the enclosing element's) applies: no fill means black, no
// opacity means opaque.
type Style struct {
	Anchor      string // text-anchor: "middle" or "end"; start when empty
	Fill        string
	Stroke      string
	StrokeWidth float64
	Dash        string // stroke-dasharray, such as "4 2"
	Opacity     float64
	FontSize    float64
	Bold        bool
}

// attrs writes a style's attributes, always in the same order, so that the
// same style is the same text wherever it is used.
func (st Style) attrs(b *strings.Builder) {
	writeAttr(b, "text-anchor", st.Anchor)
	writeAttr(b, "fill", st.Fill)
	writeAttr(b, "stroke", st.Stroke)
	writeNumAttr(b, "stroke-width", st.StrokeWidth)
	writeAttr(b, "stroke-dasharray", st.Dash)
	writeNumAttr(b, "opacity", st.Opacity)
	writeNumAttr(b, "font-size", st.FontSize)
	if st.Bold {
		writeAttr(b, "font-weight", "bold")
	}
}

// writeAttr writes ` name="value"`, nothing for an empty value.
func writeAttr(b *strings.Builder, name, value string) {
	if value == "" || !isName(name) {
		return
	}
	b.WriteString(" " + name + `="` + escape(value) + `"`)
}

// writeNumAttr writes a number that is part of a style, such as an
// opacity of 0.08, as it is given: rounding it like a coordinate would
// change the picture. Nothing for 0 or a number that is not finite.
func writeNumAttr(b *strings.Builder, name string, v float64) {
	if v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
		writeAttr(b, name, strconv.FormatFloat(v, 'f', -1, 64))
	}
}

// writeCoords writes geometry, which is written even when it is 0.
func writeCoords(b *strings.Builder, names []string, vs ...float64) {
	for i, n := range names {
		b.WriteString(" " + n + `="` + num(vs[i]) + `"`)
	}
}

// num writes a coordinate to a tenth of a pixel, which no screen shows
// finer, without a trailing ".0". A non-finite number, which would make the
// document invalid, is written as 0.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	s := strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	if s == "-0" {
		return "0"
	}
	return s
}

// isName accepts the attribute names SVG uses (letters, digits, '-', '_',
// ':' and '.', not starting with a digit, '-' or '.'), so that no string
// can close the tag it is written in.
func isName(s string) bool {
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == ':'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-' || r == '.')) {
			return false
		}
	}
	return s != ""
}

// escape makes s safe as text and as a double-quoted attribute value. A
// character XML does not allow at all (most control characters) becomes
// U+FFFD, since escaping cannot make it legal.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case !xmlChar(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// xmlChar is the Char production of XML 1.0.
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
