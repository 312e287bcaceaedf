package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// fake is a scripted 9P server: the test reads T-messages and writes
// whatever replies, good or bad, the case needs.
type fake struct {
	t  *testing.T
	nc net.Conn
}

func (f *fake) read() *plan9.Fcall {
	m, err := plan9.ReadFcall(f.nc)
	if err != nil {
		f.t.Errorf("fake server: %v", err)
		return &plan9.Fcall{}
	}
	return m
}

func (f *fake) write(m *plan9.Fcall) {
	if err := plan9.WriteFcall(f.nc, m); err != nil {
		f.t.Errorf("fake server: %v", err)
	}
}

func (f *fake) raw(b []byte) { f.nc.Write(b) }

// dialFake starts a client on a fake server that answers Tversion
// normally and then runs script.
func dialFake(t *testing.T, script func(f *fake)) *client.Conn {
	cc, sc := net.Pipe()
	f := &fake{t: t, nc: sc}
	go func() {
		v := f.read()
		f.write(&plan9.Fcall{Type: plan9.Rversion, Tag: v.Tag, Msize: 8192, Version: "9P2000"})
		script(f)
	}()
	c, err := client.NewConn(cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); sc.Close() })
	return c
}

func attachReply(f *fake) {
	m := f.read()
	f.write(&plan9.Fcall{Type: plan9.Rattach, Tag: m.Tag, Qid: plan9.Qid{Type: plan9.QTDIR}})
}

func TestReplyBeforeRflushIsHonoured(t *testing.T) {
	reading := make(chan bool)
	c := dialFake(t, func(f *fake) {
		attachReply(f)
		m := f.read() // Twalk
		f.write(&plan9.Fcall{Type: plan9.Rwalk, Tag: m.Tag, Wqid: []plan9.Qid{{Path: 1}}})
		m = f.read() // Topen
		f.write(&plan9.Fcall{Type: plan9.Ropen, Tag: m.Tag, Qid: plan9.Qid{Path: 1}})
		rd := f.read() // Tread, answered only after the flush
		reading <- true
		fl := f.read()
		if fl.Type != plan9.Tflush || fl.Oldtag != rd.Tag {
			t.Errorf("got %v, want Tflush of tag %d", fl, rd.Tag)
		}
		f.write(&plan9.Fcall{Type: plan9.Rread, Tag: rd.Tag, Data: []byte("late")})
		f.write(&plan9.Fcall{Type: plan9.Rflush, Tag: fl.Tag})
		m = f.read() // Tclunk
		f.write(&plan9.Fcall{Type: plan9.Rclunk, Tag: m.Tag})
	})
	bg := context.Background()
	root, err := c.Attach(bg, "glenda", "")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := root.Walk(bg, "consume")
	if err != nil {
		t.Fatal(err)
	}
	if err := fid.Open(bg, plan9.OREAD); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	buf := make([]byte, 100)
	var n int
	go func() {
		var err error
		n, err = fid.Read(ctx, buf, 0)
		done <- err
	}()
	<-reading
	cancel()
	if err := wait(t, done, "flushed read"); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("read = %q, %v; want the reply that beat the Rflush", buf[:n], err)
	}
	if err := fid.Clunk(bg); err != nil {
		t.Fatalf("connection unusable after flush: %v", err)
	}
}

func TestBadReplies(t *testing.T) {
	hdr := func(size uint32, typ uint8, tag uint16) []byte {
		b := binary.LittleEndian.AppendUint32(nil, size)
		b = append(b, typ)
		return binary.LittleEndian.AppendUint16(b, tag)
	}
	for _, tt := range []struct {
		name  string
		reply func(f *fake, tag uint16)
	}{
		{"unknown tag", func(f *fake, tag uint16) {
			f.write(&plan9.Fcall{Type: plan9.Rattach, Tag: tag + 1})
		}},
		{"wrong type", func(f *fake, tag uint16) {
			f.write(&plan9.Fcall{Type: plan9.Rclunk, Tag: tag})
		}},
		{"too long", func(f *fake, tag uint16) {
			f.raw(hdr(1<<20, plan9.Rattach, tag))
		}},
		{"too short", func(f *fake, tag uint16) {
			f.raw(hdr(5, plan9.Rattach, tag))
		}},
		{"truncated qid", func(f *fake, tag uint16) {
			f.raw(append(hdr(7+5, plan9.Rattach, tag), 0, 0, 0, 0, 0))
		}},
		{"trailing bytes", func(f *fake, tag uint16) {
			f.raw(append(hdr(7+14, plan9.Rattach, tag), make([]byte, 14)...))
		}},
		{"hangup mid-message", func(f *fake, tag uint16) {
			f.raw(hdr(7+13, plan9.Rattach, tag))
			f.nc.Close()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialFake(t, func(f *fake) {
				m := f.read()
				tt.reply(f, m.Tag)
			})
			_, err := c.Attach(context.Background(), "glenda", "")
			if err == nil || !errors.Is(err, client.ErrHungup) {
				t.Fatalf("Attach = %v, want the connection to die", err)
			}
			<-c.Done()
			if tt.name != "hangup mid-message" && !strings.Contains(err.Error(), "protocol botch") {
				t.Errorf("error %q does not say what went wrong", err)
			}
		})
	}
}

func TestBadRread(t *testing.T) {
	c := dialFake(t, func(f *fake) {
		attachReply(f)
		m := f.read()
		f.write(&plan9.Fcall{Type: plan9.Ropen, Tag: m.Tag})
		m = f.read()
		f.write(&plan9.Fcall{Type: plan9.Rread, Tag: m.Tag, Data: make([]byte, m.Count+1)})
	})
	bg := context.Background()
	root, err := c.Attach(bg, "glenda", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Open(bg, plan9.OREAD); err != nil {
		t.Fatal(err)
	}
	_, err = root.Read(bg, make([]byte, 10), 0)
	if !errors.Is(err, client.ErrHungup) || !strings.Contains(err.Error(), "Rread count") {
		t.Fatalf("oversized Rread: %v", err)
	}
}

func TestBadVersion(t *testing.T) {
	for _, v := range []plan9.Fcall{
		{Type: plan9.Rversion, Msize: 8192, Version: "unknown"},
		{Type: plan9.Rversion, Msize: 1 << 30, Version: "9P2000"},
		{Type: plan9.Rerror, Ename: "go away"},
	} {
		cc, sc := net.Pipe()
		go func() {
			m, err := plan9.ReadFcall(sc)
			if err == nil {
				v.Tag = m.Tag
				plan9.WriteFcall(sc, &v)
			}
		}()
		c, err := client.NewConn(cc)
		if err == nil {
			c.Close()
			t.Errorf("NewConn accepted %v", &v)
		}
		if v.Type == plan9.Rerror && err.Error() != "go away" {
			t.Errorf("Rerror to Tversion: %v", err)
		}
		sc.Close()
	}
	_, err := client.Dial(context.Background(), "unix", "/nonexistent/sock")
	if !errs.Is(err, errs.Unavailable) {
		t.Errorf("Dial of missing socket: %v, want unavailable", err)
	}
}
