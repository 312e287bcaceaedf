package config

import (
	"slices"
	"testing"
)

func TestStagePorts(t *testing.T) {
	c := &Config{Listen: "tcp!127.0.0.1!5640", Sandbox: Sandbox{DenyConnect: []uint16{7000}, DenyBind: []uint16{9000}},
		Backends: []Backend{
			{Name: "ollama", BaseURL: "http://127.0.0.1:11434"},
			{Name: "local", BaseURL: "http://localhost/v1"},
			{Name: "v6", BaseURL: "https://[::1]/v1"},
			{Name: "remote", BaseURL: "https://api.openai.com/v1"},
			{Name: "again", BaseURL: "http://127.0.0.1:11434/x"},
		}}
	connect, bind := c.StagePorts()
	if want := []uint16{5640, 7000}; !slices.Equal(connect, want) {
		t.Errorf("connect %v, want %v", connect, want)
	}
	if want := []uint16{80, 443, 9000, 11434}; !slices.Equal(bind, want) {
		t.Errorf("bind %v, want %v", bind, want)
	}
}
