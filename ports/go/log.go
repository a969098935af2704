package main

// A replica's log on disk in impl/node/log.py's format (version 2, impl/node/segment.py):
// a segment "<base offset, 20 digits>.log" starting with the header "EPLOG" | u8 2 | u16 0,
// then records u32 body_len | u32 crc32(body) | body, body = i64 offset | i32 leader_epoch
// | i64 producer_id | i32 sequence | value.  Beside it: hw-checkpoint ("<hw>\n"),
// leader-epoch-checkpoint ("<epoch> <start>\n" per epoch) and partition.metadata
// ("topic_id: N").  This port writes one segment per log (no rolling, no retention) and
// keeps the records in memory as well as on disk.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	undefinedEpoch = -1
	noProducer     = -1
	segmentName    = "00000000000000000000.log"
	segmentHeader  = "EPLOG\x02\x00\x00"
)

type Record struct {
	Offset     int64
	Epoch      int32
	ProducerID int64
	Sequence   int32
	Value      []byte
}

type epochEntry struct {
	epoch int32
	start int64
}

type PartitionLog struct {
	dir       string
	records   []Record
	positions []int64 // byte position of each record in the segment
	size      int64
	file      *os.File
	epochs    []epochEntry
	hw        int64
	topicID   int64 // 0: unknown
}

func encodeRecord(r Record) []byte {
	body := make([]byte, 24, 24+len(r.Value))
	binary.BigEndian.PutUint64(body[0:], uint64(r.Offset))
	binary.BigEndian.PutUint32(body[8:], uint32(r.Epoch))
	binary.BigEndian.PutUint64(body[12:], uint64(r.ProducerID))
	binary.BigEndian.PutUint32(body[20:], uint32(r.Sequence))
	body = append(body, r.Value...)
	out := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(out[0:], uint32(len(body)))
	binary.BigEndian.PutUint32(out[4:], crc32.ChecksumIEEE(body))
	return append(out, body...)
}

func writeAtomic(path, text string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readInt(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// openLog recovers a partition directory: every record up to the first torn or corrupt
// one (the file is cut there), the epoch cache rebuilt from the records, the HW checkpoint.
func openLog(dir string) (*PartitionLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l := &PartitionLog{dir: dir}
	path := filepath.Join(dir, segmentName)
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	pos := int64(0)
	if len(data) >= len(segmentHeader) && string(data[:5]) == "EPLOG" {
		if data[5] != 2 {
			return nil, fmt.Errorf("%s: log format version %d is not one this broker reads", path, data[5])
		}
		pos = int64(len(segmentHeader))
	} else if len(data) > 0 {
		return nil, fmt.Errorf("%s: a version-1 segment; this broker reads version 2 only", path)
	}
	for {
		if int64(len(data))-pos < 8 {
			break
		}
		n := int64(binary.BigEndian.Uint32(data[pos:]))
		crc := binary.BigEndian.Uint32(data[pos+4:])
		if n < 24 || int64(len(data))-pos-8 < n {
			break
		}
		body := data[pos+8 : pos+8+n]
		if crc32.ChecksumIEEE(body) != crc {
			break
		}
		rec := Record{Offset: int64(binary.BigEndian.Uint64(body[0:])),
			Epoch:      int32(binary.BigEndian.Uint32(body[8:])),
			ProducerID: int64(binary.BigEndian.Uint64(body[12:])),
			Sequence:   int32(binary.BigEndian.Uint32(body[20:])),
			Value:      append([]byte(nil), body[24:]...)}
		if rec.Offset != int64(len(l.records)) {
			break
		}
		l.records = append(l.records, rec)
		l.positions = append(l.positions, pos)
		l.assignEpoch(rec.Epoch, rec.Offset)
		pos += 8 + n
	}
	if len(data) == 0 {
		if err := os.WriteFile(path, []byte(segmentHeader), 0o600); err != nil {
			return nil, err
		}
		pos = int64(len(segmentHeader))
	} else if pos < int64(len(data)) {
		fmt.Fprintf(os.Stderr, "log recovery: %s: dropping %d bytes from offset %d\n", path, int64(len(data))-pos, len(l.records))
		if err := os.Truncate(path, pos); err != nil {
			return nil, err
		}
	}
	l.size = pos
	l.file, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l.hw = min(readInt(filepath.Join(dir, "hw-checkpoint")), l.leo())
	if data, err := os.ReadFile(filepath.Join(dir, "partition.metadata")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "topic_id" {
				l.topicID, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	l.writeEpochs()
	return l, nil
}

func (l *PartitionLog) leo() int64 { return int64(len(l.records)) }

func (l *PartitionLog) logEndEpoch() any {
	if len(l.records) == 0 {
		return nil
	}
	return int(l.records[len(l.records)-1].Epoch)
}

func (l *PartitionLog) latestEpoch() int32 {
	if len(l.epochs) == 0 {
		return undefinedEpoch
	}
	return l.epochs[len(l.epochs)-1].epoch
}

// assignEpoch records where a newer epoch starts (KIP-101); false if it is not newer.
func (l *PartitionLog) assignEpoch(epoch int32, start int64) bool {
	if len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].epoch >= epoch {
		return false
	}
	l.epochs = append(l.epochs, epochEntry{epoch, start})
	return true
}

func (l *PartitionLog) epochStart(epoch int32) (int64, bool) {
	for _, e := range l.epochs {
		if e.epoch == epoch {
			return e.start, true
		}
	}
	return 0, false
}

// endOffsetFor is LeaderEpochCache.end_offset_for: (largest epoch <= epoch, its end).
func (l *PartitionLog) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	found := int32(undefinedEpoch)
	for i, e := range l.epochs {
		if e.epoch <= epoch {
			found = e.epoch
		} else {
			if found != undefinedEpoch {
				return found, l.epochs[i].start
			}
			return found, l.epochs[0].start
		}
	}
	if found != undefinedEpoch || len(l.epochs) == 0 {
		return found, leo
	}
	return undefinedEpoch, l.epochs[0].start
}

func (l *PartitionLog) writeEpochs() {
	var b strings.Builder
	for _, e := range l.epochs {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.start)
	}
	_ = writeAtomic(filepath.Join(l.dir, "leader-epoch-checkpoint"), b.String())
}

func (l *PartitionLog) setHW(hw int64) {
	l.hw = hw
	_ = writeAtomic(filepath.Join(l.dir, "hw-checkpoint"), fmt.Sprintf("%d\n", hw))
}

func (l *PartitionLog) setTopicID(id int64) {
	l.topicID = id
	_ = writeAtomic(filepath.Join(l.dir, "partition.metadata"), fmt.Sprintf("topic_id: %d\n", id))
}

// append writes records at the LEO in one write, whole or not at all.
func (l *PartitionLog) append(recs []Record) error {
	var buf []byte
	pos := l.size
	positions := make([]int64, 0, len(recs))
	for _, r := range recs {
		positions = append(positions, pos+int64(len(buf)))
		buf = append(buf, encodeRecord(r)...)
	}
	if _, err := l.file.Write(buf); err != nil {
		_ = os.Truncate(filepath.Join(l.dir, segmentName), l.size)
		return err
	}
	l.size += int64(len(buf))
	changed := false
	for i, r := range recs {
		l.records = append(l.records, r)
		l.positions = append(l.positions, positions[i])
		for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].epoch > r.Epoch {
			l.epochs = l.epochs[:len(l.epochs)-1] // an epoch announced but never written
			changed = true
		}
		changed = l.assignEpoch(r.Epoch, r.Offset) || changed
	}
	if changed {
		l.writeEpochs()
	}
	return nil
}

// truncateTo drops every record at or after offset.
func (l *PartitionLog) truncateTo(offset int64) {
	offset = max(0, offset)
	if offset >= l.leo() {
		return
	}
	pos := l.positions[offset]
	_ = os.Truncate(filepath.Join(l.dir, segmentName), pos)
	l.size = pos
	l.records, l.positions = l.records[:offset], l.positions[:offset]
	l.forgetEpochsFrom(offset)
	if l.hw > offset {
		l.setHW(offset)
	}
}

// forgetEpochsFrom drops the epochs that start at or after offset.
func (l *PartitionLog) forgetEpochsFrom(offset int64) {
	k := sort.Search(len(l.epochs), func(i int) bool { return l.epochs[i].start >= offset })
	if k < len(l.epochs) {
		l.epochs = l.epochs[:k]
		l.writeEpochs()
	}
}

func (l *PartitionLog) read(offset int64, maxRecords int, maxBytes int) []Record {
	out := []Record{}
	size := 0
	for o := offset; o < l.leo() && len(out) < maxRecords; o++ {
		r := l.records[o]
		if len(out) > 0 && size+len(r.Value) > maxBytes {
			break
		}
		size += len(r.Value)
		out = append(out, r)
	}
	return out
}

func (l *PartitionLog) close() { _ = l.file.Close() }

func (l *PartitionLog) delete() {
	l.close()
	_ = os.RemoveAll(l.dir)
}
