package dynamo

// CompressBody is compressBody, for the external benchmarks.
var CompressBody = compressBody
