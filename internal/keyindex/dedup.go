package keyindex

import (
	"fmt"
	"strconv"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// Dedup returns a comparable value that is equal for two key tuples exactly when their
// values have the same types and values (times compared as instants at sink.Precision, the
// precision at which they are stored). buf is scratch space that is returned for reuse.
func Dedup(buf []byte, key []any) (any, []byte) {
	if len(key) == 1 {
		switch v := key[0].(type) {
		case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool, float32, float64:
			return v, buf
		case time.Time:
			return sink.AtPrecision(v), buf
		}
	}
	for _, v := range key {
		buf = appendKeyValue(buf, v)
	}
	return compositeKey(buf), buf
}

// compositeKey keeps encoded tuples apart from single string keys in the same map.
type compositeKey string

func appendKeyValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		buf = append(buf, 's')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case []byte:
		buf = append(buf, 'b')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case time.Time:
		buf = append(buf, 't')
		return sink.AtPrecision(v).AppendFormat(buf, time.RFC3339Nano)
	case nil:
		return append(buf, 'n')
	default:
		s := fmt.Sprintf("%T=%#v", v, v)
		buf = append(buf, 'x')
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		return append(buf, s...)
	}
}
