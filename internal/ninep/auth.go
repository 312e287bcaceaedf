package ninep

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// Authentication of a connection, for 9P over the network (docs/remote.md).
//
// The daemon serves TCP only inside TLS with its own self-signed
// certificate, which the client pins on first use; TLS keeps the token
// below secret and the conversation whole. Over that, a connection served
// by ServeAuthConn proves it knows the daemon's token with 9P2000's own
// auth exchange (attach(5)) before it may attach:
//
//	Tauth tag afid uname aname       -> Rauth tag aqid (type QTAUTH)
//	Twrite tag afid 0 TOKEN          -> Rwrite tag count
//	                                    | Rerror "permission denied: authentication failed: wrong token"
//	Tattach tag fid afid uname aname -> Rattach tag qid
//	                                    | Rerror "permission denied: authentication required ..."
//
// TOKEN is the token as its file holds it, the 64 hex digits of 32 random
// bytes without the newline, in one write at offset 0. It is compared in
// constant time. A wrong token spoils the afid: later writes on it fail
// too, and a client must start over with a new Tauth. The attach names the
// same uname and aname as the Tauth; the client may clunk the afid once
// attached. The afid is good for nothing else: reads return no data, and
// it cannot be walked, opened, created in or removed.
//
// A connection that has attached is the daemon's user, as one on the unix
// socket is: the token is the user's own secret. A connection served by
// ServeConn (the unix socket, mode 0600 in a 0700 directory) needs no
// authentication and answers Tauth with "authentication not required".

var (
	errAuthRequired = errs.E(errs.Permission, "authentication required: write the daemon token to an afid of Tauth before attaching (docs/remote.md)")
	errWrongToken   = errs.E(errs.Permission, "authentication failed: wrong token")
	errAuthOffset   = errs.E(errs.Invalid, "authentication: write the whole token at offset 0")
)

// ServeAuthConn is ServeConn for a connection that must present tok
// through Tauth before it may attach. in and out should be a TLS
// connection: the token would otherwise cross the network in clear.
func (s *Server) ServeAuthConn(in io.ReadCloser, out io.WriteCloser, tok *Token) {
	if tok == nil || len(tok.secret) == 0 {
		// Never serve a connection that asked for authentication without it.
		in.Close()
		out.Close()
		return
	}
	s.serveConn(in, out, nil, tok) // an authenticated connection is the daemon's user
}

// auth serves Tauth: on a connection that needs it, afid becomes an auth
// fid, open for the token's write.
func (c *conn) auth(r *request, b []byte) ([]byte, error) {
	if c.fids[r.afid] != nil {
		return b, errDuplicateFid
	}
	if c.token == nil {
		return b, errors.New(filepath.Base(os.Args[0]) + ": authentication not required")
	}
	if r.afid == plan9.NOFID {
		return b, errs.E(errs.Invalid, "authentication: afid is NOFID")
	}
	a := &authFile{tok: c.token}
	st, _ := a.Stat()
	f := newFid(r.uname, c.who, []tree.Node{a}, st.Qid)
	f.aname = r.aname
	f.omode, f.h = plan9.ORDWR, a // opened: a walk, open or create of it fails
	c.fids[r.afid] = f
	start := len(b)
	return finish(putQid(putHdr(b, plan9.Rauth, r.tag), st.Qid), start), nil
}

// authorize checks the afid of a Tattach. Without authentication, an afid
// is optional and must match the attach's names (as srv9p had it); with
// it, the afid must be an auth fid that received the right token.
func (c *conn) authorize(r *request) error {
	var af *fid
	if r.afid != plan9.NOFID {
		if af = c.fids[r.afid]; af == nil {
			return errUnknownFid
		}
		if af.uname != r.uname || af.aname != r.aname {
			return errAttachMismatch
		}
	}
	if c.token == nil {
		return nil
	}
	if af == nil {
		return errAuthRequired
	}
	af.mu.Lock()
	a, ok := af.h.(*authFile)
	af.mu.Unlock()
	if !ok || !a.proven() {
		return errAuthRequired
	}
	return nil
}

// authFile is the file an auth fid is open on: the token is written to it.
type authFile struct {
	tok *Token

	mu     sync.Mutex
	ok     bool // the right token was written
	failed bool // a wrong one was: the afid is spoiled
}

// authQidPath is the path of every auth file's qid: they are not files of
// the tree, and a client tells them apart by fid.
const authQidPath = 1<<63 | 0x61757468 // "auth"

func (a *authFile) Stat() (plan9.Dir, error) {
	return plan9.Dir{
		Qid:  plan9.Qid{Type: plan9.QTAUTH, Path: authQidPath},
		Mode: plan9.DMAUTH | 0600,
		Name: "auth",
	}, nil
}

func (a *authFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return 0, nil
}

func (a *authFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off != 0 {
		return 0, errAuthOffset
	}
	good := a.tok.Equal(p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed || !good {
		a.failed, a.ok = true, false
		return 0, errWrongToken
	}
	a.ok = true
	return len(p), nil
}

func (a *authFile) Close() error { return nil }

func (a *authFile) proven() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ok && !a.failed
}

// Token is the secret a connection presents through Tauth. Its String
// hides it, so that it cannot reach a log by accident.
type Token struct{ secret []byte }

// NewToken returns a token that accepts exactly b (the token file's text
// without its newline). It copies b.
func NewToken(b []byte) *Token { return &Token{secret: append([]byte(nil), b...)} }

// Equal reports in constant time whether p is the token. Only the
// token's length, which is public (64), can show in the timing.
func (t *Token) Equal(p []byte) bool {
	return len(t.secret) > 0 && subtle.ConstantTimeCompare(t.secret, p) == 1
}

func (t *Token) String() string { return "(token)" }
