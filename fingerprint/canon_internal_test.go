package fingerprint

// canonical returns the canonical JSON text of body, the text v1 and v2
// hash for a whole JSON body without Exclude.
func canonical(body []byte) ([]byte, error) {
	var p parser
	if err := p.validate(body, DefaultMaxDepth); err != nil {
		return nil, err
	}
	var e emitter
	if err := p.emitAll(&e, nil); err != nil {
		return nil, err
	}
	return e.out, nil
}
