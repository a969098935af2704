// Command epochal-go-broker is an Epochal broker written in Go: it joins a cluster of
// Python brokers through `epochal chaos --broker-cmd` (docs/ports.md).  It never runs for
// controller; the Python brokers hold that role.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var persistentRoots = []string{zkBrokerIDs, zkTopics, "/admin/partitions_reassigned", "/admin/partitions_add",
	"/admin/partitions_remove", "/admin/delete_topics", "/admin/preferred_replica_election", zkISRChange}

func main() {
	cfg := parseArgs(os.Args[1:])
	b, err := newBroker(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochal-go-broker:", err)
		os.Exit(2)
	}
	expired := false
	b.zk, err = connectZK(cfg.Zookeeper, cfg.sessionTimeout(), func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		switch ev.State {
		case zk.StateExpired:
			expired = true
		case zk.StateHasSession:
			if expired {
				expired = false
				go b.reregister()
			}
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochal-go-broker: zookeeper:", err)
		os.Exit(1)
	}
	for _, p := range persistentRoots {
		b.zk.ensurePath(p)
	}
	if err := b.loadLocalReplicas(); err != nil {
		fmt.Fprintln(os.Stderr, "epochal-go-broker: logs:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochal-go-broker: listen:", err)
		os.Exit(1)
	}
	go b.serve(ln)
	states, err := b.register()
	if err != nil {
		fmt.Fprintln(os.Stderr, "epochal-go-broker: register:", err)
		os.Exit(1)
	}
	b.startupTransitions(states)
	go b.isrChecker()
	go b.isrChangePropagation()
	fmt.Printf("broker %d (Go) listening on %s:%d\n", b.id, cfg.Host, cfg.Port)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	os.Exit(b.shutdown())
}

// -- startup (seed 000 E, impl/node/broker/startup.py) -----------------------------------------

// loadLocalReplicas opens every local log and deletes those no longer assigned here.
func (b *Broker) loadLocalReplicas() error {
	assigned := map[key]bool{}
	topics, err := b.zk.Children(zkTopics)
	if err != nil {
		return err
	}
	for _, t := range topics {
		parts, _, err := b.zk.topicAssignment(t)
		if err != nil {
			continue
		}
		for p, reps := range parts {
			if contains(reps, b.id) {
				assigned[key{t, p}] = true
			}
		}
	}
	dir := filepath.Join(b.cfg.DataDir, fmt.Sprintf("broker-%d", b.id), "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range entries {
		i := strings.LastIndex(e.Name(), "-")
		n, perr := strconv.Atoi(e.Name()[i+1:])
		if !e.IsDir() || i <= 0 || perr != nil {
			continue
		}
		k := key{e.Name()[:i], int32(n)}
		if !assigned[k] {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			b.rec.Emit(Event{Kind: "stop_replica", Topic: ptr(k.topic), Partition: ptr(int(k.partition)),
				Params: map[string]any{"delete": true, "reason": "not_assigned_at_startup"}})
			continue
		}
		if _, err := b.replica(k.topic, k.partition, true); err != nil {
			return err
		}
	}
	return nil
}

// assignedStates reads the leader and ISR of every partition assigned here (E.1-2).
func (b *Broker) assignedStates() ([]PartitionState, error) {
	topics, err := b.zk.Children(zkTopics)
	if err != nil {
		return nil, err
	}
	var out []PartitionState
	for _, t := range topics {
		parts, czxid, err := b.zk.topicAssignment(t)
		if err != nil {
			continue
		}
		for p, reps := range parts {
			if !contains(reps, b.id) {
				continue
			}
			raw, st, err := b.zk.Get(leaderAndISRPath(t, p))
			if err != nil {
				continue
			}
			var s LeaderAndISRZnode
			if json.Unmarshal(raw, &s) != nil {
				continue
			}
			out = append(out, PartitionState{Topic: t, Partition: p, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
				ISR: sortedInts(s.ISR), Replicas: reps, ZkVersion: st.Version, ControllerEpoch: s.ControllerEpoch,
				TopicID: czxid})
		}
	}
	return out, nil
}

func (b *Broker) registration() []byte {
	port := b.cfg.Port
	if b.cfg.AdvertisedPort > 0 {
		port = b.cfg.AdvertisedPort
	}
	return []byte(fmt.Sprintf(`{"host":%q,"port":%d,"version":1}`, b.cfg.Host, port))
}

// register creates /brokers/ids/N (its czxid is the broker epoch, seed 003) in one
// transaction with a version check of every partition state read, so registering and
// reading the states are one step (the model's broker_restart).
func (b *Broker) register() ([]PartitionState, error) {
	path := b.zk.path(brokerPath(int(b.id)))
	deadline := time.Now().Add(4*b.cfg.sessionTimeout() + 10*time.Second)
	var states []PartitionState
	for {
		var err error
		if states, err = b.assignedStates(); err != nil {
			return nil, err
		}
		ops := []any{&zk.CreateRequest{Path: path, Data: b.registration(), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral}}
		for _, st := range states {
			ops = append(ops, &zk.CheckVersionRequest{Path: b.zk.path(leaderAndISRPath(st.Topic, st.Partition)), Version: st.ZkVersion})
		}
		_, err = b.zk.conn.Multi(ops...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("could not register in ZooKeeper before the deadline (%v)", err)
		}
		if errors.Is(err, zk.ErrNodeExists) {
			time.Sleep(200 * time.Millisecond) // a previous incarnation's session has not expired yet
		}
	}
	stat, err := b.zk.Exists(brokerPath(int(b.id)))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.brokerEpoch = stat.Czxid
	b.mu.Unlock()
	publishSession(b.cfg.DataDir, int(b.id), b.zk)
	b.rec.Emit(Event{Kind: "broker_restart", Zxid: ptr(stat.Czxid),
		Params: map[string]any{"broker": b.id, "broker_epoch": stat.Czxid}})
	return states, nil
}

// startupTransitions becomes leader or follower as ZooKeeper says (E.3), recorded as part
// of broker_restart; then control requests are taken.
func (b *Broker) startupTransitions(states []PartitionState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, st := range states {
		r, current, err := b.replicaOfIncarnation(st.Topic, st.Partition, st.TopicID)
		if err != nil {
			b.storageFailed(err)
			return
		}
		if !current || st.LeaderEpoch <= r.leaderEpoch {
			continue
		}
		if st.Leader == b.id {
			b.becomeLeader(r, st, false)
		} else {
			b.becomeFollower(r, st, false)
			if st.Leader >= 0 {
				b.ensureFetcher(st.Leader)
			}
		}
	}
	b.controlReady = true
}

// reregister: a lost session's registration is created again (broker_reregister); the
// process and its replicas are the same.  Control requests wait meanwhile.
func (b *Broker) reregister() {
	b.mu.Lock()
	if b.stopping {
		b.mu.Unlock()
		return
	}
	b.controlReady = false
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.controlReady = true
		b.mu.Unlock()
	}()
	path := brokerPath(int(b.id))
	for range 100 {
		_, err := b.zk.conn.Create(b.zk.path(path), b.registration(), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	stat, err := b.zk.Exists(path)
	if err != nil {
		return
	}
	b.mu.Lock()
	b.brokerEpoch = stat.Czxid
	b.mu.Unlock()
	publishSession(b.cfg.DataDir, int(b.id), b.zk)
	b.rec.Emit(Event{Kind: "broker_reregister", Zxid: ptr(stat.Czxid),
		Params: map[string]any{"broker": b.id, "broker_epoch": stat.Czxid}})
}

// -- controlled shutdown (impl/node/broker/shutdown.py) ----------------------------------------

// shutdown asks the controller to move this broker's leaderships away and take it out of
// every ISR; the exit code is 0 when it did, else 3 (a stop as abrupt as a crash).
func (b *Broker) shutdown() int {
	b.mu.Lock()
	b.stopping = true // fetchers stop first: a fetching follower could rejoin an ISR
	b.mu.Unlock()
	done := make(chan bool, 1)
	go func() { done <- b.controlledShutdown() }()
	clean := false
	select {
	case clean = <-done:
	case <-time.After(12 * time.Second):
	}
	b.zk.conn.Close()
	if clean {
		return 0
	}
	return 3
}

func (b *Broker) controlledShutdown() bool {
	for range 3 {
		if ok, err := b.askController(); err == nil {
			return ok
		}
		time.Sleep(300 * time.Millisecond)
	}
	return false
}

func (b *Broker) askController() (bool, error) {
	cid := b.zk.controllerID()
	if cid < 0 {
		return false, errors.New("no controller")
	}
	host, port, err := b.leaderEndpoint(cid)
	if err != nil {
		return false, err
	}
	conn, err := dialBroker(host, port)
	if err != nil {
		return false, err
	}
	defer conn.close()
	_ = conn.c.SetDeadline(time.Now().Add(5 * time.Second))
	b.mu.Lock()
	epoch := b.brokerEpoch
	b.mu.Unlock()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = b.id, epoch
	resp := kmsg.NewPtrControlledShutdownResponse()
	remote, tags, err := conn.roundTrip(req, resp, b.rec.Tick(), nil)
	if err != nil {
		return false, err
	}
	b.rec.Observe(remote)
	if resp.ErrorCode != 0 {
		return false, fmt.Errorf("controlled shutdown refused: %d", resp.ErrorCode)
	}
	return len(resp.PartitionsRemaining) == 0 && len(asList(tags["remaining_isr"])) == 0, nil
}
