package main

// Seed 000 C: the controller's requests (impl/node/broker/control.py, impl/node/fencing.py).
// A control request is fenced first -- an older controller epoch (seed 002), a broker epoch
// older than this broker's registration (seed 003), a sender ZooKeeper does not name as the
// controller of its epoch -- and only then obeyed.

import (
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type controlHeader struct {
	controllerID    int32
	controllerEpoch int32
	brokerEpoch     int64
}

// headerOf reads the fencing fields: max_broker_epoch (tag), else broker_epoch (Kafka's
// field, or an explicit -1 in the tag); a request with neither is malformed.
func headerOf(controllerID, controllerEpoch int32, brokerEpoch int64, extras map[string]any) (controlHeader, *reqError) {
	h := controlHeader{controllerID, controllerEpoch, brokerEpoch}
	if v, ok := extras["max_broker_epoch"]; ok {
		h.brokerEpoch = asInt(v, -1)
	} else if v, ok := extras["broker_epoch"]; ok {
		h.brokerEpoch = asInt(v, -1)
	} else if brokerEpoch == -1 {
		return h, refuse(errInvalidRequest, "a control request carries a broker epoch (seed 003)", nil)
	}
	return h, nil
}

// waitControlReady holds control requests until the startup (or a re-registration) is
// recorded: a request handled first would be recorded before the broker_restart it follows.
func (b *Broker) waitControlReady() {
	for {
		b.mu.Lock()
		if b.controlReady {
			return // with b.mu held
		}
		b.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// fence refuses a stale or unconfirmed control request; b.mu held (released while
// ZooKeeper is read).
func (b *Broker) fence(h controlHeader, kind string, entries []PartitionState) *reqError {
	if e := b.refuseIfStale(h, kind, entries); e != nil {
		return e
	}
	if b.termEpoch == h.controllerEpoch {
		if b.termID == h.controllerID {
			return nil
		}
		return b.refuseClaim(h, kind, "not_controller", errClusterAuthorization)
	}
	b.mu.Unlock()
	id, epoch, ok := b.zk.controllerTerm()
	b.mu.Lock()
	switch {
	case !ok || h.controllerEpoch < epoch:
		return b.refuseClaim(h, kind, "stale_controller_epoch", errStaleControllerEpoch)
	case h.controllerEpoch > epoch || h.controllerID != id:
		return b.refuseClaim(h, kind, "not_controller", errClusterAuthorization)
	}
	if epoch > b.termEpoch {
		b.termID, b.termEpoch = id, epoch
	}
	return b.refuseIfStale(h, kind, entries)
}

func (b *Broker) refuseIfStale(h controlHeader, kind string, entries []PartitionState) *reqError {
	reason, code := "", int16(0)
	switch {
	case h.controllerEpoch < b.controllerEpoch:
		reason, code = "stale_controller_epoch", errStaleControllerEpoch
	case h.brokerEpoch < b.brokerEpoch:
		reason, code = "stale_broker_epoch", errStaleBrokerEpoch
	default:
		return nil
	}
	if kind == "leader_and_isr" {
		for _, st := range entries {
			b.rec.Emit(Event{Kind: "reject_leader_and_isr", Topic: ptr(st.Topic), Partition: ptr(int(st.Partition)),
				Params: map[string]any{"reason": reason, "leader_epoch": st.LeaderEpoch, "controller_epoch": h.controllerEpoch}})
		}
	}
	b.reject(h, kind, reason)
	return refuse(code, reason, nil)
}

func (b *Broker) refuseClaim(h controlHeader, kind, reason string, code int16) *reqError {
	b.reject(h, kind, reason)
	return refuse(code, reason, nil)
}

func (b *Broker) reject(h controlHeader, kind, reason string) {
	b.rec.Emit(Event{Kind: "request_rejected", Params: map[string]any{
		"api": kind, "reason": reason, "controller_epoch": h.controllerEpoch,
		"known_controller_epoch": b.controllerEpoch, "max_broker_epoch": h.brokerEpoch,
		"broker_epoch": b.brokerEpoch}})
}

// adoptControllerEpoch: a newer controller epoch tells this broker a new controller exists.
func (b *Broker) adoptControllerEpoch(h controlHeader) {
	if h.controllerEpoch > b.controllerEpoch {
		b.metaController = h.controllerID
	}
	b.controllerEpoch = h.controllerEpoch
}

// -- LeaderAndISR ------------------------------------------------------------------------------

func (b *Broker) onLeaderAndISR(r *kmsg.LeaderAndISRRequest, extras map[string]any) (answer, *reqError) {
	h, e := headerOf(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, extras)
	if e != nil {
		return answer{}, e
	}
	ids := asMap(extras["topic_ids"])
	var entries []PartitionState
	for _, t := range r.TopicStates {
		for _, p := range t.PartitionStates {
			entries = append(entries, PartitionState{Topic: t.Topic, Partition: p.Partition, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, ISR: sortedInts(p.ISR), Replicas: p.Replicas, ZkVersion: p.ZKVersion,
				ControllerEpoch: r.ControllerEpoch, TopicID: asInt(ids[t.Topic], 0)})
		}
	}
	b.waitControlReady()
	defer b.mu.Unlock()
	if e := b.fence(h, "leader_and_isr", entries); e != nil {
		return answer{}, e
	}
	b.adoptControllerEpoch(h)
	for _, l := range r.LiveLeaders {
		b.endpoints[l.BrokerID] = [2]any{l.Host, int(l.Port)}
	}
	resp := kmsg.NewPtrLeaderAndISRResponse()
	resp.SetVersion(r.Version)
	refused := func(st PartitionState, reason string, code int16) {
		b.rec.Emit(Event{Kind: "reject_leader_and_isr", Topic: ptr(st.Topic), Partition: ptr(int(st.Partition)),
			Params: map[string]any{"reason": reason, "leader_epoch": st.LeaderEpoch, "controller_epoch": h.controllerEpoch}})
		p := kmsg.NewLeaderAndISRResponseTopicPartition()
		p.Topic, p.Partition, p.ErrorCode = st.Topic, st.Partition, code
		resp.Partitions = append(resp.Partitions, p)
	}
	for _, st := range entries {
		if !contains(st.Replicas, b.id) {
			continue
		}
		rep, current, err := b.replicaOfIncarnation(st.Topic, st.Partition, st.TopicID)
		if err != nil {
			b.storageFailed(err)
		}
		if !current {
			refused(st, "stale_topic_id", errInconsistentTopicID)
			continue
		}
		switch leaderAndISRVerdict(rep, st) {
		case verdictRefuse:
			refused(st, "stale_leader_epoch", errFencedLeaderEpoch)
			continue
		case verdictRepeat:
			rep.replicas = append([]int32(nil), st.Replicas...)
			if st.ZkVersion > rep.zkVersion {
				rep.zkVersion, rep.isr = st.ZkVersion, sortedInts(st.ISR)
			}
			continue
		}
		if st.Leader == b.id {
			b.becomeLeader(rep, st, true)
		} else {
			b.becomeFollower(rep, st, true)
			if st.Leader >= 0 {
				b.ensureFetcher(st.Leader)
			}
		}
	}
	if init, _ := extras["init"].(bool); init {
		keep := map[key]bool{}
		for _, st := range entries {
			keep[key{st.Topic, st.Partition}] = true
		}
		for _, k := range b.sortedKeys() {
			if !keep[k] {
				b.stopReplica(k, true, "not_in_init", 0)
			}
		}
	}
	return answer{resp: resp}, nil
}

const (
	verdictApply = iota
	verdictRepeat
	verdictRefuse
)

// leaderAndISRVerdict: a newer epoch applies; the same decision again repeats; an older
// epoch, or this epoch with another leader or ISR, is refused (impl/node/fencing.py).
func leaderAndISRVerdict(r *Replica, st PartitionState) int {
	if st.LeaderEpoch > r.leaderEpoch {
		return verdictApply
	}
	if st.LeaderEpoch < r.leaderEpoch || st.Leader != r.leader || r.role == roleNone {
		return verdictRefuse
	}
	if st.ZkVersion == r.zkVersion && !sameInts(sortedInts(st.ISR), r.isr) {
		return verdictRefuse
	}
	return verdictRepeat
}

func sameInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (b *Broker) sortedKeys() []key {
	keys := make([]key, 0, len(b.replicas))
	for k := range b.replicas {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	return keys
}

// -- StopReplica -------------------------------------------------------------------------------

// stopReplica stops fetching and, with delete, removes the log -- unless the request names
// an older incarnation of the topic than the local log's; b.mu held.
func (b *Broker) stopReplica(k key, del bool, reason string, topicID int64) {
	r := b.replicas[k]
	if r == nil {
		if del {
			dir := b.logDir(k.topic, k.partition)
			if _, err := os.Stat(dir); err == nil {
				if l, err := openLog(dir); err == nil {
					if compareIncarnation(topicID, l.topicID, l.leo() > 0) != incStaleRequest {
						l.delete()
					} else {
						l.close()
					}
				}
			}
		}
		return
	}
	if compareIncarnation(topicID, r.log.topicID, r.log.leo() > 0) == incStaleRequest {
		return
	}
	r.stop()
	if del {
		r.log.delete()
		delete(b.replicas, k)
	}
	b.changed()
	b.rec.Emit(Event{Kind: "stop_replica", Topic: ptr(k.topic), Partition: ptr(int(k.partition)),
		Params: map[string]any{"delete": del, "reason": reason}})
}

func (b *Broker) onStopReplica(r *kmsg.StopReplicaRequest, extras map[string]any) (answer, *reqError) {
	h, e := headerOf(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, extras)
	if e != nil {
		return answer{}, e
	}
	ids := asMap(extras["topic_ids"])
	del, _ := extras["delete"].(bool)
	type item struct {
		k  key
		id int64
	}
	var parts []item
	for _, t := range r.Topics {
		for _, p := range t.PartitionStates {
			del = del || p.Delete
			parts = append(parts, item{key{t.Topic, p.Partition}, asInt(ids[t.Topic], 0)})
		}
	}
	b.waitControlReady()
	defer b.mu.Unlock()
	if e := b.fence(h, "stop_replica", nil); e != nil {
		return answer{}, e
	}
	b.adoptControllerEpoch(h)
	for _, p := range parts {
		b.stopReplica(p.k, del, "stop_replica", p.id)
	}
	resp := kmsg.NewPtrStopReplicaResponse()
	resp.SetVersion(r.Version)
	return answer{resp: resp}, nil
}

// -- UpdateMetadata ----------------------------------------------------------------------------

func (b *Broker) onUpdateMetadata(r *kmsg.UpdateMetadataRequest, extras map[string]any) (answer, *reqError) {
	h, e := headerOf(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, extras)
	if e != nil {
		return answer{}, e
	}
	brokers := map[string][2]any{}
	ids := []int{}
	for _, lb := range r.LiveBrokers {
		if len(lb.Endpoints) > 0 {
			brokers[strconv.Itoa(int(lb.ID))] = [2]any{lb.Endpoints[0].Host, int(lb.Endpoints[0].Port)}
			ids = append(ids, int(lb.ID))
		}
	}
	sort.Ints(ids)
	topics := map[string]map[string]map[string]any{}
	names := []string{}
	for _, t := range r.TopicStates {
		parts := map[string]map[string]any{}
		for _, p := range t.PartitionStates {
			parts[strconv.Itoa(int(p.Partition))] = map[string]any{"leader": p.Leader, "leader_epoch": p.LeaderEpoch,
				"isr": p.ISR, "replicas": p.Replicas}
		}
		topics[t.Topic] = parts
		names = append(names, t.Topic)
	}
	sort.Strings(names)
	b.waitControlReady()
	defer b.mu.Unlock()
	if e := b.fence(h, "update_metadata", nil); e != nil {
		return answer{}, e
	}
	b.adoptControllerEpoch(h)
	if partial, _ := extras["partial"].(bool); partial {
		for t, parts := range topics {
			merged := map[string]map[string]any{}
			for p, st := range b.metaTopics[t] {
				merged[p] = st
			}
			for p, st := range parts {
				merged[p] = st
			}
			b.metaTopics[t] = merged
		}
	} else {
		b.metaTopics = topics
	}
	b.metaBrokers = brokers
	b.metaController = h.controllerID
	for id, ep := range brokers {
		n, _ := strconv.Atoi(id)
		b.endpoints[int32(n)] = ep
	}
	b.rec.Emit(Event{Kind: "update_metadata", Params: map[string]any{
		"controller_epoch": h.controllerEpoch, "brokers": ids, "topics": names}})
	resp := kmsg.NewPtrUpdateMetadataResponse()
	resp.SetVersion(r.Version)
	return answer{resp: resp}, nil
}
