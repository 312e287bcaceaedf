package fusebridge

import "time"

// SetReleaseWait sets how long Unmount waits for copies of the mount
// held elsewhere, until the returned function puts it back.
func SetReleaseWait(d time.Duration) (restore func()) {
	old := releaseWait
	releaseWait = d
	return func() { releaseWait = old }
}
