package davproxy

import (
	"bytes"
	"encoding/xml"
	"io"
)

// hrefRewriter streams an XML body through, replacing the text of every
// DAV:href element with mapHref(text). Everything else is copied byte for
// byte: the decoder is used only to find token boundaries
// (Decoder.InputOffset) in a window of the input it has read, so memory is
// bounded by the decoder's look-ahead plus one token, whatever the size of
// the multistatus. If the body is not well-formed XML the rest is copied
// unchanged, except that any upstream host is still replaced in what the
// window held.
type hrefRewriter struct {
	src     io.ReadCloser
	win     *window
	dec     *xml.Decoder
	mapHref func(string) string
	hosts   []string
	out     bytes.Buffer
	inHref  bool
	text    bytes.Buffer
	raw     bool   // decoding gave up: copy through, scrubbing hosts
	carry   []byte // raw mode: tail that may hold the start of a host
	err     error
}

func newHrefRewriter(src io.ReadCloser, mapHref func(string) string, hosts []string) io.ReadCloser {
	w := &window{r: src}
	return &hrefRewriter{src: src, win: w, dec: xml.NewDecoder(w), mapHref: mapHref, hosts: hosts}
}

func (h *hrefRewriter) Close() error { return h.src.Close() }

func (h *hrefRewriter) Read(p []byte) (int, error) {
	for h.out.Len() == 0 && h.err == nil {
		h.step()
	}
	if h.out.Len() > 0 {
		return h.out.Read(p)
	}
	return 0, h.err
}

// step consumes one token (or one chunk in raw mode) into h.out.
func (h *hrefRewriter) step() {
	if h.raw {
		buf := make([]byte, 32<<10)
		n, err := h.src.Read(buf)
		h.carry = append(h.carry, buf[:n]...)
		h.carry = scrub(&h.out, h.carry, h.hosts, err != nil)
		if err != nil {
			h.err = err
		}
		return
	}
	tok, err := h.dec.Token()
	if err != nil {
		rest := bytes.Clone(h.win.take(h.win.base + h.win.pending()))
		if err != io.EOF {
			h.raw = true
			h.carry = scrub(&h.out, rest, h.hosts, h.win.err != nil)
			if h.win.err != nil {
				h.err = h.win.err
			}
			return
		}
		h.out.Write(rest)
		h.err = io.EOF
		return
	}
	off := h.dec.InputOffset()
	switch t := tok.(type) {
	case xml.StartElement:
		if !h.inHref && t.Name.Space == "DAV:" && t.Name.Local == "href" {
			h.out.Write(h.win.take(off))
			h.inHref = true
			h.text.Reset()
			return
		}
	case xml.CharData:
		if h.inHref {
			h.text.Write(t)
			h.win.take(off) // replaced below
			return
		}
	case xml.EndElement:
		if h.inHref && t.Name.Space == "DAV:" && t.Name.Local == "href" {
			h.inHref = false
			_ = xml.EscapeText(&h.out, []byte(h.mapHref(h.text.String())))
			h.out.Write(h.win.take(off))
			return
		}
	}
	if h.inHref {
		h.win.take(off) // comments or elements inside an href are dropped
		return
	}
	h.out.Write(h.win.take(off))
}

// window records what the decoder has read from r that has not yet been
// taken: buf[head:] holds input bytes [base, base+len(buf)-head).
type window struct {
	r    io.Reader
	buf  []byte
	head int
	base int64
	err  error
}

func (w *window) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if w.head > 0 && w.head >= len(w.buf)/2 {
		w.buf = w.buf[:copy(w.buf, w.buf[w.head:])]
		w.head = 0
	}
	w.buf = append(w.buf, p[:n]...)
	if err != nil && err != io.EOF {
		w.err = err
	}
	return n, err
}

// pending is the number of bytes read but not yet taken.
func (w *window) pending() int64 { return int64(len(w.buf) - w.head) }

// take removes and returns the input bytes up to absolute offset off. The
// result is only valid until the next Read.
func (w *window) take(off int64) []byte {
	n := off - w.base
	if n <= 0 {
		return nil
	}
	if n > w.pending() {
		n = w.pending()
	}
	out := w.buf[w.head : w.head+int(n)]
	w.head += int(n)
	w.base += n
	return out
}

// scrub writes buf to out with every host replaced by "sidecar". Unless
// final, it keeps back (and returns) a tail that could be the start of a
// host split across reads.
func scrub(out *bytes.Buffer, buf []byte, hosts []string, final bool) []byte {
	longest := 0
	for _, h := range hosts {
		longest = max(longest, len(h))
	}
	safe := len(buf)
	if !final && longest > 0 {
		safe = max(0, len(buf)-(longest-1))
	}
	i := 0
next:
	for i < safe {
		for _, h := range hosts {
			if h != "" && bytes.HasPrefix(buf[i:], []byte(h)) {
				out.WriteString("sidecar")
				i += len(h)
				continue next
			}
		}
		out.WriteByte(buf[i])
		i++
	}
	return bytes.Clone(buf[i:])
}
