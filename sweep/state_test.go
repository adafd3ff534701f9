package sweep

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Records appended at once share fsyncs, and every append returns only
// once its record is in the file, whole.
func TestStoreGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), SamplesFile)
	st, err := openStore(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &Record{Cell: "c", Row: fmt.Sprint("r", i), Status: "ok", Finished: time.Now()}
			if err := st.append(r); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records, %d fsyncs", n, st.syncs)
	if st.syncs < 1 || st.syncs > n || st.synced != n {
		t.Errorf("%d fsyncs covering %d records, want 1 to %d covering %d", st.syncs, st.synced, n, n)
	}
	rs, warnings, err := loadRecords(filepath.Dir(path))
	if err != nil || len(warnings) > 0 || len(rs.byKey) != n {
		t.Fatalf("read back %d records, warnings %v, err %v; want %d", len(rs.byKey), warnings, err, n)
	}
	// A failed fsync or write fails that append and every later one.
	if err := st.append(&Record{Cell: "c", Row: "late", Status: "ok"}); err == nil {
		t.Error("append after close succeeded")
	}
	if err := st.append(&Record{Cell: "c", Row: "later", Status: "ok"}); err == nil {
		t.Error("second append after close succeeded")
	}
}
