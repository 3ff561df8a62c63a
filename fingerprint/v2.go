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
	return f.sum(in, v2Magic, true, f.v2JSON, "v2:sha256:")
}

// v2JSON writes a JSON body, validated, whole or as Include selects.
func (f *Fingerprinter) v2JSON(st *state, body []byte, _ bool) error {
	if err := st.p.validate(body, f.maxDepth); err != nil {
		return err
	}
	st.e.byte('j')
	return f.writeJSON(st)
}

// writeBody writes the body part shared by every version: 'B', then the
// body as its mode reads it: JSON (by json), a form, or raw bytes.
func (f *Fingerprinter) writeBody(st *state, in *Input, json func(st *state, body []byte, sniffed bool) error) error {
	body, err := st.decodeBody(in)
	if err != nil {
		return err
	}
	e := &st.e
	e.byte('B')
	mode, sniffed := f.resolveMode(contentType(in), body)
	switch mode {
	case ModeJSON:
		return json(st, body, sniffed)
	case ModeForm:
		return f.writeFormBody(st, body)
	}
	e.byte('r')
	e.bytes(body)
	return nil
}
