package httpmw

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/internal/httpheader"
)

// newResponder returns how the middleware stores, replays and answers with a
// recorded response; a stored header is one a allows.
func newResponder(a *adapter.Adapter) adapter.Responder[*response] {
	return adapter.Responder[*response]{
		Snapshot: func(r *response) *idemkit.Snapshot {
			if r.streamed {
				return &idemkit.Snapshot{Status: r.status, Header: a.FilterSent(r.sent), Omitted: true}
			}
			return &idemkit.Snapshot{Status: r.status, Header: a.FilterSent(r.sent), Body: r.body.Bytes()}
		},
		Replay:  replayResponse,
		Fresh:   freshResponse,
		Respond: respond,
	}
}

// replayResponse returns the response for the stored snapshot s, marked with the
// ReplayedHeader, its body decoded when a Lambda adapter stored it in
// base64.
func replayResponse(s *idemkit.Snapshot) *response {
	r := &response{status: s.Status, sent: s.Header.Clone()}
	if r.sent == nil {
		r.sent = http.Header{}
	}
	r.sent.Set(adapter.ReplayedHeader, "true")
	body := s.Body
	if s.Base64 {
		// Stored by a Lambda adapter from a base64 proxy response.
		if b, err := base64.StdEncoding.DecodeString(string(s.Body)); err == nil {
			body = b
		}
	}
	r.body = *bytes.NewBuffer(body)
	return r
}

// freshResponse returns the handler's response r without the ReplayedHeader, in
// any spelling.
func freshResponse(r *response) *response {
	// sent is the recorder's own copy of the handler's header.
	for k := range r.sent {
		if httpheader.EqualFold(k, adapter.ReplayedHeader) {
			delete(r.sent, k)
		}
	}
	return r
}

// respond returns the response recorded for resp.
func respond(resp httpproblem.Response) *response {
	r := &response{status: resp.Status, sent: resp.Header}
	if r.sent == nil {
		r.sent = http.Header{}
	}
	r.body = *bytes.NewBuffer(resp.Body)
	return r
}

// response records a guarded handler's response.
type response struct {
	header  http.Header // what the handler sets
	sent    http.Header // header at WriteHeader
	status  int
	body    bytes.Buffer
	trailer http.Header // trailers, canonical names; never stored

	// A handler's recorder streams to w once its body would pass limit
	// bytes: streamed is then set and body is empty.
	w        http.ResponseWriter
	limit    int64
	streamed bool
}

func (r *response) Header() http.Header { return r.header }

func (r *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if r.sent != nil {
		return
	}
	if code < 200 {
		return // informational responses are not recorded
	}
	r.status = code
	r.sent = r.header.Clone()
}

func (r *response) Write(p []byte) (int, error) {
	if r.sent == nil {
		r.WriteHeader(http.StatusOK)
	}
	if !r.streamed && r.w != nil && int64(r.body.Len())+int64(len(p)) > r.limit {
		if err := r.stream(); err != nil {
			return 0, err
		}
	}
	if r.streamed {
		return r.w.Write(p)
	}
	return r.body.Write(p)
}

// stream sends the response recorded so far to r.w, as the client gets a
// fresh response (without the ReplayedHeader), and makes later writes pass
// through: its body is over the limit, so it is not stored.
func (r *response) stream() error {
	r.streamed = true
	h := r.w.Header()
	for k, vs := range r.sent {
		if !httpheader.EqualFold(k, adapter.ReplayedHeader) {
			h[k] = vs
		}
	}
	r.w.WriteHeader(r.status)
	_, err := r.w.Write(r.body.Bytes())
	r.body = bytes.Buffer{}
	return err
}

// sendTrailers sets the trailers of a streamed response on r.w, which
// sends them after the body: those its header declared under their
// names, the others with http.TrailerPrefix.
func (r *response) sendTrailers() {
	h := r.w.Header()
	for name, vs := range r.trailer {
		if declared(h, name) {
			h[name] = vs
		} else {
			h[http.TrailerPrefix+name] = vs
		}
	}
}

// finish records an implicit 200 for a handler that wrote nothing, and the
// trailers the handler set: the names its Trailer header declared and
// those with http.TrailerPrefix, as net/http sends them after the body.
func (r *response) finish() {
	if r.sent == nil {
		r.WriteHeader(http.StatusOK)
	}
	for _, v := range r.sent["Trailer"] {
		for _, name := range strings.Split(v, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if vs, ok := r.header[name]; ok && name != "" {
				r.addTrailer(name, vs)
			}
		}
	}
	for k, vs := range r.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			r.addTrailer(http.CanonicalHeaderKey(name), vs)
		}
	}
}

func (r *response) addTrailer(name string, vs []string) {
	if r.trailer == nil {
		r.trailer = http.Header{}
	}
	r.trailer[name] = vs
}

func (r *response) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.sent {
		h[k] = vs
	}
	// Trailers are declared, so that the body is sent chunked with them
	// after it, and then without a Content-Length.
	for name := range r.trailer {
		if !declared(h, name) {
			h.Add("Trailer", name)
		}
	}
	if r.body.Len() > 0 && h.Get("Trailer") == "" && h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(r.body.Len()))
	}
	w.WriteHeader(r.status)
	w.Write(r.body.Bytes())
	for name, vs := range r.trailer {
		h[name] = vs
	}
}

// declared reports whether h's Trailer header names name.
func declared(h http.Header, name string) bool {
	for _, v := range h["Trailer"] {
		for _, n := range strings.Split(v, ",") {
			if httpheader.EqualFold(strings.TrimSpace(n), name) {
				return true
			}
		}
	}
	return false
}
