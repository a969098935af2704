package main

// Seed 000 G, follower side (impl/node/broker/replication_follower.py): one fetcher per
// leader broker, fetching every partition this broker follows there in one request;
// appends what comes back and takes min(leader HW, own LEO).  Under kip320 a new follower
// first asks the leader where its latest epoch ends (OffsetForLeaderEpoch) and truncates
// there, in as many rounds as it takes to reach an epoch both logs have.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ensureFetcher starts the fetcher for a leader unless it runs; b.mu held.
func (b *Broker) ensureFetcher(leader int32) {
	if b.stopping || b.fetchers[leader] {
		return
	}
	b.fetchers[leader] = true
	go b.fetcher(leader)
}

func (b *Broker) leaderEndpoint(leader int32) (string, int, error) {
	b.mu.Lock()
	ep, ok := b.endpoints[leader]
	b.mu.Unlock()
	if ok {
		return ep[0].(string), ep[1].(int), nil
	}
	host, port, err := b.zk.brokerEndpoint(leader)
	if err != nil {
		return "", 0, err
	}
	b.mu.Lock()
	b.endpoints[leader] = [2]any{host, port}
	b.mu.Unlock()
	return host, port, nil
}

type sentFetch struct {
	r      *Replica
	epoch  int32
	offset int64
}

func (b *Broker) fetcher(leader int32) {
	var conn *Conn
	backoff := 50 * time.Millisecond
	sleep := func() {
		if conn != nil {
			conn.close()
			conn = nil
		}
		time.Sleep(backoff)
		backoff = min(time.Second, backoff*2)
	}
	turn := 0
	for {
		b.mu.Lock()
		var parts []*Replica
		for _, k := range b.sortedKeys() {
			if r := b.replicas[k]; r.role == roleFollower && r.leader == leader {
				parts = append(parts, r)
			}
		}
		if b.stopping || len(parts) == 0 {
			delete(b.fetchers, leader)
			b.mu.Unlock()
			if conn != nil {
				conn.close()
			}
			return
		}
		// start each request at the next partition, so none waits behind the others
		turn = (turn + 1) % len(parts)
		parts = append(parts[turn:], parts[:turn]...)
		var lookups []*Replica
		for _, r := range parts {
			if r.needsEpochLookup {
				lookups = append(lookups, r)
			}
		}
		b.mu.Unlock()
		host, port, err := b.leaderEndpoint(leader)
		if err == nil {
			err = b.faults.gate(host, port)
		}
		if err == nil && conn != nil && (conn.host != host || conn.port != port) {
			conn.close()
			conn = nil
		}
		if err == nil && conn == nil {
			conn, err = dialBroker(host, port)
		}
		if err != nil {
			sleep()
			continue
		}
		if len(lookups) > 0 {
			for _, r := range lookups {
				if err := b.truncateByEpoch(r, conn, leader); err != nil {
					sleep()
					break
				}
			}
			continue
		}
		stalled, err := b.fetchOnce(conn, leader, parts)
		if err != nil || stalled {
			if err == nil {
				time.Sleep(backoff)
				backoff = min(time.Second, backoff*2)
			} else {
				sleep()
			}
		} else {
			backoff = 50 * time.Millisecond
		}
	}
}

// fetchOnce sends one replica fetch for parts and applies the answer: whether nothing moved.
func (b *Broker) fetchOnce(conn *Conn, leader int32, parts []*Replica) (bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes = b.id, int32(b.cfg.FetchMaxWaitMs), 0
	req.MaxBytes, req.SessionEpoch = int32(b.cfg.FetchMaxBytes), -1
	var sent []sentFetch
	var partExtras []any
	b.mu.Lock()
	for _, r := range parts {
		if r.role != roleFollower || r.leader != leader || r.needsEpochLookup {
			continue
		}
		offset := r.leo()
		sent = append(sent, sentFetch{r, r.leaderEpoch, offset})
		if r.lastSentFetch == nil || *r.lastSentFetch != [2]int64{offset, r.hw()} {
			b.emit(r, "send_fetch", map[string]any{"leader": leader, "fetch_offset": offset, "leader_epoch": r.leaderEpoch},
				map[string]any{"hw": r.hw(), "leo": r.leo()}, nil)
			r.lastSentFetch = &[2]int64{offset, r.hw()}
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = r.partition, offset, int32(b.cfg.FetchPartitionMaxBytes)
		p.CurrentLeaderEpoch = -1
		if b.cfg.Truncation == "kip320" {
			p.CurrentLeaderEpoch = r.leaderEpoch
		}
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == r.topic {
			req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p)
		} else {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.Partitions = r.topic, []kmsg.FetchRequestTopicPartition{p}
			req.Topics = append(req.Topics, t)
		}
		partExtras = append(partExtras, map[string]any{"hw": r.hw(), "topic_id": r.log.topicID})
	}
	brokerEpoch := b.brokerEpoch
	b.mu.Unlock()
	if len(sent) == 0 {
		return true, nil
	}
	// the topics were grouped in the order of parts, which sortedKeys keeps by topic only
	// after the rotation: regroup so the extras follow Kafka's partition order
	sent, partExtras = regroup(req, sent, partExtras)
	resp := kmsg.NewPtrFetchResponse()
	_ = conn.c.SetDeadline(time.Now().Add(time.Duration(b.cfg.FetchMaxWaitMs)*time.Millisecond + 5*time.Second))
	remote, tags, err := conn.roundTrip(req, resp, b.rec.Tick(), map[string]any{
		"max_records": 1000, "broker_epoch": brokerEpoch, "partition_extras": partExtras})
	if err != nil {
		return false, err
	}
	b.rec.Observe(remote)
	if resp.ErrorCode != 0 {
		return false, errors.New("fetch refused")
	}
	more := asList(tags["partition_extras"])
	b.mu.Lock()
	defer b.mu.Unlock()
	stalled := true
	i := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			x := map[string]any{}
			if i < len(more) {
				x = asMap(more[i])
			}
			i++
			var s *sentFetch
			for j := range sent {
				if sent[j].r.topic == t.Topic && sent[j].r.partition == p.Partition {
					s = &sent[j]
				}
			}
			if s == nil {
				continue
			}
			r := s.r
			if b.replicas[key{r.topic, r.partition}] != r || r.role != roleFollower || r.leader != leader || r.leaderEpoch != s.epoch {
				continue // the replica changed while the request was in flight
			}
			if id := asInt(x["topic_id"], 0); id != 0 && r.log.topicID != 0 && id != r.log.topicID {
				continue // the leader answered for another incarnation of the topic
			}
			switch p.ErrorCode {
			case errOffsetOutOfRange:
				b.handleOutOfRange(r, leader, asInt(x["leo"], 0))
			case 0:
				stalled = false
				recs, err := readRecords(p.RecordBatches)
				if err != nil {
					return false, err
				}
				b.applyFetched(r, leader, s.offset, recs, p.HighWatermark)
			}
		}
	}
	return stalled, nil
}

// regroup orders the fetch's partitions topic by topic (as Kafka's message groups them)
// and the extras with them.
func regroup(req *kmsg.FetchRequest, sent []sentFetch, extras []any) ([]sentFetch, []any) {
	byTopic := map[string][]kmsg.FetchRequestTopicPartition{}
	var order []string
	for _, t := range req.Topics {
		if _, seen := byTopic[t.Topic]; !seen {
			order = append(order, t.Topic)
		}
		byTopic[t.Topic] = append(byTopic[t.Topic], t.Partitions...)
	}
	req.Topics = nil
	var outSent []sentFetch
	var outExtras []any
	for _, topic := range order {
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.Partitions = topic, byTopic[topic]
		req.Topics = append(req.Topics, t)
		for _, p := range t.Partitions {
			for j, s := range sent {
				if s.r.topic == topic && s.r.partition == p.Partition {
					outSent, outExtras = append(outSent, s), append(outExtras, extras[j])
				}
			}
		}
	}
	return outSent, outExtras
}

// applyFetched appends the records at the LEO and takes min(leader HW, own LEO); b.mu held.
func (b *Broker) applyFetched(r *Replica, leader int32, offset int64, recs []Record, leaderHW int64) {
	var appended []Record
	for _, rec := range recs {
		if rec.Offset != r.leo()+int64(len(appended)) {
			break
		}
		appended = append(appended, rec)
	}
	if len(appended) > 0 {
		if err := r.log.append(appended); err != nil {
			b.storageFailed(err)
			return
		}
	}
	newHW := min(leaderHW, r.leo())
	hwChanged := newHW != r.hw()
	if hwChanged {
		r.log.setHW(newHW)
	}
	if len(appended) > 0 || hwChanged {
		b.emit(r, "receive_fetch", map[string]any{"leader": leader, "fetch_offset": offset,
			"leader_epoch": r.leaderEpoch, "records": recordsDigest(appended), "leader_hw": leaderHW, "error": nil}, nil, nil)
		b.changed()
	}
}

// truncateByEpoch is one OffsetForLeaderEpoch round (KIP-101/279/320).
func (b *Broker) truncateByEpoch(r *Replica, conn *Conn, leader int32) error {
	b.mu.Lock()
	epoch, requested := r.leaderEpoch, r.log.latestEpoch()
	if r.leo() == 0 || requested < 0 {
		r.needsEpochLookup = false
		b.mu.Unlock()
		return nil
	}
	topicID := r.log.topicID
	b.mu.Unlock()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = b.id
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	t.Topic, p.Partition, p.LeaderEpoch, p.CurrentLeaderEpoch = r.topic, r.partition, requested, epoch
	t.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{p}
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{t}
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	_ = conn.c.SetDeadline(time.Now().Add(time.Duration(b.cfg.FetchMaxWaitMs)*time.Millisecond + 5*time.Second))
	remote, _, err := conn.roundTrip(req, resp, b.rec.Tick(), map[string]any{"topic_id": topicID})
	if err != nil {
		return err
	}
	b.rec.Observe(remote)
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.role != roleFollower || r.leaderEpoch != epoch || b.replicas[key{r.topic, r.partition}] != r {
		return nil
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		b.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		b.mu.Lock()
		return nil
	}
	ans := resp.Topics[0].Partitions[0]
	point, complete := b.epochTruncationStep(r.log, requested, ans.LeaderEpoch, ans.EndOffset)
	r.log.truncateTo(point)
	if !complete {
		r.log.forgetEpochsFrom(point)
	}
	r.needsEpochLookup = !complete
	b.emit(r, "truncate", map[string]any{"leader": leader, "truncated_to": point, "requested_epoch": requested,
		"leader_epoch_found": ans.LeaderEpoch, "leader_end_offset": ans.EndOffset},
		map[string]any{"hw": r.hw(), "leo": r.leo(), "log_end_epoch": r.log.logEndEpoch()}, nil)
	b.changed()
	return nil
}

// epochTruncationStep is impl/node/truncation.py's: (offset to truncate to, complete).
func (b *Broker) epochTruncationStep(l *PartitionLog, requested, found int32, end int64) (int64, bool) {
	leo := l.leo()
	if requested != undefinedEpoch && found != undefinedEpoch && found != requested {
		own, ownEnd := l.endOffsetFor(found, leo)
		if own != undefinedEpoch && own != found {
			return min(leo, ownEnd), false
		}
	}
	switch {
	case requested == undefinedEpoch:
		if leo == 0 {
			return 0, true
		}
		return min(leo, end), true
	case found == undefinedEpoch:
		return min(leo, max(0, end)), true
	case found == requested:
		return min(leo, end), true
	}
	_, ownEnd := l.endOffsetFor(found, leo)
	return min(leo, end, ownEnd), true
}

// handleOutOfRange: under kip320 the epoch lookup decides; under hw, cut to the leader's LEO.
func (b *Broker) handleOutOfRange(r *Replica, leader int32, leaderLEO int64) {
	if b.cfg.Truncation == "kip320" {
		r.needsEpochLookup = true
		return
	}
	point := min(leaderLEO, r.leo())
	r.log.truncateTo(point)
	b.emit(r, "truncate", map[string]any{"leader": leader, "truncated_to": point},
		map[string]any{"hw": r.hw(), "leo": r.leo(), "log_end_epoch": r.log.logEndEpoch()}, nil)
	b.changed()
}
