package session

// Summary is what listings show of a session (s/idx, ls -l s/): its
// settings and its state. The session publishes a new one, under its
// lock, whenever either changes, and readers take it without the lock: a
// Submit holds the lock across the fsync of a prompt, and a listing must
// wait for no session (the 9P server may serve it in the reader of a
// connection every process of a FUSE mount shares).
type Summary struct {
	Meta  Meta // never changed once published: readers share it
	State State
}

// Summary returns the last summary published. It never takes the
// session's lock.
func (s *Session) Summary() Summary {
	if p := s.summary.Load(); p != nil {
		return *p
	}
	return Summary{Meta: Meta{ID: s.id}, State: Idle}
}

// publishLocked publishes the current summary. s.mu is held: every change
// of meta or state calls it.
func (s *Session) publishLocked() {
	st, _ := s.sm.get()
	s.summary.Store(&Summary{Meta: s.meta, State: st})
}
