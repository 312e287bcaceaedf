package backend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// maxEvent bounds one server-sent event's data, as the SDKs bound it.
const maxEvent = 32 << 20

// sseReader reads the data of server-sent events. It keeps one buffer
// for the data of the event being read, so an event costs no allocation.
type sseReader struct {
	r     *bufio.Reader
	data  []byte // the current event's data, valid until the next call
	event []byte // the current event's name, if it has one
	line  []byte // a line longer than the reader's buffer, in pieces
	max   int    // bound of a line
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10), max: maxEvent}
}

// next returns the data of the next event with data in it: its data
// lines joined by newlines, without the last. Comments and fields other
// than data are skipped. At the end of the stream it returns io.EOF; an
// event the stream ends inside of, before its blank line, is dropped, as
// the SDKs drop it: it may be cut.
func (s *sseReader) next() ([]byte, error) {
	s.data, s.event = s.data[:0], s.event[:0]
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if have {
				return s.data, nil
			}
			s.event = s.event[:0] // an event without data is none
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(name) == "event" {
			s.event = append(s.event[:0], value...)
			continue
		}
		if string(name) != "data" {
			continue // a comment, id or retry
		}
		if have {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > maxEvent {
			return nil, errors.New("server-sent event longer than 32 MiB")
		}
		s.data = append(s.data, value...)
		have = true
	}
}

// readLine returns the next line without its end (\n or \r\n). The
// line is valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.line = append(s.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.line) > s.max {
				return nil, errors.New("stream line longer than " + strconv.Itoa(s.max>>20) + " MiB")
			}
			line, err = s.r.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// more reports whether the next event is already read whole, so that
// taking it costs no wait for the network.
func (s *sseReader) more() bool {
	b, _ := s.r.Peek(s.r.Buffered())
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\r\n\r\n"))
}

// moreLine reports whether the next line is already read whole.
func (s *sseReader) moreLine() bool {
	b, _ := s.r.Peek(s.r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// A streamDecoder reads the server-sent events of one streamed reply
// (base.stream): the OpenAI and the Anthropic decoders.
type streamDecoder interface {
	// next takes the data of one event, its name (empty if it has
	// none), and whether more events are already read behind it; done
	// says it was the stream's last.
	next(data, name []byte, more bool) (done bool, err error)
	// end returns the reply once the stream has ended.
	end() (*Reply, error)
	// partial is what arrived of the reply so far.
	partial() *Reply
}

// stream posts body, as JSON, to url and reads the answer's events into
// d, to the end of the stream or the event d says is its last.
func (b *base) stream(ctx context.Context, url string, body any, hdr map[string]string, d streamDecoder) (*Reply, error) {
	resp, err := b.call(ctx, http.MethodPost, url, body, hdr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sse := newSSEReader(resp.Body)
	for {
		data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return d.partial(), transportError(b.cfg.Name, ctx, err)
		}
		done, err := d.next(data, sse.event, sse.more())
		if err != nil {
			return d.partial(), err
		}
		if done {
			break
		}
	}
	return d.end()
}

var (
	_ streamDecoder = (*openaiDecoder)(nil)
	_ streamDecoder = (*anthropicDecoder)(nil)
)
