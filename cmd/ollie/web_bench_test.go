package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
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
// from a chunk written to a chat to the DOM of its page while 20
// sessions stream, with one page open on one of them (the goal) and with
// 20 pages open, one on each (a stress case); for each, a floor in the
// same run: Chromium receiving the same WebSocket messages from a
// trivial server and appending their text to a trivial page. Then the
// first load of the list with 1,000 sessions, and the memory (RSS) of
// the ollie web process idle and with the 20 pages open. The streaming
// cases and their floors run interleaved, OLLIE_WEB_ROUNDS times (3).
// Run it with
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
	// Wait until the list holds all 1,000 sessions.
	testutil.Until(b, "the list of 1,000", func() bool {
		resp, err := hc.Get(base + "/")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(body), `data-total="1000"`)
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
	serverLat := wsRound(b, base, cookie, ids[pages:2*pages], chunks, func(id string) {
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
	// The list's load, interleaved with its floor: the trivial page of
	// the floor server (below) loaded in the same tab.
	floor := newFloorServer(b, chunks)
	const navTiming = `(() => { const n = performance.getEntriesByType('navigation')[0]; return [n.domContentLoadedEventEnd - n.startTime, n.responseEnd - n.startTime] })()`
	var pageLoad, pageResp, floorLoad []float64
	for i := 0; i < 20; i++ {
		if err := do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr"))); err != nil {
			b.Fatal(err)
		}
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](navTiming))
		if err != nil {
			b.Fatal(err)
		}
		pageLoad, pageResp = append(pageLoad, v[0]), append(pageResp, v[1])
		if err := do(bctx, chromedp.Navigate(floor.url+"?load")); err != nil {
			b.Fatal(err)
		}
		if v, err = chromedp.Run(bctx, chromedp.Evaluate[[]float64](navTiming)); err != nil {
			b.Fatal(err)
		}
		floorLoad = append(floorLoad, v[0])
	}
	if err := do(bctx, chromedp.Navigate(base+"/")); err != nil {
		b.Fatal(err)
	}
	// The list fills in after the load, and stays live.
	if err := do(bctx, chromedp.Poll[chromedp.Void](`document.querySelectorAll('#sessions tbody tr').length === 1000`)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: list loaded in Chromium", time.Now().Format(time.TimeOnly))

	tabs := make([]context.Context, pages)
	tabs[0] = bctx
	for i := 1; i < pages; i++ {
		tctx, cancel := chromedp.NewContext(bctx)
		defer cancel()
		tabs[i] = tctx
		if err := chromedp.Do(tctx); err != nil { // opens the tab; a timeout here would close it after
			b.Fatal(err)
		}
	}
	streaming := ids[:pages]
	// collect waits for every chunk in the first k tabs and returns how
	// long each took from its writing to the DOM (ms).
	collect := func(k int) []float64 {
		var lat []float64
		for _, tctx := range tabs[:k] {
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
		return lat
	}
	// park leaves the tabs from k on with nothing open.
	park := func(k int) {
		for _, tctx := range tabs[k:] {
			if err := do(tctx, chromedp.Navigate("about:blank")); err != nil {
				b.Fatal(err)
			}
		}
	}
	floorRound := func(k int) []float64 {
		park(k)
		start := floor.round()
		for _, tctx := range tabs[:k] {
			if err := do(tctx, chromedp.Navigate(floor.url), chromedp.Poll[chromedp.Void](`window.connected === true`),
				chromedp.Evaluate[chromedp.Void](observer)); err != nil {
				b.Fatal(err)
			}
		}
		testutil.Until(b, "the floor pages connected", func() bool { return floor.connected() >= k })
		close(start)
		return collect(k)
	}
	var rssPages float64
	webRound := func(k int) []float64 {
		park(k)
		for i, tctx := range tabs[:k] {
			if err := do(tctx, chromedp.Navigate(base+"/s/"+streaming[i]), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")),
				chromedp.Evaluate[chromedp.Void](observer)); err != nil {
				b.Fatal(err)
			}
		}
		if k == pages {
			rssPages = rss(cmd.Process.Pid)
		}
		var wg sync.WaitGroup
		for _, id := range streaming {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				fsys.WriteFile(ctx, "s/"+id+"/prompt", []byte(fmt.Sprintf("stream %d\n", chunks)), 0)
			}(id)
		}
		wg.Wait()
		lat := collect(k)
		for _, id := range streaming {
			testutil.Until(b, "the session idle again", func() bool {
				st, err := fsys.ReadFile(ctx, "s/"+id+"/state")
				return err == nil && strings.TrimSpace(string(st)) == "idle"
			})
		}
		return lat
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("OLLIE_WEB_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	var floor1, one, floor20, twenty []float64
	for r := 0; r < rounds; r++ {
		f1, o := floorRound(1), webRound(1)
		f20, t := floorRound(pages), webRound(pages)
		b.Logf("%s: round %d: p50/p99 ms: floor 1 page %.1f/%.1f, 1 page %.1f/%.1f; floor 20 pages %.1f/%.1f, 20 pages %.1f/%.1f",
			time.Now().Format(time.TimeOnly), r+1, pct(f1, 50), pct(f1, 99), pct(o, 50), pct(o, 99), pct(f20, 50), pct(f20, 99), pct(t, 50), pct(t, 99))
		floor1, one = append(floor1, f1...), append(one, o...)
		floor20, twenty = append(floor20, f20...), append(twenty, t...)
	}
	rssStream := rss(cmd.Process.Pid)
	b.ReportMetric(pct(serverLat, 50), "chunk→ws-p50-ms")
	b.ReportMetric(pct(serverLat, 99), "chunk→ws-p99-ms")
	b.ReportMetric(pct(one, 50), "chunk→DOM-1page-p50-ms")
	b.ReportMetric(pct(one, 99), "chunk→DOM-1page-p99-ms")
	b.ReportMetric(pct(floor1, 50), "floor-1page-p50-ms")
	b.ReportMetric(pct(floor1, 99), "floor-1page-p99-ms")
	b.ReportMetric(pct(twenty, 50), "chunk→DOM-20pages-p50-ms")
	b.ReportMetric(pct(twenty, 99), "chunk→DOM-20pages-p99-ms")
	b.ReportMetric(pct(floor20, 50), "floor-20pages-p50-ms")
	b.ReportMetric(pct(floor20, 99), "floor-20pages-p99-ms")
	b.ReportMetric(pct(serverLoad, 50), "list1000-server-p50-ms")
	b.ReportMetric(pct(serverLoad, 99), "list1000-server-p99-ms")
	b.ReportMetric(pct(pageLoad, 50), "list1000-DOMContentLoaded-p50-ms")
	b.ReportMetric(pct(pageLoad, 90), "list1000-DOMContentLoaded-p90-ms")
	b.ReportMetric(pct(pageLoad, 100), "list1000-DOMContentLoaded-max-ms")
	b.ReportMetric(pct(pageResp, 50), "list1000-responseEnd-p50-ms")
	b.ReportMetric(pct(floorLoad, 50), "floor-DOMContentLoaded-p50-ms")
	b.ReportMetric(pct(floorLoad, 90), "floor-DOMContentLoaded-p90-ms")
	b.ReportMetric(rssIdle, "rss-idle-MB")
	b.ReportMetric(rssPages, "rss-20pages-MB")
	b.ReportMetric(rssStream, "rss-after-streaming-MB")
	b.Logf("%d + %d chunks measured in pages, %d + %d in floor pages", len(one), len(twenty), len(floor1), len(floor20))
}

// floorServer is the floor of the streaming measure: a trivial page
// whose script appends the text of each WebSocket message to a div, and
// a server that sends it the messages ollie web sends for a streaming
// reply's tails (the same JSON), chunks of them 20 ms apart, stamped
// with the time they were sent.
type floorServer struct {
	url    string
	chunks int

	mu    sync.Mutex
	start chan struct{}
	conns int
}

const floorPage = `<!doctype html><html><head><meta charset="utf-8"><script src="/floor.js" defer></script></head><body><div id="chat"></div></body></html>`

const floorScript = `const chat = document.getElementById('chat');
const ws = new WebSocket('ws://' + location.host + '/ws');
ws.addEventListener('open', () => { window.connected = true; });
ws.addEventListener('message', (m) => {
  const msg = JSON.parse(m.data);
  for (const b of msg.d) chat.append(b.t);
});`

func newFloorServer(b *testing.B, chunks int) *floorServer {
	f := &floorServer{chunks: chunks}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, floorPage)
	})
	mux.HandleFunc("GET /floor.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, floorScript)
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := c.CloseRead(r.Context())
		f.mu.Lock()
		start := f.start
		f.conns++
		f.mu.Unlock()
		select {
		case <-start:
		case <-ctx.Done():
			return
		}
		for i := 0; i < f.chunks; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			msg := fmt.Sprintf(`{"e":"chat","d":[{"i":1,"k":"assistant","t":"⟨%d⟩ "}]}`, time.Now().UnixMicro())
			if c.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
				return
			}
		}
		<-ctx.Done()
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	f.url = srv.URL + "/"
	return f
}

// round readies a round: the pages that connect from now on wait for
// the returned channel to close, then get their chunks.
func (f *floorServer) round() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start = make(chan struct{})
	f.conns = 0
	return f.start
}

func (f *floorServer) connected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
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
				var blocks []struct{ H, T string }
				json.Unmarshal(m.D, &blocks)
				for _, bl := range blocks {
					// A block drawn whole has every stamp so far, a tail only new ones.
					all, from := stamp.FindAllStringSubmatch(bl.H, -1), seen
					if bl.H == "" {
						all, from = stamp.FindAllStringSubmatch(bl.T, -1), 0
					}
					for _, st := range all[min(from, len(all)):] {
						t, _ := strconv.ParseInt(st[1], 10, 64)
						mu.Lock()
						lat = append(lat, float64(now-t)/1000)
						mu.Unlock()
						seen++
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

// observer records, for each chunk stamp that reaches the chat's DOM
// after it is installed, how long after it was written it got there (ms).
const observer = `window.lat = [];
window.seen = [...document.getElementById('chat').textContent.matchAll(/⟨(\d+)⟩/g)].length;
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
