package main

// Seed 000 G at the leader (impl/node/broker/replication_leader.py): on each replica fetch
// record the follower's LEO, maybe expand the ISR, set HW = min LEO of the ISR, answer
// with records and the HW; shrink the ISR on a timer; every ISR change is a conditional
// write of the partition state znode on the zk_version the leader was last given.

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const recordOverhead = 16 // what one record costs in a fetch response beyond its value

type fetchItem struct {
	topic     string
	partition int32
	offset    int64
	knownHW   int64
	fenced    int32
	topicID   int64
	epoch     int32
	changed   bool
}

// fetchRefusal is fencing.fetch_refusal: (code, body) or code 0.
func (b *Broker) fetchRefusal(r *Replica, it fetchItem, follower int32) (int16, map[string]any) {
	switch {
	case r == nil:
		return errUnknownTopicOrPart, nil
	case r.role != roleLeader:
		return errNotLeader, map[string]any{"leader": r.leader}
	case !contains(r.replicas, follower):
		return errNotLeader, map[string]any{"leader": r.leader}
	case it.topicID != 0 && r.log.topicID != 0 && it.topicID != r.log.topicID:
		return errInconsistentTopicID, nil
	case it.fenced >= 0 && it.fenced != r.leaderEpoch:
		if it.fenced < r.leaderEpoch {
			return errFencedLeaderEpoch, map[string]any{"leader_epoch": r.leaderEpoch}
		}
		return errUnknownLeaderEpoch, map[string]any{"leader_epoch": r.leaderEpoch}
	case it.offset > r.leo() || it.offset < 0:
		return errOffsetOutOfRange, map[string]any{"leo": r.leo(), "hw": r.hw(), "log_start_offset": 0}
	}
	return 0, nil
}

func (b *Broker) onReplicaFetch(req *kmsg.FetchRequest, extras map[string]any) (answer, *reqError) {
	follower := req.ReplicaID
	sender, hasSender := extras["broker_epoch"]
	maxRecords := int(min(max(asInt(extras["max_records"], 500), 0), 5000))
	maxWait := time.Duration(min(max(req.MaxWaitMillis, 0), 5000)) * time.Millisecond
	more := asList(extras["partition_extras"])
	var items []*fetchItem
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			x := map[string]any{}
			if len(items) < len(more) {
				x = asMap(more[len(items)])
			}
			items = append(items, &fetchItem{topic: t.Topic, partition: p.Partition, offset: p.FetchOffset,
				knownHW: asInt(x["hw"], -1), fenced: p.CurrentLeaderEpoch, topicID: asInt(x["topic_id"], 0)})
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// wait out ISR writes in flight, then record every partition without letting go of
	// the lock: each one's record-LEO / advance-HW / answer is one step
	for {
		var writing chan struct{}
		for _, it := range items {
			if r := b.replicas[key{it.topic, it.partition}]; r != nil && r.isrWrite != nil {
				writing = r.isrWrite
				break
			}
		}
		if writing == nil {
			break
		}
		b.mu.Unlock()
		<-writing
		b.mu.Lock()
	}
	now := time.Now()
	for _, it := range items {
		r := b.replicas[key{it.topic, it.partition}]
		if code, _ := b.fetchRefusal(r, *it, follower); code != 0 {
			continue
		}
		it.epoch = r.leaderEpoch
		leoChanged := r.recordFollowerFetch(follower, it.offset, now)
		if r.canJoinISR(follower, b.cfg.Truncation == "kip320") {
			b.spawnISRUpdate(r, sortedInts(append(append([]int32{}, r.isr...), follower)), follower, "expand_isr")
		}
		hwChanged := b.maybeAdvanceHW(r)
		if hwChanged {
			b.changed()
		}
		it.changed = leoChanged || hwChanged
	}
	ready := func() bool {
		for _, it := range items {
			r := b.replicas[key{it.topic, it.partition}]
			if code, _ := b.fetchRefusal(r, *it, follower); it.changed || code != 0 ||
				r.leaderEpoch != it.epoch || r.hw() != it.knownHW || it.offset < r.leo() {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(maxWait)
	for maxWait > 0 && !ready() && time.Now().Before(deadline) {
		b.waitChange(deadline)
	}
	budget := min(int(req.MaxBytes), b.cfg.FetchMaxBytes)
	perPartition := b.cfg.FetchPartitionMaxBytes
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.Version)
	answered := []any{}
	first := true
	for _, it := range items {
		r := b.replicas[key{it.topic, it.partition}]
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition, p.HighWatermark, p.LastStableOffset, p.LogStartOffset = it.partition, -1, -1, -1
		x := map[string]any{}
		if code, body := b.fetchRefusal(r, *it, follower); code != 0 {
			p.ErrorCode = code
			if v, ok := body["hw"]; ok {
				p.HighWatermark, p.LastStableOffset = v.(int64), v.(int64)
				p.LogStartOffset = 0
				x["leo"] = body["leo"]
			}
			if v, ok := body["leader"]; ok {
				p.CurrentLeader.LeaderID = v.(int32)
			}
			if v, ok := body["leader_epoch"]; ok {
				p.CurrentLeader.LeaderEpoch = v.(int32)
			}
		} else {
			recs := r.log.read(it.offset, maxRecords, 1<<62)
			var kept []Record
			used := 0
			for _, rec := range recs {
				size := len(rec.Value) + recordOverhead
				if used+size > min(perPartition, budget) && !(first && len(kept) == 0) {
					break
				}
				kept = append(kept, rec)
				used += size
			}
			if len(kept) > 0 {
				first = false
			}
			budget -= used
			if len(kept) > 0 || it.changed || r.hw() != it.knownHW {
				params := map[string]any{"follower": follower, "fetch_offset": it.offset, "leader_epoch": r.leaderEpoch,
					"leader_hw": r.hw(), "records": recordsDigest(kept), "error": nil}
				if hasSender {
					params["follower_broker_epoch"] = asInt(sender, -1)
				}
				b.emit(r, "handle_fetch", params, map[string]any{"hw": r.hw(), "leo": r.leo(), "isr": r.isr}, nil)
			}
			p.HighWatermark, p.LastStableOffset = r.hw(), r.hw()
			p.CurrentLeader.LeaderEpoch = r.leaderEpoch
			if len(kept) > 0 {
				p.RecordBatches = writeRecords(kept)
			}
			x["leo"], x["topic_id"] = r.leo(), r.log.topicID
		}
		answered = append(answered, x)
		appendFetchPartition(resp, it.topic, p)
	}
	return answer{resp: resp, extras: map[string]any{"partition_extras": answered}}, nil
}

func appendFetchPartition(resp *kmsg.FetchResponse, topic string, p kmsg.FetchResponseTopicPartition) {
	if n := len(resp.Topics); n > 0 && resp.Topics[n-1].Topic == topic {
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, p)
		return
	}
	t := kmsg.NewFetchResponseTopic()
	t.Topic, t.Partitions = topic, []kmsg.FetchResponseTopicPartition{p}
	resp.Topics = append(resp.Topics, t)
}

// onOffsetForLeaderEpoch: where a leader epoch ends in this leader's log (KIP-101/279).
func (b *Broker) onOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest, extras map[string]any) (answer, *reqError) {
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		return answer{}, refuse(errInvalidRequest, "one partition per epoch lookup", nil)
	}
	t, q := req.Topics[0], req.Topics[0].Partitions[0]
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.replicas[key{t.Topic, q.Partition}]
	switch {
	case r == nil:
		return answer{}, refuse(errUnknownTopicOrPart, "no replica here", nil)
	case r.role != roleLeader:
		return answer{}, refuse(errNotLeader, "not the leader", map[string]any{"leader": r.leader})
	}
	if id := asInt(extras["topic_id"], 0); id != 0 && r.log.topicID != 0 && id != r.log.topicID {
		return answer{}, refuse(errInconsistentTopicID, "another incarnation of the topic", nil)
	}
	if c := q.CurrentLeaderEpoch; c >= 0 && c != r.leaderEpoch {
		code := int16(errUnknownLeaderEpoch)
		if c < r.leaderEpoch {
			code = errFencedLeaderEpoch
		}
		return answer{}, refuse(code, "leader epoch mismatch", map[string]any{"leader_epoch": r.leaderEpoch})
	}
	found, end := r.log.epochAnswer(q.LeaderEpoch, r.leaderEpoch)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.SetVersion(req.Version)
	rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
	rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
	rt.Topic, rp.Partition, rp.LeaderEpoch, rp.EndOffset = t.Topic, q.Partition, found, end
	rt.Partitions = []kmsg.OffsetForLeaderEpochResponseTopicPartition{rp}
	resp.Topics = []kmsg.OffsetForLeaderEpochResponseTopic{rt}
	return answer{resp: resp}, nil
}

// epochAnswer is the leader's answer to an epoch lookup: (largest epoch <= requested, its
// end offset); its current epoch ends at the log's end.
func (l *PartitionLog) epochAnswer(requested, current int32) (int32, int64) {
	if requested == current {
		return requested, l.leo()
	}
	return l.endOffsetFor(requested, l.leo())
}

// -- the ISR -----------------------------------------------------------------------------------

// isrChecker is maybe_change_ISR's shrink half, on a timer: one lagging follower per write.
func (b *Broker) isrChecker() {
	lag := b.cfg.lagTime()
	for {
		time.Sleep(max(50*time.Millisecond, lag/4))
		b.mu.Lock()
		now := time.Now()
		for _, k := range b.sortedKeys() {
			r := b.replicas[k]
			if r.role != roleLeader || r.isrWrite != nil {
				continue
			}
			if lagging := r.outOfSyncFollowers(b.id, now, lag, b.cfg.ReplicaLagMaxMessages); len(lagging) > 0 {
				out := sortedInts(lagging)[0]
				b.spawnISRUpdate(r, without(r.isr, out), out, "shrink_isr")
			}
		}
		b.mu.Unlock()
	}
}

// spawnISRUpdate starts one conditional ISR write; until it ends the partition takes no
// produce and no follower fetch (the model's expand_isr / shrink_isr is one step); b.mu held.
func (b *Broker) spawnISRUpdate(r *Replica, isr []int32, follower int32, kind string) {
	if r.isrWrite != nil {
		return
	}
	done := make(chan struct{})
	r.isrWrite = done
	epoch := r.leaderEpoch
	go func() {
		b.isrWriteLock.Lock() // one ISR write at a time, each recorded before the next
		defer b.isrWriteLock.Unlock()
		b.writeISR(r, isr, follower, kind, epoch)
		b.mu.Lock()
		close(done)
		if r.isrWrite == done {
			r.isrWrite = nil
		}
		b.changed()
		b.mu.Unlock()
	}()
}

// writeISR writes an ISR decided in leader epoch epoch -- only in that epoch: a change that
// waited for the lock while the controller made this broker leader again would be taken
// by ZooKeeper on the new zk_version and shrink a follower the new ISR no longer holds.
func (b *Broker) writeISR(r *Replica, isr []int32, follower int32, kind string, epoch int32) {
	b.mu.Lock()
	if r.role != roleLeader || r.leaderEpoch != epoch {
		b.mu.Unlock()
		return
	}
	expected := r.zkVersion
	state := LeaderAndISRZnode{Leader: b.id, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: r.controllerEpoch}
	path := leaderAndISRPath(r.topic, r.partition)
	b.mu.Unlock()
	stat, err := b.zk.Set(path, state.encode(), expected)
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		// the write that moved the znode on orders this failure after it
		moved, _ := b.zk.Exists(path)
		b.mu.Lock()
		defer b.mu.Unlock()
		if r.role == roleLeader && r.leaderEpoch == epoch {
			var zxid *int64
			if moved != nil {
				zxid = ptr(moved.Mzxid)
			}
			b.emit(r, "isr_update_failed", map[string]any{"expected_zk_version": expected, "isr": isr}, nil, zxid)
			r.role = roleNone // seed 000 question 3: a leader whose write failed steps down
			b.changed()
		}
		return
	}
	if err != nil {
		return // ZooKeeper unavailable: the next check retries
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.role != roleLeader || r.leaderEpoch != epoch {
		return
	}
	r.isr, r.zkVersion = isr, stat.Version
	b.maybeAdvanceHW(r)
	b.emit(r, kind, map[string]any{"follower": follower, "isr": isr, "zk_version": stat.Version},
		map[string]any{"hw": r.hw(), "leo": r.leo(), "isr": r.isr}, ptr(stat.Mzxid))
	b.changed()
	b.isrChanges[key{r.topic, r.partition}] = true
}

// isrChangePropagation tells the controller of ISR changes, batched: one sequential znode
// under /isr_change_notification per period.
func (b *Broker) isrChangePropagation() {
	for {
		time.Sleep(200 * time.Millisecond)
		b.mu.Lock()
		if len(b.isrChanges) == 0 {
			b.mu.Unlock()
			continue
		}
		batch := b.isrChanges
		b.isrChanges = map[key]bool{}
		b.mu.Unlock()
		var items [][2]any
		for k := range batch {
			items = append(items, [2]any{k.topic, k.partition})
		}
		data, _ := json.Marshal(items)
		if err := b.zk.CreateSequential(zkISRChange+"/change-", data); err != nil {
			b.mu.Lock()
			for k := range batch {
				b.isrChanges[k] = true
			}
			b.mu.Unlock()
		}
	}
}
