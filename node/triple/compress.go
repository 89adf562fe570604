package triple

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync"
)

// gzipCodec compresses and decompresses messages with pooled gzip
// writers and readers (a flate writer is hundreds of KiB; one per message
// would dominate the cost of compression).
type gzipCodec struct {
	writers sync.Pool // *gzip.Writer
	readers sync.Pool // *gzip.Reader
}

// errTooLarge is the error of a message that inflates past the limit.
var errTooLarge = errors.New("message too large")

// compress appends msg, gzipped, to dst.
func (z *gzipCodec) compress(dst, msg []byte) []byte {
	buf := bytes.NewBuffer(dst)
	w, _ := z.writers.Get().(*gzip.Writer)
	if w == nil {
		w = gzip.NewWriter(buf)
	} else {
		w.Reset(buf)
	}
	_, _ = w.Write(msg) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	w.Reset(io.Discard) // drop the buffer
	z.writers.Put(w)
	return buf.Bytes()
}

// decompress inflates msg, reading at most limit bytes of output: past
// them it stops with errTooLarge, so a compression bomb costs no more than
// a message at the limit.
func (z *gzipCodec) decompress(msg []byte, limit int) ([]byte, error) {
	r, _ := z.readers.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(msg))
	} else {
		err = r.Reset(bytes.NewReader(msg))
	}
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer z.readers.Put(r)
	out := make([]byte, 0, min(4*len(msg)+64, limit+1))
	for {
		if len(out) == cap(out) {
			if len(out) > limit {
				return nil, errTooLarge
			}
			out = append(out, 0)[:len(out)] // grow
			out = out[:len(out):min(cap(out), limit+1)]
		}
		n, err := r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if len(out) > limit {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
	}
}
