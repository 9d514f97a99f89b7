package chaos_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/ovharness/chaos"
	"github.com/streamledger/streamledger/internal/pgtest"
)

// ovPackage is the ov command, whose "run" and "broker" the harness starts as processes.
const ovPackage = "github.com/streamledger/streamledger/examples/ov"

// ovBinary is the ov command, built once by TestMain into a temporary directory.
var ovBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ov-chaos-bin-")
	if err != nil {
		panic(err)
	}
	// go test puts its own GOROOT/bin first on PATH, so this finds the go command running us.
	goBin, err := exec.LookPath("go")
	if err != nil {
		os.RemoveAll(dir)
		panic("the go command is not on PATH: " + err.Error())
	}
	ovBinary = filepath.Join(dir, "ov")
	if out, err := exec.Command(goBin, "build", "-o", ovBinary, ovPackage).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("go build " + ovPackage + ": " + err.Error() + ": " + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestChaosShort is the short harness of `make test`: every scenario at the short size, each
// compared with the oracle after a drain. With -short only the kill scenario runs.
func TestChaosShort(t *testing.T) {
	pgtest.New(t) // fails when Postgres is unreachable in CI, skips elsewhere
	bin := ovBinary
	size := chaos.Short()
	var scenarios []string
	if testing.Short() {
		scenarios = []string{chaos.ScenarioKill}
	}
	dir, err := os.MkdirTemp("", "ov-chaos-test-")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	results, err := chaos.Run(ctx, chaos.Config{Binary: bin, DSN: pgtest.URL(), Size: size, Scenarios: scenarios, WorkDir: dir,
		Progress: logWriter{t}, Seed: 1})
	var table strings.Builder
	chaos.WriteTable(&table, size.Name, results)
	t.Log(table.String())
	require.NoError(t, err)
	ok := true
	for _, r := range results {
		ok = assert.NoError(t, r.Err, r.Scenario) && ok
		ok = assert.Zero(t, r.Mismatched, "%s: mismatched rows", r.Scenario) && ok
		switch r.Scenario {
		case chaos.ScenarioKill:
			assert.GreaterOrEqual(t, r.Kills, size.Kills, "kills")
		case chaos.ScenarioGroupRange, chaos.ScenarioGroupCooperative:
			assert.GreaterOrEqual(t, r.Rebalances, size.GroupRebalances, "%s: rebalances the broker ran", r.Scenario)
		case chaos.ScenarioPostgres:
			assert.GreaterOrEqual(t, r.Outages, size.Terminations, "terminations")
		case chaos.ScenarioFaultPoints:
			// How many points fire depends on how fast the machine restarts processes while
			// the feed lasts; each of the five at least once is the usual case.
			assert.GreaterOrEqual(t, r.Kills, 4, "processes killed at a fault point")
			assert.Positive(t, r.Rebalances, "revocations need rebalances")
		case chaos.ScenarioBrokerRestart:
			assert.Equal(t, size.BrokerRestarts, r.BrokerRestarts, "broker restarts")
		case chaos.ScenarioBrokers:
			assert.Positive(t, r.Moves, "leader and coordinator moves")
		case chaos.ScenarioProtocolErrors:
			for _, kind := range []string{"commit", "fetch", "dlq", "heartbeat"} {
				assert.Positive(t, r.Faults[kind], "%s faults injected", kind)
			}
			assert.Positive(t, r.Lost, "partitions lost after the heartbeat faults")
		case chaos.ScenarioZombie:
			assert.Equal(t, size.Zombies, r.Zombies, "zombies")
		case chaos.ScenarioGroupConsumer:
			assert.GreaterOrEqual(t, r.Rebalances, size.GroupRebalances, "KIP-848 group epochs")
		case chaos.ScenarioRapidKills:
			assert.Equal(t, size.RapidKills, r.Kills, "kills")
		case chaos.ScenarioRetention:
			assert.Positive(t, r.Faults["deleted"], "records deleted before they were read")
		}
	}
	if ok {
		os.RemoveAll(dir)
	} else {
		t.Logf("processes' logs kept in %s", dir)
	}
}
