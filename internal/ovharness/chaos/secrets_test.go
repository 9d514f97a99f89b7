package chaos_test

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
)

// TestSecretsNeverLogged runs the processor as an OS process with a password in its DSN and a
// SASL password among its Kafka properties, at debug level, in JSON and in text, once against
// a reachable Postgres (trust authentication ignores the password; the broker rejects SASL, so
// librdkafka logs its errors) and once against an unreachable one (the connection error names
// the server). Nothing it writes may contain either secret.
func TestSecretsNeverLogged(t *testing.T) {
	db := pgtest.New(t)
	const dbSecret, saslSecret = "Pg-S3cret-4711", "Sasl-S3cret-0815"
	broker := startBroker(t)
	good, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	good.User = url.UserPassword(good.User.Username(), dbSecret)
	bad := *good
	bad.Host = "127.0.0.1:1" // nothing listens there
	for _, c := range []struct {
		name, dsn, format string
	}{
		{"reachable postgres, json", good.String(), "json"},
		{"reachable postgres, text", good.String(), "text"},
		{"unreachable postgres", bad.String(), "text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(ovBinary, "run", "--brokers", broker, "--dsn", c.dsn, "--schema", db.Schema, "--log-level", "debug",
				"--log-format", c.format, "--metrics-addr", "127.0.0.1:0", "--group", "secrets-"+db.Schema,
				"--kafka", "security.protocol=SASL_PLAINTEXT,sasl.mechanism=PLAIN,sasl.username=ov,sasl.password="+saslSecret+
					",debug=security")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done: // the unreachable server stops it
			case <-time.After(4 * time.Second):
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-done
				}
			}
			logs := out.String()
			require.NotEmpty(t, logs)
			assert.NotContains(t, logs, dbSecret, "the DSN's password was logged")
			assert.NotContains(t, logs, saslSecret, "sasl.password was logged")
			if t.Failed() || testing.Verbose() {
				t.Logf("%d bytes of logs; first lines:\n%s", len(logs), firstLines(logs, 15))
			}
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// startBroker runs "ov broker" on a free port until the test ends.
func startBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(ovBinary, "broker", "--addr", addr, "--partitions", "2")
	logPath := filepath.Join(t.TempDir(), "broker.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("broker not listening on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
