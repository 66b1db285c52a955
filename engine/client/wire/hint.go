package wire

import "time"

// maxHintSeconds bounds a parsed hint so N*time.Second cannot overflow.
const maxHintSeconds = 1 << 31

// ParseHint reads a Keep-Alive header value the way a real client does: from its start
// (Node), or anywhere in it (anywhere: undici).
// Node applies /^timeout=(\d+)/ (so "max=100, timeout=5" is not read); undici applies
// /timeout=(\d+)/ anywhere in the value. Both are case-sensitive, like the originals.
func ParseHint(value []byte, anywhere bool) (time.Duration, bool) {
	const key = "timeout="
	at := -1
	if anywhere {
		for i := 0; i+len(key) <= len(value); i++ {
			if string(value[i:i+len(key)]) == key && i+len(key) < len(value) && IsDigit(value[i+len(key)]) {
				at = i + len(key)
				break
			}
		}
	} else if len(value) > len(key) && string(value[:len(key)]) == key {
		at = len(key)
	}
	if at < 0 || !IsDigit(value[at]) {
		return 0, false
	}
	var n int64
	for i := at; i < len(value) && IsDigit(value[i]); i++ {
		if n < maxHintSeconds {
			n = n*10 + int64(value[i]-'0')
		}
	}
	if n > maxHintSeconds {
		n = maxHintSeconds
	}
	return time.Duration(n) * time.Second, true
}
