package main

// The harness's network faults (impl/node/faults.py): before connecting and before every
// request to another broker, the broker reads <data_dir>/faults.json when it changed --
// a partition refuses the request as an unreachable peer, a slow link delays it.

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"
)

type FaultLayer struct {
	path  string
	me    int32
	mu    sync.Mutex
	stamp [3]int64
	plan  faultPlan
}

type faultPlan struct {
	Endpoints  map[string][2]any `json:"endpoints"`
	Partitions [][2]int32        `json:"partitions"`
	Delays     [][3]float64      `json:"delays"`
}

var errPartitioned = errors.New("fault injected: link partitioned")

func (f *FaultLayer) current() faultPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		f.plan, f.stamp = faultPlan{}, [3]int64{}
		return f.plan
	}
	stamp := [3]int64{st.ModTime().UnixNano(), st.Size(), 1}
	if stamp != f.stamp {
		data, err := os.ReadFile(f.path)
		var p faultPlan
		if err == nil && json.Unmarshal(data, &p) == nil {
			f.plan, f.stamp = p, stamp
		}
	}
	return f.plan
}

// gate refuses a request to the broker at host:port across a cut link, else delays it.
func (f *FaultLayer) gate(host string, port int) error {
	plan := f.current()
	dst := int32(-1)
	for id, ep := range plan.Endpoints {
		h, _ := ep[0].(string)
		p, _ := ep[1].(float64)
		if h == host && int(p) == port {
			var n int32
			if _, err := jsonInt(id, &n); err == nil {
				dst = n
			}
		}
	}
	if dst < 0 || dst == f.me {
		return nil
	}
	for _, link := range plan.Partitions {
		if (link[0] == f.me && link[1] == dst) || (link[1] == f.me && link[0] == dst) {
			return errPartitioned
		}
	}
	for _, d := range plan.Delays {
		if int32(d[0]) == f.me && int32(d[1]) == dst && d[2] > 0 {
			time.Sleep(time.Duration(d[2] * float64(time.Second)))
		}
	}
	return nil
}

func jsonInt(s string, out *int32) (int32, error) {
	err := json.Unmarshal([]byte(s), out)
	return *out, err
}
