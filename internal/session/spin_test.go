package session

import "sync"

// spin runs f over and over on n goroutines, each until f returns false
// or the returned stop is called; stop waits for them. Tests of races
// (go test -race) read with it while they write.
func spin(n int, f func(stop <-chan struct{}) bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if !f(done) {
					return
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}
