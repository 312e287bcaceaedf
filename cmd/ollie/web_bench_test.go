package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"9fans.net/go/plan9"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// stampRunner stands in for the agent loop in the web benchmark: for a
// prompt "stream N" it writes a reply in N chunks, 20 ms apart, each
// carrying the time it was written (⟨µs⟩), as a backend's deltas go
// into the chat; the page measures when each reaches its DOM.
type stampRunner struct{}

func (stampRunner) Run(ctx context.Context, t *session.Turn) error {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(t.Prompt), "stream "))
	t.Chat("assistant: ")
	for i := 0; i < n; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		t.Chat(fmt.Sprintf("⟨%d⟩ ", time.Now().UnixMicro()))
	}
	t.Chat("\n")
	return t.SetReply("ok\n")
}

func (stampRunner) Compact(ctx context.Context, t *session.Turn) error { return nil }

// BenchmarkWeb measures ollie web as docs/web.md reports it: the time
// from a chunk written to a chat to the DOM of its page, with 20
// sessions streaming into 20 open pages; the first load of the list with
// 1,000 sessions; the memory (RSS) of the ollie web process idle and
// with the 20 pages open. Run it with
//
//	go test ./cmd/ollie -run '^$' -bench BenchmarkWeb -benchtime 1x
func BenchmarkWeb(b *testing.B) {
	testutil.Require(b, "chromium")
	cfg := testutil.Home(b, nil)
	testutil.Daemon(b, cfg, daemon.Options{Runner: stampRunner{}})
	fsys := testutil.Dial(b, cfg)
	ctx := context.Background()
	cwd := b.TempDir()
	var ids []string
	for i := 0; i < 1000; i++ {
		f, err := fsys.Open(ctx, "s/new", plan9.ORDWR)
		if err != nil {
			b.Fatal(err)
		}
		f.WriteAt(ctx, []byte(fmt.Sprintf("cwd=%s\nname=bench%04d\n", cwd, i)), 0)
		buf := make([]byte, 64)
		n, _ := f.Read(ctx, buf, 0)
		f.Clunk(ctx)
		ids = append(ids, strings.TrimSpace(string(buf[:n])))
	}

	b.Logf("%s: 1,000 sessions made", time.Now().Format(time.TimeOnly))
	cmd, url, _ := webProcess(b, cfg.Socket)
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base, _, _ := strings.Cut(url, "/?")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	if resp, err := hc.Get(url); err == nil {
		resp.Body.Close()
	}
	// Wait until the list holds all 1,000 sessions with their costs.
	testutil.Until(b, "the list of 1,000", func() bool {
		resp, err := hc.Get(base + "/")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Count(string(body), "<tr data-id=") == 1000
	})
	var serverLoad []float64
	for i := 0; i < 30; i++ {
		t0 := time.Now()
		resp, err := hc.Get(base + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		serverLoad = append(serverLoad, ms(time.Since(t0)))
	}
	rssIdle := rss(cmd.Process.Pid)
	b.Logf("%s: list served", time.Now().Format(time.TimeOnly))

	// The server's part alone: 20 WebSocket clients in Go, no browser.
	const pages, chunks = 20, 100
	cookie := ""
	for _, c := range jar.Cookies(mustURL(base + "/")) {
		cookie = c.Name + "=" + c.Value
	}
	serverLat := wsRound(b, base, cookie, ids[:pages], chunks, func(id string) {
		fsys.WriteFile(ctx, "s/"+id+"/prompt", []byte(fmt.Sprintf("stream %d\n", chunks)), 0)
	})
	b.Logf("%s: server part measured", time.Now().Format(time.TimeOnly))

	actx, cancelA := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath("/usr/bin/chromium"), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(b.TempDir()))...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx); err != nil {
		b.Fatal(err)
	}
	do := func(c context.Context, steps ...chromedp.Action[chromedp.Void]) error {
		c, cancel := context.WithTimeout(c, time.Minute)
		defer cancel()
		return chromedp.Do(c, steps...)
	}
	if err := do(bctx, chromedp.Navigate(url)); err != nil {
		b.Fatal(err)
	}
	var pageLoad []float64
	for i := 0; i < 10; i++ {
		if err := do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr"))); err != nil {
			b.Fatal(err)
		}
		v, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`(() => { const n = performance.getEntriesByType('navigation')[0]; return n.domContentLoadedEventEnd - n.startTime })()`))
		if err != nil {
			b.Fatal(err)
		}
		pageLoad = append(pageLoad, v)
	}

	tabs := make([]context.Context, pages)
	for i := range tabs {
		tctx, cancel := chromedp.NewContext(bctx)
		defer cancel()
		tabs[i] = tctx
		if err := chromedp.Do(tctx); err != nil { // opens the tab; a timeout here would close it after
			b.Fatal(err)
		}
		if err := do(tctx, chromedp.Navigate(base+"/s/"+ids[pages+i]), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']"))); err != nil {
			b.Fatal(err)
		}
		if err := do(tctx, chromedp.Evaluate[chromedp.Void](observer)); err != nil {
			b.Fatal(err)
		}
	}
	rssPages := rss(cmd.Process.Pid)
	b.Logf("%s: %d pages open", time.Now().Format(time.TimeOnly), pages)
	var wg sync.WaitGroup
	for i := 0; i < pages; i++ {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			fsys.WriteFile(ctx, "s/"+id+"/prompt", []byte(fmt.Sprintf("stream %d\n", chunks)), 0)
		}(ids[pages+i])
	}
	wg.Wait()
	var lat []float64
	for _, tctx := range tabs {
		testutil.Until(b, "every chunk in the page", func() bool {
			n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`window.lat.length`))
			return err == nil && n >= chunks
		})
		l, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`window.lat`))
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, l...)
	}
	rssStream := rss(cmd.Process.Pid)
	b.ReportMetric(pct(serverLat, 50), "chunk→ws-p50-ms")
	b.ReportMetric(pct(serverLat, 99), "chunk→ws-p99-ms")
	b.ReportMetric(pct(lat, 50), "chunk→DOM-p50-ms")
	b.ReportMetric(pct(lat, 99), "chunk→DOM-p99-ms")
	b.ReportMetric(pct(lat, 100), "chunk→DOM-max-ms")
	b.ReportMetric(pct(serverLoad, 50), "list1000-server-p50-ms")
	b.ReportMetric(pct(serverLoad, 99), "list1000-server-p99-ms")
	b.ReportMetric(pct(pageLoad, 50), "list1000-DOMContentLoaded-p50-ms")
	b.ReportMetric(pct(pageLoad, 100), "list1000-DOMContentLoaded-max-ms")
	b.ReportMetric(rssIdle, "rss-idle-MB")
	b.ReportMetric(rssPages, "rss-20pages-MB")
	b.ReportMetric(rssStream, "rss-20streaming-MB")
	b.Logf("%d chunks measured", len(lat))
}

func mustURL(s string) *neturl.URL {
	u, err := neturl.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

var stamp = regexp.MustCompile(`⟨(\d+)⟩`)

// wsRound opens a WebSocket stream per session as the page does, starts
// every session's reply, and returns how long after each chunk was
// written its message arrived (ms).
func wsRound(b *testing.B, base, cookie string, ids []string, chunks int, prompt func(id string)) []float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var lat []float64
	var wg, ready sync.WaitGroup
	for _, id := range ids {
		u := mustURL(base)
		h := http.Header{"Cookie": {cookie}, "Origin": {u.Scheme + "://" + u.Host}}
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/events/s/"+id, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(1 << 24)
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			defer c.CloseNow()
			seen, isReady := 0, false
			for seen < chunks {
				_, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				now := time.Now().UnixMicro()
				var m struct {
					E string          `json:"e"`
					D json.RawMessage `json:"d"`
				}
				json.Unmarshal(data, &m)
				if m.E == "ready" && !isReady {
					isReady = true
					ready.Done()
				}
				if m.E != "chat" {
					continue
				}
				var blocks []struct{ H string }
				json.Unmarshal(m.D, &blocks)
				for _, bl := range blocks {
					all := stamp.FindAllStringSubmatch(bl.H, -1)
					for ; seen < len(all); seen++ {
						t, _ := strconv.ParseInt(all[seen][1], 10, 64)
						mu.Lock()
						lat = append(lat, float64(now-t)/1000)
						mu.Unlock()
					}
				}
			}
		}()
	}
	ready.Wait()
	for _, id := range ids {
		go prompt(id)
	}
	wg.Wait()
	return lat
}

// observer records, for each chunk stamp that reaches the chat's DOM,
// how long after it was written it got there (ms).
const observer = `window.lat = []; window.seen = 0;
new MutationObserver(() => {
  const now = (performance.timeOrigin + performance.now()) * 1000;
  const m = [...document.getElementById('chat').textContent.matchAll(/⟨(\d+)⟩/g)];
  for (; window.seen < m.length; window.seen++) window.lat.push((now - Number(m[window.seen][1])) / 1000);
}).observe(document.getElementById('chat'), {subtree: true, childList: true, characterData: true});`

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// rss is the resident memory of a process in MB.
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}
