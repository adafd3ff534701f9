package conversation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lllm-go/lllm/internal/atomicfile"
)

// TrashDir is the folder of a data directory that deleted conversations
// are moved to: TrashDir/AGENT/SENDER/STAMP holds what was
// AGENT/SENDER (its log and archives), STAMP being the time of the
// deletion. A store never reads it (its name is no agent's); move a
// folder back to restore it, with the server stopped.
const TrashDir = ".trash"

// trashStamp is the layout of a deleted conversation's folder name in
// the trash: sortable, and a valid file name everywhere.
const trashStamp = "20060102T150405.000000000Z"

// ErrNoConversation is wrapped by the error for a conversation that
// holds nothing: never written, or deleted.
var ErrNoConversation = errors.New("no such conversation")

// Delete removes the conversation of agent with sender from the store and
// moves its folder (its log and archives) into the trash: TrashDir under
// the data directory, at the path it returns (relative to the data
// directory). Nothing is unlinked. A conversation that holds nothing is
// ErrNoConversation. The caller must make sure no run is in progress in
// it (a Service's Delete does); writes through a *Conversation obtained
// before fail afterwards, and the next Get starts a new, empty one.
func (s *Store) Delete(agent, sender string) (string, error) {
	if err := CheckName("agent", agent); err != nil {
		return "", err
	}
	if err := CheckName("sender", sender); err != nil {
		return "", err
	}
	// The store's lock is held throughout, so that no Get hands out the
	// conversation (or a new one that could write into its folder) while
	// it moves.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errClosed
	}
	k := key{agent, sender}
	c := s.convs[k]
	if c == nil || !c.written() {
		return "", fmt.Errorf("conversation %s/%s: %w: nothing is stored for it (GET /v1/conversations lists those that are)", agent, sender, ErrNoConversation)
	}
	rel := filepath.Join(TrashDir, agent, sender, time.Now().UTC().Format(trashStamp))
	dst := filepath.Join(s.dir, rel)
	for i := 2; ; i++ { // two deletions in one nanosecond: keep both
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(s.dir, rel) + fmt.Sprintf("-%d", i)
	}
	rel, _ = filepath.Rel(s.dir, dst)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("conversation %s/%s: making the trash folder: %w", agent, sender, err)
	}
	gone := fmt.Errorf("conversation %s/%s: %w: it was deleted", agent, sender, ErrNoConversation)
	if err := c.log.close(gone); err != nil {
		c.log.reopen(gone)
		return "", err
	}
	if err := os.Rename(c.dir, dst); err != nil {
		c.log.reopen(gone) // it stays, and may be written again
		return "", fmt.Errorf("conversation %s/%s: moving %s to the trash (nothing was moved; check the permissions of %s): %w", agent, sender, c.dir, s.dir, err)
	}
	delete(s.convs, k)
	// The move is durable once both folders that changed are synced.
	if err := errors.Join(atomicfile.SyncDir(filepath.Dir(c.dir)), atomicfile.SyncDir(filepath.Dir(dst))); err != nil {
		s.opts.Logger.Warn("syncing the folders of a deleted conversation", "agent", agent, "sender", sender, "trash", dst, "err", err)
	}
	return filepath.ToSlash(rel), nil
}

// written reports whether anything of the conversation is on disk.
func (c *Conversation) written() bool {
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	return c.log.seq > 0
}

// reopen undoes close(reason): the file is opened again by the next
// write. A log that failed for another reason stays failed.
func (a *appender) reopen(reason error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == reason {
		a.err = nil
	}
}
