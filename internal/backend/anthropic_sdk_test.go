package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// unlikeTheSDK are the tool calls of the recorded streams whose input
// ollie takes otherwise than the SDK's accumulation, on purpose.
var unlikeTheSDK = map[string]string{
	"anthropic_max_tokens.sse/0": "cut by max_tokens mid-input: ollie keeps what came, as a JSON string the model is shown; the SDK gives {}",
	"anthropic_ptc.sse/1":        "keys in both content_block_start and the deltas: ollie merges them; the SDK gives {}",
}

// TestAnthropicStreamAsTheSDK: every recorded Anthropic stream gives the
// reply the SDK's own accumulation of the message gives: the text of its
// text blocks, its tool calls (id, name, the same input, but for
// unlikeTheSDK), its signed thinking and its stop reason.
func TestAnthropicStreamAsTheSDK(t *testing.T) {
	compared, streams := 0, 0
	files, _ := filepath.Glob(filepath.Join("testdata", "anthropic_*.sse"))
	if len(files) < 5 {
		t.Fatalf("only %d recorded Anthropic streams", len(files))
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
		d := anthropicDecoder{a: newAssembler(context.Background(), "a", req, "m", nil)}
		var acc anthropic.Message
		accErr, decErr := error(nil), error(nil)
		r := newSSEReader(bytes.NewReader(b))
		for {
			data, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var ev anthropic.MessageStreamEventUnion
			if ev.UnmarshalJSON(data) != nil || ev.Type == "error" || ev.Type == "ping" {
				continue
			}
			if accErr == nil {
				accErr = acc.Accumulate(ev)
			}
			if decErr == nil {
				decErr = d.event(data, r.event)
			}
		}
		if accErr != nil || decErr != nil || !d.stopped {
			continue // a stream that ends in an error: the replay tests check those
		}
		streams++
		got, err := d.a.finish(d.stop)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		var calls []ToolCall
		var thinking []Thinking
		for _, cb := range acc.Content {
			switch cb.Type {
			case "text":
				text.WriteString(cb.Text)
			case "tool_use":
				calls = append(calls, ToolCall{ID: cb.ID, Name: cb.Name, Args: json.RawMessage(cb.Input)})
			case "thinking":
				thinking = append(thinking, Thinking{Text: cb.Thinking, Signature: cb.Signature})
			case "redacted_thinking":
				thinking = append(thinking, Thinking{Redacted: cb.Data})
			}
		}
		base := filepath.Base(name)
		if want := anthropicStop(string(acc.StopReason)); got.Stop != want && !(want == StopEnd && got.Stop == StopToolUse) {
			t.Errorf("%s: stop %v, the SDK's %q", base, got.Stop, acc.StopReason)
		}
		if !got.Message.Refused && got.Message.Text != text.String() {
			t.Errorf("%s: text %q, the SDK's %q", base, got.Message.Text, text.String())
		}
		if len(got.Message.Calls) != len(calls) {
			t.Errorf("%s: %d calls, the SDK's %d", base, len(got.Message.Calls), len(calls))
			continue
		}
		for i, c := range got.Message.Calls {
			var a, b any
			json.Unmarshal(c.Args, &a)
			json.Unmarshal(calls[i].Args, &b)
			if _, ok := unlikeTheSDK[base+"/"+strconv.Itoa(i)]; ok {
				b = a
			}
			compared++
			if c.ID != calls[i].ID || c.Name != calls[i].Name || !reflect.DeepEqual(a, b) {
				t.Errorf("%s: call %d %s %s %s, the SDK's %s %s %s", base, i, c.ID, c.Name, c.Args, calls[i].ID, calls[i].Name, calls[i].Args)
			}
		}
		signed := got.Message.Thinking
		if len(signed) == 1 && signed[0].Signature == "" && signed[0].Redacted == "" {
			signed = nil // unsigned thinking is kept for other providers, never sent back
		}
		if len(signed) != len(thinking) {
			t.Errorf("%s: thinking %+v, the SDK's %+v", base, signed, thinking)
			continue
		}
		for i := range signed {
			if signed[i] != thinking[i] {
				t.Errorf("%s: thinking %d %+v, the SDK's %+v", base, i, signed[i], thinking[i])
			}
		}
	}
	if streams < 7 || compared < 5 {
		t.Errorf("only %d streams and %d tool calls compared", streams, compared)
	}
}
