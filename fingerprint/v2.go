package fingerprint

// Version 2, the current one. Like v1, its output must never change once
// released; golden_test.go pins it.
//
// What changed from v1:
//   - the query string is hashed by default: every parameter, names sorted
//     bytewise, each name's values in order ('A' part), unless
//     Options.IgnoreQuery; Options.Query still selects parameters ('Q');
//   - a body sniffed as JSON (no content type, first byte "{" or "[") that
//     is not valid I-JSON is an error instead of being hashed as raw bytes.
//
// The body grammar is v1's. The SHA-256 input is:
//
//	input   = "idemkit.fingerprint.v2" 0x00
//	          [ 'M' str(method) ]                      Options.Method
//	          [ 'P' str(path) ]                        Options.Path
//	          [ 'Q' uvarint(n) n*( str(name) list )    Options.Query, sorted
//	          | 'A' uvarint(n) n*( str(name) list ) ]  whole query, names sorted; none with IgnoreQuery
//	          [ 'H' uvarint(n) n*( str(name) list ) ]  Options.Headers, lower case, sorted
//	          'B' body                                 as in v1
const v2Magic = "idemkit.fingerprint.v2\x00"

func (f *Fingerprinter) v2(in *Input) (string, error) {
	st := getState()
	defer putState(st)
	e := &st.e
	e.out = append(e.out, v2Magic...)
	if f.method {
		e.byte('M')
		e.str(in.Method)
	}
	if f.path {
		e.byte('P')
		e.str(in.Path)
	}
	switch {
	case f.noQuery:
	case len(f.query) > 0:
		e.byte('Q')
		st.writeQuery(in, f.query)
	default:
		e.byte('A')
		st.writeQuery(in, nil)
	}
	if len(f.headers) > 0 {
		e.byte('H')
		e.uvarint(len(f.headers))
		for _, name := range f.headers {
			e.str(name)
			writeHeaderValues(e, in.Header, name)
		}
	}

	body, err := st.decodeBody(in)
	if err != nil {
		return "", err
	}
	e.byte('B')
	mode, _ := f.resolveMode(contentType(in), body)
	switch mode {
	case ModeJSON:
		if err := st.p.validate(body, f.maxDepth); err != nil {
			return "", err
		}
		e.byte('j')
		if err := f.writeJSON(st); err != nil {
			return "", err
		}
	case ModeForm:
		if err := f.writeFormBody(st, body); err != nil {
			return "", err
		}
	default:
		e.byte('r')
		e.bytes(body)
	}
	return st.finish("v2:sha256:"), nil
}
