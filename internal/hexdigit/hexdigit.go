// Package hexdigit reads hexadecimal digits, in either case: one digit
// (Value), and the two of a percent escape (Escape, RFC 3986 section 2.1).
// It imports nothing.
package hexdigit

// Value returns the value of the hexadecimal digit c, and false when c is
// not one.
func Value(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Escape returns the byte the percent escape at s[i] ("%" and two
// hexadecimal digits) stands for, and false when s holds none there.
func Escape[S ~string | ~[]byte](s S, i int) (byte, bool) {
	if i < 0 || i+2 >= len(s) || s[i] != '%' {
		return 0, false
	}
	hi, ok1 := Value(s[i+1])
	lo, ok2 := Value(s[i+2])
	return hi<<4 | lo, ok1 && ok2
}
