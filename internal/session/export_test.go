package session

// LogsOpen reports whether the session keeps its logs open.
func (s *Session) LogsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.isOpen()
}

// SetMaxOpenLogs bounds the sessions that keep their logs open; call it
// before any turn.
func (m *Manager) SetMaxOpenLogs(n int) { m.open = newLRU[*Session](n) }

// OpenLogs is the number of sessions that keep their logs open.
func (m *Manager) OpenLogs() int { return m.open.len() }

// Spin is spin, for the tests outside the package.
var Spin = spin

// Spares lists the spare directories ready for New.
func (m *Manager) Spares() []string {
	m.spare.mu.Lock()
	defer m.spare.mu.Unlock()
	return append([]string(nil), m.spare.ready...)
}

// MakeSpare and Adopt are makeSpare and adopt; SpareFiles is spareFiles.
var (
	MakeSpare  = makeSpare
	Adopt      = adopt
	SpareFiles = spareFiles
)

// SetSyncHook has f told of each fsync of a path, before it; nil ends
// that.
func SetSyncHook(f func(path string)) { syncHook = f }
