// Package setting holds the rule every numeric setting of the kit follows:
// zero, or a negative value, means the setting's default.
package setting

// Or returns v, or def when v is zero or negative.
func Or[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
