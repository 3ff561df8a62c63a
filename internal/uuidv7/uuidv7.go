// Package uuidv7 mints UUIDv7 keys (RFC 9562) and reads the time they
// hold, the one reading of a key's time that the server's key-age check
// and the client's retention check share. It imports only the standard
// library and hexdigit, so that the client links nothing more for it.
package uuidv7

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/idemkit/idemkit/internal/hexdigit"
)

// At returns a new UUIDv7 in its canonical form (lower case, 36 bytes)
// holding t to the millisecond, its other bits random.
func At(t time.Time) string {
	var u [16]byte
	rand.Read(u[6:]) // never fails (crypto/rand)
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t.UnixMilli())<<16)
	copy(u[:6], ts[:6])
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // variant RFC 9562
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}

// Time returns the time a UUIDv7 key in its canonical form holds (its
// first 48 bits, Unix milliseconds), and false for any other key: another
// length, a misplaced hyphen, a byte that is not a hex digit (in either
// case), another version. The variant is not read.
func Time(key string) (time.Time, bool) {
	if len(key) != 36 || key[8] != '-' || key[13] != '-' || key[18] != '-' || key[23] != '-' || key[14] != '7' {
		return time.Time{}, false
	}
	var ms int64
	digits := 0
	for i := 0; i < len(key); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		v, ok := hexdigit.Value(key[i])
		if !ok {
			return time.Time{}, false
		}
		if digits < 12 {
			ms = ms<<4 | int64(v)
		}
		digits++
	}
	return time.UnixMilli(ms), true
}
