package main

// The broker's state: its replicas, its epochs, what it knows of the cluster
// (impl/node/broker/core.py, impl/node/replica.py).  One mutex guards it all, so each
// protocol step -- record a LEO, move the HW, write the event -- is indivisible, as the
// Python broker's single event loop makes it.

import (
	"fmt"
	"hash/crc32"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

const (
	roleLeader   = "leader"
	roleFollower = "follower"
	roleNone     = "none"
)

// PartitionState is a LeaderAndISR entry (or a znode read at startup).
type PartitionState struct {
	Topic           string
	Partition       int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	Replicas        []int32
	ZkVersion       int32
	ControllerEpoch int32
	TopicID         int64
}

type key struct {
	topic     string
	partition int32
}

type Replica struct {
	topic           string
	partition       int32
	log             *PartitionLog
	role            string
	leader          int32
	leaderEpoch     int32
	isr             []int32 // sorted
	replicas        []int32
	zkVersion       int32
	controllerEpoch int32
	// leader side: each follower's LEO from its last fetch in this term, and since when
	// it was caught up
	followerLEO  map[int32]int64
	lastCaughtUp map[int32]time.Time
	lastFetch    map[int32]fetchMark
	isrWrite     chan struct{} // non-nil while an ISR change is being written
	// follower side
	needsEpochLookup bool
	lastSentFetch    *[2]int64 // (offset, hw) of the last send_fetch event
}

type fetchMark struct {
	at  time.Time
	leo int64
}

type Broker struct {
	cfg  Config
	id   int32
	rec  *Recorder
	zk   *ZK
	mu   sync.Mutex
	cond chan struct{} // closed and replaced whenever a partition changes

	replicas        map[key]*Replica
	brokerEpoch     int64
	controllerEpoch int32
	termID          int32 // the (controller id, epoch) ZooKeeper last confirmed; epoch -1: none
	termEpoch       int32
	endpoints       map[int32][2]any // id -> [host, port]
	metaBrokers     map[string][2]any
	metaTopics      map[string]map[string]map[string]any
	metaController  int32
	controlReady    bool
	stopping        bool
	fetchers        map[int32]bool
	isrChanges      map[key]bool
	isrWriteLock    sync.Mutex
	faults          *FaultLayer
}

func newBroker(cfg Config) (*Broker, error) {
	rec, err := openRecorder(cfg.DataDir, cfg.RunID, cfg.BrokerID)
	if err != nil {
		return nil, err
	}
	return &Broker{cfg: cfg, id: int32(cfg.BrokerID), rec: rec, cond: make(chan struct{}),
		replicas: map[key]*Replica{}, brokerEpoch: -1, controllerEpoch: -1, termID: -1, termEpoch: -1,
		endpoints: map[int32][2]any{}, metaBrokers: map[string][2]any{},
		metaTopics: map[string]map[string]map[string]any{}, metaController: -1,
		fetchers: map[int32]bool{}, isrChanges: map[key]bool{},
		faults: &FaultLayer{path: filepath.Join(cfg.DataDir, "faults.json"), me: int32(cfg.BrokerID)}}, nil
}

// changed wakes every waiter (long-polling fetches, produces waiting for the HW); b.mu held.
func (b *Broker) changed() {
	close(b.cond)
	b.cond = make(chan struct{})
}

// waitChange releases b.mu until something changes or the deadline passes, then retakes it.
func (b *Broker) waitChange(deadline time.Time) {
	ch := b.cond
	b.mu.Unlock()
	d := time.Until(deadline)
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
	b.mu.Lock()
}

func (b *Broker) logDir(topic string, partition int32) string {
	return filepath.Join(b.cfg.DataDir, fmt.Sprintf("broker-%d", b.id), "logs", fmt.Sprintf("%s-%d", topic, partition))
}

// replica opens (create) or finds this broker's replica of a partition; b.mu held.
func (b *Broker) replica(topic string, partition int32, create bool) (*Replica, error) {
	k := key{topic, partition}
	if r := b.replicas[k]; r != nil || !create {
		return r, nil
	}
	log, err := openLog(b.logDir(topic, partition))
	if err != nil {
		return nil, err
	}
	r := &Replica{topic: topic, partition: partition, log: log, role: roleNone, leader: -1,
		leaderEpoch: -1, zkVersion: -1, controllerEpoch: -1}
	b.replicas[k] = r
	return r, nil
}

// Incarnation verdicts (impl/node/topic_identity.py).
const (
	incSame = iota
	incStaleRequest
	incStaleLog
)

func compareIncarnation(requested int64, local int64, hasRecords bool) int {
	if requested == 0 {
		return incSame
	}
	if local == 0 && !hasRecords {
		return incSame
	}
	if requested < local {
		return incStaleRequest
	}
	if requested > local {
		return incStaleLog
	}
	return incSame
}

// replicaOfIncarnation is core.py's replica_of_incarnation; b.mu held.
func (b *Broker) replicaOfIncarnation(topic string, partition int32, topicID int64) (*Replica, bool, error) {
	r, err := b.replica(topic, partition, true)
	if err != nil {
		return nil, false, err
	}
	switch compareIncarnation(topicID, r.log.topicID, r.log.leo() > 0) {
	case incStaleRequest:
		return r, false, nil
	case incStaleLog:
		r.stop()
		r.log.delete()
		delete(b.replicas, key{topic, partition})
		b.rec.Emit(Event{Kind: "stop_replica", Topic: ptr(topic), Partition: ptr(int(partition)),
			Params: map[string]any{"delete": true, "reason": "stale_topic_id"}})
		if r, err = b.replica(topic, partition, true); err != nil {
			return nil, false, err
		}
	}
	if topicID != 0 && r.log.topicID != topicID {
		r.log.setTopicID(topicID)
	}
	return r, true, nil
}

// -- the replica's steps (impl/node/replica.py) ----------------------------------------------

func (r *Replica) hw() int64  { return r.log.hw }
func (r *Replica) leo() int64 { return r.log.leo() }

func (r *Replica) post() map[string]any {
	return map[string]any{"role": r.role, "leader": r.leader, "leader_epoch": r.leaderEpoch,
		"hw": r.hw(), "leo": r.leo(), "log_end_epoch": r.log.logEndEpoch()}
}

func (b *Broker) emit(r *Replica, kind string, params, post map[string]any, zxid *int64) {
	if post == nil {
		post = r.post()
	}
	b.rec.Emit(Event{Kind: kind, Topic: ptr(r.topic), Partition: ptr(int(r.partition)),
		Params: params, Post: post, Zxid: zxid})
}

func (r *Replica) take(st PartitionState) {
	r.leader, r.leaderEpoch = st.Leader, st.LeaderEpoch
	r.isr = sortedInts(st.ISR)
	r.replicas = append([]int32(nil), st.Replicas...)
	r.zkVersion, r.controllerEpoch = st.ZkVersion, st.ControllerEpoch
}

func controlParams(st PartitionState) map[string]any {
	return map[string]any{"leader": st.Leader, "leader_epoch": st.LeaderEpoch,
		"isr": sortedInts(st.ISR), "zk_version": st.ZkVersion, "controller_epoch": st.ControllerEpoch}
}

func (b *Broker) becomeLeader(r *Replica, st PartitionState, record bool) {
	r.lastSentFetch = nil
	r.take(st)
	r.role = roleLeader
	if r.log.assignEpoch(st.LeaderEpoch, r.leo()) {
		r.log.writeEpochs()
	}
	now := time.Now()
	r.followerLEO, r.lastFetch = map[int32]int64{}, map[int32]fetchMark{}
	r.lastCaughtUp = map[int32]time.Time{}
	for _, f := range r.isr {
		if f != b.id {
			r.lastCaughtUp[f] = now
		}
	}
	r.needsEpochLookup = false
	b.maybeAdvanceHW(r)
	if record {
		b.emit(r, "become_leader", controlParams(st), nil, nil)
	}
	b.changed()
}

func (b *Broker) becomeFollower(r *Replica, st PartitionState, record bool) {
	r.lastSentFetch = nil
	r.take(st)
	r.role = roleFollower
	r.followerLEO, r.lastCaughtUp, r.lastFetch = map[int32]int64{}, map[int32]time.Time{}, map[int32]fetchMark{}
	params := controlParams(st)
	if b.cfg.Truncation == "hw" {
		point := min(r.hw(), r.leo())
		r.log.truncateTo(point)
		params["truncated_to"] = point
		r.needsEpochLookup = false
	} else {
		params["truncated_to"] = nil
		r.needsEpochLookup = true
	}
	if record {
		b.emit(r, "become_follower", params, nil, nil)
	}
	b.changed()
}

func (r *Replica) stop() {
	r.lastSentFetch = nil
	r.role = roleNone
}

// advanceHighWatermark: the leader's HW is the minimum LEO over the ISR, never moving
// back; a follower in the ISR with no LEO known in this term holds it where it is.
func (b *Broker) advanceHighWatermark(r *Replica, leo int64) int64 {
	low := leo
	for _, f := range r.isr {
		if f == b.id {
			continue
		}
		fl, ok := r.followerLEO[f]
		if !ok {
			return r.hw()
		}
		low = min(low, fl)
	}
	return max(r.hw(), low)
}

func (b *Broker) maybeAdvanceHW(r *Replica) bool {
	if r.role != roleLeader {
		return false
	}
	if hw := b.advanceHighWatermark(r, r.leo()); hw > r.hw() {
		r.log.setHW(hw)
		return true
	}
	return false
}

func (r *Replica) recordFollowerFetch(f int32, offset int64, now time.Time) bool {
	prev, had := r.followerLEO[f]
	r.followerLEO[f] = offset
	last, hadLast := r.lastFetch[f]
	if offset >= r.leo() {
		r.lastCaughtUp[f] = now
	} else if hadLast && offset >= last.leo {
		r.lastCaughtUp[f] = last.at
	}
	r.lastFetch[f] = fetchMark{now, r.leo()}
	return !had || prev != offset
}

func (r *Replica) outOfSyncFollowers(self int32, now time.Time, lag time.Duration, lagMessages int64) []int32 {
	var out []int32
	for _, f := range r.isr {
		if f == self {
			continue
		}
		fl, known := r.followerLEO[f]
		if known && fl >= r.leo() {
			continue
		}
		behind := int64(0)
		if known {
			behind = r.leo() - fl
		}
		if now.Sub(r.lastCaughtUp[f]) > lag || behind > lagMessages {
			out = append(out, f)
		}
	}
	return out
}

func (r *Replica) canJoinISR(f int32, kip320 bool) bool {
	fl, known := r.followerLEO[f]
	if contains(r.isr, f) || !contains(r.replicas, f) || !known || fl < r.hw() {
		return false
	}
	if start, ok := r.log.epochStart(r.leaderEpoch); kip320 && ok && fl < start {
		return false
	}
	return true
}

// -- helpers ----------------------------------------------------------------------------------

func sortedInts(xs []int32) []int32 {
	out := append([]int32{}, xs...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func contains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func without(xs []int32, x int32) []int32 {
	out := []int32{}
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// valueDigest is what a trace records of a value: crc32:<8 hex>/<length>.
func valueDigest(v []byte) string { return fmt.Sprintf("crc32:%08x/%d", crc32.ChecksumIEEE(v), len(v)) }

func recordsDigest(recs []Record) []any {
	out := []any{}
	for _, r := range recs {
		out = append(out, []any{r.Offset, r.Epoch, valueDigest(r.Value)})
	}
	return out
}
