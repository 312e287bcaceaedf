package ninep

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"ollie.dev/ollie/internal/durable"
	"ollie.dev/ollie/internal/ninep/secretfile"
)

// The daemon's two secrets for 9P over TCP live in files of mode 0600 that
// it makes at its first start with a listen address: the token that
// clients present (TokenFile) and the TLS key with its self-signed
// certificate (CertFile). Both are kept: a new token would lock every
// client out, a new certificate would make every client refuse the daemon.

// TokenLen is the length of a token's text: 32 random bytes in hex.
const TokenLen = secretfile.TokenLen

// LoadOrCreateToken reads the token in path, or makes one there.
func LoadOrCreateToken(path string) (*Token, error) {
	tok, err := secretfile.Token(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, TokenLen/2)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		if err := writeNew(path, []byte(hex.EncodeToString(raw)+"\n")); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("token: %v", err)
		}
		tok, err = secretfile.Token(path) // ours, or the one a racing start made
	}
	if err != nil {
		return nil, fmt.Errorf("token: %v; remove it to have a new one made", err)
	}
	return NewToken(tok), nil
}

// LoadOrCreateCert reads the TLS key and certificate in path (PEM, key
// first), or makes them there, and returns the certificate with its
// fingerprint, the SHA-256 of its DER in hex, which clients pin.
func LoadOrCreateCert(path string) (tls.Certificate, string, error) {
	b, err := secretfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		var pemData []byte
		if pemData, err = newCert(); err != nil {
			return tls.Certificate{}, "", fmt.Errorf("certificate: %v", err)
		}
		if err := writeNew(path, pemData); err != nil && !errors.Is(err, fs.ErrExist) {
			return tls.Certificate{}, "", fmt.Errorf("certificate: %v", err)
		}
		b, err = secretfile.Read(path)
	}
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("certificate: %v", err)
	}
	cert, err := tls.X509KeyPair(b, b)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("certificate: %s: %v; remove it to have a new one made (clients will then refuse the new one until their pin is removed)", path, err)
	}
	return cert, Fingerprint(cert.Certificate[0]), nil
}

// Fingerprint is how a certificate is pinned: "sha256:" and the hex
// SHA-256 of its DER.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// newCert makes an ECDSA P-256 key and a self-signed certificate for it.
// Clients pin it rather than verify a chain, so its names and its long
// life mean nothing; they are there because x509 wants them.
func newCert() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "ollie daemon " + host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(100, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...), nil
}

// writeNew makes path with data and mode 0600, on disk before it is
// visible, and never over an existing file (fs.ErrExist then).
func writeNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return durable.Sync(dir)
}
