package triple

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"golang.org/x/net/http2"
)

// A PING is always acknowledged, and promptly: at once on a connection
// with no call running; behind the answer of a call that arrived with it
// (a grpc-go client then sends half the PINGs); within a few
// milliseconds while a call runs on without answering.
func TestPingAcks(t *testing.T) {
	for _, c := range []struct {
		name string
		path string // a request sent with the PING in one write; "" for none
		want string // the frames read up to the ack
	}{
		{"idle connection", "", "ping-ack"},
		{"with a call answered at once", "/s/Echo", "headers data trailers ping-ack"},
		{"with a call that runs on", "/s/Hold", "ping-ack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{}, hostile(t))
			rc := h2raw.Dial(t, addr)
			var out bytes.Buffer
			fr := http2.NewFramer(&out, nil)
			_ = fr.WritePing(false, [8]byte{7}) // to a bytes.Buffer
			if c.path != "" {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.Block(h2raw.RequestFields(c.path)...), EndHeaders: true})
				_ = fr.WriteData(1, true, h2raw.Frame([]byte("hi")))
			}
			sent := time.Now()
			if _, err := rc.Conn.Write(out.Bytes()); err != nil {
				t.Fatal(err)
			}
			var got []string
			_ = rc.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			for len(got) == 0 || got[len(got)-1] != "ping-ack" {
				f, err := rc.Framer.ReadFrame()
				if err != nil {
					t.Fatalf("after %v: %v (read %q)", time.Since(sent), err, got)
				}
				switch f := f.(type) {
				case *http2.PingFrame:
					if f.IsAck() && f.Data == [8]byte{7} {
						got = append(got, "ping-ack")
					}
				case *http2.MetaHeadersFrame:
					if f.StreamEnded() {
						got = append(got, "trailers")
					} else {
						got = append(got, "headers")
					}
				case *http2.DataFrame:
					got = append(got, "data")
				case *http2.SettingsFrame, *http2.WindowUpdateFrame: // the connection's start
				default:
					got = append(got, fmt.Sprintf("%T", f))
				}
			}
			if s := fmt.Sprint(got); s != "["+c.want+"]" {
				t.Errorf("read %s, want [%s]", s, c.want)
			}
			// Within two of the watchdog's ticks, with room for a busy
			// machine.
			if d := time.Since(sent); d > time.Second {
				t.Errorf("acknowledged after %v", d)
			}
		})
	}
}
