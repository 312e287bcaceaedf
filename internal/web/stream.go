package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"9fans.net/go/plan9"
	"github.com/coder/websocket"
)

// A sink takes the messages of a stream: server-sent events, or a
// WebSocket. The page uses WebSockets, since a browser opens at most six
// HTTP/1.1 connections to one host and each event stream holds one for
// as long as its page is open (a seventh tab would hang); curl and other
// plain clients can read the same stream as server-sent events.
type sink interface {
	send(event string, v any) error
}

// openSink answers r with a WebSocket if it asks for one, else with an
// event stream. The WebSocket's handshake must come from this server's
// own page (Origin); it ends ctx when the page closes it.
func openSink(ctx context.Context, w http.ResponseWriter, r *http.Request) (sink, context.Context, bool) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		ev, ok := newSSE(w)
		return ev, ctx, ok
	}
	if r.Header.Get("Origin") != "http://"+r.Host {
		http.Error(w, "403 cross-origin WebSocket refused", http.StatusForbidden)
		return nil, ctx, false
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{})
	if err != nil {
		return nil, ctx, false
	}
	ctx = c.CloseRead(ctx)
	return &wsSink{c: c, ctx: ctx}, ctx, true
}

type wsSink struct {
	mu  sync.Mutex
	c   *websocket.Conn
	ctx context.Context
}

func (s *wsSink) send(event string, v any) error {
	b, err := json.Marshal(struct {
		E string `json:"e"`
		D any    `json:"d"`
	}{event, v})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Write(s.ctx, websocket.MessageText, b)
}

// sse writes server-sent events; safe for concurrent use.
type sse struct {
	mu sync.Mutex
	w  http.ResponseWriter
	f  http.Flusher
}

func newSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
}

func (e *sse) send(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// listStream sends the session list's changes to a page. The page was
// drawn with the list of version v; it gets the whole list again first
// only if something changed since.
func (s *Server) listStream(w http.ResponseWriter, r *http.Request) {
	seen, err := strconv.ParseInt(r.URL.Query().Get("v"), 10, 64)
	if err != nil {
		seen = -1
	}
	c := s.list.subscribe(seen)
	defer s.list.unsubscribe(c)
	ev, ctx, ok := openSink(r.Context(), w, r)
	if !ok {
		return
	}
	for {
		select {
		case m, ok := <-c:
			if !ok {
				return // fell behind: the page reconnects and gets all
			}
			if ev.send("list", m) != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// event is one line of a session's events, as the page gets it.
type event struct {
	Seq  int64          `json:"seq"`
	Time time.Time      `json:"time"`
	Type string         `json:"type"`
	Data map[string]any `json:"data,omitempty"`
}

// sessionState is the session's state as the stream last saw it in
// events, and a signal for the chat reader on every event.
type sessionState struct {
	mu    sync.Mutex
	state string
	wake  chan struct{}
}

func (st *sessionState) set(v string) {
	st.mu.Lock()
	st.state = v
	st.mu.Unlock()
}

func (st *sessionState) get() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.state
}

func (st *sessionState) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// chatPoll is how often the chat is read again at its end while a turn
// runs. The tree has no blocking read of chat (a plain file on disk);
// events say when the state changes, so the chat is re-read only while
// the session is busy, and waits on events when it is idle.
const chatPoll = 10 * time.Millisecond

// sessionStream sends a page everything live about one session: the
// chat's blocks as they grow (rendered here), the events, the state and
// the pending consent requests.
func (s *Server) sessionStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	first, err := s.read(ctx, "s/"+id+"/state")
	if err != nil {
		http.Error(w, "no session "+id+": "+err.Error(), http.StatusNotFound)
		return
	}
	ev, ctx, ok := openSink(ctx, w, r)
	if !ok {
		return
	}
	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	st := &sessionState{state: strings.TrimSpace(first), wake: make(chan struct{}, 1)}
	ev.send("state", st.get())
	if st.get() == "asking" {
		s.sendAsks(ctx, ev, id)
	}
	s.sendCost(ctx, ev, id)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		s.followEvents(ctx, ev, id, st)
	}()
	s.followChat(ctx, ev, id, st)
	cancel()
	wg.Wait()
}

// followEvents sends each event as it is appended, and the state and
// consent requests when the state changes.
func (s *Server) followEvents(ctx context.Context, ev sink, id string, st *sessionState) {
	f, err := s.o.Fsys.Open(ctx, "s/"+id+"/events", plan9.OREAD)
	if err != nil {
		return
	}
	defer f.Clunk(context.Background())
	buf := make([]byte, max(f.Iounit(), 8192))
	var off int64
	var line []byte
	for {
		n, err := f.Read(ctx, buf, off)
		if err != nil || n == 0 {
			if ctx.Err() == nil {
				ev.send("gone", id) // a read of events ends only when the session does
			}
			return
		}
		off += int64(n)
		line = append(line, buf[:n]...)
		var batch []event
		for {
			i := bytes.IndexByte(line, '\n')
			if i < 0 {
				break
			}
			var e event
			if json.Unmarshal(line[:i], &e) == nil {
				batch = append(batch, e)
			}
			line = line[i+1:]
		}
		line = append([]byte(nil), line...)
		if len(batch) == 0 {
			continue
		}
		if ev.send("events", batch) != nil {
			return
		}
		now := ""
		for _, e := range batch {
			if e.Type == "state" {
				now, _ = e.Data["state"].(string)
			}
		}
		if was := st.get(); now != "" && now != was {
			st.set(now)
			ev.send("state", now)
			if now == "asking" || was == "asking" {
				s.sendAsks(ctx, ev, id)
			}
			if !busy(now) {
				s.sendCost(ctx, ev, id)
			}
		}
		st.poke()
	}
}

// sendCost sends the session's cost and context use, after a turn.
func (s *Server) sendCost(ctx context.Context, ev sink, id string) {
	cost, _ := s.read(ctx, "s/"+id+"/cost")
	ctxsz, _ := s.read(ctx, "s/"+id+"/ctxsz")
	ev.send("cost", map[string]string{"cost": sessionCost(cost), "ctx": percent(ctxsz)})
}

// ask is one pending consent request.
type ask struct {
	N    string `json:"n"`
	Text string `json:"text"`
}

func (s *Server) sendAsks(ctx context.Context, ev sink, id string) {
	dirs, err := s.o.Fsys.ReadDir(ctx, "s/"+id+"/ask")
	if err != nil {
		return
	}
	asks := []ask{}
	for _, d := range dirs {
		text, err := s.read(ctx, "s/"+id+"/ask/"+d.Name)
		if err != nil {
			continue // answered meanwhile
		}
		asks = append(asks, ask{N: d.Name, Text: visible(text)})
	}
	ev.send("asks", asks)
}

// chatMsg is a block to draw (or redraw) at index I: its whole HTML, or,
// while a reply or its reasoning streams, the text it grew by (Tail, set
// as text by the page: O(chunk) per chunk, not the whole block again).
type chatMsg struct {
	I    int    `json:"i"`
	Kind string `json:"k"`
	HTML string `json:"h,omitempty"`
	Tail string `json:"t,omitempty"`
}

// renderEvery is how often a block that streams is drawn whole again
// (its Markdown rendered and sanitized), between the tails sent as text.
// A block is drawn whole when it is finished: another block follows it,
// or the session is no longer busy.
const renderEvery = time.Second

// sentBlock is what a page has of a block: the HTML sent last, the text
// it stands for plus the tails sent after it, and when the HTML was sent.
type sentBlock struct {
	kind string
	html string
	text string
	tail bool // text has tails after html (not rendered yet)
	at   time.Time
}

// chatSender turns the parsed chat into messages for a page.
type chatSender struct {
	sent []sentBlock
}

// streams says whether a block kind is drawn from its tails while it grows.
func streams(kind string) bool { return kind == "assistant" || kind == "think" }

// update returns the messages that bring the page from what it has to
// view, from block first on. live says the session is busy, so the last
// block may still grow.
func (c *chatSender) update(view []block, first int, live bool, now time.Time) []chatMsg {
	var msgs []chatMsg
	for i := first; i < len(view); i++ {
		b := view[i]
		if i < len(c.sent) {
			s := &c.sent[i]
			if live && i == len(view)-1 && streams(b.Kind) && s.kind == b.Kind &&
				strings.HasPrefix(b.Text, s.text) && now.Sub(s.at) < renderEvery {
				tail := wholeRunes(b.Text[len(s.text):])
				if tail != "" {
					s.text += tail
					s.tail = true
					msgs = append(msgs, chatMsg{I: i, Kind: b.Kind, Tail: visible(tail)})
				}
				continue
			}
			if !s.tail && s.kind == b.Kind && s.text == b.Text {
				continue
			}
		}
		h := blockHTML(b)
		if i >= len(c.sent) {
			c.sent = append(c.sent, make([]sentBlock, i-len(c.sent)+1)...)
		}
		s := &c.sent[i]
		if s.html == h && !s.tail {
			s.kind, s.text = b.Kind, b.Text
			continue
		}
		*s = sentBlock{kind: b.Kind, html: h, text: b.Text, at: now}
		msgs = append(msgs, chatMsg{I: i, Kind: b.Kind, HTML: h})
	}
	return msgs
}

// wholeRunes cuts a UTF-8 sequence that a read split off the end of s;
// the rest comes with the next tail.
func wholeRunes(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// followChat sends the chat's blocks as they grow. The tree has no
// blocking read of chat (a plain file on disk), so while the session is
// busy the chat is read again at its end every chatPoll; while it is idle
// the reader waits on events.
func (s *Server) followChat(ctx context.Context, ev sink, id string, st *sessionState) {
	f, err := s.o.Fsys.Open(ctx, "s/"+id+"/chat", plan9.OREAD)
	if err != nil {
		return
	}
	defer f.Clunk(context.Background())
	buf := make([]byte, max(f.Iounit(), 8192))
	var off int64
	var p chatParser
	var cs chatSender
	var view []block
	caughtUp := false
	for ctx.Err() == nil {
		n, err := f.Read(ctx, buf, off)
		if err != nil && err != io.EOF {
			return
		}
		live := caughtUp && busy(st.get())
		first := len(view)
		if n > 0 {
			off += int64(n)
			view, first = p.Write(buf[:n])
		} else if !live && len(view) > 0 {
			first = len(view) - 1 // no longer busy: a streamed block is drawn whole
		}
		if msgs := cs.update(view, first, live, time.Now()); len(msgs) > 0 && ev.send("chat", msgs) != nil {
			return
		}
		if n > 0 {
			continue
		}
		if !caughtUp {
			caughtUp = true
			ev.send("ready", len(cs.sent))
		}
		var tick <-chan time.Time
		if busy(st.get()) {
			tick = time.After(chatPoll)
		}
		select {
		case <-st.wake:
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

// busy says whether a turn may be writing to the chat.
func busy(state string) bool { return state != "idle" && state != "error" && state != "" }
