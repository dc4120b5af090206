package kafkasource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// readyTimeout bounds one readiness probe, so /readyz answers within it
// even when the broker does not.
const readyTimeout = 2 * time.Second

// prober asks the brokers, on connections of its own, whether the Source
// can consume. A dedicated Transport, whose idle connections Close drops:
// kafka-go's default transport would keep connections (and goroutines)
// alive past the Source.
type prober struct {
	client    *kafka.Client
	transport *kafka.Transport
	clientID  string
}

// newClientID names one Source's consumer uniquely, so the probe can find
// this member among the group's: mcplens-ingest-<8 hex digits>.
func newClientID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "mcplens-ingest-" + hex.EncodeToString(b[:])
}

func newProber(c Config, clientID string) *prober {
	tr := &kafka.Transport{ClientID: clientID + "-probe", DialTimeout: readyTimeout, IdleTimeout: 30 * time.Second, MetadataTTL: time.Second}
	return &prober{client: &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: readyTimeout, Transport: tr}, transport: tr, clientID: clientID}
}

// Ready reports whether the Source is consuming: a broker answers, every
// partition of the topic has a leader, and the consumer group is stable
// with at least one partition of the topic assigned to this Source's
// member. It returns the first reason it is not, within about two seconds.
// A member of a group with more members than partitions is never ready:
// it consumes nothing until another leaves. Safe for concurrent use.
func (s *Source) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	p := s.probe
	md, err := p.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.cfg.Topic}})
	if err != nil {
		return fmt.Errorf("brokers %v unreachable: %w", s.cfg.Brokers, err)
	}
	if err := topicLed(md, s.cfg.Topic); err != nil {
		return err
	}
	gs, err := p.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{s.cfg.Group}})
	if err != nil {
		return fmt.Errorf("describe consumer group %q: %w", s.cfg.Group, err)
	}
	for _, g := range gs.Groups {
		if g.GroupID != s.cfg.Group {
			continue
		}
		if g.Error != nil {
			return fmt.Errorf("consumer group %q: %w", s.cfg.Group, g.Error)
		}
		if g.GroupState != "Stable" {
			return fmt.Errorf("consumer group %q is %s, not Stable", s.cfg.Group, g.GroupState)
		}
		for _, m := range g.Members {
			if m.ClientID != p.clientID {
				continue
			}
			for _, t := range m.MemberAssignments.Topics {
				if t.Topic == s.cfg.Topic && len(t.Partitions) > 0 {
					return nil
				}
			}
			return fmt.Errorf("no partition of topic %q assigned to this member of group %q", s.cfg.Topic, s.cfg.Group)
		}
		return fmt.Errorf("not (yet) a member of consumer group %q", s.cfg.Group)
	}
	return fmt.Errorf("consumer group %q not described by the broker", s.cfg.Group)
}

func topicLed(md *kafka.MetadataResponse, topic string) error {
	i := slices.IndexFunc(md.Topics, func(t kafka.Topic) bool { return t.Name == topic })
	if i < 0 {
		return fmt.Errorf("topic %q not in the brokers' metadata", topic)
	}
	t := md.Topics[i]
	if t.Error != nil {
		return fmt.Errorf("topic %q: %w", topic, t.Error)
	}
	if len(t.Partitions) == 0 {
		return fmt.Errorf("topic %q has no partitions", topic)
	}
	for _, p := range t.Partitions {
		if p.Error != nil && !errors.Is(p.Error, kafka.ReplicaNotAvailable) {
			return fmt.Errorf("topic %q partition %d: %w", topic, p.ID, p.Error)
		}
		if p.Leader.Host == "" {
			return fmt.Errorf("topic %q partition %d has no leader", topic, p.ID)
		}
	}
	return nil
}

func (p *prober) close() { p.transport.CloseIdleConnections() }
