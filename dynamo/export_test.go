package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
)

// MaxDecodedBody is maxDecodedBody, the largest body a stored item decodes to.
const MaxDecodedBody = maxDecodedBody

// Encode is the item s stores for rec.
func Encode(s *Store, rec *idemkit.Record) (map[string]types.AttributeValue, error) {
	return s.encode("encode", rec)
}
