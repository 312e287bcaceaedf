package ninep

import (
	"encoding/binary"
	"errors"

	"9fans.net/go/plan9"
)

// The wire format of 9P2000 (intro(5)): little-endian integers, strings
// as a 2-byte length and bytes. Requests are decoded into a request that
// the reader reuses, and replies encoded straight into an output buffer,
// so that neither costs an allocation (plan9.UnmarshalFcall makes an
// Fcall per message, Fcall.Bytes a buffer per reply).

// hdrSize is size[4] type[1] tag[2].
const hdrSize = 7

// rreadHdr is an Rread's header: hdrSize and count[4].
const rreadHdr = hdrSize + 4

// request is one T-message.
type request struct {
	typ    uint8
	tag    uint16
	fid    uint32
	newfid uint32 // Twalk
	afid   uint32 // Tauth, Tattach
	msize  uint32 // Tversion
	oldtag uint16 // Tflush
	mode   uint8  // Topen, Tcreate
	perm   plan9.Perm
	offset uint64
	count  uint32
	uname  string
	aname  string
	name   string   // Tcreate; Tversion: the version
	wname  []string // Twalk
	data   []byte   // Twrite: data; Twstat: stat. Aliases the message.
}

var (
	errMalformed = errors.New("malformed message")
	errUnknown   = errors.New("unknown message")
)

// decoder reads fields off a message, remembering the first overrun.
type decoder struct {
	b   []byte
	bad bool
}

// zeros stands in for an integer field past the end of the message.
var zeros [8]byte

// n takes the next k bytes. Past the end it takes nothing and allocates
// nothing, whatever k a hostile count or length field says: an integer
// field reads as zero and a string or data field as empty, and the
// message is malformed. Everything n returns aliases the message, which
// next bounded by msize.
func (d *decoder) n(k int) []byte {
	if k < 0 || len(d.b) < k {
		d.bad = true
		d.b = nil
		if k <= len(zeros) && k >= 0 {
			return zeros[:k]
		}
		return nil
	}
	p := d.b[:k]
	d.b = d.b[k:]
	return p
}

func (d *decoder) u8() uint8   { return d.n(1)[0] }
func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.n(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.n(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.n(8)) }
func (d *decoder) str() string { return string(d.n(int(d.u16()))) }

// parse decodes msg (size, type, tag and body) into r, reusing r's walk
// slice. A type that is not a request is errUnknown; a body that does not
// fit its type is errMalformed. Either way r.typ and r.tag are set, so the
// error can be answered.
func parse(msg []byte, r *request) error {
	wname := r.wname[:0]
	*r = request{wname: wname}
	d := decoder{b: msg[4:]}
	r.typ, r.tag = d.u8(), d.u16()
	switch r.typ {
	case plan9.Tversion:
		r.msize, r.name = d.u32(), d.str()
	case plan9.Tauth:
		r.afid, r.uname, r.aname = d.u32(), d.str(), d.str()
	case plan9.Tattach:
		r.fid, r.afid = d.u32(), d.u32()
		r.uname, r.aname = d.str(), d.str()
	case plan9.Tflush:
		r.oldtag = d.u16()
	case plan9.Twalk:
		r.fid, r.newfid = d.u32(), d.u32()
		n := int(d.u16())
		if n > plan9.MAXWELEM {
			return errMalformed
		}
		for i := 0; i < n && !d.bad; i++ {
			r.wname = append(r.wname, d.str())
		}
	case plan9.Topen:
		r.fid, r.mode = d.u32(), d.u8()
	case plan9.Tcreate:
		r.fid, r.name = d.u32(), d.str()
		r.perm, r.mode = plan9.Perm(d.u32()), d.u8()
	case plan9.Tread:
		r.fid, r.offset, r.count = d.u32(), d.u64(), d.u32()
	case plan9.Twrite:
		r.fid, r.offset = d.u32(), d.u64()
		r.data = d.n(int(d.u32()))
	case plan9.Tclunk, plan9.Tremove, plan9.Tstat:
		r.fid = d.u32()
	case plan9.Twstat:
		r.fid = d.u32()
		r.data = d.n(int(d.u16()))
	default:
		return errUnknown
	}
	if d.bad || len(d.b) != 0 {
		return errMalformed
	}
	return nil
}

// Replies. Each appends one whole message to b; finish fills in its size.

func putHdr(b []byte, typ uint8, tag uint16) []byte {
	return append(b, 0, 0, 0, 0, typ, byte(tag), byte(tag>>8))
}

// finish sets the size of the message that starts at b[start:].
func finish(b []byte, start int) []byte {
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

func put16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func put32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func put64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func putStr(b []byte, s string) []byte { return append(put16(b, uint16(len(s))), s...) }

func putQid(b []byte, q plan9.Qid) []byte {
	return put64(put32(append(b, q.Type), q.Vers), q.Path)
}

// empty replies with no body: Rflush, Rclunk, Rremove, Rwstat.
func empty(b []byte, typ uint8, tag uint16) []byte {
	return finish(putHdr(b, typ, tag), len(b))
}

// rerror replies ename, cut to fit in msize.
func rerror(b []byte, tag uint16, ename string, msize uint32) []byte {
	if room := int(msize) - hdrSize - 2; len(ename) > room {
		ename = ename[:max(room, 0)]
	}
	start := len(b)
	return finish(putStr(putHdr(b, plan9.Rerror, tag), ename), start)
}

func rqid(b []byte, typ uint8, tag uint16, q plan9.Qid) []byte {
	start := len(b)
	b = putQid(putHdr(b, typ, tag), q)
	if typ == plan9.Ropen || typ == plan9.Rcreate {
		b = put32(b, 0) // iounit: 0, the client goes by msize
	}
	return finish(b, start)
}
