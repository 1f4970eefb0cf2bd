package httpapi

import "github.com/apollo-platform/apollo/internal/driver"

// scanIDs reads the usual batch-get body, {"ids":["d-1","d-2",...]} with
// any JSON whitespace, without encoding/json: decoding it by reflection
// was about a tenth of the server's CPU per batch read. It accepts only
// what it can read exactly: the one field spelled "ids", and ids of valid
// id characters (so no escapes, no UTF-8). Anything else, valid JSON or
// not, reports false and the caller decodes body with unmarshalStrict,
// which gives the same ids for every body scanIDs accepts
// (FuzzScanIDsIsUnmarshal) and the precise error for the rest. The ids
// are slices of body, which is why it is a string: one allocation for
// all of them.
func scanIDs(body string, ids []string) ([]string, bool) {
	s := idScanner{s: body}
	if !s.skip('{') || !s.skipWord(`"ids"`) || !s.skip(':') || !s.skip('[') {
		return nil, false
	}
	if s.peek() == ']' {
		s.i++
	} else {
		for {
			id, ok := s.id()
			if !ok {
				return nil, false
			}
			ids = append(ids, id)
			s.space()
			if s.peek() == ']' {
				s.i++
				break
			}
			if !s.skip(',') {
				return nil, false
			}
		}
	}
	if !s.skip('}') {
		return nil, false
	}
	if s.space(); s.i != len(s.s) {
		return nil, false
	}
	return ids, true
}

// idScanner is scanIDs' position in the body.
type idScanner struct {
	s string
	i int
}

// peek is the next byte, or 0 at the end.
func (s *idScanner) peek() byte {
	if s.i < len(s.s) {
		return s.s[s.i]
	}
	return 0
}

// space skips JSON's insignificant whitespace.
func (s *idScanner) space() {
	for s.i < len(s.s) {
		switch s.s[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// skip skips whitespace, then c if it is next.
func (s *idScanner) skip(c byte) bool {
	s.space()
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// skipWord skips whitespace, then w if it is next.
func (s *idScanner) skipWord(w string) bool {
	s.space()
	if len(s.s)-s.i < len(w) || s.s[s.i:s.i+len(w)] != w {
		return false
	}
	s.i += len(w)
	return true
}

// id reads a quoted string of id characters, after whitespace.
func (s *idScanner) id() (string, bool) {
	if !s.skip('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.s) && driver.IsIDChar(s.s[s.i]) {
		s.i++
	}
	if s.peek() != '"' {
		return "", false
	}
	s.i++
	return s.s[start : s.i-1], true
}
