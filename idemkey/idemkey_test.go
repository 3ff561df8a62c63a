package idemkey_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/idemkey"
)

func TestParseKey(t *testing.T) {
	long255 := strings.Repeat("k", 255)
	printable := func() string {
		var b strings.Builder
		for c := byte(0x21); c <= 0x7e; c++ {
			if c != '"' && c != ',' {
				b.WriteByte(c)
			}
		}
		return b.String()
	}()
	tests := []struct {
		name   string
		values []string
		max    int
		want   string
		err    error
	}{
		{"bare", []string{"abc"}, 0, "abc", nil},
		{"quoted", []string{`"abc"`}, 0, "abc", nil},
		{"uuid bare", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, 0, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"uuid quoted", []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, 0, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"surrounding whitespace", []string{"  abc\t"}, 0, "abc", nil},
		{"quoted with spaces", []string{`"a b c"`}, 0, "a b c", nil},
		{"quoted with escaped quote", []string{`"a\"b"`}, 0, `a"b`, nil},
		{"every printable byte", []string{printable}, 0, printable, nil},
		{"255 bytes", []string{long255}, 0, long255, nil},
		{"255 bytes quoted", []string{`"` + long255 + `"`}, 0, long255, nil},
		{"same value twice", []string{"abc", "abc"}, 0, "abc", nil},
		{"same value quoted and bare", []string{`"abc"`, "abc"}, 0, "abc", nil},
		{"same value comma-joined", []string{`abc,abc`}, 0, "abc", nil},
		{"same value comma-joined mixed", []string{`"abc", abc`}, 0, "abc", nil},
		// The members of one line are parsed as lines of their own are, so
		// a key that is not a structured-field token (a UUID starting with a
		// digit) is accepted bare and quoted on one line (API Gateway v2
		// joins header lines with commas).
		{"uuid bare and quoted on one line", []string{`0190a1b2-40d5-43e8-bc93-6894a57f9324, "0190a1b2-40d5-43e8-bc93-6894a57f9324"`}, 0, "0190a1b2-40d5-43e8-bc93-6894a57f9324", nil},
		{"uuid quoted and bare on one line", []string{`"0190a1b2-40d5-43e8-bc93-6894a57f9324",0190a1b2-40d5-43e8-bc93-6894a57f9324`}, 0, "0190a1b2-40d5-43e8-bc93-6894a57f9324", nil},
		{"digits bare and quoted on one line", []string{`"12", 12`}, 0, "12", nil},
		{"escaped quote beside a bare value", []string{`"a\"b", "a\"b"`}, 0, `a"b`, nil},
		{"custom max", []string{"abcd"}, 4, "abcd", nil},

		{"missing", nil, 0, "", idemkey.ErrMissing},
		{"empty", []string{""}, 0, "", idemkey.ErrEmpty},
		{"blank", []string{"   "}, 0, "", idemkey.ErrEmpty},
		{"empty quoted", []string{`""`}, 0, "", idemkey.ErrEmpty},
		{"256 bytes", []string{long255 + "k"}, 0, "", idemkey.ErrTooLong},
		{"256 bytes quoted", []string{`"` + long255 + `k"`}, 0, "", idemkey.ErrTooLong},
		{"over custom max", []string{"abcde"}, 4, "", idemkey.ErrTooLong},
		{"unterminated quote", []string{`"abc`}, 0, "", idemkey.ErrMalformed},
		// No key holds a comma: lines joined with commas read as apart.
		{"quoted comma", []string{`"a,b"`}, 0, "", idemkey.ErrMalformed},
		{"quoted comma on two lines", []string{`"a,b", "a,b"`}, 0, "", idemkey.ErrMalformed},
		{"two malformed lines joined", []string{`"\","`}, 0, "", idemkey.ErrMalformed},
		{"quote inside bare", []string{`ab"c`}, 0, "", idemkey.ErrMalformed},
		{"parameters", []string{`"abc";x=1`}, 0, "", idemkey.ErrMalformed},
		// A bare member is a bare key whatever else is on its line, as it is
		// on a line of its own: 12 is the key "12", not a structured integer.
		{"bare member beside a quoted one", []string{`"abc", 12`}, 0, "", idemkey.ErrMultiple},
		{"quote inside bare beside a quoted one", []string{`"abc", ab"c`}, 0, "", idemkey.ErrMalformed},
		{"parameters on a bare-joined line", []string{`abc, "abc";x=1`}, 0, "", idemkey.ErrMalformed},
		{"empty element beside a quoted one", []string{`"abc",,abc`}, 0, "", idemkey.ErrMalformed},
		{"tab inside", []string{"ab\tc"}, 0, "", idemkey.ErrCharNotAllowed},
		{"space inside bare", []string{"ab c"}, 0, "", idemkey.ErrCharNotAllowed},
		{"non-ASCII byte", []string{"ab\xc3\xa9"}, 0, "", idemkey.ErrCharNotAllowed},
		{"non-ASCII byte quoted", []string{"\"ab\xc3\xa9\""}, 0, "", idemkey.ErrCharNotAllowed},
		{"control byte quoted", []string{"\"a\x01b\""}, 0, "", idemkey.ErrCharNotAllowed},
		{"DEL", []string{"ab\x7f"}, 0, "", idemkey.ErrCharNotAllowed},
		{"two values", []string{"abc", "abd"}, 0, "", idemkey.ErrMultiple},
		{"two values comma-joined", []string{"abc,abd"}, 0, "", idemkey.ErrMultiple},
		{"two values quoted", []string{`"abc", "abd"`}, 0, "", idemkey.ErrMultiple},
		{"empty list element", []string{"abc,,abc"}, 0, "", idemkey.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := idemkey.Parse(tc.values, idemkey.Options{MaxLen: tc.max})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ParseKey(%q) error = %v, want %v", tc.values, err, tc.err)
				}
				if !errors.Is(err, idemkey.ErrInvalid) {
					t.Fatalf("error %v is not ErrInvalidKey", err)
				}
				var ke *idemkey.Error
				if !errors.As(err, &ke) {
					t.Fatalf("error %v is not a *KeyError", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q", tc.values, got, err, tc.want)
			}
		})
	}
}

// maxKeyErrorLen bounds the message of a ParseKey error: it says why a
// value was refused, never repeats it (the error is logged, the value
// may be a megabyte).
const maxKeyErrorLen = 160

// TestParseKeyErrorBounded: whatever the value, a ParseKey error is short:
// a 900 KB malformed key made a 921 KB log line.
func TestParseKeyErrorBounded(t *testing.T) {
	big := strings.Repeat("k", 900<<10)
	for _, v := range []string{big + ",", big + ",," + big, `"` + big + `",`, big + "\x00", `"` + big, `"` + big + `";a=1`, big + `"`, big, big + ", x"} {
		_, err := idemkey.Parse([]string{v}, idemkey.Options{})
		if err == nil || !errors.Is(err, idemkey.ErrInvalid) {
			t.Fatalf("ParseKey(%.40q...) = %v, want ErrInvalidKey", v, err)
		}
		if len(err.Error()) > maxKeyErrorLen {
			t.Errorf("ParseKey(%.40q...): a %d-byte error: %.120s", v, len(err.Error()), err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, "a,b", `"a", "a"`, "", `"`, "\x00", "ab\tc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := idemkey.Parse([]string{v}, idemkey.Options{})
		if err != nil {
			if !errors.Is(err, idemkey.ErrInvalid) {
				t.Fatalf("ParseKey(%q): error %v is not ErrInvalidKey", v, err)
			}
			if len(err.Error()) > maxKeyErrorLen {
				t.Fatalf("ParseKey(%.40q): a %d-byte error: it repeats the value", v, len(err.Error()))
			}
			return
		}
		if k == "" || len(k) > idemkey.DefaultMaxLen {
			t.Fatalf("ParseKey(%q) accepted %q", v, k)
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted byte 0x%02x", v, k[i])
			}
		}
		// A key, quoted as an sf-string, parses back to itself.
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
		if k2, err := idemkey.Parse([]string{q}, idemkey.Options{}); err != nil || k2 != k {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", q, k2, err, k)
		}
		// The key bare and quoted on two lines joined into one, as an API
		// Gateway v2 event carries them, is still the key.
		if k2, err := idemkey.Parse([]string{v + ", " + q}, idemkey.Options{}); err != nil || k2 != k {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", v+", "+q, k2, err, k)
		}
	})
}

// FuzzKeyLinesJoined: two header lines read the same apart (httpmw, a
// REST API's multiValueHeaders) as joined with a comma (an HTTP API v2
// event): both are refused, or both give the same key.
func FuzzKeyLinesJoined(f *testing.F) {
	for _, p := range [][2]string{{`"\"`, `"`}, {"a", "a"}, {`"a"`, "a"}, {`"a`, `b"`}, {"", "a"}, {`"a b"`, `"a b"`}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		apart, errApart := idemkey.Parse([]string{a, b}, idemkey.Options{})
		joined, errJoined := idemkey.Parse([]string{a + "," + b}, idemkey.Options{})
		if (errApart == nil) != (errJoined == nil) || apart != joined {
			t.Fatalf("lines %q and %q: apart %q (%v), joined %q (%v)", a, b, apart, errApart, joined, errJoined)
		}
	})
}

// TestParseKeyLinesJoined: a set of header lines parses to the same key,
// or the same refusal, as the one line an API Gateway v2 event makes of
// them by joining them with commas.
func TestParseKeyLinesJoined(t *testing.T) {
	uuid := "8e03978e-40d5-43e8-bc93-6894a57f9324"
	for _, lines := range [][]string{
		{uuid, `"` + uuid + `"`},
		{`"` + uuid + `"`, uuid},
		{"0190a1b2-40d5-43e8-bc93-6894a57f9324", `"0190a1b2-40d5-43e8-bc93-6894a57f9324"`},
		{"abc", `"abc"`, "abc"},
		{`"a,b"`, `"a,b"`},
		{"abc", `"abd"`},
		{"12", `"12"`},
		{`"abc"`, "12"},
		{`"abc`, "abc"},
		{"abc", `"ab\x01c"`},
	} {
		want, wantErr := idemkey.Parse(lines, idemkey.Options{})
		got, err := idemkey.Parse([]string{strings.Join(lines, ", ")}, idemkey.Options{})
		var wk, gk *idemkey.Error
		errors.As(wantErr, &wk)
		errors.As(err, &gk)
		if got != want || wk != gk {
			t.Errorf("lines %q: %q, %v; joined: %q, %v", lines, want, wantErr, got, err)
		}
	}
}
