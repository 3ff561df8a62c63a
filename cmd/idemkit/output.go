package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkit/idemkit"
)

// recordJSON is a record in --output json. Field names are stable; times
// are RFC 3339 in UTC; absent times are left out.
type recordJSON struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant"`
	Operation string `json:"operation"`
	Key       string `json:"key"`
	// AccountWide: the record is of account-wide keys; inspect and
	// resolve it with --account-wide.
	AccountWide bool       `json:"account_wide"`
	State       string     `json:"state"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
	LeaseUntil  *time.Time `json:"lease_until,omitempty"`
	ReplayUntil *time.Time `json:"replay_until,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// AgeSeconds is the time since CreatedAt.
	AgeSeconds int64 `json:"age_seconds"`
	// LeaseEndedSecondsAgo is the time since LeaseUntil; negative while
	// the lease runs.
	LeaseEndedSecondsAgo int64  `json:"lease_ended_seconds_ago"`
	Owner                string `json:"owner"`
	Fingerprint          string `json:"fingerprint"`
	// ExecutionID is the execution ID of the request (inspect --path).
	ExecutionID string          `json:"execution_id,omitempty"`
	Snapshot    *snapshotJSON   `json:"snapshot,omitempty"`
	Resolution  *resolutionJSON `json:"resolution,omitempty"`
}

type snapshotJSON struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	// BodyBytes is the stored body's length.
	BodyBytes int `json:"body_bytes"`
	// IsBase64Encoded is the Lambda proxy flag: the stored body is the
	// base64 text the handler returned.
	IsBase64Encoded bool `json:"is_base64_encoded"`
	// BodyOmitted: the body was too large to store.
	BodyOmitted bool `json:"body_omitted"`
	// Body is present only with --body, encoded as BodyEncoding says.
	Body         *string `json:"body,omitempty"`
	BodyEncoding string  `json:"body_encoding,omitempty"` // "text" or "base64"
}

type resolutionJSON struct {
	As         string     `json:"as"`
	Operator   string     `json:"operator"`
	Reason     string     `json:"reason"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func toJSON(r *idemkit.Record, now time.Time, withBody bool) recordJSON {
	j := recordJSON{
		ID:                   r.ID,
		Tenant:               r.Scope.Tenant,
		Operation:            r.Scope.Operation,
		Key:                  r.Scope.Key,
		AccountWide:          isAccountWide(r.ID),
		State:                string(r.State),
		CreatedAt:            jsonTime(r.CreatedAt),
		LeaseUntil:           jsonTime(r.LeaseUntil),
		ReplayUntil:          jsonTime(r.ReplayUntil),
		ExpiresAt:            jsonTime(r.ExpiresAt),
		CompletedAt:          jsonTime(r.CompletedAt),
		AgeSeconds:           int64(now.Sub(r.CreatedAt) / time.Second),
		LeaseEndedSecondsAgo: int64(now.Sub(r.LeaseUntil) / time.Second),
		Owner:                r.Owner,
		Fingerprint:          r.Fingerprint,
	}
	if s := r.Snapshot; s != nil {
		sj := &snapshotJSON{Status: s.Status, Headers: map[string][]string(s.Header), BodyBytes: len(s.Body), IsBase64Encoded: s.Base64, BodyOmitted: s.Omitted}
		if sj.Headers == nil {
			sj.Headers = map[string][]string{}
		}
		if withBody && !s.Omitted {
			text, enc := bodyText(s.Body)
			sj.Body, sj.BodyEncoding = &text, enc
		}
		j.Snapshot = sj
	}
	if res := r.Resolution; res != nil {
		j.Resolution = &resolutionJSON{As: string(res.As), Operator: res.Operator, Reason: res.Reason, ResolvedAt: jsonTime(res.ResolvedAt)}
	}
	return j
}

// bodyText returns a body as printable text: as is when it is UTF-8
// without control characters other than tab and line breaks, else base64.
func bodyText(b []byte) (text, encoding string) {
	if printable(b) {
		return string(b), "text"
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// unsafeRune reports whether a terminal acts on r or shows it as something
// it is not: a C0 or C1 control or DEL (escape sequences, 8-bit CSI), a
// format character (bidi overrides and isolates, zero-width characters,
// which can reorder or hide text), a line or paragraph separator, or the
// replacement character of an invalid byte.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError
}

// writeJSON writes v as indented JSON in which every unsafe rune is
// escaped (\uXXXX): encoding/json leaves C1 controls and format
// characters raw. Such runes only occur inside JSON strings, so the
// output stays the same JSON value.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeUnsafe(buf.Bytes()))
	return err
}

// escapeUnsafe returns JSON text with every unsafe rune that is not ASCII
// written as a \u escape (a surrogate pair past U+FFFF). encoding/json
// already escapes the ASCII ones inside strings.
func escapeUnsafe(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf || !unsafeRune(r) || (r == utf8.RuneError && n == 3) {
			// encoding/json writes an invalid byte as U+FFFD itself.
			if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		} else {
			out = fmt.Appendf(out, "\\u%04x", r)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// writeRecord prints r as a two-column table, with the Execution ID row
// when executionID is not empty.
func writeRecord(w io.Writer, r *idemkit.Record, now time.Time, withBody bool, executionID string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("ID", displayText(r.ID))
	row("Tenant", displayText(r.Scope.Tenant))
	row("Operation", displayText(r.Scope.Operation))
	row("Key", displayKey(r.Scope.Key))
	row("State", string(r.State))
	row("Created", stamp(r.CreatedAt, now))
	if !r.CreatedAt.IsZero() {
		row("Age", age(now.Sub(r.CreatedAt)))
	}
	row("Lease until", stamp(r.LeaseUntil, now))
	row("Replay until", stamp(r.ReplayUntil, now))
	row("Expires", stamp(r.ExpiresAt, now))
	row("Completed", stamp(r.CompletedAt, now))
	row("Owner", displayText(r.Owner))
	row("Fingerprint", displayText(r.Fingerprint))
	if executionID != "" {
		row("Execution ID", executionID)
	}
	var body []byte
	if s := r.Snapshot; s != nil {
		row("Status", fmt.Sprint(s.Status))
		for _, name := range slices.Sorted(maps.Keys(s.Header)) {
			for _, v := range s.Header[name] {
				row("Header", displayText(name)+": "+displayText(v))
			}
		}
		switch {
		case s.Omitted:
			row("Body", "not stored (too large); replays answer with the outcome only")
		case len(s.Body) == 0:
			row("Body", "empty")
		default:
			note := ""
			if s.Base64 {
				note = ", base64 text of a binary response (IsBase64Encoded)"
			}
			if !withBody {
				note += "; --body prints it"
			}
			row("Body", fmt.Sprintf("%d bytes%s", len(s.Body), note))
			if withBody {
				body = s.Body
			}
		}
	} else {
		row("Response", "none stored")
	}
	if res := r.Resolution; res != nil {
		row("Resolved as", string(res.As))
		row("Resolved by", displayText(res.Operator))
		row("Resolved at", stamp(res.ResolvedAt, now))
		row("Reason", displayText(res.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if body != nil {
		return writeBody(w, body)
	}
	return nil
}

// writeBody prints a stored body for a terminal: text as is; text holding
// a control character other than tab and line feed quoted as a Go string
// (like displayText, so that it can neither act on the terminal nor forge
// a line); anything that is not UTF-8 as base64. --output json gives the
// body exact.
func writeBody(w io.Writer, body []byte) error {
	var text string
	switch {
	case !utf8.Valid(body):
		fmt.Fprintf(w, "\nBody (binary, %d bytes, printed as base64):\n", len(body))
		text = base64.StdEncoding.EncodeToString(body)
	case !terminalSafe(body):
		fmt.Fprintf(w, "\nBody (text with control characters, %d bytes, printed quoted as a Go string; --output json gives it exact):\n", len(body))
		text = strconv.Quote(string(body))
	default:
		fmt.Fprintf(w, "\nBody:\n")
		text = strings.TrimRight(string(body), "\n")
	}
	_, err := io.WriteString(w, text+"\n")
	return err
}

// terminalSafe reports whether UTF-8 text holds no character a terminal
// acts on but tab and line feed (displayText's set, less those two).
func terminalSafe(b []byte) bool {
	for _, r := range string(b) {
		if r != '\t' && r != '\n' && unsafeRune(r) {
			return false
		}
	}
	return true
}

// stamp formats t in RFC 3339 (UTC) with its distance from now.
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	rel := age(d) + " ago"
	if d < 0 {
		rel = "in " + age(-d)
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

// age formats a duration for people: 45s, 12m30s, 5h02m, 3d04h.
func age(d time.Duration) string {
	if d < 0 {
		return "-" + age(-d)
	}
	d = d.Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// displayText returns stored text (a request's path, a tenant, a header
// value, an operator's reason) as the table output prints it: as is when
// it holds no unsafe rune, else quoted as a Go string, so that it can
// neither send escape sequences to the terminal, nor forge a line or a
// column, nor reorder or hide what is shown. JSON output escapes the same
// runes (writeJSON).
func displayText(s string) string {
	for _, r := range s {
		if unsafeRune(r) || !visibleRune(r) {
			return quoteText(s)
		}
	}
	return s
}

// visibleRune reports whether r is a graphic character a reader sees as
// itself: not a space other than U+0020 (which shows as one), nor a
// default-ignorable one a terminal draws as nothing (a combining grapheme
// joiner U+034F, a variation selector, a Hangul filler U+115F, U+3164,
// U+FFA0), nor the braille blank U+2800. "tenant-a" and "tenant-a" plus
// any of them print the same unquoted.
func visibleRune(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r) && !unicode.In(r, unicode.Zs, unicode.Cf,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) && r != '\u2800'
}

// quoteText returns s quoted as a Go string in which every rune that is
// not visible (visibleRune) or is unsafe (unsafeRune) is escaped (\t,
// \x1b, \u034f) and every invalid byte is \xNN: strconv.Quote leaves
// the invisible graphic ones raw.
func quoteText(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case visibleRune(r) && !unsafeRune(r):
			b = append(b, s[i:i+n]...)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b = append(b, q[1:len(q)-1]...)
		}
		i += n
	}
	return string(append(b, '"'))
}

// displayKey returns a key as --key accepts it back: bare when it can be,
// else as a structured-field string. A key no header could carry (with a
// control character) is quoted by displayText instead.
func displayKey(k string) string {
	if q := displayText(k); q != k {
		return q
	}
	if !strings.ContainsAny(k, " \"\\") {
		return k
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(k) + `"`
}

// canonical returns the canonical form of a header name.
func canonical(name string) string { return http.CanonicalHeaderKey(strings.TrimSpace(name)) }
