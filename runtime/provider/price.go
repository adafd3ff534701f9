package provider

import (
	"cmp"
	"maps"
	"strings"

	"github.com/lllm-go/lllm/dialog"
)

// Price is what a model's tokens cost, in US dollars per million tokens.
type Price struct {
	// Input is the price of prompt tokens not served from a cache.
	Input float64 `json:"input" yaml:"input"`
	// CachedInput is the price of prompt tokens served from the provider's
	// prompt cache. Zero means no discount: cached tokens cost Input.
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input,omitempty"`
	// CacheWrite is the price of prompt tokens written to the provider's
	// prompt cache, which Anthropic charges above Input. Zero means Input.
	CacheWrite float64 `json:"cache_write,omitempty" yaml:"cache_write,omitempty"`
	// Output is the price of generated tokens, reasoning tokens included.
	Output float64 `json:"output" yaml:"output"`
}

// defaultPrices are list prices for the standard (not batch, not
// priority) tier, as of November 2025, in USD per million tokens. Check
// the providers' pages before trusting a bill to them; override entries
// with Config.Prices.
//
// Caveats: Anthropic's cache writes are priced for the default 5-minute
// cache (1.25x input; the 1-hour cache costs 2x); Gemini 2.5 Pro's prices
// are those for prompts up to 200k tokens.
var defaultPrices = map[string]Price{
	// OpenAI
	"gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"gpt-4.1":      {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"gpt-5.1":      {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"o1":           {Input: 15.00, CachedInput: 7.50, Output: 60.00},
	"o1-mini":      {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	"o3":           {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"o3-mini":      {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	"o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},

	// Anthropic (cached input = cache reads)
	"claude-opus-4":     {Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00},
	"claude-opus-4-0":   {Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00},
	"claude-opus-4-1":   {Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00},
	"claude-opus-4-5":   {Input: 5.00, CachedInput: 0.50, CacheWrite: 6.25, Output: 25.00},
	"claude-sonnet-4":   {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-sonnet-4-0": {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-sonnet-4-5": {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-haiku-4-5":  {Input: 1.00, CachedInput: 0.10, CacheWrite: 1.25, Output: 5.00},
	"claude-3-7-sonnet": {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-3-5-haiku":  {Input: 0.80, CachedInput: 0.08, CacheWrite: 1.00, Output: 4.00},

	// Google
	"gemini-2.0-flash":      {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gemini-2.0-flash-lite": {Input: 0.075, Output: 0.30},
	"gemini-2.5-flash":      {Input: 0.30, CachedInput: 0.03, Output: 2.50},
	"gemini-2.5-flash-lite": {Input: 0.10, CachedInput: 0.01, Output: 0.40},
	"gemini-2.5-pro":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},

	// Mistral
	"mistral-large-latest":  {Input: 2.00, Output: 6.00},
	"mistral-medium-latest": {Input: 0.40, Output: 2.00},
	"mistral-small-latest":  {Input: 0.10, Output: 0.30},
}

// DefaultPrices returns a copy of the built-in price table, keyed by the
// provider's model name without the "provider/" prefix. The prices are
// list prices as of November 2025.
func DefaultPrices() map[string]Price { return maps.Clone(defaultPrices) }

// Cost is what usage u of model cost in US dollars: cached input tokens at
// the cached price, tokens written to the cache at the cache-write price,
// the rest of the input at the input price, and output
// (reasoning included) at the output price. model may carry a "provider/"
// prefix. Its price is looked up in prices, then in the built-in table;
// in each, an exact name wins, then the longest name that model extends
// with a '-' (so a dated snapshot like "gpt-4o-2024-08-06" costs what
// "gpt-4o" costs). A "bedrock/" model is also looked up by its vendor's
// name for it (see bedrockBase); the built-in price of a Claude 4.5 model
// is 10% more through a geographic or regional Bedrock profile than
// through the global one (see bedrockRegionalPremium). An unknown model
// costs 0.
func Cost(model string, u dialog.Usage, prices map[string]Price) float64 {
	p, ok := lookupPrice(model, prices)
	if !ok {
		return 0
	}
	return p.cost(u)
}

func (p Price) cost(u dialog.Usage) float64 {
	input := max(u.InputTokens, 0)
	cached := min(max(u.CachedInputTokens, 0), input)
	written := min(max(u.CacheWriteTokens, 0), input-cached)
	fresh := input - cached - written
	return (float64(fresh)*p.Input + float64(cached)*cmp.Or(p.CachedInput, p.Input) +
		float64(written)*cmp.Or(p.CacheWrite, p.Input) + float64(max(u.OutputTokens, 0))*p.Output) / 1e6
}

// lookupPrice finds model's price in prices, then in the built-in table.
func lookupPrice(model string, prices map[string]Price) (Price, bool) {
	provider, bare, ok := strings.Cut(model, "/")
	if !ok {
		provider, bare = "", model
	}
	vendor := bare // the vendor's name, for a Bedrock id
	if provider == "bedrock" {
		vendor = bedrockBase(bare)
	}
	for i, table := range []map[string]Price{prices, defaultPrices} {
		p, ok := lookupIn(table, model, bare, vendor)
		if !ok {
			continue
		}
		if i == 1 && provider == "bedrock" && bedrockRegional(bare, vendor) {
			p = Price{Input: p.Input * 1.1, CachedInput: p.CachedInput * 1.1, CacheWrite: p.CacheWrite * 1.1, Output: p.Output * 1.1}
		}
		return p, true
	}
	return Price{}, false
}

// lookupIn finds a price in table: an exact name, else the longest name
// that vendor extends with a '-'.
func lookupIn(table map[string]Price, model, bare, vendor string) (Price, bool) {
	for _, name := range [...]string{model, bare, vendor} {
		if p, ok := table[name]; ok {
			return p, true
		}
	}
	best := ""
	for name := range table {
		if len(name) > len(best) && strings.HasPrefix(vendor, name+"-") {
			best = name
		}
	}
	if best != "" {
		return table[best], true
	}
	return Price{}, false
}

// bedrockRegionalPremium are the Claude models that AWS charges 10% more
// through a geographic cross-region inference profile ("us.", "eu.",
// "apac.", ...) or in a single region than through the global profile
// ("global."), which costs Anthropic's list price. Older Claude models
// cost the list price everywhere.
var bedrockRegionalPremium = []string{"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5"}

// bedrockRegional reports whether the Bedrock model id costs the
// regional premium: a model of bedrockRegionalPremium (vendor is its
// name) called other than through the global profile.
func bedrockRegional(id, vendor string) bool {
	if strings.HasPrefix(id, "global.") || strings.Contains(id, "/global.") {
		return false
	}
	for _, m := range bedrockRegionalPremium {
		if vendor == m || strings.HasPrefix(vendor, m+"-") {
			return true
		}
	}
	return false
}

// bedrockBase is a Bedrock model id without its cross-region inference
// profile, vendor and version, which is the model's name at its vendor:
// "us.anthropic.claude-sonnet-4-5-20250929-v1:0" is
// "claude-sonnet-4-5-20250929". Bedrock's on-demand prices for Claude are
// Anthropic's through the global profile, and, for the models of
// bedrockRegionalPremium, 10% more through the others.
func bedrockBase(id string) string {
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[i+1:]
	}
	if i := strings.LastIndex(id, "-v"); i > 0 && strings.Trim(id[i+2:], "0123456789:") == "" && len(id) > i+2 {
		id = id[:i]
	}
	return id
}
