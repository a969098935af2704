package main

// The listener: every connection speaks Kafka's frames (docs/wire.md section 2.1).  A
// connection's requests are answered in order, except replica fetches and epoch lookups
// from followers, which long-poll and are answered concurrently.

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reqError is a request answered with an error code; body rides in the tag.
type reqError struct {
	code int16
	body map[string]any
}

func (e *reqError) Error() string { return fmt.Sprintf("error %d", e.code) }

func refuse(code int16, message string, body map[string]any) *reqError {
	out := map[string]any{"message": message}
	for k, v := range body {
		out[k] = v
	}
	return &reqError{code, out}
}

// answer is a handler's result: the response message and the fields for the tag.
type answer struct {
	resp   kmsg.Response
	extras map[string]any
	none   bool // acks=0: no response at all
}

func (b *Broker) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go b.connection(c)
	}
}

func (b *Broker) connection(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	write := func(frame []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = c.Write(frame)
	}
	for {
		p, err := readFrame(c, b.cfg.MaxFrame)
		if err != nil {
			return
		}
		if len(p) >= 2 {
			if _, kafka := kafkaVersions[int16(binary.BigEndian.Uint16(p))]; !kafka {
				// an admin API, on the frames of docs/wire.md section 2: not served here
				if frame, keep := b.adminRefusal(p); frame != nil {
					write(frame)
					if keep {
						continue
					}
				}
				return
			}
		}
		h, err := parseRequest(p)
		if err != nil {
			return
		}
		b.rec.Observe(h.clock)
		want := kafkaVersions[h.api]
		if h.version != want {
			return
		}
		req := kmsg.RequestForKey(h.api)
		req.SetVersion(h.version)
		if err := req.ReadFrom(h.body); err != nil {
			return
		}
		replica := false
		switch r := req.(type) {
		case *kmsg.FetchRequest:
			replica = r.ReplicaID >= 0
		case *kmsg.OffsetForLeaderEpochRequest:
			replica = true
		}
		run := func() {
			a := b.handle(req, h)
			if a.none {
				return
			}
			write(responseFrame(h.cid, b.rec.Tick(), a.extras, a.resp))
		}
		if replica {
			go run()
		} else {
			run()
		}
	}
}

func (b *Broker) handle(req kmsg.Request, h RequestHeader) (a answer) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "handler of api %d failed: %v\n", h.api, p)
			a = errorAnswer(req, &reqError{-1, map[string]any{"message": fmt.Sprint(p)}})
		}
	}()
	var err *reqError
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		a, err = b.onLeaderAndISR(r, h.extras)
	case *kmsg.StopReplicaRequest:
		a, err = b.onStopReplica(r, h.extras)
	case *kmsg.UpdateMetadataRequest:
		a, err = b.onUpdateMetadata(r, h.extras)
	case *kmsg.MetadataRequest:
		a = b.onMetadata()
	case *kmsg.ProduceRequest:
		a, err = b.onProduce(r)
	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 {
			a, err = b.onReplicaFetch(r, h.extras)
		} else {
			a, err = b.onConsumerFetch(r)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		a, err = b.onOffsetForLeaderEpoch(r, h.extras)
	case *kmsg.InitProducerIDRequest:
		// no idempotent producer in this port: its clients write plain batches
		err = refuse(errInvalidRequest, "this broker has no idempotent producer", nil)
	default:
		err = refuse(errInvalidRequest, "an API this broker does not serve", nil)
	}
	if err != nil {
		return errorAnswer(req, err)
	}
	return a
}

// errorAnswer is the API's response with the error where Kafka's schema has it and every
// other field at its default; the error body in the tag.
func errorAnswer(req kmsg.Request, e *reqError) answer {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	extras := map[string]any{}
	for k, v := range e.body {
		extras[k] = v
	}
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		r.ErrorCode = e.code
	case *kmsg.StopReplicaResponse:
		r.ErrorCode = e.code
	case *kmsg.UpdateMetadataResponse:
		r.ErrorCode = e.code
	case *kmsg.ControlledShutdownResponse:
		r.ErrorCode = e.code
	case *kmsg.FetchResponse:
		r.ErrorCode = e.code
	case *kmsg.InitProducerIDResponse:
		r.ErrorCode, r.ProducerID, r.ProducerEpoch = e.code, -1, -1
	case *kmsg.MetadataResponse:
		r.ControllerID = -1
		extras["error_code"] = int(e.code)
	case *kmsg.ProduceResponse:
		q := req.(*kmsg.ProduceRequest)
		t := kmsg.NewProduceResponseTopic()
		p := kmsg.NewProduceResponseTopicPartition()
		if len(q.Topics) > 0 {
			t.Topic = q.Topics[0].Topic
			if len(q.Topics[0].Partitions) > 0 {
				p.Partition = q.Topics[0].Partitions[0].Partition
			}
		}
		p.ErrorCode, p.BaseOffset, p.LogStartOffset = e.code, -1, -1
		t.Partitions = []kmsg.ProduceResponseTopicPartition{p}
		r.Topics = []kmsg.ProduceResponseTopic{t}
	case *kmsg.OffsetForLeaderEpochResponse:
		q := req.(*kmsg.OffsetForLeaderEpochRequest)
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		p.Partition = -1
		if len(q.Topics) > 0 {
			t.Topic = q.Topics[0].Topic
			if len(q.Topics[0].Partitions) > 0 {
				p.Partition = q.Topics[0].Partitions[0].Partition
			}
		}
		p.ErrorCode, p.LeaderEpoch, p.EndOffset = e.code, -1, -1
		t.Partitions = []kmsg.OffsetForLeaderEpochResponseTopicPartition{p}
		r.Topics = []kmsg.OffsetForLeaderEpochResponseTopic{t}
	}
	return answer{resp: resp, extras: extras}
}

// adminRefusal answers an admin request (docs/wire.md sections 2 and 3): this broker never
// is the controller, so a version-1 request is answered NOT_CONTROLLER with the controller
// /controller names (the client resends there) and the connection stays open; any other
// (a version 0 to forward, DESCRIBE_CLIENT_QUOTAS, an unknown key) is INVALID_REQUEST and
// the connection is closed.  The frame: u32 length | i32 correlation id | i64 clock |
// i16 error code | the error body in Epochal's value encoding.
func (b *Broker) adminRefusal(p []byte) ([]byte, bool) {
	if len(p) < 16 {
		return nil, false
	}
	version, cid := int16(binary.BigEndian.Uint16(p[2:])), int32(binary.BigEndian.Uint32(p[4:]))
	b.rec.Observe(int64(binary.BigEndian.Uint64(p[8:])))
	code, keep := int16(errInvalidRequest), false
	body := map[string]any{"message": "this broker serves no admin request (a port that is never the controller)"}
	if version == 1 {
		code, keep = errNotController, true
		body = map[string]any{"message": "NOT_CONTROLLER", "controller_id": b.zk.controllerID()}
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(cid))
	frame = binary.BigEndian.AppendUint64(frame, uint64(b.rec.Tick()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(code))
	frame = encodeValue(frame, body)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame, keep
}
