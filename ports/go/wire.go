package main

// Kafka's frames as Epochal's connections carry them (docs/wire.md section 2.1): request
// header v2 and response header v1, whose tagged fields hold one tag, 17744 ("EP"), a map
// in Epochal's value encoding with the sender's Lamport clock and the fields Kafka's
// messages lack.  The bodies are franz-go's kmsg messages; the records, record batches v2
// with CRC-32C, one batch per run of one leader epoch and producer.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const epochalTag = 0x4550

// Epochal's Kafka versions (impl.node.codes.KAFKA_VERSIONS).
var kafkaVersions = map[int16]int16{0: 9, 1: 12, 3: 9, 4: 4, 5: 3, 6: 6, 7: 3, 22: 2, 23: 4}

// Error codes (docs/wire.md section 8).
const (
	errNone                 = 0
	errOffsetOutOfRange     = 1
	errUnknownTopicOrPart   = 3
	errNotLeader            = 6
	errRequestTimedOut      = 7
	errStaleControllerEpoch = 11
	errNotEnoughReplicas    = 19
	errNotEnoughAfterAppend = 20
	errClusterAuthorization = 31
	errUnsupportedVersion   = 35
	errInvalidRequest       = 42
	errNotController        = 41
	errKafkaStorage         = 56
	errFencedLeaderEpoch    = 74
	errUnknownLeaderEpoch   = 75
	errStaleBrokerEpoch     = 77
	errInconsistentTopicID  = 103
	errRecordTooLarge       = 18
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// appendTags writes a tagged-field section holding the Epochal tag.
func appendTags(b []byte, extras map[string]any) []byte {
	raw := encodeValue(nil, extras)
	b = appendUvarint(b, 1)
	b = appendUvarint(b, epochalTag)
	b = appendUvarint(b, uint64(len(raw)))
	return append(b, raw...)
}

// readTags reads a tagged-field section: the Epochal tag's map (others skipped).
func readTags(p []byte, pos int) (map[string]any, int, error) {
	extras := map[string]any{}
	count, n := binary.Uvarint(p[pos:])
	if n <= 0 {
		return nil, 0, errors.New("truncated tagged fields")
	}
	pos += n
	for range count {
		tag, n := binary.Uvarint(p[pos:])
		if n <= 0 {
			return nil, 0, errors.New("truncated tag")
		}
		pos += n
		size, n := binary.Uvarint(p[pos:])
		if n <= 0 || pos+n+int(size) > len(p) {
			return nil, 0, errors.New("truncated tag")
		}
		pos += n
		if tag == epochalTag {
			v, err := decodeValue(p[pos : pos+int(size)])
			m, ok := v.(map[string]any)
			if err != nil || !ok {
				return nil, 0, errors.New("the Epochal tag is not a map")
			}
			extras = m
		}
		pos += int(size)
	}
	return extras, pos, nil
}

func readFrame(r io.Reader, limit int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(head[:])))
	if n < 0 || n > limit {
		return nil, fmt.Errorf("a frame of %d bytes", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// RequestHeader is a decoded request header.
type RequestHeader struct {
	api, version int16
	cid          int32
	clock        int64
	extras       map[string]any
	body         []byte
}

func parseRequest(p []byte) (RequestHeader, error) {
	var h RequestHeader
	if len(p) < 10 {
		return h, errors.New("frame shorter than the request header")
	}
	h.api = int16(binary.BigEndian.Uint16(p[0:]))
	h.version = int16(binary.BigEndian.Uint16(p[2:]))
	h.cid = int32(binary.BigEndian.Uint32(p[4:]))
	n := int(int16(binary.BigEndian.Uint16(p[8:])))
	pos := 10 + max(n, 0)
	if pos > len(p) {
		return h, errors.New("truncated client id")
	}
	h.extras = map[string]any{}
	if h.api != 17 { // every API Epochal speaks is flexible but SaslHandshake
		extras, next, err := readTags(p, pos)
		if err != nil {
			return h, err
		}
		h.extras, pos = extras, next
	}
	h.clock = asInt(h.extras["clock"], 0)
	delete(h.extras, "clock")
	h.body = p[pos:]
	return h, nil
}

// responseFrame is a length-prefixed response: header v1 with the tag, then the body.
func responseFrame(cid int32, clock int64, extras map[string]any, resp kmsg.Response) []byte {
	b := make([]byte, 4, 256)
	b = binary.BigEndian.AppendUint32(b, uint32(cid))
	tag := map[string]any{"clock": clock}
	for k, v := range extras {
		tag[k] = v
	}
	b = appendTags(b, tag)
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// requestFrame is a length-prefixed request: header v2 with the tag, then the body.
func requestFrame(req kmsg.Request, cid int32, clock int64, extras map[string]any) []byte {
	b := make([]byte, 4, 256)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(cid))
	b = binary.BigEndian.AppendUint16(b, uint16(len("epochal-go")))
	b = append(b, "epochal-go"...)
	tag := map[string]any{"clock": clock}
	for k, v := range extras {
		tag[k] = v
	}
	b = appendTags(b, tag)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Conn is a blocking client connection to another broker (one request at a time).
type Conn struct {
	c    net.Conn
	host string
	port int
	cid  int32
}

func dialBroker(host string, port int) (*Conn, error) {
	c, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, host: host, port: port}, nil
}

// roundTrip sends req and reads its response into resp: (the responder's clock, extras).
func (c *Conn) roundTrip(req kmsg.Request, resp kmsg.Response, clock int64, extras map[string]any) (int64, map[string]any, error) {
	c.cid++
	if _, err := c.c.Write(requestFrame(req, c.cid, clock, extras)); err != nil {
		return 0, nil, err
	}
	p, err := readFrame(c.c, 64<<20)
	if err != nil {
		return 0, nil, err
	}
	if len(p) < 4 || int32(binary.BigEndian.Uint32(p)) != c.cid {
		return 0, nil, errors.New("response to another request")
	}
	tags, pos, err := readTags(p, 4)
	if err != nil {
		return 0, nil, err
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(p[pos:]); err != nil {
		return 0, nil, err
	}
	remote := asInt(tags["clock"], 0)
	delete(tags, "clock")
	return remote, tags, nil
}

func (c *Conn) close() { _ = c.c.Close() }

// -- record batches ------------------------------------------------------------------------

// writeRecords encodes records as batches v2: one per run of one leader epoch and producer
// with consecutive sequences (impl/node/kafka/translate/replication.py write_records).
func writeRecords(recs []Record) []byte {
	var out []byte
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].Epoch == recs[i].Epoch && recs[j].ProducerID == recs[i].ProducerID &&
			(recs[i].ProducerID == noProducer || recs[j].Sequence-int32(j-i) == recs[i].Sequence) {
			j++
		}
		out = appendBatch(out, recs[i:j])
		i = j
	}
	return out
}

func appendBatch(out []byte, recs []Record) []byte {
	base := recs[0].Offset
	var body []byte
	for _, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(r.Offset - base), Value: r.Value}
		if rec.Value == nil {
			rec.Value = []byte{}
		}
		size := len(rec.AppendTo(nil)) - 1 // the length varint of 0 is one byte
		rec.Length = int32(size)
		body = rec.AppendTo(body)
	}
	batch := kmsg.RecordBatch{FirstOffset: base, Length: int32(49 + len(body)),
		PartitionLeaderEpoch: recs[0].Epoch, Magic: 2, LastOffsetDelta: int32(recs[len(recs)-1].Offset - base),
		ProducerID: recs[0].ProducerID, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body}
	if recs[0].ProducerID != noProducer {
		batch.ProducerEpoch, batch.FirstSequence = 0, recs[0].Sequence
	}
	start := len(out)
	out = batch.AppendTo(out)
	binary.BigEndian.PutUint32(out[start+17:], crc32.Checksum(out[start+21:], crc32c))
	return out
}

// readRecords decodes batches v2: the records with their offsets, epochs, producers.
func readRecords(data []byte) ([]Record, error) {
	out := []Record{}
	for pos := 0; pos < len(data); {
		if len(data)-pos < 61 {
			return nil, errors.New("a truncated record batch")
		}
		length := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		end := pos + 12 + length
		if length < 49 || end > len(data) {
			return nil, errors.New("a truncated record batch")
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(data[pos:end]); err != nil {
			return nil, err
		}
		if batch.Magic != 2 || batch.Attributes&0x07 != 0 {
			return nil, errors.New("not an uncompressed record batch v2")
		}
		if uint32(batch.CRC) != crc32.Checksum(data[pos+21:end], crc32c) {
			return nil, errors.New("record batch CRC mismatch")
		}
		at := batch.Records
		for i := int32(0); i < batch.NumRecords; i++ {
			size, n := binary.Varint(at)
			if n <= 0 || int(size)+n > len(at) {
				return nil, errors.New("a truncated record")
			}
			var rec kmsg.Record
			if err := rec.ReadFrom(at[:n+int(size)]); err != nil {
				return nil, err
			}
			at = at[n+int(size):]
			r := Record{Offset: batch.FirstOffset + int64(rec.OffsetDelta), Epoch: batch.PartitionLeaderEpoch,
				ProducerID: batch.ProducerID, Sequence: -1, Value: append([]byte{}, rec.Value...)}
			if batch.ProducerID != noProducer {
				r.Sequence = batch.FirstSequence + i
			}
			out = append(out, r)
		}
		pos = end
	}
	return out, nil
}
