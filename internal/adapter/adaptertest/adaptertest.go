// Package adaptertest checks that an adapter's Config offers every setting
// the adapters share ([adapter.Options]) and passes each one on.
package adaptertest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/idemkit/idemkit/internal/adapter"
)

// Parity checks C, an adapter's Config, against adapter.Options: C has
// every field of Options, with the same type (Routes: a map whose values
// convert to adapter.Route), except the fields named in missing, which it
// must not have; conv, the adapter's conversion, copies each of them; and
// C's fields outside Options are exactly those named in local. A new
// option added to Options or to one adapter therefore fails this check in
// every adapter that lacks it, until it is added there or listed.
func Parity[C any](t testing.TB, conv func(C) adapter.Options, missing, local []string) {
	t.Helper()
	ot, ct := reflect.TypeFor[adapter.Options](), reflect.TypeFor[C]()
	var c C
	cv := reflect.ValueOf(&c).Elem()
	want := map[string]reflect.Value{}
	for i := range ot.NumField() {
		f := ot.Field(i)
		if f.Name == "NoTenant" {
			// Derived from each adapter's own Tenant, not a shared setting.
			continue
		}
		_, ok := ct.FieldByName(f.Name)
		switch {
		case slices.Contains(missing, f.Name):
			if ok {
				t.Errorf("%v has %s, listed as missing: remove it from the list", ct, f.Name)
			}
			continue
		case !ok:
			t.Errorf("%v lacks %s of adapter.Options: add it, documented as in the other adapters, or list it as missing", ct, f.Name)
			continue
		}
		if w, ok := setSample(t, ct, cv.FieldByName(f.Name), f); ok {
			want[f.Name] = w
		}
	}
	for i := range ct.NumField() {
		name := ct.Field(i).Name
		if _, shared := ot.FieldByName(name); !shared && !slices.Contains(local, name) {
			t.Errorf("%v.%s is not in adapter.Options: add it there and to every adapter, or list it as specific to this adapter", ct, name)
		}
	}
	ov := reflect.ValueOf(conv(c))
	for i := range ot.NumField() {
		name := ot.Field(i).Name
		if name == "NoTenant" {
			continue
		}
		got := ov.Field(i)
		w, ok := want[name]
		if !ok {
			if !got.IsZero() {
				t.Errorf("conversion sets %s, which %v does not have", name, ct)
			}
			continue
		}
		if !reflect.DeepEqual(got.Interface(), w.Interface()) {
			t.Errorf("conversion of %v passes %s = %#v, want %#v", ct, name, got.Interface(), w.Interface())
		}
	}
}

// setSample sets field, which stands for option f in a Config of type ct,
// to a sample value and returns the value the conversion must give f.
func setSample(t testing.TB, ct reflect.Type, field reflect.Value, f reflect.StructField) (reflect.Value, bool) {
	t.Helper()
	v := sample(field.Type())
	field.Set(v)
	switch {
	case field.Type() == f.Type:
		return v, true
	case f.Type.Kind() == reflect.Map && v.Kind() == reflect.Map && v.Type().Elem().ConvertibleTo(f.Type.Elem()):
		m := reflect.MakeMap(f.Type)
		for it := v.MapRange(); it.Next(); {
			m.SetMapIndex(it.Key(), it.Value().Convert(f.Type.Elem()))
		}
		return m, true
	}
	t.Errorf("%v.%s is %v, adapter.Options.%s is %v", ct, f.Name, field.Type(), f.Name, f.Type)
	return reflect.Value{}, false
}

// sample returns a value of t with every exported part set and non-zero.
func sample(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.String:
		v.SetString("X-Sample")
	case reflect.Slice:
		v = reflect.Append(v, sample(t.Elem()))
	case reflect.Map:
		v = reflect.MakeMap(t)
		v.SetMapIndex(sample(t.Key()), sample(t.Elem()))
	case reflect.Pointer:
		v = reflect.New(t.Elem())
		v.Elem().Set(sample(t.Elem()))
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(sample(t.Field(i).Type))
			}
		}
	}
	return v
}
