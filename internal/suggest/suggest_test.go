package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"model_name", "model_args", "temperature", "openai", "default", "chat"}
	for in, want := range map[string]string{
		"modle_name": "model_name", "temprature": "temperature", "opneai": "openai",
		"defualt": "default", "chta": "chat", "zzzzzz": "", "": "", "c": "",
	} {
		if got, ok := Closest(in, names); got != want || ok != (want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"defualt", "default", 2}, {"日本", "日本語", 1}} {
		if got := Distance(tt.a, tt.b); got != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
	if d := Distance("héllo", "hello"); d != 1 {
		t.Errorf("Distance counts bytes, not runes: %d", d)
	}
}
