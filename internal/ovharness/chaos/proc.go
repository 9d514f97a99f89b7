package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is one OS process of the ov binary: the broker or a processor.
type proc struct {
	name    string
	cmd     *exec.Cmd
	metrics string // host:port of /metrics, empty for the broker
	done    chan struct{}

	mu       sync.Mutex
	signaled bool // the harness sent SIGKILL or SIGTERM
	state    *os.ProcessState
	rssKB    int64
}

// freePort asks the kernel for a free port on 127.0.0.1 (released before use: a race the
// harness accepts).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs bin with args, its output appended to logPath.
func start(name, bin string, args, env []string, logPath, metrics string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("chaos: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, metrics: metrics, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.state = cmd.ProcessState
		// Not wait4's ru_maxrss: Linux carries the high-water mark of the memory image an
		// execve replaces (here the harness's own, forked) into the child's, so it reports the
		// harness's size, not the processor's.
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	p.signaled = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// term sends SIGTERM (a graceful shutdown) and waits up to timeout, then kills.
func (p *proc) term(timeout time.Duration) (graceful bool) {
	p.mu.Lock()
	p.signaled = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.state.Success()
	case <-time.After(timeout):
		p.kill()
		return false
	}
}

// exit describes how the process ended; unexpected is set when the harness did not ask for it.
func (p *proc) exit() (desc string, unexpected bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running", false
	}
	return p.state.String(), !p.signaled
}

// selfKilled reports whether the process died of SIGKILL that the harness did not send: a
// fault point fired.
func (p *proc) selfKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil || p.signaled {
		return false
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (p *proc) peakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rssKB
}

// gauges are the maxima the scraper saw over every processor of a scenario.
type gauges struct {
	uncommitted atomic.Int64
	openWindows atomic.Int64
	rssKB       atomic.Int64
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// scrape polls the process's /metrics and /proc/<pid>/status until it exits.
func (p *proc) scrape(ctx context.Context, g *gauges, every time.Duration) {
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			storeMax(&g.rssKB, p.peakRSS())
			return
		case <-t.C:
		}
		if kb, ok := vmHWM(p.cmd.Process.Pid); ok {
			storeMax(&g.rssKB, kb)
			p.mu.Lock()
			p.rssKB = max(p.rssKB, kb)
			p.mu.Unlock()
		}
		if p.metrics == "" {
			continue
		}
		resp, err := client.Get("http://" + p.metrics + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			name, value, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			switch name {
			case "processor_uncommitted_messages":
				storeMax(&g.uncommitted, int64(v))
			case "processor_open_windows":
				storeMax(&g.openWindows, int64(v))
			}
		}
		resp.Body.Close()
	}
}

// vmHWM reads the peak resident set size of a running process, in kilobytes.
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// waitPort waits until addr accepts connections.
func waitPort(ctx context.Context, addr string, p *proc) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.running() {
			desc, _ := p.exit()
			return fmt.Errorf("chaos: %s exited before listening on %s: %s", p.name, addr, desc)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pause stops the process with SIGSTOP, as a process that stalls (a long GC pause, a frozen
// VM) does; resume continues it.
func (p *proc) pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

func (p *proc) resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }
