package testkit

import "fmt"

// FingerprintAs returns a Request.FingerprintAs that knows one earlier
// version: it answers fingerprint for version, and an error for any
// other.
func FingerprintAs(version, fingerprint string) func(v string) (string, error) {
	return func(v string) (string, error) {
		if v != version {
			return "", fmt.Errorf("unknown version %q", v)
		}
		return fingerprint, nil
	}
}
