package generated

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var part = Part{Begin: "<!-- begin -->", End: "<!-- end -->"}

func TestReplace(t *testing.T) {
	tests := []struct {
		name, doc, text, want string
	}{
		{
			name: "replaces the lines between the markers",
			doc:  "# Title\n<!-- begin -->\nold\nlines\n<!-- end -->\nprose\n",
			text: "new\n",
			want: "# Title\n<!-- begin -->\nnew\n<!-- end -->\nprose\n",
		},
		{
			name: "fills an empty part",
			doc:  "<!-- begin -->\n<!-- end -->\n",
			text: "| a |\n",
			want: "<!-- begin -->\n| a |\n<!-- end -->\n",
		},
		{
			name: "a marker quoted within a line is not a marker",
			doc:  "see `<!-- end -->`\n<!-- begin -->\nold\n<!-- end -->\n",
			text: "new\n",
			want: "see `<!-- end -->`\n<!-- begin -->\nnew\n<!-- end -->\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "doc.md")
			if err := os.WriteFile(file, []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := part.Check(file); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := part.Replace(file, tt.text); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplaceWithoutMarkers(t *testing.T) {
	for _, doc := range []string{
		"no markers\n",
		"<!-- begin -->\nno end\n",
		"<!-- end -->\n<!-- begin -->\n",
		"<!-- begin --> and <!-- end --> on one line\n",
	} {
		file := filepath.Join(t.TempDir(), "doc.md")
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := part.Check(file); err == nil || !strings.Contains(err.Error(), "has no generated part") {
			t.Errorf("Check of %q: %v, want no generated part", doc, err)
		}
		if err := part.Replace(file, "new\n"); err == nil {
			t.Errorf("Replace of %q: no error", doc)
		}
		if got, _ := os.ReadFile(file); string(got) != doc {
			t.Errorf("Replace of %q changed it to %q", doc, got)
		}
	}
}
