package main

// Producers and consumers, served by a partition's leader (impl/node/broker/clients.py):
// consumer reads stop at the HW; a produce with acks=all waits until the HW passes its
// records and is refused while the ISR is smaller than min.insync.replicas.

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderReplica is the replica if this broker leads it; b.mu held.
func (b *Broker) leaderReplica(topic string, partition int32) (*Replica, *reqError) {
	r := b.replicas[key{topic, partition}]
	if r == nil {
		return nil, refuse(errUnknownTopicOrPart, "UNKNOWN_TOPIC_OR_PARTITION", nil)
	}
	if r.role != roleLeader {
		return nil, refuse(errNotLeader, "NOT_LEADER", map[string]any{"leader": r.leader})
	}
	return r, nil
}

// waitISRSettled waits out an ISR write of r in flight; b.mu held.
func (b *Broker) waitISRSettled(r *Replica) {
	for r.isrWrite != nil {
		ch := r.isrWrite
		b.mu.Unlock()
		<-ch
		b.mu.Lock()
	}
}

func (b *Broker) onProduce(req *kmsg.ProduceRequest) (answer, *reqError) {
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		return answer{}, refuse(errInvalidRequest, "one partition per produce", nil)
	}
	topic, part := req.Topics[0].Topic, req.Topics[0].Partitions[0]
	recs, err := readRecords(part.Records)
	if err != nil || len(recs) == 0 {
		return answer{}, refuse(errInvalidRequest, "no values", nil)
	}
	acks := req.Acks
	b.mu.Lock()
	defer b.mu.Unlock()
	r, e := b.leaderReplica(topic, part.Partition)
	if e != nil {
		return answer{}, e
	}
	for _, rec := range recs {
		if len(rec.Value) > b.cfg.MaxMessageBytes {
			return answer{}, refuse(errRecordTooLarge, fmt.Sprintf("a value of %d bytes exceeds max.message.bytes %d",
				len(rec.Value), b.cfg.MaxMessageBytes), nil)
		}
	}
	if r.isrWrite != nil {
		b.waitISRSettled(r)
		if r, e = b.leaderReplica(topic, part.Partition); e != nil {
			return answer{}, e
		}
	}
	if acks == -1 && len(r.isr) < b.cfg.MinInsyncReplicas {
		return answer{}, refuse(errNotEnoughReplicas, fmt.Sprintf("ISR %v smaller than min.insync.replicas %d",
			r.isr, b.cfg.MinInsyncReplicas), nil)
	}
	epoch := r.leaderEpoch
	base := r.leo()
	batch := make([]Record, len(recs))
	for i, rec := range recs {
		batch[i] = Record{Offset: base + int64(i), Epoch: epoch, ProducerID: rec.ProducerID, Sequence: rec.Sequence, Value: rec.Value}
	}
	if err := r.log.append(batch); err != nil {
		b.storageFailed(err)
		return answer{}, refuse(errKafkaStorage, err.Error(), nil)
	}
	// advancing the HW is part of each record's step, as in the model's produce
	hw := r.hw()
	hws := make([]int64, len(batch))
	for i, rec := range batch {
		hw = b.advanceHighWatermark(r, rec.Offset+1)
		hw = max(hw, r.hw())
		hws[i] = hw
	}
	b.maybeAdvanceHW(r)
	for i, rec := range batch {
		b.emit(r, "produce", map[string]any{"offset": rec.Offset, "value": valueDigest(rec.Value), "leader_epoch": epoch},
			map[string]any{"hw": hws[i], "leo": rec.Offset + 1}, nil)
	}
	b.changed()
	last := batch[len(batch)-1].Offset
	if acks == 0 {
		return answer{none: true}, nil
	}
	ok := func() answer {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(req.Version)
		t := kmsg.NewProduceResponseTopic()
		p := kmsg.NewProduceResponseTopicPartition()
		t.Topic, p.Partition, p.BaseOffset, p.LogStartOffset = topic, part.Partition, base, -1
		t.Partitions = []kmsg.ProduceResponseTopicPartition{p}
		resp.Topics = []kmsg.ProduceResponseTopic{t}
		return answer{resp: resp, extras: map[string]any{"leader_epoch": epoch}}
	}
	if acks == 1 {
		return ok(), nil
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	for {
		if r.role != roleLeader || r.leaderEpoch != epoch {
			return answer{}, refuse(errNotLeader, "leadership lost before commit", map[string]any{"leader": r.leader})
		}
		if r.hw() > last {
			if len(r.isr) < b.cfg.MinInsyncReplicas {
				return answer{}, refuse(errNotEnoughAfterAppend, fmt.Sprintf("committed with ISR %v, fewer than min.insync.replicas %d",
					r.isr, b.cfg.MinInsyncReplicas), nil)
			}
			return ok(), nil
		}
		if !time.Now().Before(deadline) {
			return answer{}, refuse(errRequestTimedOut, "not committed in time", nil)
		}
		b.waitChange(deadline)
	}
}

// onConsumerFetch serves committed records only: empty between HW and LEO, OFFSET_OUT_OF_RANGE
// beyond the LEO (seed 000 question 7).
func (b *Broker) onConsumerFetch(req *kmsg.FetchRequest) (answer, *reqError) {
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		return answer{}, refuse(errInvalidRequest, "a consumer fetches one partition", nil)
	}
	topic, q := req.Topics[0].Topic, req.Topics[0].Partitions[0]
	b.mu.Lock()
	defer b.mu.Unlock()
	r, e := b.leaderReplica(topic, q.Partition)
	if e != nil {
		return answer{}, e
	}
	offset := q.FetchOffset
	if offset > r.leo() || offset < 0 {
		return answer{}, refuse(errOffsetOutOfRange, "OFFSET_OUT_OF_RANGE",
			map[string]any{"leo": r.leo(), "hw": r.hw(), "log_start_offset": 0})
	}
	wait := time.Duration(min(max(req.MaxWaitMillis, 0), 5000)) * time.Millisecond
	if offset >= r.hw() && wait > 0 {
		b.waitChange(time.Now().Add(wait))
		if r, e = b.leaderReplica(topic, q.Partition); e != nil {
			return answer{}, e
		}
	}
	n := int(min(r.hw(), r.leo()) - offset)
	var recs []Record
	if n > 0 && offset <= r.leo() {
		recs = r.log.read(offset, min(n, 500), 1<<62)
	}
	limit := min(int(req.MaxBytes), b.cfg.FetchMaxBytes, b.cfg.FetchPartitionMaxBytes)
	var kept []Record
	used := 0
	for _, rec := range recs {
		size := len(rec.Value) + recordOverhead
		if used+size > limit && len(kept) > 0 {
			break
		}
		kept, used = append(kept, rec), used+size
	}
	if len(kept) > 0 {
		b.emit(r, "consumer_fetch", map[string]any{"fetch_offset": offset, "records": len(kept)},
			map[string]any{"hw": r.hw(), "leo": r.leo()}, nil)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.Version)
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition, p.HighWatermark, p.LastStableOffset, p.LogStartOffset = q.Partition, r.hw(), r.hw(), 0
	p.CurrentLeader.LeaderEpoch = r.leaderEpoch
	if len(kept) > 0 {
		p.RecordBatches = writeRecords(kept)
	}
	appendFetchPartition(resp, topic, p)
	return answer{resp: resp, extras: map[string]any{"leo": r.leo()}}, nil
}

var controllerCache struct {
	sync.Mutex
	id int32
	at time.Time
}

// onMetadata: the brokers and partitions of the last UpdateMetadata, and the controller
// /controller names now (clients send admin requests there, seed 004).
func (b *Broker) onMetadata() answer {
	controllerCache.Lock()
	if time.Since(controllerCache.at) > 100*time.Millisecond {
		controllerCache.id, controllerCache.at = b.zk.controllerID(), time.Now()
	}
	cid := controllerCache.id
	controllerCache.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if cid < 0 {
		cid = b.metaController
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	resp.ControllerID = cid
	for id, ep := range b.metaBrokers {
		n, _ := strconv.Atoi(id)
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = int32(n), ep[0].(string), int32(ep[1].(int))
		resp.Brokers = append(resp.Brokers, mb)
	}
	for t, parts := range b.metaTopics {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = ptr(t)
		for p, st := range parts {
			n, _ := strconv.Atoi(p)
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.LeaderEpoch = int32(n), st["leader"].(int32), st["leader_epoch"].(int32)
			mp.Replicas, mp.ISR = st["replicas"].([]int32), st["isr"].([]int32)
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return answer{resp: resp, extras: map[string]any{"controller_epoch": b.controllerEpoch}}
}

// storageFailed: the log directory failed; the broker halts (impl/node/broker/log_dir.py).
func (b *Broker) storageFailed(err error) {
	fmt.Fprintln(os.Stderr, "log directory failed, halting:", err)
	go os.Exit(1)
}
