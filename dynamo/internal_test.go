package dynamo

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
)

func TestPageToken(t *testing.T) {
	lek := map[string]types.AttributeValue{attrID: str("o1|1:a1:b1:c"), attrLeaseUntil: num(1767225600123), attrIndeterminate: str(indeterminateValue)}
	tok, err := encodePage(lek, "acme")
	if err != nil {
		t.Fatal(err)
	}
	id, lu, err := decodePage(tok, "acme")
	if err != nil || id != "o1|1:a1:b1:c" || lu != 1767225600123 {
		t.Fatalf("decodePage = %q, %d, %v", id, lu, err)
	}
	for name, page := range map[string]string{
		"other tenant": tok,
		"not base64":   "%%%",
		"not JSON":     "bm90IGpzb24",
		"no ID":        "eyJ2IjoxLCJ0IjoiYmV0YSJ9",
		"version":      "eyJ2IjoyLCJ0IjoiYmV0YSIsInBrIjoieCJ9",
	} {
		if _, _, err := decodePage(page, "beta"); !errors.Is(err, idemkit.ErrInvalidPage) {
			t.Errorf("%s: %v, want idemkit.ErrInvalidPage", name, err)
		}
	}
	// A token of the stale listing is refused by the indeterminate one and
	// back: read as the other's position, it would skip records.
	stale, err := encodePageOf(lek, "stale", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decodePage(stale, "acme"); !errors.Is(err, idemkit.ErrInvalidPage) {
		t.Errorf("a stale listing's token in the indeterminate listing: %v, want idemkit.ErrInvalidPage", err)
	}
	if _, _, err := decodePageOf(tok, "stale", "acme"); !errors.Is(err, idemkit.ErrInvalidPage) {
		t.Errorf("an indeterminate listing's token in the stale listing: %v, want idemkit.ErrInvalidPage", err)
	}
}

// TestListLimit: a listing's page is at most MaxListLimit records, and a
// limit of zero or less is DefaultListLimit.
func TestListLimit(t *testing.T) {
	s := newStore("t", Options{}, nil, nil, nil)
	q := listQuery{op: "list indeterminate", state: idemkit.StateIndeterminate, hashAttr: attrIndeterminate, hashValue: indeterminateValue, index: IndexIndeterminate}
	for limit, want := range map[int]int32{-1: DefaultListLimit, 0: DefaultListLimit, 7: 7, MaxListLimit: MaxListLimit, MaxListLimit + 1: MaxListLimit, 1 << 20: MaxListLimit} {
		in, err := s.queryInput(q, "", "", limit, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if *in.Limit != want {
			t.Errorf("limit %d: Query Limit %d, want %d", limit, *in.Limit, want)
		}
	}
}

func TestRounding(t *testing.T) {
	at := time.UnixMilli(1767225600123).Add(400 * time.Microsecond)
	if got := ceilMilli(at); got != 1767225600124 {
		t.Errorf("ceilMilli = %d", got)
	}
	if got := ceilMilli(time.UnixMilli(5)); got != 5 {
		t.Errorf("ceilMilli of a whole millisecond = %d", got)
	}
	if got := ceilSec(at); got != 1767225601 {
		t.Errorf("ceilSec = %d", got)
	}
	if got := ceilSec(time.Unix(9, 0)); got != 9 {
		t.Errorf("ceilSec of a whole second = %d", got)
	}
}

// TestSnapshotCodec: snapshots survive encoding, compressed or not, and
// Complete never mutates the caller's snapshot.
func TestSnapshotCodec(t *testing.T) {
	rec := &idemkit.Record{ID: "o1|1:a1:b1:c", Scope: idemkit.Scope{Tenant: "a", Operation: "b", Key: "c"}, State: idemkit.StateCompleted, Owner: "o",
		LeaseUntil: time.UnixMilli(1000), ExpiresAt: time.Unix(2000, 0), CompletedAt: time.UnixMilli(1500)}
	for name, snap := range map[string]*idemkit.Snapshot{
		"small":                              {Status: 200, Body: []byte("hi")},
		"compressed":                         {Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(strings.Repeat(`{"a":1},`, 1000))},
		"incompressible above the threshold": {Status: 200, Body: []byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&()*+,-./:;<=>?@[]^_`{|}~")},
	} {
		for _, codec := range codecs {
			t.Run(string(codec)+"/"+name, func(t *testing.T) {
				snapshotRoundTrip(t, rec, snap, codec, name == "compressed")
			})
		}
	}
}

func snapshotRoundTrip(t *testing.T, rec *idemkit.Record, snap *idemkit.Snapshot, codec Codec, compressed bool) {
	r := *rec
	r.Snapshot = snap
	it := baseItem(&r, false)
	if !snapshotAttrs(it, snap, DefaultMaxItemSize, 64, codec) {
		t.Fatal("did not fit")
	}
	if enc, z := it[attrBodyEncoding]; z != compressed || z && enc.(*types.AttributeValueMemberS).Value != string(codec) {
		t.Fatalf("encoding %v, want compressed %v with %s", enc, compressed, codec)
	}
	got, err := decodeItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Snapshot.Body) != string(snap.Body) || got.Snapshot.Status != snap.Status || len(got.Snapshot.Header) != len(snap.Header) {
		t.Fatalf("decoded %+v", got.Snapshot)
	}
}
