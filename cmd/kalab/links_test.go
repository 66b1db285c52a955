package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README is the first page a user reads; the manual in docs/ holds the rest.
const readmeMaxLines = 250

func TestREADMEFitsOnAPage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move detail into docs/", n, readmeMaxLines)
	}
}

// TestDocLinks resolves every relative link of README.md and docs/**/*.md: the file must
// exist, and a #fragment must name a heading of the target page (GitHub's anchors). No
// network: absolute URLs are not followed.
func TestDocLinks(t *testing.T) {
	pages := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages; the walk is wrong", len(pages))
	}
	anchors := map[string]map[string]bool{}
	links := 0
	for _, page := range pages {
		for _, l := range markdownLinks(t, page) {
			links++
			if err := checkLink(page, l.target, anchors); err != nil {
				t.Errorf("%s:%d: link %q: %v", strings.TrimPrefix(page, "../../"), l.line, l.target, err)
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d links in %d pages; the link pattern is wrong", links, len(pages))
	}
}

type mdLink struct {
	target string
	line   int
}

// linkPattern matches an inline link or image: [text](target) or ![alt](target "title").
var linkPattern = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// markdownLinks lists the links of a page outside fenced code blocks and code spans.
func markdownLinks(t *testing.T, page string) []mdLink {
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []mdLink
	fenced := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatch(stripCodeSpans(line), -1) {
			out = append(out, mdLink{m[1], i + 1})
		}
	}
	return out
}

var codeSpan = regexp.MustCompile("`[^`]*`")

func stripCodeSpans(line string) string { return codeSpan.ReplaceAllString(line, "``") }

// checkLink resolves one link from page; anchors caches each page's heading anchors.
func checkLink(page, target string, anchors map[string]map[string]bool) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, frag, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("no such file %s", path)
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("an anchor into a file that is not Markdown")
	}
	if anchors[file] == nil {
		a, err := headingAnchors(file)
		if err != nil {
			return err
		}
		anchors[file] = a
	}
	if !anchors[file][frag] {
		return fmt.Errorf("%s has no heading with the anchor #%s", filepath.Base(file), frag)
	}
	return nil
}

// headingAnchors are the anchors GitHub gives a page's headings: lower case, punctuation
// dropped, spaces as hyphens, a repeated anchor numbered -1, -2, ...
func headingAnchors(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	count := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := slug(text)
		if n := count[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out, nil
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Output integrity": "output-integrity",
		"CI gating: baselines, `kalab diff`, JUnit and annotations": "ci-gating-baselines-kalab-diff-junit-and-annotations",
		"Bring your own client (the exec protocol, version 1)":      "bring-your-own-client-the-exec-protocol-version-1",
		"Server presets (`server.preset`)":                          "server-presets-serverpreset",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
