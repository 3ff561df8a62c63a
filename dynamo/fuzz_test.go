package dynamo

import (
	"bytes"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
)

// FuzzDecodeItem corrupts a stored item the way a bad write, a manual
// edit or a truncated copy could (attributes dropped, retyped, truncated,
// bytes flipped) and decodes it. Decoding must never panic; an error must
// wrap idemkit.ErrCorruptRecord; and a decoded completed record must hold a
// snapshot whose body is exactly the stored one whenever the body was
// compressed (a damaged compressed body is an error, never garbage to
// replay) or left untouched.
func FuzzDecodeItem(f *testing.F) {
	f.Add([]byte(`{"id":"ord_1","amount":1999}`), false, []byte{})
	f.Add([]byte(strings.Repeat(`{"line":"ab"},`, 8)), true, []byte{0x0d, 0x03})
	f.Add([]byte(strings.Repeat("z", 100)), true, []byte{0x0d, 0x05, 0x0d, 0x40})
	f.Add([]byte("ok"), false, []byte{0x01, 0x00, 0x0b, 0x02})
	f.Add([]byte(strings.Repeat("q", 64)), true, []byte{0x0e, 0x01})
	// An odd number of op bytes selects CodecS2.
	f.Add([]byte(strings.Repeat(`{"line":"ab"},`, 8)), true, []byte{0x00})
	f.Add([]byte(strings.Repeat(`{"line":"cd"},`, 8)), true, []byte{0x0d, 0x03, 0x00})
	f.Fuzz(func(t *testing.T, body []byte, compress bool, ops []byte) {
		now := time.UnixMilli(1_700_000_000_000)
		rec := &idemkit.Record{
			ID:    idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k1"}.ID(false),
			Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k1"},
			State: idemkit.StateCompleted, Fingerprint: "v1:sha256:ab", Owner: "owner-1",
			LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(24 * time.Hour),
			CreatedAt: now, CompletedAt: now,
			Snapshot: &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1"}}, Body: body},
		}
		it := baseItem(rec, false)
		min := -1
		if compress {
			min = 1
		}
		codec := CodecZstd
		if len(ops)%2 == 1 {
			codec = CodecS2
		}
		if !snapshotAttrs(it, rec.Snapshot, MaxItemSizeLimit, min, codec) {
			return
		}
		_, zipped := it[attrBodyEncoding]
		bodyTouched := false
		names := make([]string, 0, len(it))
		for k := range it {
			names = append(names, k)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(ops); i += 2 {
			name := names[int(ops[i])%len(names)]
			arg := int(ops[i+1])
			if name == attrBody || name == attrBodyEncoding {
				bodyTouched = true
			}
			v := it[name]
			switch ops[i] % 8 {
			case 0:
				delete(it, name)
			case 1:
				it[name] = &types.AttributeValueMemberS{Value: string(ops[i+1:])}
			case 2:
				it[name] = &types.AttributeValueMemberN{Value: string(ops[i+1:])}
			case 3:
				it[name] = &types.AttributeValueMemberB{Value: ops[i+1:]}
			case 4:
				it[name] = &types.AttributeValueMemberBOOL{Value: arg%2 == 0}
			case 5: // truncate
				if b, ok := v.(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
					it[name] = &types.AttributeValueMemberB{Value: b.Value[:arg%len(b.Value)]}
				}
				if s, ok := v.(*types.AttributeValueMemberS); ok && len(s.Value) > 0 {
					it[name] = &types.AttributeValueMemberS{Value: s.Value[:arg%len(s.Value)]}
				}
			case 6: // flip a byte
				if b, ok := v.(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
					c := append([]byte(nil), b.Value...)
					c[arg%len(c)] ^= byte(arg | 1)
					it[name] = &types.AttributeValueMemberB{Value: c}
				}
			case 7:
				it[name] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNULL{Value: true}}}
			}
		}
		got, err := decodeItem(it)
		if err != nil {
			if !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("error %v does not wrap ErrCorruptRecord", err)
			}
			if got != nil {
				t.Fatalf("a record with the error: %+v", got)
			}
			return
		}
		if got.State == idemkit.StateCompleted && got.Snapshot == nil {
			t.Fatal("completed record without a snapshot")
		}
		if s := got.Snapshot; s != nil {
			if s.Status < 0 || s.Status > 999 {
				t.Fatalf("status %d", s.Status)
			}
			if s.Omitted && len(s.Body) > 0 {
				t.Fatal("omitted snapshot with a body")
			}
			_, stillZipped := it[attrBodyEncoding]
			if (!bodyTouched || (zipped && stillZipped)) && !s.Omitted && !bytes.Equal(s.Body, body) {
				t.Fatalf("decoded body %q, stored %q", s.Body, body)
			}
		}
	})
}
