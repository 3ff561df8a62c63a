package fingerprint

// canonical returns the canonical JSON text of body, the text v1 hashes
// for a whole JSON body without Exclude.
func canonical(body []byte) ([]byte, error) {
	var p parser
	if err := p.parse(body, DefaultMaxDepth); err != nil {
		return nil, err
	}
	var e emitter
	p.emit(&e, p.root, nil)
	return e.out, nil
}
