package nats

import (
	"context"
	"encoding/json"
	"fmt"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lastMsg is the last message of a subject of a stream, as the stream leader holds it.
type lastMsg struct {
	seq    uint64
	header natsgo.Header
	data   []byte
}

// lastFor reads the last message of key k (encoded) through the bucket stream's leader: the
// JetStream API's STREAM.MSG.GET, which in a cluster only the stream leader answers, and which
// it answers only once it has applied every write acknowledged before it became leader. Never a
// direct get, which any replica answers from its own copy (allow_direct, which KV buckets are
// created with): a replica a write has not reached yet answers the value before it, even to the
// client that made the write and had its acknowledgement, and a compare-and-swap on that stale
// revision then fails for a value nobody else wrote. nats.go's KV Get and Stream.GetLastMsg use
// the direct get whenever the stream allows it, whatever the bucket's replicas.
//
// Missing: jetstream.ErrMsgNotFound.
func (s *backend) lastFor(ctx context.Context, k string) (*lastMsg, error) {
	req, err := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{"$KV." + s.kv.Bucket() + "." + k})
	if err != nil {
		return nil, err
	}
	reply, err := s.conn.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+s.streamName, req)
	if err != nil {
		return nil, fmt.Errorf("store/nats: read key %s: %w", k, err)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Sequence uint64 `json:"seq"`
			Header   []byte `json:"hdrs"`
			Data     []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("store/nats: read key %s: the server's answer: %w", k, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, fmt.Errorf("store/nats: key %s: %w", k, jetstream.ErrMsgNotFound)
	case resp.Error != nil:
		return nil, fmt.Errorf("store/nats: read key %s: %w", k, resp.Error)
	case resp.Message == nil:
		return nil, fmt.Errorf("store/nats: read key %s: %w", k, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &lastMsg{seq: resp.Message.Sequence, data: resp.Message.Data}
	if len(resp.Message.Header) > 0 {
		if m.header, err = natsgo.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("store/nats: read key %s: headers: %w", k, err)
		}
	}
	return m, nil
}
