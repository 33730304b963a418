package viz

import "testing"

func TestTimeline(t *testing.T) {
	p, err := Timeline("two streams", "ms",
		Lane{Name: "copy", Spans: []Span{{Start: 0, End: 1, Label: "b0"}, {Start: 1, End: 2, Label: "b1"}}},
		Lane{Name: "compute", Spans: []Span{{Start: 1, End: 2.5, Label: "b0"}}})
	if err != nil {
		t.Fatal(err)
	}
	png, err := PNG(p, 0, 0)
	if err != nil || len(png) == 0 {
		t.Fatalf("PNG: %v (%d bytes)", err, len(png))
	}
	if _, err := Timeline("bad", "ms", Lane{Name: "x", Spans: []Span{{Start: 2, End: 1}}}); err == nil {
		t.Fatal("a span that ends before it starts was accepted")
	}
	if _, err := Timeline("none", "ms"); err == nil {
		t.Fatal("a timeline without lanes was accepted")
	}
}
