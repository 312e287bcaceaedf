package ninep

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"9fans.net/go/plan9"
)

// hostileWrite is the 23-byte Twrite of issue 11: its count field says
// 0xffffffff, and no data follows.
func hostileWrite(tag uint16) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 23)
	b = append(b, plan9.Twrite, byte(tag), byte(tag>>8))
	b = binary.LittleEndian.AppendUint32(b, 1) // fid
	b = binary.LittleEndian.AppendUint64(b, 0) // offset
	return binary.LittleEndian.AppendUint32(b, 0xffffffff)
}

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileCount: a count or length field larger than what arrived
// makes the message malformed and allocates nothing (it allocated 4 GiB
// for the Twrite, and three such frames killed the daemon).
func TestHostileCount(t *testing.T) {
	var r request
	msgs := map[string][]byte{
		"twrite count":  hostileWrite(1),
		"twstat length": {13, 0, 0, 0, plan9.Twstat, 1, 0, 1, 0, 0, 0, 0xff, 0xff},
		"tattach uname": {19, 0, 0, 0, plan9.Tattach, 1, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0},
		"twalk names":   {17, 0, 0, 0, plan9.Twalk, 1, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0},
	}
	for name, msg := range msgs {
		var err error
		n := allocated(func() { err = parse(msg, &r) })
		t.Logf("%s: %d bytes allocated", name, n)
		if err != errMalformed {
			t.Errorf("%s: parse = %v, want %v", name, err, errMalformed)
		}
		if n > 4096 {
			t.Errorf("%s: parse allocated %d bytes", name, n)
		}
	}
}

// TestReadGrowing: a size field promising msize, followed by little,
// costs what arrived (the buffer grows at most to twice that, or inSize),
// not msize.
func TestReadGrowing(t *testing.T) {
	for _, arrived := range []int{10, inSize, 3 * inSize, DefaultMsize} {
		in := bytes.NewReader(make([]byte, arrived))
		b, err := readGrowing(in, nil, DefaultMsize)
		switch {
		case arrived < DefaultMsize && err == nil:
			t.Errorf("%d of %d bytes: no error", arrived, DefaultMsize)
		case arrived == DefaultMsize && err != nil:
			t.Errorf("whole message: %v", err)
		case len(b) != arrived:
			t.Errorf("%d bytes arrived, %d read", arrived, len(b))
		case cap(b) > max(2*arrived, inSize):
			t.Errorf("%d bytes arrived, buffer of %d", arrived, cap(b))
		}
	}
}
