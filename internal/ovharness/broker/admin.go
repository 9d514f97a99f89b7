package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FaultSpec is a kfake fault in the admin endpoint's JSON: the requests it fails and the error
// they get. Keys are request names ("OffsetCommit", "Fetch", "Produce", "Heartbeat"); Err is
// a Kafka error name ("REBALANCE_IN_PROGRESS"). Count is how many requests it fails, -1 until
// removed; zero means one. Every selector narrows it, as in kfake.Fault.
type FaultSpec struct {
	Keys       []string `json:"keys"`
	Nodes      []int32  `json:"nodes,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	Partitions []int32  `json:"partitions,omitempty"`
	Group      string   `json:"group,omitempty"`
	Err        string   `json:"err"`
	Count      int      `json:"count,omitempty"`
}

// FaultState is an installed fault and how many requests it has failed.
type FaultState struct {
	ID   int       `json:"id"`
	Spec FaultSpec `json:"spec"`
	Hits int       `json:"hits"`
}

// GroupState is a group as the admin endpoint reports it.
type GroupState struct {
	State   string   `json:"state"`
	Epoch   int32    `json:"epoch"`
	Members []string `json:"members"`
}

// Admin serves the test endpoint of "ov broker --admin-addr": faults, leader and coordinator
// moves, node removal and group state, for the reliability harness. It is no part of a Kafka
// broker; it listens on loopback only.
type Admin struct {
	b      *Broker
	mu     sync.Mutex
	faults map[int]*installed
	next   int
}

type installed struct {
	spec FaultSpec
	h    *kfake.FaultHandle
}

// NewAdmin returns the admin handler of b.
func NewAdmin(b *Broker) *Admin { return &Admin{b: b, faults: map[int]*installed{}} }

// Handler returns the endpoint's routes.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /faults", a.addFault)
	mux.HandleFunc("GET /faults", a.listFaults)
	mux.HandleFunc("DELETE /faults/{id}", a.removeFault)
	mux.HandleFunc("POST /leaders/shuffle", func(w http.ResponseWriter, _ *http.Request) {
		a.b.ShufflePartitionLeaders()
		reply(w, nil, nil)
	})
	mux.HandleFunc("POST /leaders/move", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Node      int32  `json:"node"`
		}
		if !decode(w, r, &m) {
			return
		}
		reply(w, nil, a.b.MoveTopicPartition(m.Topic, m.Partition, m.Node))
	})
	mux.HandleFunc("POST /coordinators/rehash", func(w http.ResponseWriter, _ *http.Request) {
		a.b.RehashCoordinators()
		reply(w, nil, nil)
	})
	mux.HandleFunc("POST /nodes/{id}/remove", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
		if err == nil {
			err = a.b.RemoveNode(int32(id))
		}
		reply(w, nil, err)
	})
	mux.HandleFunc("GET /groups/{name}", func(w http.ResponseWriter, r *http.Request) {
		info := a.b.GroupInfo(r.PathValue("name"))
		if info == nil {
			reply(w, GroupState{State: "Dead"}, nil)
			return
		}
		gs := GroupState{State: info.State, Epoch: info.Epoch, Members: []string{}}
		for _, m := range info.Members {
			gs.Members = append(gs.Members, m.MemberID)
		}
		reply(w, gs, nil)
	})
	return mux
}

func (a *Admin) addFault(w http.ResponseWriter, r *http.Request) {
	var spec FaultSpec
	if !decode(w, r, &spec) {
		return
	}
	f, err := spec.fault()
	if err != nil {
		reply(w, nil, err)
		return
	}
	a.mu.Lock()
	a.next++
	id := a.next
	a.faults[id] = &installed{spec: spec, h: a.b.Fault(f)}
	a.mu.Unlock()
	reply(w, FaultState{ID: id, Spec: spec}, nil)
}

func (a *Admin) listFaults(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []FaultState{}
	for id := 1; id <= a.next; id++ {
		if f := a.faults[id]; f != nil {
			out = append(out, FaultState{ID: id, Spec: f.spec, Hits: f.h.Hits()})
		}
	}
	reply(w, out, nil)
}

// removeFault uninstalls a fault and answers its final state; the harness reads the hits from
// there.
func (a *Admin) removeFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	a.mu.Lock()
	f := a.faults[id]
	delete(a.faults, id)
	a.mu.Unlock()
	if err != nil || f == nil {
		reply(w, nil, fmt.Errorf("no fault %q", r.PathValue("id")))
		return
	}
	f.h.Remove()
	reply(w, FaultState{ID: id, Spec: f.spec, Hits: f.h.Hits()}, nil)
}

// fault converts the spec, checking its request and error names.
func (s FaultSpec) fault() (kfake.Fault, error) {
	f := kfake.Fault{Nodes: s.Nodes, Topic: s.Topic, Partitions: s.Partitions, Group: s.Group, Count: s.Count}
	for _, name := range s.Keys {
		k, ok := keyByName(name)
		if !ok {
			return f, fmt.Errorf("broker: fault: unknown request %q, expected a Kafka request name such as OffsetCommit", name)
		}
		f.Keys = append(f.Keys, k)
	}
	if len(f.Keys) == 0 {
		return f, errors.New("broker: fault: no request named, expected at least one in keys")
	}
	e, ok := errorByName(s.Err)
	if !ok {
		return f, fmt.Errorf("broker: fault: unknown error %q, expected a Kafka error name such as REQUEST_TIMED_OUT", s.Err)
	}
	f.Err = e
	return f, nil
}

func keyByName(name string) (kmsg.Key, bool) {
	for k := int16(0); k < 200; k++ {
		if kmsg.NameForKey(k) == name {
			return kmsg.Key(k), true
		}
	}
	return 0, false
}

func errorByName(name string) (*kerr.Error, bool) {
	for code := int16(-1); code < 200; code++ {
		var e *kerr.Error
		if errors.As(kerr.ErrorForCode(code), &e) && e.Message == name {
			return e, true
		}
	}
	return nil, false
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil {
		http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if v == nil {
		v = struct{}{}
	}
	_ = json.NewEncoder(w).Encode(v)
}

// ServeAdmin serves b's [Admin] endpoint on addr, which must be a loopback address: the
// endpoint has no authentication. It returns what shuts the server down; an error of the
// server after it started goes to errLog.
func ServeAdmin(addr string, b *Broker, errLog io.Writer) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("admin address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("admin address %q: expected a loopback address, the endpoint has no authentication", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin endpoint: %w", err)
	}
	srv := &http.Server{Handler: NewAdmin(b).Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(errLog, "admin endpoint stopped:", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// Client calls the admin endpoint of an "ov broker" process.
type Client struct {
	Addr string // host:port of the endpoint
	HTTP *http.Client
}

// NewClient returns a client of the endpoint at addr.
func NewClient(addr string) *Client {
	return &Client{Addr: addr, HTTP: &http.Client{Timeout: 5 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Addr+path, body)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("broker admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("broker admin %s %s: expected 200, found %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// AddFault installs a fault and returns its ID.
func (c *Client) AddFault(ctx context.Context, spec FaultSpec) (int, error) {
	var st FaultState
	err := c.do(ctx, http.MethodPost, "/faults", spec, &st)
	return st.ID, err
}

// Faults lists the installed faults with their hits.
func (c *Client) Faults(ctx context.Context) ([]FaultState, error) {
	var out []FaultState
	err := c.do(ctx, http.MethodGet, "/faults", nil, &out)
	return out, err
}

// RemoveFault uninstalls a fault and returns its final state.
func (c *Client) RemoveFault(ctx context.Context, id int) (FaultState, error) {
	var st FaultState
	err := c.do(ctx, http.MethodDelete, "/faults/"+strconv.Itoa(id), nil, &st)
	return st, err
}

// ShuffleLeaders gives every partition a random leader and bumps its leader epoch.
func (c *Client) ShuffleLeaders(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/leaders/shuffle", nil, nil)
}

// MoveLeader makes node the leader of one partition.
func (c *Client) MoveLeader(ctx context.Context, topic string, partition, node int32) error {
	in := map[string]any{"topic": topic, "partition": partition, "node": node}
	return c.do(ctx, http.MethodPost, "/leaders/move", in, nil)
}

// RehashCoordinators moves every group's coordinator.
func (c *Client) RehashCoordinators(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/coordinators/rehash", nil, nil)
}

// RemoveNode stops a node listening; its partitions get new leaders.
func (c *Client) RemoveNode(ctx context.Context, node int32) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/nodes/%d/remove", node), nil, nil)
}

// Group returns a group's state, "Dead" when it does not exist.
func (c *Client) Group(ctx context.Context, name string) (GroupState, error) {
	var gs GroupState
	err := c.do(ctx, http.MethodGet, "/groups/"+name, nil, &gs)
	return gs, err
}
