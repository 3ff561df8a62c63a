// Package percent reads the escapes of percent-encoding (RFC 3986 section
// 2.1): a "%" and two hexadecimal digits.
package percent

// Decode returns the byte the escape "%hl" stands for, and false when h or
// l is not a hexadecimal digit.
func Decode(h, l byte) (byte, bool) {
	hi, ok1 := digit(h)
	lo, ok2 := digit(l)
	return hi<<4 | lo, ok1 && ok2
}

// Valid reports whether s holds a "%" and two hexadecimal digits at i.
func Valid[S ~string | ~[]byte](s S, i int) bool {
	if i+2 >= len(s) || s[i] != '%' {
		return false
	}
	_, ok := Decode(s[i+1], s[i+2])
	return ok
}

func digit(c byte) (byte, bool) {
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
