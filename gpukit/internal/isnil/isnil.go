// Package isnil says whether an interface value is nil or holds a nil
// pointer: a (*nn.Linear)(nil) passed as an nn.Module is not == nil, and
// calling its methods dereferences nil. Constructors that take modules or
// optimizers refuse both with their package's error.
package isnil

import "reflect"

// Nil reports whether v is nil or a nil pointer, map, slice, func or
// channel.
func Nil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return r.IsNil()
	}
	return false
}
