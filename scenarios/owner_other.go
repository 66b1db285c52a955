//go:build !unix

package scenarios

import "io/fs"

// lockedToMe holds where files carry no Unix owner and mode: Windows' temporary directory
// is under the user's profile, which no other user may write; the content is still checked.
func lockedToMe(fs.FileInfo) bool { return true }
