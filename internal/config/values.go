package config

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// MinDuration is the floor of every duration set in a configuration or a
// plan: a set duration shorter than this is a typo or a unit slip ("1ns"
// for "1s"), never a bound or an interval anyone means. A field with a
// floor tag ("floor:\"100ms\"") has that floor instead.
const MinDuration = time.Millisecond

var (
	durationType = reflect.TypeOf(Duration{})
	float64Type  = reflect.TypeOf(float64(0))
)

// CheckValues applies the one rule of each value type to every field of
// v (a struct, or a pointer to one) reachable through its toml keys, and
// calls add with the dotted key of each value that breaks it: a Duration
// is never negative and, when set (not 0, which means the default), at
// least its floor (MinDuration, or the field's floor tag); a float64 is
// finite (NaN and infinities are refused). key prefixes the keys
// ("backends.cand"); skip names top-level toml keys left out (checked by
// their own walk). Plans call it on their own values too.
func CheckValues(v any, key string, add func(key, format string, a ...any), skip ...string) {
	walkValues(reflect.ValueOf(v), key, "", add, skip)
}

func walkValues(v reflect.Value, key, floor string, add func(string, string, ...any), skip []string) {
	if !v.IsValid() {
		return
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		d := v.Interface().(Duration).Duration
		min := MinDuration
		if floor != "" {
			if f, err := time.ParseDuration(floor); err == nil {
				min = f
			}
		}
		switch {
		case d < 0:
			add(key, "%s is negative; a duration is a length of time, like \"30s\" (0 or unset: the default)", d)
		case d > 0 && d < min:
			add(key, "%s is shorter than %s, the least this may be (a unit slip? \"1ns\" for \"1s\"); write it like \"30s\" (0 or unset: the default)", d, min)
		}
		return
	case v.Type() == float64Type:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			add(key, "%v is not a finite number; write a number like 2.0", f)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			if key == "" && contains(skip, name) {
				continue
			}
			walkValues(v.Field(i), join(key, name), f.Tag.Get("floor"), add, nil)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		for _, k := range v.MapKeys() {
			walkValues(v.MapIndex(k), join(key, k.String()), "", add, nil)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkValues(v.Index(i), key+"["+strconv.Itoa(i)+"]", floor, add, nil)
		}
	}
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}
