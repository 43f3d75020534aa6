// Package secretbox encrypts the credentials Pasarela stores (gateway keys and
// secrets) with AES-256-GCM under a key derived from APP_SECRET.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrDecrypt is returned for a value that was not sealed by this key (APP_SECRET changed?).
var ErrDecrypt = errors.New("secretbox: cannot decrypt (was APP_SECRET changed?)")

// Box seals and opens values with one key.
type Box struct {
	aead cipher.AEAD
}

// New derives the encryption key from the app secret. The derivation has its
// own label, so the key differs from every other use of APP_SECRET.
func New(appSecret []byte) (*Box, error) {
	m := hmac.New(sha256.New, appSecret)
	m.Write([]byte("pasarela credentials v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; label binds the ciphertext to where it is stored
// (e.g. "gwa/secret_key_test"), so a value copied to another field will not open.
func (b *Box) Seal(plaintext, label string) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("secretbox: no randomness: " + err.Error())
	}
	return b.aead.Seal(nonce, nonce, []byte(plaintext), []byte(label))
}

// Open decrypts what Seal produced under the same label.
func (b *Box) Open(sealed []byte, label string) (string, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrDecrypt
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], []byte(label))
	if err != nil {
		return "", ErrDecrypt
	}
	return string(plain), nil
}

// Mask shows only the last four characters of a secret, as pages must.
func Mask(secret string) string {
	if secret == "" {
		return ""
	}
	r := []rune(secret)
	if len(r) <= 4 {
		return "••••"
	}
	return "••••" + string(r[len(r)-4:])
}
