package main

// The project's rule-level vectors (docs/vectors.md) through this port's own code: the
// follower's KIP-320 truncation rounds against the leader's epoch answers, the leader's
// high watermark, and who may leave or join the ISR.  EPOCHAL_VECTORS names the directory
// `epochal vectors --out DIR` wrote (tests/ports/test_go_broker.py sets it); without it the
// test is skipped.  The families this broker has no rule for (the controller's) are the
// Python and Node ports' to run.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

type vectorCase struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func readVectors(t *testing.T, family string) []vectorCase {
	t.Helper()
	dir := os.Getenv("EPOCHAL_VECTORS")
	if dir == "" {
		t.Skip("EPOCHAL_VECTORS is not set: run `epochal vectors --out DIR` and point it there")
	}
	var index struct {
		Format   string `json:"format"`
		Families map[string]struct {
			File  string `json:"file"`
			Cases int    `json:"cases"`
		} `json:"families"`
	}
	readJSON(t, filepath.Join(dir, "index.json"), &index)
	if index.Format != "epochal.vectors/1" {
		t.Fatalf("vectors format %q, this test reads epochal.vectors/1", index.Format)
	}
	f, ok := index.Families[family]
	if !ok {
		t.Fatalf("no %s family in %s", family, dir)
	}
	var doc struct {
		Cases []vectorCase `json:"cases"`
	}
	readJSON(t, filepath.Join(dir, f.File), &doc)
	if len(doc.Cases) != f.Cases || f.Cases == 0 {
		t.Fatalf("%s: %d cases, the index says %d", family, len(doc.Cases), f.Cases)
	}
	return doc.Cases
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func decode(t *testing.T, c vectorCase, input, expected any) {
	t.Helper()
	if err := json.Unmarshal(c.Input, input); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if err := json.Unmarshal(c.Expected, expected); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
}

// logOfEpochs is a log whose records carry these leader epochs, its epoch cache as appends
// build it.
func logOfEpochs(t *testing.T, epochs []int32) *PartitionLog {
	l := &PartitionLog{dir: t.TempDir()}
	for i, e := range epochs {
		l.assignEpoch(e, int64(i))
		l.records = append(l.records, Record{Offset: int64(i), Epoch: e})
		l.positions = append(l.positions, 0)
	}
	return l
}

// truncateAgainst is the follower's epoch lookup rounds (truncateByEpoch) against a leader
// answering from its own log: the offset the follower's log ends at.
func truncateAgainst(b *Broker, follower, leader *PartitionLog, leaderEpoch int32) int64 {
	for range 1 + len(follower.epochs) {
		requested := follower.latestEpoch()
		if follower.leo() == 0 || requested < 0 {
			break
		}
		found, end := leader.epochAnswer(requested, leaderEpoch)
		point, complete := b.epochTruncationStep(follower, requested, found, end)
		follower.truncateTo(point)
		if complete {
			break
		}
		follower.forgetEpochsFrom(point)
	}
	return follower.leo()
}

func TestTruncationVectors(t *testing.T) {
	ran := 0
	for _, c := range readVectors(t, "truncation") {
		var in struct {
			Rule        string  `json:"rule"`
			FollowerLog []int32 `json:"follower_log"`
			LeaderLog   []int32 `json:"leader_log"`
			LeaderEpoch int32   `json:"leader_epoch"`
		}
		var want struct {
			Offset int64 `json:"offset"`
		}
		decode(t, c, &in, &want)
		if in.Rule != "kip320" && in.Rule != "kip279" { // this broker truncates by KIP-320's rounds only
			continue
		}
		leader := logOfEpochs(t, in.LeaderLog)
		leader.assignEpoch(in.LeaderEpoch, leader.leo()) // elected: its epoch starts at its LEO
		if got := truncateAgainst(&Broker{}, logOfEpochs(t, in.FollowerLog), leader, in.LeaderEpoch); got != want.Offset {
			t.Errorf("%s: truncated to %d, the vector says %d", c.Name, got, want.Offset)
		}
		ran++
	}
	t.Logf("vectors truncation: %d cases", ran)
}

func TestHighWatermarkVectors(t *testing.T) {
	cases := readVectors(t, "hw_advance")
	for _, c := range cases {
		var in struct {
			Leader      int32            `json:"leader"`
			LEO         int64            `json:"leo"`
			HW          int64            `json:"hw"`
			ISR         []int32          `json:"isr"`
			FollowerLEO map[string]int64 `json:"follower_leo"`
		}
		var want struct {
			HW int64 `json:"hw"`
		}
		decode(t, c, &in, &want)
		r := replicaOf(t, in.ISR, in.FollowerLEO, in.LEO)
		r.log.hw = in.HW
		if got := (&Broker{id: in.Leader}).advanceHighWatermark(r, in.LEO); got != want.HW {
			t.Errorf("%s: high watermark %d, the vector says %d", c.Name, got, want.HW)
		}
	}
	t.Logf("vectors hw_advance: %d cases", len(cases))
}

func TestISRVectors(t *testing.T) {
	cases := readVectors(t, "isr")
	const self, follower = int32(0), int32(1)
	for _, c := range cases {
		var in struct {
			Change      string `json:"change"`
			FollowerLEO int64  `json:"follower_leo"`
			InISR       bool   `json:"in_isr"`
			LEO         int64  `json:"leo"`
			Assigned    bool   `json:"assigned"`
			HW          int64  `json:"hw"`
			EpochStart  int64  `json:"epoch_start"`
			KIP320      bool   `json:"kip320"`
		}
		var want struct {
			Eligible bool `json:"eligible"`
		}
		decode(t, c, &in, &want)
		isr := []int32{self}
		if in.InISR {
			isr = append(isr, follower)
		}
		r := replicaOf(t, isr, map[string]int64{"1": in.FollowerLEO}, in.LEO)
		r.replicas = []int32{self}
		if in.Assigned {
			r.replicas = append(r.replicas, follower)
		}
		var got bool
		if in.Change == "shrink" { // lagging past replica.lag.time.max.ms: out unless caught up
			got = len(r.outOfSyncFollowers(self, time.Now(), 0, 1<<62)) > 0
		} else {
			r.log.hw, r.leaderEpoch = in.HW, 7
			r.log.epochs = []epochEntry{{7, in.EpochStart}}
			got = r.canJoinISR(follower, in.KIP320)
		}
		if got != want.Eligible {
			t.Errorf("%s: eligible %v, the vector says %v", c.Name, got, want.Eligible)
		}
	}
	t.Logf("vectors isr: %d cases", len(cases))
}

// replicaOf is a leader's replica with this ISR, these followers' LEOs (-1: none known in
// this term) and a log of leo records.
func replicaOf(t *testing.T, isr []int32, followerLEO map[string]int64, leo int64) *Replica {
	l := logOfEpochs(t, make([]int32, leo))
	r := &Replica{log: l, role: roleLeader, isr: isr, followerLEO: map[int32]int64{},
		lastCaughtUp: map[int32]time.Time{}, lastFetch: map[int32]fetchMark{}}
	for id, fl := range followerLEO {
		b, err := strconv.Atoi(id)
		if err != nil {
			t.Fatalf("follower id %q: %v", id, err)
		}
		if fl >= 0 {
			r.followerLEO[int32(b)] = fl
		}
	}
	return r
}
