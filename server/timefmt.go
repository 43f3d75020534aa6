package server

import (
	"sync"
	"time"
	// Users' time zones work even where the system has no tz database.
	_ "time/tzdata"
)

var zones sync.Map // name → *time.Location

// localTime formats a time.Time or *time.Time in the time zone named tz (the
// user's), falling back to UTC; nil or zero is "".
func localTime(v any, tz string) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	}
	if t.IsZero() {
		return ""
	}
	loc := time.UTC
	if l, ok := zones.Load(tz); ok {
		loc = l.(*time.Location)
	} else if l, err := time.LoadLocation(tz); err == nil {
		zones.Store(tz, l)
		loc = l
	}
	return t.In(loc).Format("2006-01-02 15:04:05")
}
