package profiles

import (
	"reflect"
	"testing"
)

// TestCloneSharesNothing: a profile with every slice, map and pointer set,
// at any depth, and its clone share none of them, so a caller that
// changes its copy of a stock profile changes no one else's. A reference
// field added to Profile without a line in clone fails here.
func TestCloneSharesNothing(t *testing.T) {
	var p Profile
	fill(reflect.ValueOf(&p).Elem())
	sharedRefs(t, "Profile", reflect.ValueOf(p), reflect.ValueOf(p.clone()))

	// And the stock set: two calls hand out unshared profiles.
	a, err := Stock()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Stock()
	for name := range a {
		sharedRefs(t, name, reflect.ValueOf(a[name]), reflect.ValueOf(b[name]))
	}
}

// fill sets every pointer, slice and map under v to a non-empty value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

func sharedRefs(t *testing.T, path string, x, y reflect.Value) {
	t.Helper()
	switch x.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if x.IsNil() || (x.Kind() != reflect.Pointer && x.Len() == 0) {
			return
		}
		if x.Pointer() == y.Pointer() {
			t.Errorf("%s: shared by the profile and its clone", path)
		}
		switch x.Kind() {
		case reflect.Pointer:
			sharedRefs(t, path, x.Elem(), y.Elem())
		case reflect.Slice:
			for i := range x.Len() {
				sharedRefs(t, path, x.Index(i), y.Index(i))
			}
		}
	case reflect.Struct:
		for i := range x.NumField() {
			if x.Type().Field(i).IsExported() {
				sharedRefs(t, path+"."+x.Type().Field(i).Name, x.Field(i), y.Field(i))
			}
		}
	}
}
