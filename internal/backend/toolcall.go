package backend

import (
	"bytes"
	"encoding/json"
)

// toolCallJSON is how a ToolCall is stored. encoding/json compacts a
// RawMessage, so arguments the model wrote with spaces are also kept as
// the text it wrote, and that text is what is sent back: the history
// shows, and every request repeats, the arguments byte for byte.
type toolCallJSON struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	ArgsText string          `json:"args_text,omitempty"` // only when it differs from the compact Args
}

func (c ToolCall) MarshalJSON() ([]byte, error) {
	j := toolCallJSON{ID: c.ID, Name: c.Name, Args: c.Args}
	var compact bytes.Buffer
	if len(c.Args) > 0 && json.Compact(&compact, c.Args) == nil && !bytes.Equal(compact.Bytes(), c.Args) {
		j.ArgsText = string(c.Args)
	}
	return json.Marshal(j)
}

func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var j toolCallJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	c.ID, c.Name, c.Args = j.ID, j.Name, j.Args
	if j.ArgsText != "" && json.Valid([]byte(j.ArgsText)) {
		c.Args = json.RawMessage(j.ArgsText)
	}
	return nil
}
