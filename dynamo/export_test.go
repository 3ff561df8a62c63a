package dynamo

// CompressBody is compressBody, for the external benchmarks.
var CompressBody = compressBody

// MaxDecodedBody is maxDecodedBody, the largest body a stored item decodes to.
const MaxDecodedBody = maxDecodedBody

// ItemSize is itemSize, the size of an item by DynamoDB's rules.
var ItemSize = itemSize
