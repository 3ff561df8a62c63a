package percent

import "testing"

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byte
		ok   bool
	}{
		{"41", 'A', true},
		{"7e", '~', true},
		{"7E", '~', true},
		{"2f", '/', true},
		{"00", 0, true},
		{"ff", 0xff, true},
		{"FF", 0xff, true},
		{"g0", 0, false},
		{"0G", 0, false},
		{"/0", 0, false},
		{":0", 0, false},
		{"@0", 0, false},
		{"`0", 0, false},
	} {
		got, ok := Decode(tc.in[0], tc.in[1])
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("Decode(%q) = %#x, %v; want %#x, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		i    int
		want bool
	}{
		{"%41", 0, true},
		{"a%4", 1, false},
		{"a%", 1, false},
		{"%zz", 0, false},
		{"x41", 0, false},
		{"ab%2Fc", 2, true},
	} {
		if got := Valid(tc.in, tc.i); got != tc.want {
			t.Errorf("Valid(%q, %d) = %v, want %v", tc.in, tc.i, got, tc.want)
		}
		if got := Valid([]byte(tc.in), tc.i); got != tc.want {
			t.Errorf("Valid([]byte(%q), %d) = %v, want %v", tc.in, tc.i, got, tc.want)
		}
	}
}
