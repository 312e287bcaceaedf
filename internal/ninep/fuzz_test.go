package ninep

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"9fans.net/go/plan9"
)

// Fuzz targets for the bytes a client sends: the decoder of one message,
// and the serve loop over a whole conversation. The seed corpus is below
// and in testdata/fuzz/; /test.sh runs each for a bounded time.

// seedMsgs are well-formed requests of every type, and the frames that
// once broke the server.
func seedMsgs(tb testing.TB) [][]byte {
	calls := []*plan9.Fcall{
		{Type: plan9.Tversion, Tag: plan9.NOTAG, Msize: 8192, Version: "9P2000"},
		{Type: plan9.Tauth, Tag: 1, Afid: 9, Uname: "glenda", Aname: ""},
		{Type: plan9.Tattach, Tag: 1, Fid: 0, Afid: plan9.NOFID, Uname: "glenda"},
		{Type: plan9.Twalk, Tag: 2, Fid: 0, Newfid: 1, Wname: []string{"d", "f"}},
		{Type: plan9.Topen, Tag: 3, Fid: 1, Mode: plan9.ORDWR},
		{Type: plan9.Tcreate, Tag: 4, Fid: 1, Name: "new", Perm: 0644, Mode: plan9.OWRITE},
		{Type: plan9.Tread, Tag: 5, Fid: 1, Offset: 0, Count: 100},
		{Type: plan9.Twrite, Tag: 6, Fid: 1, Offset: 2, Data: []byte("hello")},
		{Type: plan9.Tclunk, Tag: 7, Fid: 1},
		{Type: plan9.Tremove, Tag: 8, Fid: 1},
		{Type: plan9.Tstat, Tag: 9, Fid: 1},
		{Type: plan9.Twstat, Tag: 10, Fid: 1, Stat: nullStat(tb)},
		{Type: plan9.Tflush, Tag: 11, Oldtag: 5},
	}
	var out [][]byte
	for _, f := range calls {
		b, err := f.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out, hostileWrite(12), []byte{7, 0, 0, 0, 200, 1, 0})
}

func nullStat(tb testing.TB) []byte {
	var d plan9.Dir
	d.Null()
	b, err := d.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzParse: any bytes with a size that matches decode without a panic
// and without allocating beyond them; what decodes re-encodes to the same
// bytes (so no field was misread); what fails keeps the tag to answer.
func FuzzParse(f *testing.F) {
	for _, m := range seedMsgs(f) {
		f.Add(m[4:])
	}
	var r request
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < hdrSize-4 {
			return // next never passes on a message shorter than its header
		}
		msg := binary.LittleEndian.AppendUint32(nil, uint32(4+len(body)))
		msg = append(msg, body...)
		err := parse(msg, &r)
		if r.typ != msg[4] || r.tag != binary.LittleEndian.Uint16(msg[5:]) {
			t.Fatalf("type %d tag %d decoded as %d %d", msg[4], binary.LittleEndian.Uint16(msg[5:]), r.typ, r.tag)
		}
		if err != nil {
			return
		}
		if len(r.data) > len(msg) {
			t.Fatalf("data of %d bytes from a message of %d", len(r.data), len(msg))
		}
		again, err := asFcall(&r).Bytes()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", r, err)
		}
		if !bytes.Equal(again, msg) {
			t.Fatalf("decoded\n %x\nre-encodes as\n %x", msg, again)
		}
	})
}

// asFcall is r as the 9fans encoder sees it.
func asFcall(r *request) *plan9.Fcall {
	f := &plan9.Fcall{Type: r.typ, Tag: r.tag, Fid: r.fid, Newfid: r.newfid, Afid: r.afid,
		Msize: r.msize, Oldtag: r.oldtag, Mode: r.mode, Perm: r.perm, Offset: r.offset,
		Count: r.count, Uname: r.uname, Aname: r.aname, Name: r.name, Wname: r.wname}
	switch r.typ {
	case plan9.Tversion:
		f.Version, f.Name = r.name, ""
	case plan9.Twrite:
		f.Data = r.data
	case plan9.Twstat:
		f.Stat = r.data
	}
	return f
}

// FuzzServe: a conversation of any bytes, after a version and an attach,
// is served to its end over a pipe without a panic, and the server hangs
// up cleanly when the client does.
func FuzzServe(f *testing.F) {
	seeds := seedMsgs(f)
	for _, m := range seeds {
		f.Add(m)
	}
	f.Add(bytes.Join(seeds[2:], nil))                         // one of each in a row
	f.Add(append(append([]byte{}, seeds[3]...), seeds[6]...)) // walk, read unopened
	srv := New(testTree(f))
	prologue := append(seeds[0][:0:0], seeds[0]...)
	prologue = append(prologue, seeds[2]...)
	f.Fuzz(func(t *testing.T, data []byte) {
		cli, end := net.Pipe()
		done := make(chan struct{})
		go func() { srv.ServeConn(end, end); end.Close(); close(done) }()
		go io.Copy(io.Discard, cli)
		cli.Write(prologue)
		cli.Write(data)
		cli.Close()
		<-done
	})
}
