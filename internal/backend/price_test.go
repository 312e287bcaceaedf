package backend_test

import (
	"math"
	"testing"

	"ollie.dev/ollie/internal/backend"
)

func TestCost(t *testing.T) {
	cases := []struct {
		model string
		u     backend.Usage
		usd   float64 // -1: no price known
	}{
		// 1M uncached input, 100k output, 2M cache reads, 400k cache writes.
		{"claude-sonnet-4-5-20250929", backend.Usage{Input: 1e6, Output: 1e5, CacheRead: 2e6, CacheWrite: 4e5}, 3 + 1.5 + 0.6 + 1.5},
		{"anthropic/claude-3.5-haiku", backend.Usage{Input: 1e6, Output: 1e6}, 0.80 + 4}, // OpenRouter's spelling
		{"claude-opus-4-5", backend.Usage{Output: 1e6}, 25},
		{"claude-opus-4-20250514", backend.Usage{Output: 1e6}, 75},
		{"gpt-4o-mini-2024-07-18", backend.Usage{Input: 1e6, CacheRead: 1e6}, 0.15 + 0.075},
		{"gpt-4o-2024-08-06", backend.Usage{Input: 1e6}, 2.50},
		{"o3-mini", backend.Usage{Output: 1e6}, 4.40},
		{"o3", backend.Usage{Output: 1e6}, 8},
		{"gpt-4.1-nano", backend.Usage{Input: 1e6}, 0.10},
		{"llama3.2:3b", backend.Usage{Input: 1e6}, -1},
		{"gpt-4o4", backend.Usage{Input: 1e6}, -1}, // a prefix, not a family
		{"o3x", backend.Usage{Input: 1e6}, -1},
	}
	for _, c := range cases {
		usd, ok := backend.Cost(c.model, c.u)
		if c.usd < 0 {
			if ok {
				t.Errorf("Cost(%s) = %v, want no price", c.model, usd)
			}
			continue
		}
		if !ok || math.Abs(usd-c.usd) > 1e-9 {
			t.Errorf("Cost(%s, %+v) = %v %v, want %v", c.model, c.u, usd, ok, c.usd)
		}
	}
}
