package backend

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/tidwall/gjson"
)

// A jsonWalk reads one JSON text in a single pass: it checks the text as
// gjson.Valid does (RFC 8259's grammar; the bytes of a string are not
// checked for UTF-8) while it hands the decoder the values it asks for.
// A stream is mostly small events, one piece of text each; checking an
// event with gjson and then walking it (a walk of an object parses each
// nested value again) went over each byte four or five times, and was
// most of the time a fast stream took (BenchmarkChatBurst).
//
// The readers of a value (skip, str, strBytes, int, result, object,
// array) read exactly one value, whatever it is: one that is not of the
// type asked for is read past and reported as absent. Once the text is found not to be
// JSON (bad), every reader returns at once, and the caller drops
// whatever it had filled in.
type jsonWalk struct {
	b     []byte
	i     int
	bad   bool
	depth int // of the objects and arrays being read
}

// maxDepth bounds the nesting of objects and arrays, as encoding/json
// bounds it: the walk recurses, and an event of 32 MiB of "[" (a server
// may send one) would otherwise overflow the goroutine's stack, which
// kills the daemon. Deeper is not JSON here (gjson.Valid has no bound).
const maxDepth = 10000

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// peek skips white space and returns the byte there: 0 at the end of
// the text, or once it is bad. Servers send compact JSON, so the byte
// at w.i is mostly neither space nor control character, and returned
// at once, with no test of w.bad: once bad, w.i is len(w.b) (fail puts
// it there, and every reader peeks before it moves w.i on), so a byte
// at w.i means the text is not bad yet. peek stays small enough to be
// inlined where it is called.
func (w *jsonWalk) peek() byte {
	if w.i < len(w.b) && w.b[w.i] > ' ' {
		return w.b[w.i]
	}
	return w.peekSpace()
}

// peekSpace is peek where there may be white space to skip.
func (w *jsonWalk) peekSpace() byte {
	for w.i < len(w.b) && isSpace(w.b[w.i]) {
		w.i++
	}
	if w.bad || w.i >= len(w.b) {
		return 0
	}
	return w.b[w.i]
}

func (w *jsonWalk) fail() {
	w.bad = true
	w.i = len(w.b)
}

// end reports whether the text was one valid JSON value, now all read.
func (w *jsonWalk) end() bool {
	w.peek()
	return !w.bad && w.i == len(w.b)
}

// skip reads the next value and returns its bytes (nil if bad).
func (w *jsonWalk) skip() []byte {
	c := w.peek()
	start := w.i
	switch {
	case c == '{':
		w.object(nil)
	case c == '[':
		w.array(nil)
	case c == '"':
		w.stringToken()
	case c == '-' || isDigit(c):
		w.number()
	case c == 't':
		w.literal("true")
	case c == 'f':
		w.literal("false")
	case c == 'n':
		w.literal("null")
	default:
		w.fail()
	}
	if w.bad {
		return nil
	}
	return w.b[start:w.i]
}

// object reads the value at w.i. If it is an object, f (unless nil) is
// called with each key, unescaped, and w at the key's value, which f may
// read with one reader; a value f leaves is skipped.
func (w *jsonWalk) object(f func(key []byte)) {
	if w.peek() != '{' {
		w.skip()
		return
	}
	if !w.enter() {
		return
	}
	defer w.leave()
	w.i++
	if w.peek() == '}' {
		w.i++
		return
	}
	for {
		if w.peek() != '"' {
			w.fail()
			return
		}
		key, esc := w.stringToken()
		if w.peek() != ':' {
			w.fail()
			return
		}
		w.i++
		if w.peek() == 0 {
			w.fail()
			return
		}
		from := w.i
		if f != nil {
			f(unquote(key, esc))
		}
		if w.i == from {
			w.skip()
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
			w.i++
			return
		default:
			w.fail()
			return
		}
	}
}

// array reads the value at w.i. If it is an array, f (unless nil) is
// called with w at each element, which f may read with one reader; an
// element f leaves is skipped. (Its loop is object's, written out again:
// one loop for both, with a function per member, cost an event 10–15%
// more in BenchmarkOpenAIEvent.)
func (w *jsonWalk) array(f func()) {
	if w.peek() != '[' {
		w.skip()
		return
	}
	if !w.enter() {
		return
	}
	defer w.leave()
	w.i++
	if w.peek() == ']' {
		w.i++
		return
	}
	for {
		if w.peek() == 0 {
			w.fail()
			return
		}
		from := w.i
		if f != nil {
			f()
		}
		if w.i == from {
			w.skip()
		}
		switch w.peek() {
		case ',':
			w.i++
		case ']':
			w.i++
			return
		default:
			w.fail()
			return
		}
	}
}

// enter goes one object or array deeper; false (and bad) past maxDepth.
func (w *jsonWalk) enter() bool {
	if w.depth++; w.depth > maxDepth {
		w.fail()
		return false
	}
	return true
}

func (w *jsonWalk) leave() { w.depth-- }

// str reads a value: a string's contents, "" for any other value.
func (w *jsonWalk) str() string { return string(w.strBytes()) }

// strBytes is str without a copy: unless the string has escapes, its
// bytes are those of the text, valid as long as the text is.
func (w *jsonWalk) strBytes() []byte {
	if w.peek() != '"' {
		w.skip()
		return nil
	}
	tok, esc := w.stringToken()
	if w.bad {
		return nil
	}
	return unquote(tok, esc)
}

// int reads a value as gjson's Result.Int has it.
func (w *jsonWalk) int() int64 {
	raw := w.skip()
	if w.bad {
		return 0
	}
	if n, ok := smallInt(raw); ok {
		return n
	}
	return gjson.ParseBytes(raw).Int()
}

// smallInt is the value of an integer of at most 18 digits, which fits
// an int64 and which gjson reads exactly.
func smallInt(raw []byte) (int64, bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range raw {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// result reads a value as gjson has it.
func (w *jsonWalk) result() gjson.Result {
	raw := w.skip()
	if w.bad {
		return gjson.Result{}
	}
	return gjson.ParseBytes(raw)
}

// unquote is the contents of a string token, which has escapes if esc.
// One with escapes is unescaped by gjson, so that a string reads here as
// it did through gjson (a lone surrogate, an escaped NUL).
func unquote(tok []byte, esc bool) []byte {
	if len(tok) < 2 {
		return nil
	}
	if !esc {
		return tok[1 : len(tok)-1]
	}
	return []byte(gjson.ParseBytes(tok).Str)
}

// plainByte tells the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := ' '; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringToken reads a string, w at its opening quote, and returns it
// with its quotes, and whether it has escapes.
func (w *jsonWalk) stringToken() (tok []byte, esc bool) {
	start := w.i
	b := w.b
	for i := plainRun(b, start+1); i < len(b); i = plainRun(b, i) {
		switch c := b[i]; {
		case c == '"':
			w.i = i + 1
			return b[start:w.i], esc
		case c == '\\':
			esc = true
			if i = escape(b, i); i < 0 {
				w.fail()
				return nil, false
			}
		case c < ' ':
			w.fail()
			return nil, false
		default:
			i++
		}
	}
	w.fail()
	return nil, false
}

// escape checks the escape at b[i], a backslash, and returns the index
// past it, or -1 if it is not one JSON has.
func escape(b []byte, i int) int {
	if i++; i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 1
	case 'u':
		if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
			return -1
		}
		return i + 5
	}
	return -1
}

// The bytes 0x01…01 and 0x80…80 of a word, for the tests of eight bytes
// at once in plainRun.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun is the index of the first byte from b[i] on that is not
// plain (a quote, a backslash or a control character), or len(b).
//
// It reads eight bytes at a time as a word x, and marks each byte that
// is less than 0x20 with x-0x20…20, and each that is a quote or a
// backslash with (x^0x22…22)-0x01…01 and (x^0x5c…5c)-0x01…01 (the xor
// makes those bytes 0): a byte below what is taken from it wraps round
// and its high bit comes on. "&^ x" then drops the bytes whose high bit
// was on already, the bytes 0x80 and up of UTF-8 text, which are plain:
// none of the three marks can be one of those, since each is below 0x80.
// A byte that wraps borrows from the byte above it, which may then be
// marked too though plain; but the lowest byte marked was borrowed from
// by none (every byte below it is plain, so at or above what is taken
// from it), so it is a byte that is not plain, the one plainRun wants:
// no byte that is not plain goes unseen, and the first mark is one.
// stringToken still checks the byte it is given.
func plainRun(b []byte, i int) int {
	for s := b[i:]; len(s) >= 8; s = s[8:] {
		x := binary.LittleEndian.Uint64(s)
		control := x - 0x20*ones
		quote := (x ^ '"'*ones) - ones
		backslash := (x ^ '\\'*ones) - ones
		if marks := (control | quote | backslash) &^ x & highs; marks != 0 {
			return i + bits.TrailingZeros64(marks)/8
		}
		i += 8
	}
	for i < len(b) && plainByte[b[i]] {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (w *jsonWalk) number() {
	b, i := w.b, w.i
	if b[i] == '-' {
		i++
	}
	digits := func(atLeastOne bool) bool {
		if i >= len(b) || !isDigit(b[i]) {
			return !atLeastOne
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		return true
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits(true):
		w.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits(true) {
			w.fail()
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits(true) {
			w.fail()
			return
		}
	}
	w.i = i
}

func (w *jsonWalk) literal(word string) {
	if !bytes.HasPrefix(w.b[w.i:], []byte(word)) {
		w.fail()
		return
	}
	w.i += len(word)
}
