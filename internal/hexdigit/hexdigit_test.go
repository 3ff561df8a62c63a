package hexdigit

import "testing"

func TestValue(t *testing.T) {
	for c := 0; c < 256; c++ {
		want, wantOK := byte(0), false
		switch {
		case '0' <= c && c <= '9':
			want, wantOK = byte(c-'0'), true
		case 'a' <= c && c <= 'f':
			want, wantOK = byte(c-'a'+10), true
		case 'A' <= c && c <= 'F':
			want, wantOK = byte(c-'A'+10), true
		}
		got, ok := Value(byte(c))
		if ok != wantOK || got != want {
			t.Errorf("Value(%q) = %d, %v; want %d, %v", rune(c), got, ok, want, wantOK)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		i    int
		want byte
		ok   bool
	}{
		{"%41", 0, 'A', true},
		{"%7e", 0, '~', true},
		{"%7E", 0, '~', true},
		{"ab%2Fc", 2, '/', true},
		{"%ff", 0, 0xff, true},
		{"a%4", 1, 0, false},
		{"a%", 1, 0, false},
		{"%zz", 0, 0, false},
		{"%4g", 0, 0, false},
		{"x41", 0, 0, false},
		{"%41", -1, 0, false},
	} {
		for _, got := range [][2]any{pair(Escape(tc.in, tc.i)), pair(Escape([]byte(tc.in), tc.i))} {
			c, ok := got[0].(byte), got[1].(bool)
			if ok != tc.ok || ok && c != tc.want {
				t.Errorf("Escape(%q, %d) = %#x, %v; want %#x, %v", tc.in, tc.i, c, ok, tc.want, tc.ok)
			}
		}
	}
}

func pair(c byte, ok bool) [2]any { return [2]any{c, ok} }
