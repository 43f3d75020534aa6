package secretbox

import (
	"bytes"
	"strings"
	"testing"
)

func TestSealedValuesOpenOnlyWithTheSameKeyAndLabel(t *testing.T) {
	box, _ := New([]byte(strings.Repeat("a", 32)))
	other, _ := New([]byte(strings.Repeat("b", 32)))
	sealed := box.Seal("sk_live_123456", "gwa/api_key_production")
	if bytes.Contains(sealed, []byte("sk_live")) {
		t.Fatal("ciphertext contains the plaintext")
	}
	if got, err := box.Open(sealed, "gwa/api_key_production"); err != nil || got != "sk_live_123456" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box.Open(sealed, "gwa/api_key_test"); err == nil {
		t.Error("a value moved to another field must not open")
	}
	if _, err := other.Open(sealed, "gwa/api_key_production"); err == nil {
		t.Error("another APP_SECRET must not open it")
	}
	if bytes.Equal(sealed, box.Seal("sk_live_123456", "gwa/api_key_production")) {
		t.Error("two seals of one value must differ (random nonce)")
	}
}

func TestMaskShowsOnlyTheLastFourCharacters(t *testing.T) {
	cases := map[string]string{"": "", "abc": "••••", "sk_test_9876": "••••9876", "ñandú1234": "••••1234"}
	for in, want := range cases {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}
