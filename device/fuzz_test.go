package device

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"testing"
)

// FuzzGreyFromJPEG: any bytes as a camera's MJPEG frame or a replayed
// JPEG give a grey frame of the size asked for, or ErrBadFrame or
// ErrFrameSize; never a panic, and never a decode of a frame whose header
// claims more than MaxFramePixels. Inputs are capped at 64 KiB.
func FuzzGreyFromJPEG(f *testing.F) {
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 16, 8)), nil)
	f.Add(buf.Bytes(), 16, 8)
	f.Add(buf.Bytes()[:buf.Len()/2], 0, 0)
	huge := append([]byte(nil), buf.Bytes()...)
	i := bytes.Index(huge, []byte{0xff, 0xc0})
	huge[i+5], huge[i+6], huge[i+7], huge[i+8] = 0xff, 0xff, 0xff, 0xff
	f.Add(huge, 0, 0)
	f.Fuzz(func(t *testing.T, data []byte, w, h int) {
		if len(data) > 1<<16 {
			return
		}
		want := image.Pt(w&0x3ff, h&0x3ff)
		if want.X == 0 || want.Y == 0 {
			want = image.Point{}
		}
		var fr Frame
		err := GreyFromJPEG(&fr, data, want)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrFrameSize) {
				t.Fatalf("error %v is neither ErrBadFrame nor ErrFrameSize", err)
			}
			return
		}
		if want != (image.Point{}) && fr.Gray.Rect.Size() != want {
			t.Fatalf("frame %v, asked for %v", fr.Gray.Rect, want)
		}
	})
}

// FuzzParseY4MHeader: any stream head gives a size within 16384×16384 and
// a chroma length that follows from it, or ErrFormat.
func FuzzParseY4MHeader(f *testing.F) {
	f.Add([]byte("YUV4MPEG2 W640 H480 F30:1 Ip A1:1 C420jpeg\nFRAME\n"))
	f.Add([]byte("YUV4MPEG2 W3 H3 Cmono\n"))
	f.Add([]byte("YUV4MPEG2 W99999999999 H1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return
		}
		w, h, chroma, rest, err := parseY4MHeader(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		if w <= 0 || h <= 0 || w > 16384 || h > 16384 || chroma < 0 || chroma > 2*w*h || len(rest) >= len(data) {
			t.Fatalf("%d×%d, chroma %d, %d bytes left of %d", w, h, chroma, len(rest), len(data))
		}
	})
}

// FuzzSplitJPEGs: splitting any bytes into JPEGs terminates and yields
// pieces that start with SOI and end with EOI, in order, inside the input.
func FuzzSplitJPEGs(f *testing.F) {
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8)), nil)
	two := append(append([]byte(nil), buf.Bytes()...), buf.Bytes()...)
	f.Add(two)
	f.Add(two[:len(two)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		total := 0
		splitJPEGs(data, func(j []byte) bool {
			total += len(j)
			if len(j) < 4 || j[0] != 0xff || j[1] != 0xd8 || j[len(j)-2] != 0xff || j[len(j)-1] != 0xd9 {
				t.Fatalf("piece %x… is not SOI … EOI", j[:min(len(j), 8)])
			}
			return true
		})
		if total > len(data) {
			t.Fatalf("pieces hold %d bytes of %d", total, len(data))
		}
	})
}
