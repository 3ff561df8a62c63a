// Package fingerprint computes the request fingerprint idemkit stores next
// to an idempotency key. A retry with the same key must carry the same
// fingerprint, or it is refused (422) instead of being answered with the
// first request's response.
//
// A fingerprint looks like
//
//	v2:sha256:3f0a…(64 hex digits)
//
// and is computed by [Compute], or by a [Fingerprinter] built once with
// [New] from [Options].
//
// # What is hashed
//
// By default the fingerprint hashes the body and the query string. The
// query string counts every parameter, names sorted bytewise, each name's
// values in the order sent. Options.Query narrows it to named parameters,
// and Options.IgnoreQuery leaves it out. The method, the path and chosen
// headers are added only when Options asks for them. Never list headers
// that vary between retries (User-Agent, Date, trace ids). Each part is
// tagged and length-prefixed, or terminated by a byte that cannot occur in
// UTF-8. So two requests that differ in any hashed part never produce the
// same hash input. The exact grammar is in v1.go and v2.go.
//
// The HTTP adapters add the concrete path whenever a route template names
// the operation, so one key cannot be reused for another resource of the
// same template.
//
// The body is read in one of three ways ([Mode]; [ModeAuto] picks from the
// content type):
//
//   - JSON: the body is parsed and hashed in canonical form, RFC 8785 (JCS)
//     with the integer rule below: members sorted by UTF-16 code units, no
//     insignificant whitespace, minimal string escapes. A retry sent by
//     another JSON library, with other member order, spacing or escapes,
//     gets the same fingerprint; a change of any value gets another.
//     The body must be I-JSON (RFC 7493): invalid JSON, invalid UTF-8, lone
//     surrogates and duplicate member names are errors ([ErrInvalidJSON],
//     [ErrDuplicateKey]), never a silent fallback. Duplicates are refused
//     because the handler and the fingerprint could otherwise read
//     different values from one body. Nesting is limited by
//     Options.MaxDepth ([ErrTooDeep]). A body without a content type is
//     read as JSON when it starts with "{" or "[", and must then be
//     I-JSON too.
//   - Form (application/x-www-form-urlencoded): fields are decoded as
//     url.ParseQuery decodes them and sorted by name; the values of a
//     repeated field keep their order. A field with ";" or a malformed
//     escape is an error ([ErrInvalidForm]); the number of fields is not
//     limited.
//   - Raw: the bytes as they are, for any other content type.
//
// Bodies that API Gateway delivers base64-encoded (Input.IsBase64Encoded)
// are decoded first, so they hash like the same bytes sent as text.
//
// # Numbers
//
// A number with a fraction or an exponent is read as the nearest float64
// and written in its RFC 8785 form (the ECMAScript one): 1.0, 1e0 and 10E-1
// are all 1; 1e21 is 1e+21; 0.0000001 is 1e-7; -0.0 is 0. A number beyond
// the float64 range is an error, whether written 1e400 or as an integer of
// 400 digits: RFC 8785 has no form for it.
//
// An integer literal (no fraction, no exponent) within the float64 range
// (magnitude up to about 1.8e308) is hashed as written, except that -0 is 0. JSON forbids leading zeros and "+", so the written
// digits are the integer's only form, and up to 2^53 they are exactly what
// RFC 8785 produces, so 1 = 1.0 = 1e0 holds. Beyond 2^53 plain RFC 8785
// would round the integer to a float64, and amounts such as
// 9007199254740993 and 9007199254740992 would collide; here they keep all
// their digits and differ. The price: above 2^53 an integer equals a
// fraction or exponent spelling only when that spelling's float64 prints as
// the same digits (9007199254740994 = 9007199254740994.0, but
// 1000000000000000000000 ≠ 1e21). Clients send the same spelling on a
// retry, so this errs on the strict side.
//
// # Selecting fields
//
// Options.Exclude removes volatile fields, given as JSON Pointers
// (RFC 6901) such as "/meta/client_ts" or "/items/0/trace". Options.Include
// hashes only the listed fields. For each included pointer the fingerprint
// records whether a value is there, then the value: a missing field and a
// field set to null are different requests. Exclude is applied first and
// may prune inside included values. In form bodies "/name" denotes the
// values of field name. Raw bodies ignore both lists and hash every byte.
//
// # Memory
//
// JSON is canonicalized without building a tree. The body is validated
// once, then read again and hashed as it goes. The only memory that grows
// with the body is 4 bytes per member of the objects being read (an object
// and its ancestors). So one call allocates less than the body's size for
// every shape of body. The figures per shape are in docs/FINGERPRINT.md and
// BenchmarkCanonicalShapes. A form body is read in place too, with 4 bytes
// per field (at most twice the body; BenchmarkFormShapes). So is a raw
// query string (Input.RawQuery), with 4 bytes per parameter. A base64 body
// is decoded into one buffer first. Input.BodyString is read in place.
//
// # Versions
//
// The prefix ("v2") names the rules that produced a fingerprint. Records
// outlive deployments, so a stored fingerprint is always compared under
// its own version's rules:
//
//	fp, err := f.ComputeVersion(fingerprint.Version(stored), in)
//	if err == nil && fp != stored { /* 422 */ }
//
// New rules never change an existing version; they become a new version,
// and [CurrentVersion] moves to it. Versions are never removed from this
// package, so every fingerprint it ever wrote can be recomputed. An unknown
// version is [ErrUnknownVersion].
//
// v2 (current) differs from v1 in two rules: the query string is hashed by
// default, and a body sniffed as JSON that is not I-JSON is an error where
// v1 hashed its raw bytes. A v1 fingerprint is computed only for a request
// that v1 can compare completely. For a request with a query string, under
// Options that hash it, v1 gives [ErrNotComparable]. So a stored v1 record
// is never replayed to a request whose query string it cannot show to be
// equal. Options are not part of the version. Changing them changes
// fingerprints, and records stored before the change will report a
// mismatch.
//
// # Errors
//
// Every error matches a sentinel with [errors.Is]. Body problems are
// [ErrInvalidJSON] (and [ErrDuplicateKey]), [ErrTooDeep], [ErrInvalidForm]
// and [ErrInvalidBase64]. Configuration problems are [ErrInvalidOptions],
// with [*PointerError] for a malformed JSON Pointer. Version problems are
// [ErrUnknownVersion] and [ErrNotComparable].
package fingerprint
