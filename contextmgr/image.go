package contextmgr

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"

	"github.com/lllm-go/lllm/dialog"
)

// imageSize returns the pixel size of img from its encoded header: PNG,
// JPEG, GIF or WebP bytes, or a base64 data URL. For anything it cannot
// read (a remote URL, a damaged header) it returns 1024x1024.
func imageSize(img *dialog.Image) (width, height int) {
	data := img.Data
	if len(data) == 0 && strings.HasPrefix(img.URL, "data:") {
		if i := strings.IndexByte(img.URL, ','); i >= 0 {
			data, _ = base64.StdEncoding.DecodeString(img.URL[i+1:])
		}
	}
	w, h, err := decodeSize(data)
	if err != nil || w <= 0 || h <= 0 {
		return 1024, 1024
	}
	return w, h
}

var errWebP = errors.New("unsupported WebP header")

// decodeSize reads the dimensions of PNG, JPEG, GIF or WebP data without
// decoding the pixels.
func decodeSize(data []byte) (width, height int, err error) {
	mime, err := dialog.SniffImage(data)
	if err != nil {
		return 0, 0, err
	}
	r := bytes.NewReader(data)
	switch mime {
	case "image/png":
		c, err := png.DecodeConfig(r)
		return c.Width, c.Height, err
	case "image/jpeg":
		c, err := jpeg.DecodeConfig(r)
		return c.Width, c.Height, err
	case "image/gif":
		c, err := gif.DecodeConfig(r)
		return c.Width, c.Height, err
	}
	return webpSize(data)
}

// webpSize reads the canvas size from a WebP file's first chunk: lossy
// ("VP8 "), lossless ("VP8L") or extended ("VP8X").
func webpSize(b []byte) (width, height int, err error) {
	if len(b) < 30 {
		return 0, 0, errWebP
	}
	switch string(b[12:16]) {
	case "VP8 ":
		// Frame tag (3 bytes), start code 9d 01 2a, then 14-bit sizes.
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, errWebP
		}
		w := binary.LittleEndian.Uint16(b[26:]) & 0x3fff
		h := binary.LittleEndian.Uint16(b[28:]) & 0x3fff
		return int(w), int(h), nil
	case "VP8L":
		// Signature 0x2f, then width-1 and height-1 in 14 bits each.
		if b[20] != 0x2f {
			return 0, 0, errWebP
		}
		v := binary.LittleEndian.Uint32(b[21:])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, nil
	case "VP8X":
		// Flags (4 bytes), then canvas width-1 and height-1 in 24 bits each.
		w := uint32(b[24]) | uint32(b[25])<<8 | uint32(b[26])<<16
		h := uint32(b[27]) | uint32(b[28])<<8 | uint32(b[29])<<16
		return int(w) + 1, int(h) + 1, nil
	}
	return 0, 0, errWebP
}
