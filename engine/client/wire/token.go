package wire

import "strings"

// IsToken reports whether s is a non-empty RFC 9110 token (a method, a header name).
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, b) >= 0 {
			return false
		}
	}
	return true
}

// ContainsAnyByte reports whether s holds any byte of set, byte by byte whatever the
// encoding (a request line or a header value that must not carry CR, LF or a space).
func ContainsAnyByte(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) >= 0 {
			return true
		}
	}
	return false
}
