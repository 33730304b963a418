package main

import (
	"strconv"
)

// fastParse decodes the common form of a trace line without encoding/json:
// one flat object whose keys are among op, id, size, stream and fraction,
// each at most once, with ASCII strings without escapes and plain JSON
// numbers. It reports ok=false for anything else, and the caller then
// decodes the line with strictParse (encoding/json plus the checks for
// unknown and repeated keys), so both paths give the same result wherever
// fastParse answers (FuzzFastParse checks this).
func fastParse(line []byte) (o op, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return o, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return o, skipSpace(line, i+1) == len(line)
	}
	for {
		key, j, good := fastString(line, i)
		if !good {
			return o, false
		}
		i = skipSpace(line, j)
		if i >= len(line) || line[i] != ':' {
			return o, false
		}
		i = skipSpace(line, i+1)
		switch string(key) {
		case "op", "id":
			dst := &o.Op
			if string(key) == "id" {
				dst = &o.ID
			}
			s, j, good := fastString(line, i)
			if !good || *dst != nil { // a key twice: strictParse says so
				return o, false
			}
			str := string(s)
			*dst, i = &str, j
		case "size", "stream":
			dst := &o.Size
			if string(key) == "stream" {
				dst = &o.Stream
			}
			n, j, good := fastInt(line, i)
			if !good || *dst != nil {
				return o, false
			}
			*dst, i = &n, j
		case "fraction":
			if o.Fraction != nil {
				return o, false
			}
			j := numberEnd(line, i)
			if j < 0 {
				return o, false
			}
			f, err := strconv.ParseFloat(string(line[i:j]), 64)
			if err != nil {
				return o, false
			}
			o.Fraction = &f
			i = j
		default:
			return o, false
		}
		i = skipSpace(line, i)
		if i >= len(line) {
			return o, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return o, skipSpace(line, i+1) == len(line)
		default:
			return o, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// fastString reads a JSON string of printable ASCII without escapes.
func fastString(b []byte, i int) (s []byte, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// fastInt reads a JSON integer (no fraction or exponent) that fits int64.
func fastInt(b []byte, i int) (n int64, end int, ok bool) {
	j := numberEnd(b, i)
	if j < 0 {
		return 0, 0, false
	}
	for _, c := range b[i:j] {
		if c == '.' || c == 'e' || c == 'E' {
			return 0, 0, false
		}
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, j, true
}

// numberEnd returns the end of a JSON number starting at i, or -1.
func numberEnd(b []byte, i int) int {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return -1
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return -1
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return -1
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	return j
}
