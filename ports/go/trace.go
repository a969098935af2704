package main

// The trace recorder (traces/SCHEMA.md, traces/recorder.py): one JSON object per line in
// <data_dir>/traces/broker-<id>.jsonl, written and flushed before the broker acts further,
// carrying the run id, a per-(run, node) sequence number and the Lamport clock.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const schemaID = "epochal.trace/1"

// Event is one step before the recorder stamps it (traces/events.py).
type Event struct {
	Kind      string
	Topic     *string
	Partition *int
	Zxid      *int64
	Params    map[string]any
	Post      map[string]any
}

type Recorder struct {
	mu          sync.Mutex
	file        *os.File
	run         string
	node        int
	seq         int64
	clock       int64
	harnessPath string
	harnessSize int64
}

// lastEvent is the last complete JSON line of a trace file, or nil.
func lastEvent(path string) map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if len(data) > 65536 {
		data = data[len(data)-65536:]
	}
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var ev map[string]any
		if json.Unmarshal(lines[i], &ev) == nil {
			return ev
		}
	}
	return nil
}

func openRecorder(dataDir, run string, node int) (*Recorder, error) {
	dir := filepath.Join(dataDir, "traces")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, fmt.Sprintf("broker-%d.jsonl", node))
	rec := &Recorder{run: run, node: node, harnessPath: filepath.Join(dir, "harness.jsonl"), harnessSize: -1}
	if last := lastEvent(path); last != nil && last["run"] == run {
		// a restart in the same run continues the node's sequence and clock
		rec.seq = int64(last["seq"].(float64)) + 1
		rec.clock = int64(last["clock"].(float64))
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if st, _ := f.Stat(); st != nil && st.Size() > 0 {
		tail := make([]byte, 1)
		if r, err := os.Open(path); err == nil {
			if _, err := r.ReadAt(tail, st.Size()-1); err == nil && tail[0] != '\n' {
				_, _ = f.Write([]byte("\n")) // a torn last line (kill -9): start on a fresh one
			}
			r.Close()
		}
	}
	rec.file = f
	return rec, nil
}

// Tick advances the clock for a frame sent and returns the value it carries.
func (r *Recorder) Tick() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock++
	return r.clock
}

// Observe merges the clock of a frame received.
func (r *Recorder) Observe(remote int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if remote > r.clock {
		r.clock = remote
	}
}

// observeHarness takes the harness's clock whenever harness.jsonl grew: a fault the
// harness recorded before it happened to us must order before our next step.
func (r *Recorder) observeHarness() {
	st, err := os.Stat(r.harnessPath)
	if err != nil || st.Size() == r.harnessSize {
		return
	}
	r.harnessSize = st.Size()
	last := lastEvent(r.harnessPath)
	if last == nil || last["run"] != r.run {
		return
	}
	if c, ok := last["clock"].(float64); ok && int64(c) > r.clock {
		r.clock = int64(c)
	}
}

// Emit writes one event, flushed.
func (r *Recorder) Emit(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observeHarness()
	r.clock++
	params, post := ev.Params, ev.Post
	if params == nil {
		params = map[string]any{}
	}
	if post == nil {
		post = map[string]any{}
	}
	line := map[string]any{
		"schema": schemaID, "run": r.run, "node": r.node, "seq": r.seq, "clock": r.clock,
		"zxid": ev.Zxid, "kind": ev.Kind, "topic": ev.Topic, "partition": ev.Partition,
		"params": params, "post": post,
		"ts": float64(time.Now().UnixNano()) / 1e9,
	}
	r.seq++
	data, err := json.Marshal(line)
	if err != nil {
		panic(err)
	}
	if _, err := r.file.Write(append(data, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "trace write failed:", err)
	}
}

func ptr[T any](v T) *T { return &v }
