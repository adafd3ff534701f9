package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/atomicfile"
)

// The on-disk format of a conversation log, documented in
// docs/conversations.md.
const (
	FormatName   = "lllm-go/conversation"
	VersionMajor = 1
	// VersionMinor 1 added the ask and abort records (and the asks and
	// aborted fields of an Entry).
	VersionMinor = 1
	// ArchiveFormatName names the format of an archive file.
	ArchiveFormatName = "lllm-go/conversation-archive"
)

// Record kinds of a conversation log.
const (
	KindOpen    = "open"    // the first record: format, version, agent, sender
	KindMessage = "message" // a message of the history
	KindTitle   = "title"   // the conversation's title was set
	KindCWD     = "cwd"     // the default working directory was set
	KindRead    = "read"    // the sender has read up to a sequence number
	KindCompact = "compact" // a compaction marker: the history so far is archived
	KindAsk     = "ask"     // an ask_user question and its answer (since 1.1)
	KindAbort   = "abort"   // a run ended without a reply (since 1.1)
)

// The statuses of an Abort: how a run that stored no reply ended.
const (
	AbortKilled    = "killed"    // Service.Kill (POST /v1/kill)
	AbortCancelled = "cancelled" // its context ended: the client went away, or the server stopped
	AbortFailed    = "failed"    // anything else: a model error, a write that failed
)

// Ask is the payload of an ask record: a question the agent asked the
// sender with the ask_user tool during the run that answered the message
// Turn, and the answer it got, or why it got none. In an Entry it also
// carries the record's Seq and Time.
type Ask struct {
	// Seq and Time are the ask record's; they are not written in its
	// payload (the record has them).
	Seq  int64     `json:"seq,omitempty"`
	Time time.Time `json:"ts,omitzero"`
	// Turn is the seq of the sender's message whose run asked.
	Turn int64 `json:"turn"`
	// Agent is the agent that asked.
	Agent    string `json:"agent"`
	Question string `json:"question"`
	// Answer is the sender's answer; empty when Error says why there is
	// none (a timeout, the run's end).
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Abort is the payload of an abort record: the run that answered the
// message Turn ended without storing a reply. In an Entry it also carries
// the record's Seq and Time.
type Abort struct {
	Seq  int64     `json:"seq,omitempty"`
	Time time.Time `json:"ts,omitzero"`
	// Turn is the seq of the sender's message the run was answering.
	Turn int64 `json:"turn"`
	// Agent is the agent that was answering (the conversation's, or a
	// guest).
	Agent string `json:"agent"`
	// Status is AbortKilled, AbortCancelled or AbortFailed.
	Status string `json:"status"`
	// Error is what ended the run.
	Error string `json:"error,omitempty"`
}

// Header is the payload of the open record.
type Header struct {
	Format  string `json:"format"`
	Version string `json:"version"`
	Agent   string `json:"agent"`
	Sender  string `json:"sender"`
}

// Marker is the payload of a compact record: it points at the archive that
// holds the messages before it.
type Marker struct {
	// Archive numbers the archive from 1 in the conversation.
	Archive int `json:"archive"`
	// File is the archive's path relative to the conversation directory.
	File string `json:"file"`
	// Archived is how many messages the archive holds.
	Archived int `json:"archived"`
	// FirstSeq and LastSeq are the sequence numbers of the archived
	// messages' records.
	FirstSeq int64     `json:"first_seq,omitempty"`
	LastSeq  int64     `json:"last_seq,omitempty"`
	Title    string    `json:"title"`
	Summary  string    `json:"summary"`
	Created  time.Time `json:"created"`
}

// record is one line of a conversation log.
type record struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"ts"`
	Kind    string          `json:"kind"`
	Open    *Header         `json:"open,omitempty"`
	Message json.RawMessage `json:"message,omitempty"`
	Title   *string         `json:"title,omitempty"`
	CWD     *string         `json:"cwd,omitempty"`
	Read    *int64          `json:"read,omitempty"`
	Compact *Marker         `json:"compact,omitempty"`
	Ask     *Ask            `json:"ask,omitempty"`
	Abort   *Abort          `json:"abort,omitempty"`
}

// ArchiveFile is the content of an archive: the messages a compaction
// moved out of the live history, with the summary that replaced them.
type ArchiveFile struct {
	Format   string    `json:"format"`
	Version  string    `json:"version"`
	Agent    string    `json:"agent"`
	Sender   string    `json:"sender"`
	Archive  int       `json:"archive"`
	Title    string    `json:"title"`
	Summary  string    `json:"summary"`
	Created  time.Time `json:"created"`
	Messages []Entry   `json:"messages"`
	// Missing is set, with a placeholder message, when the archive's file
	// cannot be read; it is never written.
	Missing bool `json:"missing,omitempty"`
}

func version() string { return strconv.Itoa(VersionMajor) + "." + strconv.Itoa(VersionMinor) }

// appender writes whole records to one file, made (with its directory)
// on the first write, so a conversation that never stores anything
// leaves no file behind. The file is open only from a write to the next
// fsync: a conversation between turns holds no descriptor and no buffer,
// however many a server has.
type appender struct {
	mu   sync.Mutex
	path string
	at   string      // path made absolute when first opened, as later opens and sync check it
	id   os.FileInfo // the file, once opened or read: a later open must find it at path
	f    *os.File    // nil between turns
	size int64       // bytes of whole records, to undo a partial write
	seq  int64
	err  error
	buf  bytes.Buffer
}

// write appends rec, setting its Seq and Time, in one write; with sync the
// file is fsynced (and closed) afterwards. A partial write is truncated
// back and leaves the appender failed.
func (a *appender) write(rec *record, sync bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	rec.Seq = a.seq + 1
	rec.Time = time.Now().UTC()
	a.buf.Reset()
	enc := json.NewEncoder(&a.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("conversation: encoding %s record: %w", rec.Kind, err)
	}
	if a.f == nil {
		if err := a.open(); err != nil {
			return err
		}
	}
	n, err := a.f.Write(a.buf.Bytes())
	if err == nil && sync {
		err = a.f.Sync()
	}
	if err != nil {
		if n > 0 {
			_ = a.f.Truncate(a.size)
			_, _ = a.f.Seek(a.size, 0)
		}
		a.err = fmt.Errorf("conversation: writing %s record %d to %s: %w", rec.Kind, rec.Seq, a.path, err)
		return a.err
	}
	a.seq++
	a.size += int64(n)
	if sync {
		_ = a.closeFile() // synced: its records are on disk
	}
	return nil
}

// open opens the file to append after its whole records, dropping a torn
// tail left by a crash. Once the file has records it must still be there,
// the same file: one deleted or moved is not made again from scratch.
func (a *appender) open() error {
	flag := os.O_WRONLY
	if a.seq == 0 {
		if err := os.MkdirAll(filepath.Dir(a.path), 0o755); err != nil {
			return fmt.Errorf("conversation: %w", err)
		}
		flag |= os.O_CREATE
	}
	if a.at == "" {
		a.at = atomicfile.Abs(a.path)
	}
	f, err := os.OpenFile(a.at, flag, 0o644)
	if a.seq > 0 && errors.Is(err, fs.ErrNotExist) {
		return a.gone()
	}
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	st, err := f.Stat()
	if err == nil && (a.id != nil && !os.SameFile(a.id, st) || st.Size() < a.size) {
		f.Close()
		return a.gone()
	}
	if err == nil {
		err = f.Truncate(a.size)
	}
	if err == nil {
		_, err = f.Seek(a.size, 0)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("conversation: %w", err)
	}
	a.f, a.id = f, st
	return nil
}

// gone fails the appender: its file was deleted or moved since it was
// last written.
func (a *appender) gone() error {
	a.err = fmt.Errorf("conversation: %s was deleted or moved while the server wrote it: its records are not there; restart the server to go on from what the data dir holds", a.path)
	return a.err
}

// sync fsyncs the file and closes it until the next write.
func (a *appender) sync() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil // nothing written since the last fsync
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("conversation: syncing %s: %w", a.path, err)
	}
	// A log deleted (or moved) while it is open takes every record since
	// with it: say so, once a turn, rather than answer turns no restart
	// will find. Later writes would go to it too, and fail with this.
	if atomicfile.Gone(a.f, a.at) {
		_ = a.closeFile()
		return a.gone()
	}
	if err := a.closeFile(); err != nil {
		return fmt.Errorf("conversation: closing %s: %w", a.path, err)
	}
	return nil
}

// close fsyncs and closes the file; later writes fail with reason.
func (a *appender) close(reason error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = reason
	}
	if a.f == nil {
		return nil
	}
	if err := errors.Join(a.f.Sync(), a.closeFile()); err != nil {
		return fmt.Errorf("conversation: closing %s: %w", a.path, err)
	}
	return nil
}

// closeFile closes the open file and lets its buffer go. a.mu must be
// held.
func (a *appender) closeFile() error {
	err := a.f.Close()
	a.f, a.buf = nil, bytes.Buffer{}
	return err
}

var errClosed = errors.New("conversation: store closed")

// decodeMessage decodes a message record's payload.
func decodeMessage(raw json.RawMessage) (*dialog.Message, error) {
	var m dialog.Message
	if err := jsonv2.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// checkVersion accepts a 1.x version string.
func checkVersion(v string) error {
	major, _, _ := strings.Cut(v, ".")
	if major != strconv.Itoa(VersionMajor) {
		return fmt.Errorf("format version %q: this lllm reads version %d.x", v, VersionMajor)
	}
	return nil
}
