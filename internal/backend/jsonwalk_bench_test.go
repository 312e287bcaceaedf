package backend

import (
	"strings"
	"testing"
)

// BenchmarkJSONWalk is the walk alone over the events of a fast text
// stream, each with a piece of text of 64 bytes (as BenchmarkChatBurst's
// are): the decoders' events add the assembler's work, and their text
// is a word.
func BenchmarkJSONWalk(b *testing.B) {
	text := strings.Repeat("x", 63) + " "
	openaiData := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_4d82cf7e51","choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":null,"finish_reason":null}]}`)
	anthropicData := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + text + `"}}`)
	b.Run("openai", func(b *testing.B) {
		b.SetBytes(int64(len(openaiData)))
		b.ReportAllocs()
		var c openaiChunk
		for b.Loop() {
			if isNot := parseOpenAIChunk(openaiData, &c); isNot != "" {
				b.Fatal(isNot)
			}
		}
	})
	b.Run("anthropic", func(b *testing.B) {
		b.SetBytes(int64(len(anthropicData)))
		b.ReportAllocs()
		var ev anthropicEvent
		for b.Loop() {
			if !parseAnthropicEvent(anthropicData, &ev) {
				b.Fatal("not JSON")
			}
		}
	})
}
