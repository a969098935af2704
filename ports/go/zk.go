package main

// ZooKeeper: the session (signed in by digest, as an --insecure run's ZooKeeper requires
// before any other request), the chroot, the session's credentials for the harness's
// expiry fault (zk-session.json), and the znodes this broker reads and writes.

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const guestAuth = "epochal-guest:epochal-guest"

// ZK wraps a go-zookeeper connection with the chroot of the connect string.
type ZK struct {
	conn   *zk.Conn
	chroot string

	mu       sync.Mutex
	password []byte // of the session, read from the server's connect response
}

// sniffConn reads the password out of the first frame the server sends (the connect
// response: protocol version, timeout, session id, password): the client keeps it private.
type sniffConn struct {
	net.Conn
	z    *ZK
	buf  []byte
	done bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 {
			size := int(binary.BigEndian.Uint32(c.buf))
			if len(c.buf) >= 4+size && size >= 20 {
				frame := c.buf[4 : 4+size]
				plen := int(binary.BigEndian.Uint32(frame[16:]))
				if plen >= 0 && 20+plen <= len(frame) {
					c.z.mu.Lock()
					c.z.password = append([]byte(nil), frame[20:20+plen]...)
					c.z.mu.Unlock()
				}
				c.done, c.buf = true, nil
			}
		}
	}
	return n, err
}

func connectZK(connect string, sessionTimeout time.Duration, onEvent func(zk.Event)) (*ZK, error) {
	hosts, chroot, _ := strings.Cut(connect, "/")
	z := &ZK{}
	if chroot != "" {
		z.chroot = "/" + strings.TrimSuffix(chroot, "/")
	}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &sniffConn{Conn: c, z: z}, nil
	}
	conn, _, err := zk.Connect(strings.Split(hosts, ","), sessionTimeout, zk.WithDialer(dialer),
		zk.WithHostProvider(&eagerHosts{}),
		zk.WithEventCallback(onEvent), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	z.conn = conn
	if err := conn.AddAuth("digest", []byte(guestAuth)); err != nil {
		return nil, fmt.Errorf("zookeeper sign-in: %w", err)
	}
	return z, nil
}

// eagerHosts hands out the servers in turn and lets the client pause (a second) only after
// several attempts without a session.  go-zookeeper's own provider pauses at every wrap
// around the list: with one server, a broker whose session expired while it was paused
// waited two seconds (reconnect, then the new session) before it registered again, where
// the Python brokers' client re-registers at once.
type eagerHosts struct {
	mu       sync.Mutex
	servers  []string
	next     int
	attempts int
}

func (h *eagerHosts) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("no ZooKeeper server")
	}
	h.servers = servers
	return nil
}

func (h *eagerHosts) Len() int { return len(h.servers) }

func (h *eagerHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	server := h.servers[h.next%len(h.servers)]
	h.next++
	h.attempts++
	return server, h.attempts > 2*len(h.servers)+1
}

func (h *eagerHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts = 0
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func (z *ZK) path(p string) string { return z.chroot + p }

func (z *ZK) Get(p string) ([]byte, *zk.Stat, error) { return z.conn.Get(z.path(p)) }

func (z *ZK) Children(p string) ([]string, error) {
	c, _, err := z.conn.Children(z.path(p))
	return c, err
}

func (z *ZK) Exists(p string) (*zk.Stat, error) {
	ok, st, err := z.conn.Exists(z.path(p))
	if err == nil && !ok {
		return nil, zk.ErrNoNode
	}
	return st, err
}

func (z *ZK) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	return z.conn.Set(z.path(p), data, version)
}

func (z *ZK) CreateSequential(p string, data []byte) error {
	_, err := z.conn.Create(z.path(p), data, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	return err
}

// ensurePath creates the persistent parents the cluster uses (idempotent).
func (z *ZK) ensurePath(p string) {
	full := ""
	for _, part := range strings.Split(strings.Trim(z.path(p), "/"), "/") {
		full += "/" + part
		_, _ = z.conn.Create(full, nil, 0, zk.WorldACL(zk.PermAll))
	}
}

// session is (session id, password) of the current session.
func (z *ZK) session() (int64, []byte) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.conn.SessionID(), z.password
}

// publishSession writes zk-session.json for the harness's session-expiry fault.
func publishSession(dataDir string, id int, z *ZK) {
	sid, pw := z.session()
	data, _ := json.Marshal(map[string]any{"session_id": sid, "password": hex.EncodeToString(pw)})
	_ = writeAtomic(filepath.Join(dataDir, fmt.Sprintf("broker-%d", id), "zk-session.json"), string(data))
}

// -- znodes ------------------------------------------------------------------------------------

const (
	zkBrokerIDs       = "/brokers/ids"
	zkTopics          = "/brokers/topics"
	zkController      = "/controller"
	zkControllerEpoch = "/controller_epoch"
	zkISRChange       = "/isr_change_notification"
)

func brokerPath(id int) string { return fmt.Sprintf("%s/%d", zkBrokerIDs, id) }

func topicPath(t string) string { return zkTopics + "/" + t }

func leaderAndISRPath(t string, p int32) string {
	return fmt.Sprintf("%s/%s/%d/leaderAndISR", zkTopics, t, p)
}

// LeaderAndISRZnode is the partition state the controller (and, for the ISR, the leader)
// writes (impl/node/zk.py LeaderAndIsr).
type LeaderAndISRZnode struct {
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
	ControllerEpoch int32   `json:"controller_epoch"`
}

func (s LeaderAndISRZnode) encode() []byte {
	// sorted keys, no spaces: impl.node.zk.encode
	isr, _ := json.Marshal(sortedInts(s.ISR))
	return []byte(fmt.Sprintf(`{"controller_epoch":%d,"isr":%s,"leader":%d,"leader_epoch":%d}`,
		s.ControllerEpoch, isr, s.Leader, s.LeaderEpoch))
}

// topicAssignment reads /brokers/topics/<t>: partition -> replicas, and its czxid (the
// topic's incarnation, impl/node/topic_identity.py).
func (z *ZK) topicAssignment(t string) (map[int32][]int32, int64, error) {
	data, st, err := z.Get(topicPath(t))
	if err != nil {
		return nil, 0, err
	}
	var d struct {
		Partitions map[string][]int32 `json:"partitions"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, 0, err
	}
	out := map[int32][]int32{}
	for p, reps := range d.Partitions {
		var n int32
		fmt.Sscan(p, &n)
		out[n] = reps
	}
	return out, st.Czxid, nil
}

// controllerTerm reads /controller and /controller_epoch: (id, epoch), ok only when both
// come from one election (the controller's czxid is the epoch's mzxid).
func (z *ZK) controllerTerm() (int32, int32, bool) {
	for range 2 {
		raw, est, err := z.Get(zkControllerEpoch)
		if err != nil {
			return 0, 0, false
		}
		data, cst, err := z.Get(zkController)
		if err != nil {
			return 0, 0, false
		}
		var holder struct {
			BrokerID *int32 `json:"brokerid"`
		}
		var epoch int32
		if json.Unmarshal(data, &holder) != nil || holder.BrokerID == nil {
			return 0, 0, false
		}
		if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &epoch); err != nil {
			return 0, 0, false
		}
		if cst.Czxid == est.Mzxid {
			return *holder.BrokerID, epoch, true
		}
	}
	return 0, 0, false
}

// controllerID is the broker /controller names now, -1 for none.
func (z *ZK) controllerID() int32 {
	data, _, err := z.Get(zkController)
	if err != nil {
		return -1
	}
	var holder struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if json.Unmarshal(data, &holder) != nil || holder.BrokerID == nil {
		return -1
	}
	return *holder.BrokerID
}

// brokerEndpoint reads a broker's host and port from its registration.
func (z *ZK) brokerEndpoint(id int32) (string, int, error) {
	data, _, err := z.Get(brokerPath(int(id)))
	if err != nil {
		return "", 0, err
	}
	var d struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return "", 0, err
	}
	return d.Host, d.Port, nil
}
