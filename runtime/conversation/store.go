package conversation

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/atomicfile"
	"github.com/lllm-go/lllm/internal/flock"
	"github.com/lllm-go/lllm/logs"
)

// LogFile is the name of a conversation's log inside its directory.
const LogFile = "conversation.jsonl"

// TitleMaxBytes is the most bytes a title has.
const TitleMaxBytes = 60

// Errors a Store returns; test for them with errors.Is.
var (
	// ErrBadName is wrapped by the error for an agent or sender name that
	// cannot name a conversation.
	ErrBadName = errors.New("bad name")
	// ErrNothingToCompact is returned when compacting an empty history.
	ErrNothingToCompact = errors.New("nothing to compact: the live history is empty")
	// ErrNoArchive is wrapped by the error for an unknown archive number.
	ErrNoArchive = errors.New("no such archive")
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// CheckName reports whether s can name an agent or a sender: 1 to 64
// ASCII letters, digits, '_', '.', '@' or '-', not starting with a
// punctuation character.
func CheckName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is missing", ErrBadName, what)
	}
	if !nameRE.MatchString(s) {
		return fmt.Errorf("%w: %s %q: use 1 to 64 letters, digits, '_', '.', '@' or '-', starting with a letter or digit", ErrBadName, what, s)
	}
	return nil
}

// Options adjust a Store. The zero value is ready to use.
type Options struct {
	// Logger receives warnings (a torn last line); nil uses slog.Default.
	Logger *slog.Logger
	// SyncEach fsyncs the log after every record. By default records are
	// handed to the OS as they are written (a crash of the process loses
	// nothing written) and the log is fsynced when a turn ends (Sync),
	// after a compaction marker and at Close.
	SyncEach bool
	// TrashRetention, when positive, is how long a deleted conversation
	// stays in the trash (see Store.Delete): the folders of those deleted
	// longer ago are removed when the store opens and then every hour
	// while it is open, each removal logged. Zero keeps the trash for
	// ever; lllm serve keeps it DefaultTrashRetention.
	TrashRetention time.Duration

	// trashSweep is how often the trash is emptied; 0 is hourly (tests
	// shorten it).
	trashSweep time.Duration
}

// Store holds the conversations under a data directory. It is safe for
// concurrent use.
type Store struct {
	dir  string
	opts Options
	lock *os.File // LockFile, held while the store is open

	mu       sync.Mutex
	convs    map[key]*Conversation
	warnings []string
	closed   bool

	// stopSweep, when the trash is emptied periodically, is closed by
	// Close, which then waits for swept to be.
	stopSweep chan struct{}
	swept     chan struct{}

	// beforeMarker, when set (by tests), runs after an archive is written
	// and before its marker is.
	beforeMarker func(c *Conversation, archivePath string)
}

type key struct{ agent, sender string }

// LockFile is the file in a data directory that a Store holds locked
// while it is open, so that two servers never write one directory.
const LockFile = ".lock"

// Open restores the conversations stored under dir, which is made if it
// does not exist, and holds it locked until Close: a second Store on the
// same directory, in this process or another, is an error, and so is one
// on a directory inside an open Store's, or holding one where Open reads
// (an agent's folder or a conversation's). A torn last
// line of a log is skipped with a warning; any other unreadable record is
// an error naming the file and line, every such file at once. With
// Options.TrashRetention, the trash is emptied of what is older before
// Open returns, and then hourly until Close.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{dir: dir, opts: opts, convs: map[key]*Conversation{}}
	if err := s.takeLock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.lock.Close()
		}
	}()
	found, err := scan(dir)
	if err != nil {
		return nil, err
	}
	if err := checkNesting(dir, found); err != nil {
		return nil, err
	}
	var errs []error
	for _, k := range found {
		c := s.newConversation(k.agent, k.sender)
		if err := c.load(); err != nil {
			errs = append(errs, err)
			continue
		}
		if c.log.size > 0 {
			s.convs[k] = c
		}
	}
	if len(errs) > 0 {
		errs = append(errs, fmt.Errorf("conversation: to start without a conversation, move its folder out of %s", dir))
		return nil, errors.Join(errs...)
	}
	ok = true
	if opts.TrashRetention > 0 {
		s.emptyTrash(time.Now())
		every := opts.trashSweep
		if every <= 0 {
			every = trashSweepInterval
		}
		s.stopSweep, s.swept = make(chan struct{}), make(chan struct{})
		go s.sweepTrash(every, s.stopSweep, s.swept)
	}
	return s, nil
}

// scan lists the folders of dir that may hold a conversation: each
// AGENT/SENDER folder whose names could name one. It skips files, the
// folders no agent or sender is named like (the trash, .trash, and any
// other whose name starts with a dot), and the run directories of a run
// log root inside dir (lllm serve writes its run logs to DATA_DIR/runs
// by default), which are never conversations.
func scan(dir string) ([]key, error) {
	agents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	var out []key
	for _, a := range agents {
		if !a.IsDir() || CheckName("agent", a.Name()) != nil {
			continue
		}
		adir := filepath.Join(dir, a.Name())
		senders, err := os.ReadDir(adir)
		if err != nil {
			return nil, fmt.Errorf("conversation: %w", err)
		}
		runs := logRoot(adir, senders)
		for _, sd := range senders {
			if !sd.IsDir() || CheckName("sender", sd.Name()) != nil || runs && runIDRE.MatchString(sd.Name()) {
				continue
			}
			out = append(out, key{a.Name(), sd.Name()})
		}
	}
	return out, nil
}

// runIDRE matches the name of a run directory (see logs.Create).
var runIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[0-9a-f]{6}$`)

// logRoot reports whether the folder dir, holding entries, is a run log
// root: the first of its folders named like a run holds a run log. Only
// that one folder is looked into, however many runs there are.
func logRoot(dir string, entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() && runIDRE.MatchString(e.Name()) {
			st, err := os.Stat(filepath.Join(dir, e.Name(), logs.EventsFile))
			return err == nil && st.Mode().IsRegular()
		}
	}
	return false
}

// takeLock makes the data directory and takes its LockFile, writing this
// process's id in it for the error of the next one.
func (s *Store) takeLock() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	path := filepath.Join(s.dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	if err := flock.TryLock(f, true); err != nil {
		f.Close()
		if errors.Is(err, flock.ErrLocked) {
			return fmt.Errorf("conversation: data dir %s is in use by %s (another lllm serve?): give each server its own data dir", s.dir, holder(path))
		}
		return fmt.Errorf("conversation: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	s.lock = f
	return nil
}

// Dir is the store's data directory.
func (s *Store) Dir() string { return s.dir }

// Warnings returns the warnings of Open so far, such as skipped torn lines.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.warnings...)
}

func (s *Store) warn(msg string) {
	s.mu.Lock()
	s.warnings = append(s.warnings, msg)
	s.mu.Unlock()
	s.opts.Logger.Warn(msg)
}

func (s *Store) newConversation(agent, sender string) *Conversation {
	c := &Conversation{store: s, agent: agent, sender: sender, dir: filepath.Join(s.dir, agent, sender)}
	c.log.path = filepath.Join(c.dir, LogFile)
	return c
}

// Get returns the conversation of agent with sender, creating it on first
// reference. A new conversation is only in memory until something is
// stored in it.
func (s *Store) Get(agent, sender string) (*Conversation, error) {
	if err := CheckName("agent", agent); err != nil {
		return nil, err
	}
	if err := CheckName("sender", sender); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	k := key{agent, sender}
	c := s.convs[k]
	if c == nil {
		c = s.newConversation(agent, sender)
		s.convs[k] = c
	}
	return c, nil
}

// Lookup returns the conversation of agent with sender if it exists,
// without creating it.
func (s *Store) Lookup(agent, sender string) (*Conversation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[key{agent, sender}]
	return c, ok
}

// List returns the summaries of the conversations that hold something,
// most recently active first.
func (s *Store) List() []Summary {
	s.mu.Lock()
	cs := make([]*Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	out := make([]Summary, 0, len(cs))
	for _, c := range cs {
		if sum := c.Summary(); sum.Messages > 0 || sum.Archives > 0 {
			out = append(out, sum)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastTime.Equal(out[j].LastTime) {
			return out[i].LastTime.After(out[j].LastTime)
		}
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Sender < out[j].Sender
	})
	return out
}

// Close fsyncs and closes every conversation's log, stops emptying the
// trash and frees the data directory. The store refuses further writes.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cs := make([]*Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	if s.stopSweep != nil {
		close(s.stopSweep)
		<-s.swept // no removal goes on once the data dir is free
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.log.close(errClosed))
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // last: the data dir is free
	}
	return errors.Join(errs...)
}

// Entry is a stored message with its place in the log. A sender's
// message also carries what happened in the run that answered it and is
// not a message itself: the ask_user questions and answers, and, when the
// run stored no reply, why (Aborted). BuildRequest shows both to the
// model in the runs that follow.
type Entry struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"ts"`
	Message *dialog.Message `json:"message"`
	// Asks are the ask records of the run that answered this message, in
	// order.
	Asks []Ask `json:"asks,omitempty"`
	// Aborted is the abort record of the run that answered this message,
	// when it ended without a reply.
	Aborted *Abort `json:"aborted,omitempty"`
}

// Archive describes one compaction of a conversation.
type Archive struct {
	ID       int       `json:"id"`
	Title    string    `json:"title"`
	Summary  string    `json:"summary"`
	Created  time.Time `json:"created"`
	Archived int       `json:"archived"` // how many messages it holds
	File     string    `json:"file"`     // relative to the conversation directory
}

// Summary is what a conversation listing shows of one conversation.
type Summary struct {
	Agent  string `json:"agent"`
	Sender string `json:"sender"`
	Title  string `json:"title"`
	// LastPreview and LastTime describe the newest live message.
	LastPreview string    `json:"last_preview,omitempty"`
	LastTime    time.Time `json:"last_time,omitzero"`
	// Unread counts the replies stored after the sender last read: not
	// yet streamed to them to the end.
	Unread int `json:"unread"`
	// Participants are the sender, the agent and every guest that spoke.
	Participants []string `json:"participants"`
	// Messages is the size of the live history, Archives the number of
	// compactions; ArchivedAt is when the last one happened.
	Messages   int       `json:"messages"`
	Archives   int       `json:"archives"`
	ArchivedAt time.Time `json:"archived_at,omitzero"`
	CWD        string    `json:"cwd,omitempty"`
}

// Conversation is the history of one agent with one sender. It is safe
// for concurrent use; a Service makes sure only one run changes it at a
// time.
type Conversation struct {
	store         *Store
	agent, sender string
	dir           string
	log           appender

	mu       sync.Mutex
	live     []Entry // after the last compaction; [0] is its summary if any
	archives []Archive
	title    string
	cwd      string
	readSeq  int64
	unread   int      // replies stored after readSeq, archived or not
	guests   []string // guests that spoke, in order of first reply
}

// Agent is the conversation's primary agent.
func (c *Conversation) Agent() string { return c.agent }

// Sender is who the agent talks to.
func (c *Conversation) Sender() string { return c.sender }

// Dir is the conversation's directory.
func (c *Conversation) Dir() string { return c.dir }

// load reads the conversation's log, keeping the live part in memory.
func (c *Conversation) load() error {
	f, err := os.Open(c.log.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		c.log.id = st // the file later writes must find at its path
	}
	l := loader{c: c}
	if err := c.readRecords(f, l.apply); err != nil {
		return err
	}
	return l.finish()
}

// readRecords calls apply with each record of the log r reads, checking
// that their seqs follow each other, and counts them (c.log.seq and
// c.log.size). A torn last line is skipped with a warning; any other
// unreadable record is an error naming the file and line.
func (c *Conversation) readRecords(r io.Reader, apply func(lineNo int, rec *record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("conversation: reading %s: %w", c.log.path, err)
		}
		if len(line) == 0 {
			return nil
		}
		torn := func(why string) {
			c.store.warn(fmt.Sprintf("conversation: %s:%d: skipping a torn last line (%s); it will be overwritten", c.log.path, lineNo, why))
		}
		if line[len(line)-1] != '\n' {
			torn("no newline at the end")
			return nil
		}
		var rec record
		if derr := jsonv2.Unmarshal(line, &rec); derr != nil || rec.Kind == "" {
			if _, perr := br.Peek(1); perr == io.EOF {
				torn("not a whole record")
				return nil
			}
			if derr == nil {
				derr = errors.New("no kind")
			}
			return fmt.Errorf("conversation: %s:%d: malformed record: %w", c.log.path, lineNo, derr)
		}
		if rec.Seq != c.log.seq+1 {
			return fmt.Errorf("conversation: %s:%d: record seq %d, want %d", c.log.path, lineNo, rec.Seq, c.log.seq+1)
		}
		if err := apply(lineNo, &rec); err != nil {
			return err
		}
		c.log.seq = rec.Seq
		c.log.size += int64(len(line))
	}
}

// loader restores a conversation from its log's records.
type loader struct {
	c         *Conversation
	live      []liveRecord      // the messages since the last compaction
	summary   *Entry            // the last compaction's summary, if any
	sinceRead []json.RawMessage // message records after the last read record
}

// liveRecord is a live message as its record holds it, with the records of
// the run that answered it.
type liveRecord struct {
	seq     int64
	ts      time.Time
	raw     json.RawMessage
	asks    []Ask
	aborted *Abort
}

// turn finds the live message a record of a run refers to; nil when it
// is not live (it cannot be: a compaction never runs during a run).
func (l *loader) turn(seq int64) *liveRecord {
	for i := len(l.live) - 1; i >= 0; i-- {
		if l.live[i].seq == seq {
			return &l.live[i]
		}
	}
	return nil
}

// apply restores what rec, on line lineNo, says.
func (l *loader) apply(lineNo int, rec *record) error {
	c := l.c
	bad := func(what string) error {
		return fmt.Errorf("conversation: %s:%d: %s record without its %s", c.log.path, lineNo, rec.Kind, what)
	}
	switch rec.Kind {
	case KindOpen:
		if rec.Open == nil {
			return bad("payload")
		}
		if err := checkVersion(rec.Open.Version); err != nil {
			return fmt.Errorf("conversation: %s: %w", c.log.path, err)
		}
	case KindMessage:
		if len(rec.Message) == 0 {
			return bad("message")
		}
		l.live = append(l.live, liveRecord{seq: rec.Seq, ts: rec.Time, raw: rec.Message})
		l.sinceRead = append(l.sinceRead, rec.Message)
		// Guests are found from the raw record, so archived messages
		// need not be decoded.
		if bytes.Contains(rec.Message, []byte(`"agent":`)) {
			m, err := decodeMessage(rec.Message)
			if err != nil {
				return fmt.Errorf("conversation: %s:%d: %w", c.log.path, lineNo, err)
			}
			c.noteGuest(m)
		}
	case KindTitle:
		if rec.Title == nil {
			return bad("title")
		}
		c.title = *rec.Title
	case KindCWD:
		if rec.CWD == nil {
			return bad("cwd")
		}
		c.cwd = *rec.CWD
	case KindRead:
		if rec.Read == nil {
			return bad("read")
		}
		c.readSeq = *rec.Read
		l.sinceRead = l.sinceRead[:0]
	case KindCompact:
		if rec.Compact == nil {
			return bad("marker")
		}
		mk := rec.Compact
		c.archives = append(c.archives, archiveOf(mk))
		l.live = l.live[:0:0]
		l.summary = &Entry{Seq: rec.Seq, Time: rec.Time, Message: summaryMessage(mk)}
	case KindAsk:
		if rec.Ask == nil {
			return bad("ask")
		}
		if p := l.turn(rec.Ask.Turn); p != nil {
			a := *rec.Ask
			a.Seq, a.Time = rec.Seq, rec.Time
			p.asks = append(p.asks, a)
		}
	case KindAbort:
		if rec.Abort == nil {
			return bad("abort")
		}
		if p := l.turn(rec.Abort.Turn); p != nil {
			a := *rec.Abort
			a.Seq, a.Time = rec.Seq, rec.Time
			p.aborted = &a
		}
	default:
		// An unknown kind of a newer minor version is skipped.
	}
	return nil
}

// finish counts the replies not yet read and decodes the live history,
// once every record is applied.
func (l *loader) finish() error {
	c := l.c
	for _, raw := range l.sinceRead {
		var m struct {
			Role dialog.Role `json:"role"`
		}
		if jsonv2.Unmarshal(raw, &m) == nil && m.Role == dialog.RoleAssistant {
			c.unread++
		}
	}
	if l.summary != nil {
		c.live = append(c.live, *l.summary)
	}
	for _, p := range l.live {
		m, err := decodeMessage(p.raw)
		if err != nil {
			return fmt.Errorf("conversation: %s: record %d: %w", c.log.path, p.seq, err)
		}
		c.live = append(c.live, Entry{Seq: p.seq, Time: p.ts, Message: m, Asks: p.asks, Aborted: p.aborted})
	}
	return nil
}

func (c *Conversation) noteGuest(m *dialog.Message) {
	if m.Agent == "" || m.Agent == c.agent {
		return
	}
	for _, g := range c.guests {
		if g == m.Agent {
			return
		}
	}
	c.guests = append(c.guests, m.Agent)
}

func archiveOf(mk *Marker) Archive {
	return Archive{ID: mk.Archive, Title: mk.Title, Summary: mk.Summary, Created: mk.Created, Archived: mk.Archived, File: mk.File}
}

// summaryMessage is the message the live history starts from after the
// compaction mk.
func summaryMessage(mk *Marker) *dialog.Message {
	return &dialog.Message{Role: dialog.RoleUser, Name: "summary", Modality: dialog.ModalityText,
		Content:  fmt.Sprintf("Summary of the earlier conversation (archive %d, %q):\n%s", mk.Archive, mk.Title, mk.Summary),
		Metadata: map[string]string{"archive": fmt.Sprint(mk.Archive)}}
}

// write appends rec, writing the open record first if the log is new.
// c.mu must be held.
func (c *Conversation) write(rec *record, sync bool) error {
	if c.log.size == 0 && c.log.seq == 0 {
		h := &record{Kind: KindOpen, Open: &Header{Format: FormatName, Version: version(), Agent: c.agent, Sender: c.sender}}
		if err := c.log.write(h, false); err != nil {
			return err
		}
	}
	return c.log.write(rec, sync || c.store.opts.SyncEach)
}

// Append stores m at the end of the history and returns its entry.
func (c *Conversation) Append(m dialog.Message) (Entry, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return Entry{}, fmt.Errorf("conversation: encoding message: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &record{Kind: KindMessage, Message: raw}
	if err := c.write(rec, false); err != nil {
		return Entry{}, err
	}
	stored := m.Clone()
	e := Entry{Seq: rec.Seq, Time: rec.Time, Message: stored}
	c.live = append(c.live, e)
	c.noteGuest(stored)
	if stored.Role == dialog.RoleAssistant {
		c.unread++
	}
	return e, nil
}

// Sync fsyncs the conversation's log and closes its file until the next
// write: call it when a turn ends, so that an idle conversation holds no
// open file.
func (c *Conversation) Sync() error { return c.log.sync() }

// Messages returns the live history: the summary of the last compaction,
// if any, then every message stored since. The messages are shared and
// must not be modified.
func (c *Conversation) Messages() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Entry(nil), c.live...)
}

// Archives returns the conversation's archives, oldest first.
func (c *Conversation) Archives() []Archive {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Archive(nil), c.archives...)
}

// Title is the conversation's title: the first sentence of its first
// message, at most TitleMaxBytes.
func (c *Conversation) Title() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.title
}

// SetTitle stores title as the conversation's title, cut to
// TitleMaxBytes on a character boundary.
func (c *Conversation) SetTitle(title string) error {
	title = cutBytes(strings.TrimSpace(title), TitleMaxBytes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if title == c.title {
		return nil
	}
	if err := c.write(&record{Kind: KindTitle, Title: &title}, false); err != nil {
		return err
	}
	c.title = title
	return nil
}

// CWD is the conversation's default working directory.
func (c *Conversation) CWD() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cwd
}

// SetCWD stores dir as the default working directory.
func (c *Conversation) SetCWD(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir == c.cwd {
		return nil
	}
	if err := c.write(&record{Kind: KindCWD, CWD: &dir}, false); err != nil {
		return err
	}
	c.cwd = dir
	return nil
}

// MarkRead records that the sender has read everything stored so far.
func (c *Conversation) MarkRead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.log.seq
	if c.readSeq >= last || c.unread == 0 {
		return nil
	}
	if err := c.write(&record{Kind: KindRead, Read: &last}, false); err != nil {
		return err
	}
	c.readSeq, c.unread = last, 0
	return nil
}

// Participants are the sender, the agent and the guests that spoke.
func (c *Conversation) Participants() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{c.sender, c.agent}, c.guests...)
}

// Summary describes the conversation for a listing.
func (c *Conversation) Summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Summary{Agent: c.agent, Sender: c.sender, Title: c.title, Unread: c.unread,
		Participants: append([]string{c.sender, c.agent}, c.guests...),
		Messages:     len(c.live), Archives: len(c.archives), CWD: c.cwd}
	if n := len(c.live); n > 0 {
		last := c.live[n-1]
		s.LastPreview, s.LastTime = dialog.Preview(last.Message, 80), last.Time
	}
	if n := len(c.archives); n > 0 {
		s.ArchivedAt = c.archives[n-1].Created
		if s.LastTime.IsZero() {
			s.LastTime = s.ArchivedAt
		}
	}
	return s
}

// Summarizer writes the summary of msgs with a model call.
type Summarizer func(ctx context.Context, msgs []*dialog.Message) (string, error)

// nothingNewError is ErrNothingToCompact for a live history that holds
// only the last compaction's summary.
type nothingNewError struct{}

func (nothingNewError) Error() string {
	return "nothing to compact: nothing was said since the last compaction (the live history is its summary alone)"
}

func (nothingNewError) Is(target error) bool { return target == ErrNothingToCompact }

// Compact summarises the live history with summarize and archives it
// (summarize gets the history as BuildRequest shows it, without the
// framing and the guest tags):
// the archive file (the messages, title, summary and time) is written and
// synced before the marker record that points at it, and the live history
// continues from the summary. The caller must make sure nothing is
// appended meanwhile (a Service holds the conversation's run slot).
func (c *Conversation) Compact(ctx context.Context, summarize Summarizer) (Archive, error) {
	c.mu.Lock()
	live := append([]Entry(nil), c.live...)
	id := len(c.archives) + 1
	c.mu.Unlock()
	if len(live) == 0 {
		return Archive{}, ErrNothingToCompact
	}
	if len(live) == 1 && live[0].Message.Metadata["archive"] != "" {
		return Archive{}, nothingNewError{}
	}
	// The summary covers what the model saw: the questions and answers
	// of ask_user and the notes on runs that stored no reply too.
	hist, _ := history(c.agent, c.sender, live)
	msgs := make([]*dialog.Message, len(hist))
	for i := range hist {
		msgs[i] = &hist[i]
	}
	summary, err := summarize(ctx, msgs)
	if err != nil {
		return Archive{}, fmt.Errorf("conversation: summarising %d messages: %w", len(msgs), err)
	}
	summary = strings.TrimSpace(summary)
	title := TitleOf(summary)
	if title == "" {
		title = fmt.Sprintf("Archive %d", id)
	}
	a := Archive{ID: id, Title: title, Summary: summary, Created: time.Now().UTC(), Archived: len(live),
		File: filepath.ToSlash(filepath.Join("archives", fmt.Sprintf("%06d.json", id)))}
	af := ArchiveFile{Format: ArchiveFormatName, Version: version(), Agent: c.agent, Sender: c.sender,
		Archive: id, Title: title, Summary: summary, Created: a.Created, Messages: live}
	data, err := json.MarshalIndent(af, "", " ")
	if err != nil {
		return Archive{}, fmt.Errorf("conversation: encoding archive: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Archive{}, err
	}
	path := filepath.Join(c.dir, filepath.FromSlash(a.File))
	if err := atomicfile.WriteFile(path, append(data, '\n')); err != nil {
		return Archive{}, fmt.Errorf("conversation: writing archive: %w", err)
	}
	if h := c.store.beforeMarker; h != nil {
		h(c, path)
	}
	mk := &Marker{Archive: id, File: a.File, Archived: len(live), FirstSeq: live[0].Seq, LastSeq: live[len(live)-1].Seq,
		Title: title, Summary: summary, Created: a.Created}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &record{Kind: KindCompact, Compact: mk}
	if err := c.write(rec, true); err != nil {
		return Archive{}, err
	}
	c.archives = append(c.archives, a)
	c.live = []Entry{{Seq: rec.Seq, Time: rec.Time, Message: summaryMessage(mk)}}
	return a, nil
}

// ReadArchive returns archive id with its messages. An archive whose file
// is missing or unreadable comes back with Missing set and one placeholder
// message saying so, rather than an error.
func (c *Conversation) ReadArchive(id int) (*ArchiveFile, error) {
	var a *Archive
	for _, x := range c.Archives() {
		if x.ID == id {
			a = &x
			break
		}
	}
	if a == nil {
		return nil, fmt.Errorf("conversation %s/%s: %w %d (it has %d)", c.agent, c.sender, ErrNoArchive, id, len(c.Archives()))
	}
	path := filepath.Join(c.dir, filepath.FromSlash(a.File))
	data, err := os.ReadFile(path)
	var af ArchiveFile
	if err == nil {
		err = json.Unmarshal(data, &af)
	}
	if err != nil {
		return &ArchiveFile{Format: ArchiveFormatName, Version: version(), Agent: c.agent, Sender: c.sender,
			Archive: a.ID, Title: a.Title, Summary: a.Summary, Created: a.Created, Missing: true,
			Messages: []Entry{{Time: a.Created, Message: &dialog.Message{Role: dialog.RoleSystem, Name: "archive",
				Content: fmt.Sprintf("[archive %d (%d messages) is missing: %v]", a.ID, a.Archived, err)}}}}, nil
	}
	return &af, nil
}

// ArchiveMissing reports whether the file of archive a is missing or
// unreadable, as ReadArchive finds it.
func (c *Conversation) ArchiveMissing(a Archive) bool {
	data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(a.File)))
	return err != nil || json.Unmarshal(data, new(ArchiveFile)) != nil
}

// TitleOf is the title a summary or message gives: its first sentence
// (up to the first '.', '!' or '?' followed by a space or the end, or the
// first line break), cut to at most TitleMaxBytes on a UTF-8 character
// boundary.
func TitleOf(text string) string {
	text = strings.TrimSpace(text)
	end := len(text)
	for i, r := range text {
		if r == '\n' || r == '\r' {
			end = i
			break
		}
		if r == '.' || r == '!' || r == '?' || r == '。' || r == '！' || r == '？' {
			next := i + utf8.RuneLen(r)
			if r > unicode.MaxASCII || next == len(text) || unicode.IsSpace(rune(text[next])) {
				end = next
				break
			}
		}
	}
	return cutBytes(strings.TrimSpace(text[:end]), TitleMaxBytes)
}

// cutBytes cuts s to at most n bytes without splitting a UTF-8 character.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace)
}
