package web

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"9fans.net/go/plan9"
)

// row is one session of the list, from s/idx, cost and ctxsz.
type row struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	Agent   string `json:"agent"`
	Backend string `json:"backend"`
	Model   string `json:"model"`
	Cwd     string `json:"cwd"`
	Cost    string `json:"cost"` // USD of the whole session
	Ctx     string `json:"ctx"`  // context use, percent
}

// listMsg is one change of the list sent to the pages: a row set or
// deleted, or the whole list.
type listMsg struct {
	Op   string `json:"op"` // set, del, all
	Row  *row   `json:"row,omitempty"`
	ID   string `json:"id,omitempty"`
	Rows []*row `json:"rows,omitempty"`
}

// sessionList keeps the list of sessions up to date from the tree: one
// blocking read of statewait per session says when its state changes,
// and each change re-reads s/idx and that session's cost and ctxsz. The
// tree has no blocking file for the set of sessions, so sessions made
// or ended by another client are found by re-reading s/idx on any
// change and every resyncEvery.
type sessionList struct {
	s     *Server
	conns conns
	kick  chan struct{} // asks for a re-read of s/idx
	sem   chan struct{} // bounds the refreshes running at once (a connection runs at most 1024 requests)
	sync  sync.Mutex    // one resync at a time, so none publishes an older s/idx over a newer

	mu       sync.Mutex // guards the fields below
	rows     map[string]*row
	order    []string // ids in s/idx order
	watching map[string]context.CancelFunc
	subs     map[chan listMsg]bool
	version  int64 // how many changes were published
}

const resyncEvery = 5 * time.Second

func newSessionList(s *Server) *sessionList {
	return &sessionList{s: s, conns: conns{s: s}, kick: make(chan struct{}, 1), sem: make(chan struct{}, 16),
		rows: map[string]*row{}, watching: map[string]context.CancelFunc{}, subs: map[chan listMsg]bool{}}
}

func (l *sessionList) start() error {
	if err := l.resync(); err != nil {
		return err
	}
	l.s.wg.Add(1)
	go l.loop()
	return nil
}

func (l *sessionList) loop() {
	defer l.s.wg.Done()
	defer l.conns.close()
	t := time.NewTicker(resyncEvery)
	defer t.Stop()
	for {
		select {
		case <-l.s.ctx.Done():
			return
		case <-l.kick:
		case <-t.C:
		}
		if err := l.resync(); err != nil && l.s.ctx.Err() == nil {
			l.s.o.Logf("web: s/idx: %v", err)
		}
	}
}

// changed asks the loop to re-read s/idx soon.
func (l *sessionList) changed() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// resync reads s/idx and publishes what differs from the rows held.
func (l *sessionList) resync() error {
	l.sync.Lock()
	defer l.sync.Unlock()
	text, err := l.s.read(l.s.ctx, "s/idx")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var order []string
	var fresh []*row
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 6 {
			continue
		}
		r := &row{ID: f[0], State: f[1], Agent: f[2], Backend: f[3], Model: f[4], Cwd: f[5]}
		if len(f) > 6 {
			r.Name = f[6]
		}
		seen[r.ID] = true
		order = append(order, r.ID)
		fresh = append(fresh, r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = order
	for _, r := range fresh {
		old := l.rows[r.ID]
		if old != nil {
			r.Cost, r.Ctx = old.Cost, old.Ctx
			if *old == *r {
				continue
			}
		}
		l.rows[r.ID] = r
		l.publishLocked(listMsg{Op: "set", Row: r})
		if old == nil || old.State != r.State {
			l.s.wg.Add(1)
			go l.refresh(r.ID)
		}
		if _, ok := l.watching[r.ID]; !ok {
			ctx, cancel := context.WithCancel(l.s.ctx)
			l.watching[r.ID] = cancel
			l.s.wg.Add(1)
			go l.watch(ctx, r.ID)
		}
	}
	for id := range l.rows {
		if !seen[id] {
			delete(l.rows, id)
			if cancel := l.watching[id]; cancel != nil {
				cancel()
				delete(l.watching, id)
			}
			l.publishLocked(listMsg{Op: "del", ID: id})
		}
	}
	return nil
}

// watch blocks on the session's statewait until the session ends.
func (l *sessionList) watch(ctx context.Context, id string) {
	defer l.s.wg.Done()
	p, err := l.conns.get(ctx)
	if err != nil {
		return
	}
	defer l.conns.put(p)
	f, err := p.fsys.Open(ctx, "s/"+id+"/statewait", plan9.OREAD)
	if err != nil {
		return
	}
	defer f.Clunk(context.Background())
	buf := make([]byte, 64)
	for ctx.Err() == nil {
		n, err := f.Read(ctx, buf, 0)
		if err != nil || n == 0 {
			break
		}
		st := strings.TrimSpace(string(buf[:n]))
		l.mu.Lock()
		if r := l.rows[id]; r != nil && r.State != st {
			c := *r
			c.State = st
			l.rows[id] = &c
			l.publishLocked(listMsg{Op: "set", Row: &c})
		}
		l.mu.Unlock()
		if st == "idle" || st == "error" {
			l.s.wg.Add(1)
			go l.refresh(id)
		}
	}
	l.changed() // it ended, or its name changed: s/idx says which
}

// refresh reads a session's cost and context use.
func (l *sessionList) refresh(id string) {
	defer l.s.wg.Done()
	ctx := l.s.ctx
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-l.sem }()
	cost, _ := l.s.read(ctx, "s/"+id+"/cost")
	ctxsz, _ := l.s.read(ctx, "s/"+id+"/ctxsz")
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rows[id]
	if r == nil {
		return
	}
	c := *r
	c.Cost, c.Ctx = sessionCost(cost), percent(ctxsz)
	if c != *r {
		l.rows[id] = &c
		l.publishLocked(listMsg{Op: "set", Row: &c})
	}
}

// sessionCost finds the session's total in cost ("turn X\nsession Y").
func sessionCost(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "session "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// percent finds "(N%)" in ctxsz.
func percent(text string) string {
	i, j := strings.LastIndex(text, "("), strings.LastIndex(text, "%)")
	if i < 0 || j < i {
		return ""
	}
	return text[i+1 : j+1]
}

// snapshot returns the rows newest first (s/idx in reverse: ids begin
// with the time they were made), and the version they are.
func (l *sessionList) snapshot() ([]*row, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked(), l.version
}

func (l *sessionList) snapshotLocked() []*row {
	out := make([]*row, 0, len(l.order))
	for i := len(l.order) - 1; i >= 0; i-- {
		if r := l.rows[l.order[i]]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// find returns the row of a session by id or name.
func (l *sessionList) find(key string) *row {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.rows[key]; r != nil {
		return r
	}
	var names []*row
	for _, r := range l.rows {
		if r.Name == key {
			names = append(names, r)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i].ID < names[j].ID })
	if len(names) > 0 {
		return names[0]
	}
	return nil
}

// subscribe returns a channel of changes; a subscriber that falls 256
// changes behind is dropped (its channel closed) and reloads the list.
// Unless the subscriber has the list of version seen, the channel starts
// with the whole list.
func (l *sessionList) subscribe(seen int64) chan listMsg {
	c := make(chan listMsg, 256)
	l.mu.Lock()
	defer l.mu.Unlock()
	if seen != l.version {
		c <- listMsg{Op: "all", Rows: l.snapshotLocked()}
	}
	l.subs[c] = true
	return c
}

func (l *sessionList) unsubscribe(c chan listMsg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[c] {
		delete(l.subs, c)
		close(c)
	}
}

func (l *sessionList) publishLocked(m listMsg) {
	l.version++
	for c := range l.subs {
		select {
		case c <- m:
		default:
			delete(l.subs, c)
			close(c)
		}
	}
}
