package provider

import (
	"math"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

func TestCost(t *testing.T) {
	u := dialog.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 200_000, ReasoningTokens: 50_000}
	for _, tc := range []struct {
		model  string
		prices map[string]Price
		want   float64
	}{
		// 600k fresh at 2.50, 400k cached at 1.25, 200k out at 10.
		{"gpt-4o", nil, 0.6*2.50 + 0.4*1.25 + 0.2*10},
		{"openai/gpt-4o", nil, 0.6*2.50 + 0.4*1.25 + 0.2*10},
		{"gpt-4o-2024-08-06", nil, 0.6*2.50 + 0.4*1.25 + 0.2*10},
		{"gpt-4o-mini-2024-07-18", nil, 0.6*0.15 + 0.4*0.075 + 0.2*0.60},
		{"anthropic/claude-sonnet-4-5-20250929", nil, 0.6*3 + 0.4*0.30 + 0.2*15},
		{"unknown-model", nil, 0},
		{"gpt-4o", map[string]Price{"gpt-4o": {Input: 1, CachedInput: 0.5, Output: 2}}, 0.6 + 0.2 + 0.4},
		// No cached price: cached tokens cost Input.
		{"mine", map[string]Price{"mine": {Input: 1, Output: 2}}, 1 + 0.4},
		{"mock/mine", map[string]Price{"mine": {Input: 1, Output: 2}}, 1 + 0.4},
		// Bedrock ids: by the vendor's name, after the profile, vendor and version.
		{"bedrock/global.anthropic.claude-sonnet-4-5-20250929-v1:0", nil, 0.6*3 + 0.4*0.30 + 0.2*15},
		// A Claude 4.5 model through a geographic profile: 10% more.
		{"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil, 1.1 * (0.6*3 + 0.4*0.30 + 0.2*15)},
		{"bedrock/eu.anthropic.claude-haiku-4-5-20251001-v1:0", nil, 1.1 * (0.6*1 + 0.4*0.10 + 0.2*5)},
		{"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", map[string]Price{"claude-sonnet-4-5": {Input: 1, Output: 2}}, 1 + 0.4},
		{"bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", nil, 0.6*3 + 0.4*0.30 + 0.2*15},
		{"bedrock/anthropic.claude-3-5-haiku-20241022-v1:0", nil, 0.6*0.80 + 0.4*0.08 + 0.2*4},
		{"bedrock/anthropic.claude-3-5-haiku-20241022-v1:0", map[string]Price{"anthropic.claude-3-5-haiku-20241022-v1:0": {Input: 1, Output: 2}}, 1 + 0.4},
		{"bedrock/meta.llama3-70b-instruct-v1:0", nil, 0},
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", nil, 0}, // not named as bedrock's
	} {
		if got := Cost(tc.model, u, tc.prices); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%q) = %v, want %v", tc.model, got, tc.want)
		}
	}
	// Cached tokens beyond the input and negative counts are clamped.
	odd := dialog.Usage{InputTokens: 10, CachedInputTokens: 50, OutputTokens: -5}
	if got, want := Cost("gpt-4o", odd, nil), 10*1.25/1e6; math.Abs(got-want) > 1e-15 {
		t.Errorf("odd usage: %v, want %v", got, want)
	}
	// Cache writes: at CacheWrite (Input when unset), never more of them
	// than the input left after the cached part.
	w := dialog.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, CacheWriteTokens: 100_000, OutputTokens: 200_000}
	for _, tc := range []struct {
		model  string
		prices map[string]Price
		u      dialog.Usage
		want   float64
	}{
		{"anthropic/claude-sonnet-4-5", nil, w, 0.5*3 + 0.4*0.30 + 0.1*3.75 + 0.2*15},
		{"mine", map[string]Price{"mine": {Input: 1, CachedInput: 0.5, Output: 2}}, w, 0.5 + 0.2 + 0.1 + 0.4},
		{"mine", map[string]Price{"mine": {Input: 1, CacheWrite: 3}}, dialog.Usage{InputTokens: 10, CachedInputTokens: 6, CacheWriteTokens: 9}, (6 + 4*3) / 1e6},
	} {
		if got := Cost(tc.model, tc.u, tc.prices); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Cost(%q, %+v) = %v, want %v", tc.model, tc.u, got, tc.want)
		}
	}
	if p := DefaultPrices(); p["gpt-4o"].Input != 2.50 {
		t.Errorf("DefaultPrices()[gpt-4o] = %+v", p["gpt-4o"])
	} else {
		p["gpt-4o"] = Price{}
		if DefaultPrices()["gpt-4o"].Input != 2.50 {
			t.Error("DefaultPrices returned the table itself")
		}
	}
}
