package device

import (
	"bytes"
	"image"
	"image/jpeg"
	"sync"
)

// Many UVC cameras send MJPEG frames without Huffman tables (no DHT
// segment): the decoder is to use the standard tables of ITU-T T.81
// Annex K.3. Go's decoder does not assume them, so withHuffmanTables puts
// them in. They are taken from Go's own JPEG encoder, which always writes
// those standard tables, rather than transcribed by hand.

var (
	dhtOnce     sync.Once
	standardDHT []byte // one DHT segment, marker included, with the four standard tables
)

func loadStandardDHT() {
	var buf bytes.Buffer
	// Three components so that the chrominance tables are written too.
	if err := jpeg.Encode(&buf, image.NewYCbCr(image.Rect(0, 0, 8, 8), image.YCbCrSubsampleRatio444), nil); err != nil {
		panic("device: encoding a reference JPEG: " + err.Error())
	}
	b := buf.Bytes()
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			break
		}
		marker := b[i+1]
		n := int(b[i+2])<<8 | int(b[i+3])
		if marker == 0xc4 {
			standardDHT = append([]byte(nil), b[i:i+2+n]...)
			return
		}
		if marker == 0xda {
			break
		}
		i += 2 + n
	}
	panic("device: Go's JPEG encoder wrote no DHT segment")
}

// withHuffmanTables returns src unchanged if it has a DHT segment before
// its scan, else a copy with the standard tables inserted before the SOS
// marker. Anything it cannot walk is returned as is for the decoder to
// report.
func withHuffmanTables(src []byte) []byte {
	if len(src) < 4 || src[0] != 0xff || src[1] != 0xd8 {
		return src
	}
	for i := 2; i+4 <= len(src); {
		if src[i] != 0xff {
			return src
		}
		marker := src[i+1]
		switch {
		case marker == 0xff: // fill byte
			i++
			continue
		case marker == 0xc4:
			return src
		case marker == 0xda:
			dhtOnce.Do(loadStandardDHT)
			out := make([]byte, 0, len(src)+len(standardDHT))
			out = append(out, src[:i]...)
			out = append(out, standardDHT...)
			return append(out, src[i:]...)
		case marker >= 0xd0 && marker <= 0xd7, marker == 0x01:
			i += 2 // markers without a length
			continue
		}
		n := int(src[i+2])<<8 | int(src[i+3])
		if n < 2 {
			return src
		}
		i += 2 + n
	}
	return src
}

// splitJPEGs calls fn with each JPEG image in a concatenated MJPEG stream
// (SOI … EOI, one after another). It stops early if fn returns false.
func splitJPEGs(data []byte, fn func([]byte) bool) {
	for {
		start := bytes.Index(data, []byte{0xff, 0xd8})
		if start < 0 {
			return
		}
		data = data[start:]
		end := jpegEnd(data)
		if end < 0 {
			return // truncated last frame
		}
		if !fn(data[:end]) {
			return
		}
		data = data[end:]
	}
}

// jpegEnd returns the length of the JPEG image at the start of b: up to and
// including its EOI marker, skipping over marker segments so that bytes
// inside them are not mistaken for EOI; -1 if it is truncated.
func jpegEnd(b []byte) int {
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return -1
		}
		marker := b[i+1]
		if marker == 0xd9 {
			return i + 2
		}
		if marker == 0xff {
			i++
			continue
		}
		if marker >= 0xd0 && marker <= 0xd7 || marker == 0x01 {
			i += 2
			continue
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		i += 2 + n
		if marker == 0xda {
			// Entropy-coded data follows: it ends at the first marker that
			// is not a stuffed 0xFF00 or a restart marker.
			for i+1 < len(b) {
				if b[i] == 0xff && b[i+1] != 0 && !(b[i+1] >= 0xd0 && b[i+1] <= 0xd7) {
					break
				}
				i++
			}
		}
	}
	if i+2 <= len(b) && b[i] == 0xff && b[i+1] == 0xd9 {
		return i + 2
	}
	return -1
}
