package logs

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/atomicfile"
)

// DefaultSyncInterval is how often a Writer fsyncs its file when
// Options.SyncInterval is zero.
const DefaultSyncInterval = time.Second

// maxQueued is how many records a Writer holds before Write hands them to
// the OS itself, so a writer that cannot keep up slows its callers instead
// of growing without bound.
const maxQueued = 1024

// maxChunk is about the most a flush hands to the OS in one write: a batch
// of large records is encoded and written a megabyte at a time.
const maxChunk = 1 << 20

// Options tune a Writer. The zero value is ready to use.
type Options struct {
	// SyncInterval is how often the file is fsynced while records arrive:
	// zero means DefaultSyncInterval, a negative value fsyncs after every
	// write. The file is always fsynced when the writer closes.
	SyncInterval time.Duration
	// FlushDelay is how long a record may wait in memory before it is
	// handed to the OS. Zero hands it over at once from a background
	// goroutine, so Write waits neither for its encoding nor for the
	// write system call, and batches a steady stream into one write
	// every 10ms; a positive delay batches the records of that window
	// into one write; a negative one encodes and writes every record
	// before Write returns.
	FlushDelay time.Duration
}

// ErrClosed is returned by a Writer that has been closed.
var ErrClosed = errors.New("logs: writer closed")

// Writer appends records to a run log. It is safe for concurrent use: each
// record gets the next sequence number when it is written, and a record
// that cannot be encoded is refused at once. The records of dialogs, model,
// tool and context calls are encoded later, by the flush, off the caller's
// goroutine; the others are encoded by Write. Records reach the OS in
// order, each whole, in as few write system calls as they can share
// (Options.FlushDelay); Flush and Close wait for them. After a failed write
// the Writer keeps returning that error.
//
// A Writer is a dialog.Sink, so dialogs can report to it directly.
type Writer struct {
	mu      sync.Mutex // guards what follows up to wmu
	w       io.Writer
	file    *os.File // nil when w is not a file
	owned   bool     // file was opened by Create and is closed by Close
	name    string   // the log's path, for a Writer from Create
	at      string   // name made absolute, as checkLinked checks it
	seq     int64    // of the last record accepted
	flushed int64    // seq of the last record handed to the OS
	size    int64    // bytes handed to the OS so far, to undo a partial write
	queue   []queued // records not yet handed to the OS
	spare   []queued // the last batch's queue, reused for the next
	armed   bool     // a flush is scheduled
	err     error
	closed  bool
	start   time.Time
	totals  Totals // of the records accepted so far
	// ended holds the totals the run_end record gave, once it is written:
	// what Totals returns from then on.
	ended *Totals
	// declared holds the digests of the declarations records written:
	// each set is written once.
	declared map[string]bool

	wmu   sync.Mutex // held while handing a batch to the OS, to keep batches in order
	buf   []byte     // a batch's encoding; guarded by wmu
	delay time.Duration
	kick  chan struct{} // wakes the background flusher (FlushDelay zero)
	timer *time.Timer   // fires a flush (FlushDelay positive)

	syncEach bool
	dirty    atomic.Bool
	stop     chan struct{}
	stopped  sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// NewWriter starts a log on w by writing start as its first record, before
// it returns. If w is an *os.File, it is fsynced as Options says; closing
// the Writer does not close w unless the Writer came from Create.
func NewWriter(w io.Writer, start RunStart, opts Options) (*Writer, error) {
	lw, err := newWriter(w, start)
	if err != nil {
		return nil, err
	}
	lw.setOptions(opts)
	return lw, nil
}

// newWriter is NewWriter before its options apply: run_start is written
// before it returns and every later record too, until setOptions.
func newWriter(w io.Writer, start RunStart) (*Writer, error) {
	lw := &Writer{w: w, delay: -1}
	if f, ok := w.(*os.File); ok {
		lw.file = f
		if st, err := f.Stat(); err == nil {
			lw.size = st.Size()
		}
	}
	start.Format = FormatName
	start.Version = strconv.Itoa(VersionMajor) + "." + strconv.Itoa(VersionMinor)
	if err := lw.Write(&Record{Kind: KindRunStart, RunStart: &start}); err != nil {
		return nil, err
	}
	return lw, nil
}

// setOptions applies the flush and sync policies of opts, once, before
// w is shared.
func (w *Writer) setOptions(opts Options) {
	w.delay = opts.FlushDelay
	w.syncEach = opts.SyncInterval < 0
	w.stop = make(chan struct{})
	switch {
	case w.delay == 0:
		w.kick = make(chan struct{}, 1)
		w.stopped.Add(1)
		go w.flushLoop()
	case w.delay > 0:
		// A stopped timer, which Write arms.
		w.timer = time.AfterFunc(time.Hour, func() { _ = w.Flush() })
		w.timer.Stop()
	}
	if w.file != nil && !w.syncEach {
		w.stopped.Add(1)
		go w.syncLoop(cmp.Or(opts.SyncInterval, DefaultSyncInterval))
	}
}

// flushGap is the least time between two background flushes with the
// default FlushDelay: a record written after a quiet spell goes to the OS
// at once, and a steady stream of them in one write per gap. Each flush
// wakes a goroutine, which on a virtual machine costs tens of
// microseconds of CPU (see docs/BENCHMARKS.md): at a gap of 1ms a stream
// of fast model calls spent more on the wakeups than on the log's work.
const flushGap = 10 * time.Millisecond

// flushLoop hands records to the OS as they come (FlushDelay zero), at
// most once per flushGap.
func (w *Writer) flushLoop() {
	defer w.stopped.Done()
	gap := time.NewTimer(flushGap)
	defer gap.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
			_ = w.Flush() // a failure is kept in w.err and reported by Write
		}
		gap.Reset(flushGap)
		select {
		case <-w.stop:
			return
		case <-gap.C:
		}
	}
}

func (w *Writer) syncLoop(every time.Duration) {
	defer w.stopped.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if w.dirty.Swap(false) {
				_ = w.file.Sync() // a failure here shows up at Close
			}
		}
	}
}

// queued is a record waiting for the OS: a copy of it, to be encoded by
// the flush, or its encoding (line).
type queued struct {
	rec  Record
	line []byte
}

// Write appends rec, setting its Seq and Time, and returns once it is
// queued; see Options.FlushDelay for when it reaches the OS. What rec
// points to is encoded later and must not change after Write (dialog
// messages never do); rec itself may. A declarations record whose digest
// the log holds already is dropped: each set is written once per run.
func (w *Writer) Write(rec *Record) error {
	if w == nil {
		return errNilWriter
	}
	return w.write(rec, false)
}

// errNilWriter is the error of a nil *Writer, which an interface holding
// it (tactics.Agent.Log, dialog.Sink) does not show as nil.
var errNilWriter = errors.New("logs: writing to a nil *logs.Writer: to log nothing, leave the log (tactics.Agent.Log, a dialog's sink) nil itself")

// write is Write; with last, rec is the run_end, its totals are those of
// the records before it, and no record is accepted after it.
func (w *Writer) write(rec *Record, last bool) error {
	if !rec.Kind.known() || !rec.hasPayload() {
		return fmt.Errorf("logs: refusing a record of kind %q without its payload", rec.Kind)
	}
	later := encodable(rec)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	if d := rec.Declarations; d != nil && w.declared[d.Digest] {
		w.mu.Unlock()
		return nil // once per run
	}
	rec.Seq = w.seq + 1
	rec.Time = time.Now().UTC()
	if last {
		t := w.totalsLocked()
		rec.RunEnd.Totals, w.ended = t, &t
	}
	if later {
		w.queue = append(w.queue, queued{rec: *rec})
	} else {
		line, err := encodeRecord(nil, rec)
		if err != nil {
			// Nothing was queued: the log stays usable.
			w.mu.Unlock()
			return fmt.Errorf("logs: encoding %s record: %w", rec.Kind, err)
		}
		w.queue = append(w.queue, queued{line: line})
	}
	if d := rec.Declarations; d != nil {
		if w.declared == nil {
			w.declared = map[string]bool{}
		}
		w.declared[d.Digest] = true
	}
	w.seq++
	w.count(rec)
	if last {
		w.closed = true // Close hands it over
		w.mu.Unlock()
		return nil
	}
	switch {
	case w.delay < 0 || len(w.queue) >= maxQueued:
		w.mu.Unlock()
		return w.Flush()
	case w.armed:
	case w.kick != nil:
		w.armed = true
		select {
		case w.kick <- struct{}{}:
		default: // a kick is queued already; its flush takes this record too
		}
	case w.timer != nil:
		w.armed = true
		w.timer.Reset(w.delay)
	}
	w.mu.Unlock()
	return nil
}

// Flush hands every record written so far to the OS.
func (w *Writer) Flush() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	if w.err != nil || len(w.queue) == 0 {
		w.mu.Unlock()
		return w.err
	}
	// Writes go on into the spare queue while this batch is encoded and
	// written; the batch's queue is the next spare.
	batch, first := w.queue, w.flushed+1
	w.queue, w.spare, w.armed = w.spare[:0], nil, false
	w.mu.Unlock()
	lost, err := w.writeBatch(batch, first)
	clear(batch) // its records may go
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spare = batch[:0]
	if err != nil {
		// Records accepted while the batch was written are lost too.
		if w.seq > lost {
			err = fmt.Errorf("logs: writing records %d to %d: %w", lost, w.seq, w.pathErr(err))
		} else {
			err = fmt.Errorf("logs: writing record %d: %w", lost, w.pathErr(err))
		}
		w.err = err
	}
	return err
}

// writeBatch encodes batch, whose first record is number first, and hands
// it to the OS about a megabyte per write. A write that fails part-way is
// undone, so the log ends on a whole record, and the error names the
// records lost.
func (w *Writer) writeBatch(batch []queued, first int64) (int64, error) {
	for i := 0; i < len(batch); {
		from := i
		lost := func(err error) (int64, error) { return first + int64(from), err }
		buf := w.buf[:0]
		for ; i < len(batch) && len(buf) < maxChunk; i++ {
			if batch[i].line != nil {
				buf = append(buf, batch[i].line...)
				continue
			}
			var err error
			if buf, err = encodeRecord(buf, &batch[i].rec); err != nil {
				// What the record points to changed after Write.
				return lost(fmt.Errorf("encoding record %d (%s): %w", first+int64(i), batch[i].rec.Kind, err))
			}
		}
		w.buf = buf[:0]
		if cap(buf) > 2*maxChunk {
			w.buf = nil // do not keep a huge record's buffer
		}
		n, err := w.w.Write(buf)
		if err == nil && w.syncEach && w.file != nil {
			err = w.file.Sync()
		}
		if err != nil {
			if n > 0 && w.file != nil {
				// Undo the partial write so the log ends on a whole line.
				_ = w.file.Truncate(w.size)
			}
			return lost(err)
		}
		w.mu.Lock()
		w.flushed = first + int64(i) - 1
		w.size += int64(n)
		w.mu.Unlock()
		w.dirty.Store(true)
	}
	return 0, nil
}

// pathErr names the run's log in err, not the temporary path it was
// created under.
func (w *Writer) pathErr(err error) error {
	var pe *fs.PathError
	if w.name != "" && errors.As(err, &pe) {
		pe.Path = w.name
	}
	return err
}

// count adds an accepted record to the run's totals.
func (w *Writer) count(rec *Record) {
	t := &w.totals
	switch rec.Kind {
	case KindRunStart:
		w.start = rec.Time
	case KindDialogOpen, KindFork:
		t.Dialogs++
	case KindMessage:
		t.Messages++
	case KindModelCall:
		t.ModelCalls++
		t.Cost = t.Cost.Add(dialog.Cost{Usage: rec.ModelCall.Usage, USD: rec.ModelCall.USD})
	case KindToolCall:
		t.ToolCalls++
	}
}

// Totals sums what the log holds so far: dialogs, messages, model and tool
// calls, their cost, and the time since run_start. Once Finish has written
// run_end, it is the totals that record holds, its duration included.
func (w *Writer) Totals() Totals {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.totalsLocked()
}

func (w *Writer) totalsLocked() Totals {
	if w.ended != nil {
		return *w.ended
	}
	t := w.totals
	t.DurationMS = float64(time.Since(w.start).Microseconds()) / 1e3
	return t
}

// Emit records a dialog event; it makes Writer a dialog.Sink.
func (w *Writer) Emit(ev dialog.Event) error {
	rec := recordOf(ev)
	return w.Write(&rec)
}

// Seq is the sequence number of the last record written.
func (w *Writer) Seq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Finish writes the run_end record, with its Totals computed from the
// records written, and closes the writer.
func (w *Writer) Finish(end RunEnd) error {
	if w == nil {
		return errNilWriter
	}
	err := w.write(&Record{Kind: KindRunEnd, RunEnd: &end}, true)
	cerr := w.Close()
	if err != nil && errors.Is(cerr, err) {
		return cerr // the same failure, reported once
	}
	return errors.Join(err, cerr)
}

// Close hands the remaining records to the OS, fsyncs the log and, for a
// Writer from Create, closes its file. Closing twice is a no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	first := false
	w.closeOnce.Do(func() { first, w.closeErr = true, w.shutdown() })
	if !first {
		return nil
	}
	return w.closeErr
}

func (w *Writer) shutdown() error {
	if w.timer != nil {
		w.timer.Stop()
	}
	close(w.stop)
	w.stopped.Wait()
	err := w.Flush()
	if w.file != nil {
		err = errors.Join(err, w.pathErr(w.file.Sync()))
		if w.owned {
			err = errors.Join(err, w.checkLinked(), w.file.Close())
		}
	}
	return err
}

// checkLinked reports a log whose file was deleted, or replaced, while the
// Writer had it open: its records went to a file no reader can find, and a
// run that ended well must not say it was recorded. It costs one stat, at
// close.
func (w *Writer) checkLinked() error {
	if w.name == "" || !atomicfile.Gone(w.file, w.at) {
		return nil
	}
	w.mu.Lock()
	n := w.seq
	w.mu.Unlock()
	return fmt.Errorf("logs: the run log %s was deleted or moved while the run wrote it: its %d records are not there; keep the log root in place until the run ends", w.name, n)
}
