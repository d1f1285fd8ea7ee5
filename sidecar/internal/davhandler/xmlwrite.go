package davhandler

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"
)

// propWriter builds multistatus XML directly into a buffered writer: no
// encoding/xml reflection, no per-entry allocation beyond the href, so a
// 10,000-entry PROPFIND streams in a few milliseconds with bounded memory.
type propWriter struct {
	bw  *bufio.Writer
	buf []byte // scratch for one response element
}

func newPropWriter() *propWriter {
	return &propWriter{bw: bufio.NewWriterSize(nil, 64<<10), buf: make([]byte, 0, 4096)}
}

func (p *propWriter) reset(w io.Writer) { p.bw.Reset(w); p.buf = p.buf[:0] }

// flushEntry moves the scratch buffer into the stream.
func (p *propWriter) flushEntry() error {
	_, err := p.bw.Write(p.buf)
	p.buf = p.buf[:0]
	return err
}

func (p *propWriter) str(s string) { p.buf = append(p.buf, s...) }

func (p *propWriter) text(s string) { p.buf = appendEscaped(p.buf, s) }

func (p *propWriter) int(n int64) { p.buf = strconv.AppendInt(p.buf, n, 10) }

func (p *propWriter) httpTime(t time.Time) { p.buf = appendHTTPTime(p.buf, t) }

// appendHTTPTime appends t in http.TimeFormat (RFC 1123, GMT), formatted by
// hand: time.AppendFormat's layout parsing is a tenth of a big PROPFIND's
// CPU. Years outside 0001..9999 take the standard path.
func appendHTTPTime(dst []byte, t time.Time) []byte {
	sec := t.Unix()
	days := sec / 86400
	rem := sec % 86400
	if rem < 0 {
		rem += 86400
		days--
	}
	// Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	if y < 1 || y > 9999 {
		return t.UTC().AppendFormat(dst, http.TimeFormat)
	}
	wd := (days + 4) % 7 // 1970-01-01 was a Thursday
	if wd < 0 {
		wd += 7
	}
	const wdays = "SunMonTueWedThuFriSat"
	const months = "JanFebMarAprMayJunJulAugSepOctNovDec"
	dst = append(dst, wdays[wd*3:wd*3+3]...)
	dst = append(dst, ',', ' ', byte('0'+d/10), byte('0'+d%10), ' ')
	dst = append(dst, months[(m-1)*3:(m-1)*3+3]...)
	dst = append(dst, ' ', byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), ' ')
	h, mi, s := rem/3600, rem/60%60, rem%60
	return append(dst, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), ' ', 'G', 'M', 'T')
}

// segment appends one URL path segment, escaped for a URL and then for XML.
func (p *propWriter) segment(name string) {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			p.buf = appendEscaped(p.buf, url.PathEscape(name))
			return
		}
	}
	p.buf = append(p.buf, name...)
}

// appendEscaped appends s as XML character data, replacing characters XML
// 1.0 cannot carry (control characters, invalid UTF-8) with U+FFFD so the
// document stays well-formed whatever a file is called.
func appendEscaped(dst []byte, s string) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !xmlPlain8(load8(s, i)) {
			break
		}
	}
	for ; i < len(s); i++ {
		if !xmlPlain[s[i]] {
			return appendEscapedSlow(append(dst, s[:i]...), s[i:])
		}
	}
	return append(dst, s...)
}

// xmlPlain says which bytes appendEscaped copies as they are.
var xmlPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `&<>"'` {
		t[c] = false
	}
	return t
}()

const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// xmlPlain8 reports whether all 8 bytes of x are xmlPlain ("has a zero
// byte" and "has a byte below n" bit tricks, exact once no byte has its
// high bit set).
func xmlPlain8(x uint64) bool {
	if x&msb8 != 0 {
		return false
	}
	eq := func(c uint64) uint64 { y := x ^ (lsb8 * c); return (y - lsb8) &^ y & msb8 }
	less := (x - lsb8*0x20) &^ x & msb8
	return less|eq('&')|eq('<')|eq('>')|eq('"')|eq('\'') == 0
}

// load8 returns s[i:i+8] as a little-endian word (one load once compiled).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func appendEscapedSlow(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '&':
				dst = append(dst, "&amp;"...)
			case c == '<':
				dst = append(dst, "&lt;"...)
			case c == '>':
				dst = append(dst, "&gt;"...)
			case c == '"':
				dst = append(dst, "&quot;"...)
			case c == '\'':
				dst = append(dst, "&apos;"...)
			case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
				dst = append(dst, "\uFFFD"...)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == 0xFFFE || r == 0xFFFF {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}
