package main

// The codec against bytes the Python reference wrote (impl.node.wire.values.encode_value,
// impl.node.kafka.translate.replication.write_records).

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValuesReadWhatPythonWrites(t *testing.T) {
	// encode_value({'clock': 5, 'topic_ids': {'t': 7}, 'init': True, 'x': [1, 'a', b'b', None, 1.5]})
	raw := mustHex(t, "070000000400000005636c6f636b03000000000000000500000009746f7069635f6964730700000001000000017403"+
		"000000000000000700000004696e6974020000000178060000000503000000000000000104000000016105000000016200083ff8000000000000")
	got, err := decodeValue(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"clock": int64(5), "topic_ids": map[string]any{"t": int64(7)}, "init": true,
		"x": []any{int64(1), "a", []byte("b"), nil, 1.5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %#v", got)
	}
	if again, _ := decodeValue(encodeValue(nil, want)); !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip %#v", again)
	}
	if _, err := decodeValue(raw[:len(raw)-1]); err == nil {
		t.Fatal("a truncated value decoded")
	}
}

func TestRecordBatchesAreThePythonWritersBytes(t *testing.T) {
	plain := []Record{{Offset: 3, Epoch: 2, ProducerID: -1, Sequence: -1, Value: []byte("hello")},
		{Offset: 4, Epoch: 2, ProducerID: -1, Sequence: -1, Value: []byte{}},
		{Offset: 5, Epoch: 3, ProducerID: -1, Sequence: -1, Value: []byte("z")}}
	want := mustHex(t, "0000000000000003000000440000000202e01268ad000000000001000000000000000000000000"+
		"00000000ffffffffffffffffffffffffffff0000000216000000010a68656c6c6f000c00000201000000000000000000"+
		"050000003900000003024ddf52d600000000000000000000000000000000000000000000ffffffffffffffffffffffffff"+
		"ff000000010e00000001027a00")
	if got := writeRecords(plain); !bytes.Equal(got, want) {
		t.Fatalf("plain batches\n got %x\nwant %x", got, want)
	}
	idem := []Record{{Offset: 0, Epoch: 1, ProducerID: 77, Sequence: 5, Value: []byte("a")},
		{Offset: 1, Epoch: 1, ProducerID: 77, Sequence: 6, Value: []byte("b")}}
	want = mustHex(t, "0000000000000000000000410000000102535d6a8b0000000000010000000000000000000000000000"+
		"0000000000000000004d000000000005000000020e000000010261000e00000201026200")
	if got := writeRecords(idem); !bytes.Equal(got, want) {
		t.Fatalf("idempotent batch\n got %x\nwant %x", got, want)
	}
	back, err := readRecords(want)
	if err != nil || !reflect.DeepEqual(back, idem) {
		t.Fatalf("read back %v %v", back, err)
	}
	want[30] ^= 1
	if _, err := readRecords(want); err == nil {
		t.Fatal("a batch with a bad CRC was read")
	}
}

func TestTruncationRoundsFollowTheReference(t *testing.T) {
	l := &PartitionLog{epochs: []epochEntry{{0, 0}, {2, 10}}}
	for range 15 {
		l.records = append(l.records, Record{})
	}
	b := &Broker{}
	// the leader has epoch 1 where we have 2: cut to where our epoch below 1 ends, ask again
	if point, complete := b.epochTruncationStep(l, 2, 1, 12); point != 10 || complete {
		t.Fatalf("got %d %v", point, complete)
	}
	if point, complete := b.epochTruncationStep(l, 2, 2, 12); point != 12 || !complete {
		t.Fatalf("got %d %v", point, complete)
	}
	if found, end := l.endOffsetFor(1, 15); found != 0 || end != 10 {
		t.Fatalf("end_offset_for(1) = %d %d", found, end)
	}
}
