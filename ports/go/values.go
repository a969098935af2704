package main

// Epochal's typed value encoding (docs/wire.md section 4): the value of the Epochal tag
// (17744) in a Kafka header, which carries the Lamport clock and the fields Kafka's
// messages have no place for.

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
)

const (
	tagNull   = 0
	tagFalse  = 1
	tagTrue   = 2
	tagInt    = 3
	tagString = 4
	tagBytes  = 5
	tagList   = 6
	tagMap    = 7
	tagFloat  = 8
	maxDepth  = 32
)

var errValue = errors.New("a value that does not decode")

// encodeValue appends v: nil, bool, int/int32/int64, string, []byte, []any, []int,
// map[string]any or float64.
func encodeValue(out []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(out, tagNull)
	case bool:
		if x {
			return append(out, tagTrue)
		}
		return append(out, tagFalse)
	case int:
		return binary.BigEndian.AppendUint64(append(out, tagInt), uint64(int64(x)))
	case int32:
		return binary.BigEndian.AppendUint64(append(out, tagInt), uint64(int64(x)))
	case int64:
		return binary.BigEndian.AppendUint64(append(out, tagInt), uint64(x))
	case string:
		out = binary.BigEndian.AppendUint32(append(out, tagString), uint32(len(x)))
		return append(out, x...)
	case []byte:
		out = binary.BigEndian.AppendUint32(append(out, tagBytes), uint32(len(x)))
		return append(out, x...)
	case float64:
		return binary.BigEndian.AppendUint64(append(out, tagFloat), math.Float64bits(x))
	case []int:
		out = binary.BigEndian.AppendUint32(append(out, tagList), uint32(len(x)))
		for _, item := range x {
			out = encodeValue(out, item)
		}
		return out
	case []any:
		out = binary.BigEndian.AppendUint32(append(out, tagList), uint32(len(x)))
		for _, item := range x {
			out = encodeValue(out, item)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out = binary.BigEndian.AppendUint32(append(out, tagMap), uint32(len(x)))
		for _, k := range keys {
			out = binary.BigEndian.AppendUint32(out, uint32(len(k)))
			out = append(out, k...)
			out = encodeValue(out, x[k])
		}
		return out
	}
	panic("encodeValue: unsupported type")
}

// decodeValue reads one whole value (trailing bytes are an error).
func decodeValue(data []byte) (any, error) {
	v, pos, err := readValue(data, 0, 0)
	if err != nil {
		return nil, err
	}
	if pos != len(data) {
		return nil, errValue
	}
	return v, nil
}

// readLength reads a u32 count at pos, refused when it is more than the bytes left: an
// element takes at least one byte, so a larger count can only be a lie.
func readLength(data []byte, pos int) (int, int, bool) {
	if pos+4 > len(data) {
		return 0, 0, false
	}
	n := int(binary.BigEndian.Uint32(data[pos:]))
	pos += 4
	return n, pos, n <= len(data)-pos
}

func readValue(data []byte, pos, depth int) (any, int, error) {
	if depth > maxDepth || pos >= len(data) {
		return nil, 0, errValue
	}
	tag := data[pos]
	pos++
	need := func(n int) bool { return pos+n <= len(data) }
	switch tag {
	case tagNull:
		return nil, pos, nil
	case tagFalse:
		return false, pos, nil
	case tagTrue:
		return true, pos, nil
	case tagInt, tagFloat:
		if !need(8) {
			return nil, 0, errValue
		}
		raw := binary.BigEndian.Uint64(data[pos:])
		if tag == tagInt {
			return int64(raw), pos + 8, nil
		}
		return math.Float64frombits(raw), pos + 8, nil
	case tagString, tagBytes:
		n, pos, ok := readLength(data, pos)
		if !ok {
			return nil, 0, errValue
		}
		b := data[pos : pos+n]
		if tag == tagString {
			return string(b), pos + n, nil
		}
		return append([]byte(nil), b...), pos + n, nil
	case tagList:
		n, pos, ok := readLength(data, pos)
		if !ok {
			return nil, 0, errValue
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, next, err := readValue(data, pos, depth+1)
			if err != nil {
				return nil, 0, err
			}
			out, pos = append(out, v), next
		}
		return out, pos, nil
	case tagMap:
		n, pos, ok := readLength(data, pos)
		if !ok {
			return nil, 0, errValue
		}
		out := make(map[string]any, n)
		for i := 0; i < n; i++ {
			k, next, ok := readLength(data, pos)
			if !ok {
				return nil, 0, errValue
			}
			key := string(data[next : next+k])
			pos = next + k
			v, next, err := readValue(data, pos, depth+1)
			if err != nil {
				return nil, 0, err
			}
			out[key], pos = v, next
		}
		return out, pos, nil
	}
	return nil, 0, errValue
}

// Helpers to read the decoded extras.

func asInt(v any, dflt int64) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return dflt
}

func asMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}
