package fingerprint

import (
	"maps"
	"slices"
	"unsafe"
)

// A raw query string (Input.RawQuery) is read as a form body is: in
// place, with one 4-byte offset per parameter, and hashed exactly as the
// parameters url.ParseQuery returns for it. A query that url.ParseQuery
// does not read whole (a pair with ";", a malformed escape) is hashed as
// one parameter, named by the whole raw query, with no value.

// writeQuery writes in's query parameters: uvarint(n) n*( str(name) list ),
// for the names in selected (sorted) or, when selected is empty, every
// name, sorted bytewise.
func (st *state) writeQuery(in *Input, selected []string) {
	e := &st.e
	if in.Query != nil || in.RawQuery == "" {
		names := selected
		if len(names) == 0 {
			st.names = slices.AppendSeq(st.names[:0], maps.Keys(in.Query))
			slices.Sort(st.names)
			names = st.names
		}
		writeSelected(e, names, in.Query)
		return
	}
	raw := unsafe.Slice(unsafe.StringData(in.RawQuery), len(in.RawQuery))
	pairs, err := formPairs(raw, st.pairs)
	if err != nil {
		// Not read whole: one name, the raw query, without a value. No
		// query that parses cleanly has such a name (each of its names
		// has a value), so it matches only the very same text.
		if len(selected) == 0 {
			e.uvarint(1)
			e.str(in.RawQuery)
			e.uvarint(0)
			return
		}
		e.uvarint(len(selected))
		for _, name := range selected {
			e.str(name)
			e.uvarint(0)
		}
		return
	}
	st.pairs = pairs
	fm := form{body: raw, pairs: pairs}
	if len(selected) == 0 {
		fm.writeAll(e)
		return
	}
	e.uvarint(len(selected))
	for _, name := range selected {
		e.str(name)
		if k, j, ok := fm.field(name); ok {
			fm.writeList(e, k, j)
		} else {
			e.uvarint(0)
		}
	}
}

// hasQuery reports whether in has a query parameter.
func hasQuery(in *Input) bool {
	if in.Query != nil {
		return len(in.Query) > 0
	}
	for i := 0; i < len(in.RawQuery); i++ {
		if in.RawQuery[i] != '&' {
			return true
		}
	}
	return false
}
