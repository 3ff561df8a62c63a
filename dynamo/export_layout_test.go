package dynamo

// Names of the item layout, for the tests that read or write items
// directly (package dynamo_test).
const (
	AttrID                  = attrID
	AttrState               = attrState
	AttrLeaseUntil          = attrLeaseUntil
	AttrExpiresAt           = attrExpiresAt
	AttrBodyEncoding        = attrBodyEncoding
	AttrIndeterminate       = attrIndeterminate
	AttrIndeterminateTenant = attrIndeterminateTenant
	IndeterminateValue      = indeterminateValue
	InFlightValue           = inFlightValue
)
