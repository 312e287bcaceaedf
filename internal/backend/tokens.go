package backend

import "unicode/utf8"

// EstimateTokens estimates the number of tokens s takes in the
// tokenizers of current models, for usage a server did not report and
// for ctxsz. It counts as BPE tokenizers split: a word of up to eight
// letters is one token and longer ones are more, digits and runs of
// punctuation go in threes, a space joins the word after it, and a CJK
// character is a token. On English prose and code it comes within about
// 15% of the real count, where characters/4 is off by more for code,
// JSON and non-Latin text.
func EstimateTokens(s string) int {
	n, letters, digits, punct, ws := 0, 0, 0, 0, 0
	plain := true // the whitespace run is spaces only
	flush := func() {
		n += (letters+7)/8 + (digits+2)/3 + (punct+2)/3
		letters, digits, punct = 0, 0, 0
		// One space rides with the next word; other runs of whitespace
		// (newlines, indentation) are about a token per eight characters.
		if ws > 1 || ws == 1 && !plain {
			n += 1 + (ws-1)/8
		}
		ws, plain = 0, true
	}
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if ws == 0 {
				flush()
			}
			ws++
			plain = plain && r == ' '
			continue
		case ws > 0:
			flush()
		}
		if punct > 0 && (r >= utf8.RuneSelf || isWordChar(r)) {
			flush()
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_':
			letters++
		case r >= '0' && r <= '9':
			digits++
		case r >= 0x2E80 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7AF || r >= 0xF900 && r <= 0xFAFF:
			flush() // CJK ideographs, kana, hangul
			n++
		case r >= utf8.RuneSelf:
			letters += 2 // other scripts and accents: fewer characters per token
		default:
			if letters+digits > 0 {
				flush()
			}
			punct++
		}
	}
	flush()
	return n
}

func isWordChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r >= '0' && r <= '9'
}

// EstimateRequest estimates the input tokens of req: its text, tool
// calls, tool definitions and a few tokens of framing per message.
func EstimateRequest(req *Request) int {
	n := 3 + EstimateTokens(req.System)
	for i := range req.Messages {
		n += 4 + estimateMessage(&req.Messages[i])
	}
	for _, t := range req.Tools {
		n += 8 + EstimateTokens(t.Name) + EstimateTokens(t.Description) + EstimateTokens(string(t.Schema))
	}
	return n
}

func estimateMessage(m *Message) int {
	n := EstimateTokens(m.Text)
	for _, c := range m.Calls {
		n += 4 + EstimateTokens(c.Name) + EstimateTokens(string(c.Args))
	}
	return n
}
