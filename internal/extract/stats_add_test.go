package extract

import (
	"reflect"
	"testing"
)

// TestStatsAddSumsEveryCount: every count of Stats is summed by Add (a
// count added to Stats later and forgotten in Add fails here), and the
// schema-valid rate is recomputed from the sums.
func TestStatsAddSumsEveryCount(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		}
	}
	one.Replies, one.SchemaValidReplies = 4, 3
	var s Stats
	s.Add(one)
	s.Add(one)
	w := reflect.ValueOf(s)
	for i := range w.NumField() {
		if f := w.Field(i); (f.Kind() == reflect.Int || f.Kind() == reflect.Int64) && f.Int() != 2*v.Field(i).Int() {
			t.Errorf("%s = %d after adding %d twice", w.Type().Field(i).Name, f.Int(), v.Field(i).Int())
		}
	}
	if s.SchemaValidRate != 0.75 {
		t.Errorf("schema-valid rate %v, want 6/8", s.SchemaValidRate)
	}
}
