package client

import (
	"encoding/binary"
	"fmt"
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// protocolError reports a server reply that breaks 9P. The connection
// cannot be trusted after one, so it dies.
func protocolError(format string, args ...any) error {
	return errs.E(errs.Other, "9P protocol botch: "+fmt.Sprintf(format, args...))
}

// readLoop is the connection's only reader: it reads each R-message and
// completes the call waiting on its tag, until the connection dies.
func (c *Conn) readLoop(msize uint32) {
	buf := make([]byte, msize)
	for {
		cl, err := c.readReply(buf)
		if err != nil {
			c.fail(err)
			if cl != nil {
				cl.err = c.Err()
				cl.done <- struct{}{}
			}
			return
		}
		cl.done <- struct{}{}
	}
}

// readReply reads one R-message into the call it answers. If it returns a
// call, the call has been claimed (stateReplied) and the caller must signal
// it, whatever the error.
func (c *Conn) readReply(buf []byte) (*call, error) {
	hdr := buf[:7]
	if _, err := io.ReadFull(c.br, hdr); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(hdr)
	rtype := hdr[4]
	tag := binary.LittleEndian.Uint16(hdr[5:])
	if size < 7 || size > c.msize.Load() {
		return nil, protocolError("bad message size %d", size)
	}
	cl, err := c.claim(tag, rtype)
	if err != nil {
		return nil, err
	}
	cl.rtype = rtype
	body := int(size) - 7
	if rtype == plan9.Rread {
		return cl, c.readData(cl, buf, body)
	}
	if _, err := io.ReadFull(c.br, buf[:body]); err != nil {
		return cl, err
	}
	if err := cl.decode(buf[:body]); err != nil {
		return cl, err
	}
	return cl, nil
}

// claim finds the call waiting for a reply with tag and takes it over.
func (c *Conn) claim(tag uint16, rtype uint8) (*call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var cl *call
	if tag == plan9.NOTAG {
		cl = c.vcall
	} else if int(tag) < len(c.calls) {
		cl = c.calls[tag]
	}
	if cl == nil || cl.state != stateWaiting {
		return nil, protocolError("reply with unexpected tag %d", tag)
	}
	if rtype != cl.ttype+1 && rtype != plan9.Rerror {
		return nil, protocolError("reply type %d to request type %d", rtype, cl.ttype)
	}
	cl.state = stateReplied
	return cl, nil
}

// readData reads an Rread's data straight into the caller's buffer,
// sparing a copy.
func (c *Conn) readData(cl *call, buf []byte, body int) error {
	if body < 4 {
		return protocolError("short Rread")
	}
	if _, err := io.ReadFull(c.br, buf[:4]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(buf)
	if int(n) != body-4 || int(n) > len(cl.rdata) {
		return protocolError("Rread count %d for %d bytes requested", n, len(cl.rdata))
	}
	if _, err := io.ReadFull(c.br, cl.rdata[:n]); err != nil {
		return err
	}
	cl.count = n
	return nil
}

// decode unpacks the body of a reply other than Rread into cl.
func (cl *call) decode(b []byte) error {
	d := decoder{b: b}
	switch cl.rtype {
	case plan9.Rerror:
		cl.ename = d.string()
	case plan9.Rversion:
		cl.msize = d.u32()
		cl.version = d.string()
	case plan9.Rattach, plan9.Rauth:
		cl.qid = d.qid()
	case plan9.Rwalk:
		n := int(d.u16())
		if n > plan9.MAXWELEM {
			return protocolError("Rwalk with %d qids", n)
		}
		cl.wqid = cl.wqid[:0]
		for range n {
			cl.wqid = append(cl.wqid, d.qid())
		}
	case plan9.Ropen, plan9.Rcreate:
		cl.qid = d.qid()
		cl.iounit = d.u32()
	case plan9.Rwrite:
		cl.count = d.u32()
	case plan9.Rstat:
		n := int(d.u16())
		cl.stat = append(cl.stat[:0], d.bytes(n)...)
	case plan9.Rflush, plan9.Rclunk, plan9.Rremove, plan9.Rwstat:
	default:
		return protocolError("unknown reply type %d", cl.rtype)
	}
	if d.bad || len(d.b) != 0 {
		return protocolError("malformed reply type %d", cl.rtype)
	}
	return nil
}

// decoder reads little-endian 9P fields; running off the end sets bad
// instead of panicking.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.bad = true
		d.b = nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) string() string { return string(d.bytes(int(d.u16()))) }

func (d *decoder) qid() plan9.Qid {
	t := d.u8()
	v := d.u32()
	p := d.u64()
	return plan9.Qid{Type: t, Vers: v, Path: p}
}
