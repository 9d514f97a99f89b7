package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/dlq"
)

// Config configures [Start]. The zero value is one node on a free port, in memory, with no
// topics.
type Config struct {
	// Ports are the nodes' ports on 127.0.0.1, one node each; a zero port is a free one. Empty
	// means one node on a free port.
	Ports []int
	// Topics are created with Partitions partitions each, and so is each one's dlq.<topic>.
	// A cluster restarted from DataDir keeps the topics it had and creates none.
	Topics     []string
	Partitions int32
	// DataDir makes the cluster persist its records, offsets and groups there, and load them
	// when it starts: a cluster killed with SIGKILL and started again from the same directory
	// has every record it acknowledged and every offset it committed. Records reach the files
	// through the page cache, so they survive the process, not the machine, unless SyncWrites
	// is set. Empty means in memory: a restart starts empty.
	DataDir    string
	SyncWrites bool
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are the KIP-848 group settings the
	// broker hands its members (group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms); zero means kfake's defaults (45 s and 5 s).
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// NoExpiry turns off the expiry of members kfake never times out (see [Broker]): only for
	// reproducing the wedge it prevents.
	NoExpiry bool
	// Log receives a line per new group generation ([GenerationLine]), per expired member and
	// per stalled rebalance. Nil discards.
	Log io.Writer
	// Options are passed to kfake after the ones above.
	Options []kfake.Opt
}

// Broker is a running kfake cluster with the OV topics. Its group watch prints every new
// generation of a group and expires the members kfake keeps forever: a classic member whose
// JoinGroup response was dropped (it died while it waited) can get no session timer in kfake,
// stays in the group, is assigned partitions nobody consumes, and holds every later rebalance
// until the rebalance timeout, which each join restarts. Kafka times such a member out after
// its session timeout (it starts a session timer for every member when a generation forms);
// the watch sends a LeaveGroup on its behalf once a member of a generation has not synced,
// heartbeaten or committed in it for most of its session timeout. See the package
// documentation.
type Broker struct {
	*kfake.Cluster
	watch *watch
}

// Start runs a cluster per cfg.
func Start(cfg Config) (*Broker, error) {
	ports := cfg.Ports
	if len(ports) == 0 {
		ports = []int{0}
	}
	opts := []kfake.Opt{kfake.Ports(ports...)}
	if len(cfg.Topics) > 0 {
		var all []string
		for _, t := range cfg.Topics {
			all = append(all, t, dlq.DefaultTopic(t))
		}
		opts = append(opts, kfake.SeedTopics(cfg.Partitions, all...))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
		if cfg.SyncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	bc := map[string]string{}
	if cfg.ConsumerSessionTimeout > 0 {
		bc["group.consumer.session.timeout.ms"] = strconv.FormatInt(cfg.ConsumerSessionTimeout.Milliseconds(), 10)
	}
	if cfg.ConsumerHeartbeatInterval > 0 {
		bc["group.consumer.heartbeat.interval.ms"] = strconv.FormatInt(cfg.ConsumerHeartbeatInterval.Milliseconds(), 10)
	}
	if len(bc) > 0 {
		opts = append(opts, kfake.BrokerConfigs(bc))
	}
	c, err := kfake.NewCluster(append(opts, cfg.Options...)...)
	if err != nil {
		return nil, fmt.Errorf("broker: starting kfake on ports %v: %w", ports, err)
	}
	b := &Broker{Cluster: c}
	if b.watch, err = newWatch(c, cfg.Log, !cfg.NoExpiry); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// Addr is the bootstrap list of every node, comma separated.
func (b *Broker) Addr() string { return strings.Join(b.ListenAddrs(), ",") }

// Close stops the group watch and the cluster (a cluster with a DataDir saves its state).
func (b *Broker) Close() {
	b.watch.stop()
	b.Cluster.Close()
}

// ParsePorts reads the listen addresses of "ov broker": one or more comma-separated
// 127.0.0.1:port (kfake listens on 127.0.0.1 only), or with nodes > 1 a single address
// whose port is the first of nodes consecutive ones.
func ParsePorts(addrs string, nodes int) ([]int, error) {
	list := strings.Split(addrs, ",")
	if nodes > 1 && len(list) > 1 && len(list) != nodes {
		return nil, fmt.Errorf("broker: %d addresses for %d nodes: expected one address, or one per node", len(list), nodes)
	}
	var ports []int
	for _, a := range list {
		host, p, err := splitHostPort(strings.TrimSpace(a))
		if err != nil {
			return nil, err
		}
		if host != "127.0.0.1" && host != "localhost" && host != "" {
			return nil, fmt.Errorf("broker: kfake listens on 127.0.0.1 only, not %q", host)
		}
		ports = append(ports, p)
	}
	if nodes > 1 && len(ports) == 1 {
		if ports[0] == 0 {
			ports = make([]int, nodes) // every node on a free port
		} else {
			for i := 1; i < nodes; i++ {
				ports = append(ports, ports[0]+i)
			}
		}
	}
	return ports, nil
}

func splitHostPort(a string) (string, int, error) {
	i := strings.LastIndex(a, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("broker: address %q: expected host:port", a)
	}
	p, err := strconv.Atoi(a[i+1:])
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("broker: address %q: expected a port number 0-65535", a)
	}
	return a[:i], p, nil
}

// ErrStopped is returned by the watch's requests once the broker is closing.
var ErrStopped = errors.New("broker: stopped")

// leaveTimeout bounds one LeaveGroup the watch sends on behalf of an expired member.
const leaveTimeout = 5 * time.Second

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, leaveTimeout)
}
