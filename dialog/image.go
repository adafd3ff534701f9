package dialog

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// ImageSource is where an image comes from: a file, bytes or base64 text.
// Its data is checked to really be PNG, JPEG, WebP or GIF when loaded.
type ImageSource struct {
	path string
	data []byte
	b64  string
	kind int
}

const (
	srcBytes = iota
	srcFile
	srcBase64
)

// ImageFile is the image in the file at path.
func ImageFile(path string) ImageSource { return ImageSource{path: path, kind: srcFile} }

// ImageBytes is the image encoded in data.
func ImageBytes(data []byte) ImageSource { return ImageSource{data: data, kind: srcBytes} }

// ImageBase64 is an image given as base64 text, plain or as a data URL
// ("data:image/png;base64,...").
func ImageBase64(s string) ImageSource { return ImageSource{b64: s, kind: srcBase64} }

// Load reads and validates the image.
func (s ImageSource) Load() (*Image, error) {
	var data []byte
	what := "image bytes"
	switch s.kind {
	case srcFile:
		what = fmt.Sprintf("image file %q", s.path)
		b, err := os.ReadFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		data = b
	case srcBase64:
		what = "base64 image"
		text := strings.TrimSpace(s.b64)
		if strings.HasPrefix(text, "data:") {
			i := strings.Index(text, ",")
			if i < 0 || !strings.HasSuffix(text[:i], ";base64") {
				return nil, fmt.Errorf("%s: data URL must look like data:image/png;base64,<data>", what)
			}
			text = text[i+1:]
		}
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(text); err != nil {
				return nil, fmt.Errorf("%s: not valid base64: %w", what, err)
			}
		}
		data = b
	default:
		data = bytes.Clone(s.data)
	}
	mime, err := SniffImage(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &Image{MIME: mime, Data: data}, nil
}

// SniffImage returns the MIME type of PNG, JPEG, WebP or GIF data from its
// magic bytes, or an error saying what the data is not.
func SniffImage(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png", nil
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg", nil
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif", nil
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp", nil
	}
	if len(data) == 0 {
		return "", fmt.Errorf("empty: expected a PNG, JPEG, WebP or GIF image")
	}
	head := data[:min(len(data), 8)]
	return "", fmt.Errorf("not a PNG, JPEG, WebP or GIF image (starts with % x)", head)
}

// DataURL is the image as a data URL, as providers accept it.
func (img *Image) DataURL() string {
	if img.URL != "" {
		return img.URL
	}
	return "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}
