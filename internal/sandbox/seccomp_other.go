//go:build linux && !amd64 && !arm64

package sandbox

// No filter is written for other architectures yet; installSeccomp
// refuses, so the helper fails closed.
const (
	auditArch = 0
	x32Bit    = 0
)

var denied []denial

var personalities []uint32

const cloneNamespaces = 0
