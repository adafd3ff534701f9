package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// DefaultSyncInterval is how often a Writer fsyncs its file when
// Options.SyncInterval is zero.
const DefaultSyncInterval = time.Second

// Options tune a Writer. The zero value is ready to use.
type Options struct {
	// SyncInterval is how often the file is fsynced while records arrive:
	// zero means DefaultSyncInterval, a negative value fsyncs after every
	// record. Each record is handed to the OS as soon as it is written, and
	// the file is always fsynced when the writer closes.
	SyncInterval time.Duration
}

// ErrClosed is returned by a Writer that has been closed.
var ErrClosed = errors.New("logs: writer closed")

// Writer appends records to a run log. It is safe for concurrent use: each
// record gets the next sequence number and is written whole, in one write,
// or not at all. After a failed write the Writer keeps returning that error.
//
// A Writer is a dialog.Sink, so dialogs can report to it directly.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	file   *os.File // nil when w is not a file
	owned  bool     // file was opened by Create and is closed by Close
	seq    int64
	size   int64 // bytes written so far, to undo a partial write
	buf    bytes.Buffer
	enc    *json.Encoder
	err    error
	closed bool
	start  time.Time
	totals Totals // of the records written so far

	syncEach bool
	dirty    atomic.Bool
	stop     chan struct{}
	stopped  sync.WaitGroup
}

// NewWriter starts a log on w by writing start as its first record. If w is
// an *os.File, it is fsynced as Options says; closing the Writer does not
// close w unless the Writer came from Create.
func NewWriter(w io.Writer, start RunStart, opts Options) (*Writer, error) {
	lw := &Writer{w: w, syncEach: opts.SyncInterval < 0}
	lw.enc = json.NewEncoder(&lw.buf)
	lw.enc.SetEscapeHTML(false)
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
	lw.setSync(opts)
	return lw, nil
}

// setSync applies the sync policy of opts; call it before sharing w.
func (w *Writer) setSync(opts Options) {
	w.syncEach = opts.SyncInterval < 0
	if w.file == nil || w.syncEach || w.stop != nil {
		return
	}
	every := opts.SyncInterval
	if every == 0 {
		every = DefaultSyncInterval
	}
	w.stop = make(chan struct{})
	w.stopped.Add(1)
	go w.syncLoop(every)
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

// Write appends rec, setting its Seq and Time.
func (w *Writer) Write(rec *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	rec.Seq = w.seq + 1
	rec.Time = time.Now().UTC()
	w.buf.Reset()
	if err := w.enc.Encode(rec); err != nil {
		// Nothing was written: the log stays usable.
		return fmt.Errorf("logs: encoding %s record: %w", rec.Kind, err)
	}
	n, err := w.w.Write(w.buf.Bytes())
	if err == nil && w.syncEach && w.file != nil {
		err = w.file.Sync()
	}
	if err != nil {
		if n > 0 && w.file != nil {
			// Undo the partial record so the log ends on a whole line.
			_ = w.file.Truncate(w.size)
		}
		w.err = fmt.Errorf("logs: writing %s record %d: %w", rec.Kind, rec.Seq, err)
		return w.err
	}
	w.seq++
	w.size += int64(n)
	w.count(rec)
	w.dirty.Store(true)
	return nil
}

// count adds a written record to the run's totals.
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
// calls, their cost, and the time since run_start.
func (w *Writer) Totals() Totals {
	w.mu.Lock()
	defer w.mu.Unlock()
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
	end.Totals = w.Totals()
	err := w.Write(&Record{Kind: KindRunEnd, RunEnd: &end})
	return errors.Join(err, w.Close())
}

// Close fsyncs the log and, for a Writer from Create, closes its file.
// Closing twice is a no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		w.stopped.Wait()
	}
	var err error
	if w.file != nil {
		err = w.file.Sync()
		if w.owned {
			err = errors.Join(err, w.file.Close())
		}
	}
	return err
}
