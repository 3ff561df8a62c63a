package idemkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
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

		{"missing", nil, 0, "", idemkit.ErrKeyMissing},
		{"empty", []string{""}, 0, "", idemkit.ErrKeyEmpty},
		{"blank", []string{"   "}, 0, "", idemkit.ErrKeyEmpty},
		{"empty quoted", []string{`""`}, 0, "", idemkit.ErrKeyEmpty},
		{"256 bytes", []string{long255 + "k"}, 0, "", idemkit.ErrKeyTooLong},
		{"256 bytes quoted", []string{`"` + long255 + `k"`}, 0, "", idemkit.ErrKeyTooLong},
		{"over custom max", []string{"abcde"}, 4, "", idemkit.ErrKeyTooLong},
		{"unterminated quote", []string{`"abc`}, 0, "", idemkit.ErrKeyMalformed},
		// No key holds a comma: lines joined with commas read as apart.
		{"quoted comma", []string{`"a,b"`}, 0, "", idemkit.ErrKeyMalformed},
		{"quoted comma on two lines", []string{`"a,b", "a,b"`}, 0, "", idemkit.ErrKeyMalformed},
		{"two malformed lines joined", []string{`"\","`}, 0, "", idemkit.ErrKeyMalformed},
		{"quote inside bare", []string{`ab"c`}, 0, "", idemkit.ErrKeyMalformed},
		{"parameters", []string{`"abc";x=1`}, 0, "", idemkit.ErrKeyMalformed},
		// A bare member is a bare key whatever else is on its line, as it is
		// on a line of its own: 12 is the key "12", not a structured integer.
		{"bare member beside a quoted one", []string{`"abc", 12`}, 0, "", idemkit.ErrKeyMultiple},
		{"quote inside bare beside a quoted one", []string{`"abc", ab"c`}, 0, "", idemkit.ErrKeyMalformed},
		{"parameters on a bare-joined line", []string{`abc, "abc";x=1`}, 0, "", idemkit.ErrKeyMalformed},
		{"empty element beside a quoted one", []string{`"abc",,abc`}, 0, "", idemkit.ErrKeyMalformed},
		{"tab inside", []string{"ab\tc"}, 0, "", idemkit.ErrKeyInvalidChar},
		{"space inside bare", []string{"ab c"}, 0, "", idemkit.ErrKeyInvalidChar},
		{"non-ASCII byte", []string{"ab\xc3\xa9"}, 0, "", idemkit.ErrKeyInvalidChar},
		{"non-ASCII byte quoted", []string{"\"ab\xc3\xa9\""}, 0, "", idemkit.ErrKeyInvalidChar},
		{"control byte quoted", []string{"\"a\x01b\""}, 0, "", idemkit.ErrKeyInvalidChar},
		{"DEL", []string{"ab\x7f"}, 0, "", idemkit.ErrKeyInvalidChar},
		{"two values", []string{"abc", "abd"}, 0, "", idemkit.ErrKeyMultiple},
		{"two values comma-joined", []string{"abc,abd"}, 0, "", idemkit.ErrKeyMultiple},
		{"two values quoted", []string{`"abc", "abd"`}, 0, "", idemkit.ErrKeyMultiple},
		{"empty list element", []string{"abc,,abc"}, 0, "", idemkit.ErrKeyMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := idemkit.ParseKey(tc.values, idemkit.KeyOptions{MaxLen: tc.max})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ParseKey(%q) error = %v, want %v", tc.values, err, tc.err)
				}
				if !errors.Is(err, idemkit.ErrInvalidKey) {
					t.Fatalf("error %v is not ErrInvalidKey", err)
				}
				var ke *idemkit.KeyError
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

func TestScopeIDUnambiguous(t *testing.T) {
	// Field values that contain the encoding's separators and digits must
	// never make two different scopes share an ID.
	scopes := []idemkit.Scope{
		{Tenant: "a", Operation: "POST /x", Key: "k"},
		{Tenant: "a|", Operation: "POST /x", Key: "k"},
		{Tenant: "a", Operation: "|POST /x", Key: "k"},
		{Tenant: "a1:", Operation: "POST /x", Key: "k"},
		{Tenant: "a", Operation: "1:POST /x", Key: "k"},
		{Tenant: "a:7:POST /x", Operation: "", Key: "k"},
		{Tenant: "a", Operation: "POST /x1:k", Key: ""},
		{Tenant: "a", Operation: "POST /x", Key: "1:k"},
		{Tenant: "", Operation: "1:aPOST /x", Key: "k"},
		{Tenant: "1:a", Operation: "POST /x", Key: "k"},
		{Tenant: "t", Operation: "o", Key: "1:k"},
		{Tenant: "t", Operation: "o1:k", Key: ""},
		{Tenant: "t1:o", Operation: "", Key: "k"},
	}
	seen := map[string]idemkit.Scope{}
	for _, accountWide := range []bool{false, true} {
		for _, s := range scopes {
			id := s.ID(accountWide)
			if accountWide {
				s.Operation = "" // not part of the account-wide identity
			}
			if prev, ok := seen[id]; ok && prev != s {
				t.Fatalf("scopes %+v and %+v share ID %q", prev, s, id)
			}
			seen[id] = s
		}
	}
	a := idemkit.Scope{Tenant: "t", Operation: "POST /a", Key: "k"}
	b := idemkit.Scope{Tenant: "t", Operation: "POST /b", Key: "k"}
	if a.ID(false) == b.ID(false) {
		t.Fatal("two operations share an ID with per-operation keys")
	}
	if a.ID(true) != b.ID(true) {
		t.Fatal("account-wide IDs differ by operation")
	}
	if a.ID(true) == a.ID(false) {
		t.Fatal("account-wide and per-operation IDs collide")
	}
}

// TestHashedIDs: the IDs of scopes too long to be readable are fixed (a
// change would lose every record stored under the old ones, and their
// requests would run again), and are as unambiguous as readable ones:
// moving bytes from one field to the next gives another ID.
func TestHashedIDs(t *testing.T) {
	long := strings.Repeat("o", 2100)
	for _, tc := range []struct {
		scope       idemkit.Scope
		accountWide bool
		want        string
	}{
		{idemkit.Scope{Tenant: "acme", Operation: "POST /" + long, Key: "k-1"}, false, "o1h|4:acme729588b090e408c69560cbf650049bb044e72b9b2bd93a2b153a0df8c357f0ef"},
		{idemkit.Scope{Tenant: "acme", Operation: "POST /o", Key: strings.Repeat("k", 2100)}, true, "a1h|4:acme8e0a25d2fe8c68212a547df55a30def76284ec01b47de5e7af4d673484090835"},
	} {
		if got := tc.scope.ID(tc.accountWide); got != tc.want {
			t.Errorf("ID(%v) of a %d-byte scope = %q, want %q", tc.accountWide, len(tc.scope.Operation)+len(tc.scope.Key), got, tc.want)
		}
	}
	a := idemkit.Scope{Tenant: "acme", Operation: "POST /" + long + "x", Key: "k"}
	b := idemkit.Scope{Tenant: "acme", Operation: "POST /" + long, Key: "xk"}
	c := idemkit.Scope{Tenant: "acmeP", Operation: "OST /" + long, Key: "xk"}
	for _, aw := range []bool{false, true} {
		ids := map[string]idemkit.Scope{}
		for _, s := range []idemkit.Scope{a, b, c} {
			if aw {
				s.Key += long // long enough to be hashed without its operation
			}
			id := s.ID(aw)
			if prev, ok := ids[id]; ok {
				t.Fatalf("account-wide %v: scopes %.40q and %.40q share ID %q", aw, prev, s, id)
			}
			ids[id] = s
		}
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
		_, err := idemkit.ParseKey([]string{v}, idemkit.KeyOptions{})
		if err == nil || !errors.Is(err, idemkit.ErrInvalidKey) {
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
		k, err := idemkit.ParseKey([]string{v}, idemkit.KeyOptions{})
		if err != nil {
			if !errors.Is(err, idemkit.ErrInvalidKey) {
				t.Fatalf("ParseKey(%q): error %v is not ErrInvalidKey", v, err)
			}
			if len(err.Error()) > maxKeyErrorLen {
				t.Fatalf("ParseKey(%.40q): a %d-byte error: it repeats the value", v, len(err.Error()))
			}
			return
		}
		if k == "" || len(k) > idemkit.DefaultMaxKeyLen {
			t.Fatalf("ParseKey(%q) accepted %q", v, k)
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted byte 0x%02x", v, k[i])
			}
		}
		// A key, quoted as an sf-string, parses back to itself.
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
		if k2, err := idemkit.ParseKey([]string{q}, idemkit.KeyOptions{}); err != nil || k2 != k {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", q, k2, err, k)
		}
		// The key bare and quoted on two lines joined into one, as an API
		// Gateway v2 event carries them, is still the key.
		if k2, err := idemkit.ParseKey([]string{v + ", " + q}, idemkit.KeyOptions{}); err != nil || k2 != k {
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
		apart, errApart := idemkit.ParseKey([]string{a, b}, idemkit.KeyOptions{})
		joined, errJoined := idemkit.ParseKey([]string{a + "," + b}, idemkit.KeyOptions{})
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
		want, wantErr := idemkit.ParseKey(lines, idemkit.KeyOptions{})
		got, err := idemkit.ParseKey([]string{strings.Join(lines, ", ")}, idemkit.KeyOptions{})
		var wk, gk *idemkit.KeyError
		errors.As(wantErr, &wk)
		errors.As(err, &gk)
		if got != want || wk != gk {
			t.Errorf("lines %q: %q, %v; joined: %q, %v", lines, want, wantErr, got, err)
		}
	}
}
