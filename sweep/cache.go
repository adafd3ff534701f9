package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

var repliesBucket = []byte("replies")

// replyCache stores model replies in a bbolt file, keyed by cacheKey. Writes
// are transactions, so a crash loses at most the replies being written and
// never corrupts the file; the file is locked, so one process uses it at a
// time. It is safe for concurrent use.
type replyCache struct {
	db      *bolt.DB
	pending sync.WaitGroup
	// inflight holds the values being written, so Get sees them at once.
	inflight sync.Map // key -> []byte
	mu       sync.Mutex
	err      error // the first failed write
}

// openCache opens (or creates) the cache file at path. If another process
// holds it, openCache waits up to two seconds, then fails.
func openCache(path string) (*replyCache, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("cache %s is in use by another process: is this sweep (or this shard of it) already running?", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the cache: %w", err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(repliesBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the cache %s: %w", path, err)
	}
	return &replyCache{db: db}, nil
}

// cacheKey is the key of a reply: the model, the request's digest,
// the sample's repeat index and the call's position in the sample (so that
// repeats, and identical requests made at different places of a tactic,
// get replies of their own).
func cacheKey(model, digest string, repeat int, position string) string {
	h := sha256.New()
	for _, s := range []string{model, digest, strconv.Itoa(repeat), position} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

type cachedReply struct {
	Message      dialog.Message `json:"message"`
	FinishReason string         `json:"finish_reason,omitempty"`
	LatencyNS    int64          `json:"latency_ns"`
}

// Get returns the reply stored under key, if any.
func (c *replyCache) Get(key string) (*provider.Response, bool) {
	var val []byte
	if v, ok := c.inflight.Load(key); ok {
		val = v.([]byte)
	}
	_ = c.db.View(func(tx *bolt.Tx) error {
		if val != nil {
			return nil
		}
		if v := tx.Bucket(repliesBucket).Get([]byte(key)); v != nil {
			val = append([]byte(nil), v...)
		}
		return nil
	})
	if val == nil {
		return nil, false
	}
	var r cachedReply
	if err := json.Unmarshal(val, &r); err != nil {
		return nil, false // unreadable: treat as a miss
	}
	return &provider.Response{Message: r.Message, FinishReason: r.FinishReason, Latency: time.Duration(r.LatencyNS)}, true
}

// Put stores resp under key in the background; Close waits for it.
// Only successful replies belong in a cache: never put an error.
func (c *replyCache) Put(key string, resp *provider.Response) {
	val, err := json.Marshal(cachedReply{Message: resp.Message, FinishReason: resp.FinishReason, LatencyNS: int64(resp.Latency)})
	if err != nil {
		c.fail(err)
		return
	}
	c.inflight.Store(key, val)
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		defer c.inflight.Delete(key)
		if err := c.db.Batch(func(tx *bolt.Tx) error {
			return tx.Bucket(repliesBucket).Put([]byte(key), val)
		}); err != nil {
			c.fail(err)
		}
	}()
}

func (c *replyCache) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// Len is the number of replies stored.
func (c *replyCache) Len() int {
	n := 0
	_ = c.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(repliesBucket).Stats().KeyN
		return nil
	})
	return n
}

// Close waits for pending writes and closes the file. It reports the first
// write that failed, if any.
func (c *replyCache) Close() error {
	c.pending.Wait()
	err := c.db.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return fmt.Errorf("writing the cache: %w", c.err)
	}
	return err
}
