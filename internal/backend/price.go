package backend

import "strings"

// Price is what a hosted model costs, in USD per million tokens.
type Price struct {
	Input      float64 // uncached input
	Output     float64
	CacheRead  float64
	CacheWrite float64 // Anthropic's 5-minute cache write; OpenAI charges plain input
}

// modelInfo is what ollie knows of a hosted model without asking.
type modelInfo struct {
	prefix    string // the family name; dated versions match it
	price     Price
	Window    int // context window
	MaxOutput int // largest max_tokens the model takes
}

// knownModels are the major hosted models, with the list prices their
// makers published (standard tier, as of late 2025). A backend that
// reports cost itself wins over this table; check the makers' pages
// before relying on it for billing.
var knownModels = []modelInfo{
	{"claude-opus-4-5", Price{5, 25, 0.50, 6.25}, 200000, 64000},
	{"claude-opus-4-1", Price{15, 75, 1.50, 18.75}, 200000, 32000},
	{"claude-opus-4", Price{15, 75, 1.50, 18.75}, 200000, 32000},
	{"claude-sonnet-4-5", Price{3, 15, 0.30, 3.75}, 200000, 64000},
	{"claude-sonnet-4", Price{3, 15, 0.30, 3.75}, 200000, 64000},
	{"claude-haiku-4-5", Price{1, 5, 0.10, 1.25}, 200000, 64000},
	{"claude-3-7-sonnet", Price{3, 15, 0.30, 3.75}, 200000, 64000},
	{"claude-3-5-sonnet", Price{3, 15, 0.30, 3.75}, 200000, 8192},
	{"claude-3-5-haiku", Price{0.80, 4, 0.08, 1}, 200000, 8192},
	{"claude-3-opus", Price{15, 75, 1.50, 18.75}, 200000, 4096},
	{"claude-3-haiku", Price{0.25, 1.25, 0.03, 0.30}, 200000, 4096},

	{"gpt-5", Price{1.25, 10, 0.125, 1.25}, 400000, 128000},
	{"gpt-5-mini", Price{0.25, 2, 0.025, 0.25}, 400000, 128000},
	{"gpt-5-nano", Price{0.05, 0.40, 0.005, 0.05}, 400000, 128000},
	{"gpt-4.1", Price{2, 8, 0.50, 2}, 1047576, 32768},
	{"gpt-4.1-mini", Price{0.40, 1.60, 0.10, 0.40}, 1047576, 32768},
	{"gpt-4.1-nano", Price{0.10, 0.40, 0.025, 0.10}, 1047576, 32768},
	{"gpt-4o", Price{2.50, 10, 1.25, 2.50}, 128000, 16384},
	{"gpt-4o-mini", Price{0.15, 0.60, 0.075, 0.15}, 128000, 16384},
	{"o1", Price{15, 60, 7.50, 15}, 200000, 100000},
	{"o3", Price{2, 8, 0.50, 2}, 200000, 100000},
	{"o3-pro", Price{20, 80, 20, 20}, 200000, 100000},
	{"o3-mini", Price{1.10, 4.40, 0.55, 1.10}, 200000, 100000},
	{"o4-mini", Price{1.10, 4.40, 0.275, 1.10}, 200000, 100000},

	// Through OpenAI-compatible endpoints (Google's, OpenRouter); prices
	// for prompts up to 200k tokens.
	{"gemini-2.5-pro", Price{1.25, 10, 0.31, 1.25}, 1048576, 65536},
	{"gemini-2.5-flash", Price{0.30, 2.50, 0.075, 0.30}, 1048576, 65536},
}

// lookupModel finds model in knownModels: the longest family name that
// is the whole name or its prefix before a '-', ':' or '@' (so
// "claude-sonnet-4-5-20250929" is claude-sonnet-4-5 and "gpt-4o-mini" is
// not gpt-4o). OpenRouter's "vendor/" prefix and its dotted Claude
// versions ("claude-3.5-sonnet") are understood.
func lookupModel(model string) (modelInfo, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if strings.HasPrefix(m, "claude-") {
		m = strings.ReplaceAll(m, ".", "-")
	}
	best := -1
	for i, k := range knownModels {
		p := k.prefix
		if !strings.HasPrefix(m, p) || len(m) > len(p) && !strings.ContainsRune("-:@", rune(m[len(p)])) {
			continue
		}
		if best < 0 || len(p) > len(knownModels[best].prefix) {
			best = i
		}
	}
	if best < 0 {
		return modelInfo{}, false
	}
	return knownModels[best], true
}

// PriceOf returns the list price of a hosted model, if ollie knows it.
func PriceOf(model string) (Price, bool) {
	info, ok := lookupModel(model)
	return info.price, ok
}

// Cost returns the USD cost of usage u of model, from the price table.
// It reports false for a model not in the table (a local model, or one
// too new): the caller shows no cost rather than a wrong one.
func Cost(model string, u Usage) (float64, bool) {
	p, ok := PriceOf(model)
	if !ok {
		return 0, false
	}
	usd := float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite
	return usd / 1e6, true
}
