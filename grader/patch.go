package grader

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A variant of an exercise (variants.go) is a unified diff against the
// reference solution's student files, as `diff -u` and `git diff` write
// it. This file parses and applies such diffs, strictly, without a patch
// program: a hunk applies exactly where its header says, after the hunks
// before it, with every context and removed line equal byte for byte (no
// fuzz, no offset); the header's counts are the hunk's; only the student
// files may be changed, created or deleted. A variant written against an
// older reference therefore fails to apply, naming its hunk, instead of
// testing code nobody reads any more.
//
// What it accepts: a description before the first file header; per file
// an optional "diff ..." line with git's "index", "new file mode" and
// "deleted file mode" lines, then "--- a/NAME" (or "--- NAME", or
// /dev/null to create it; a tab and a time stamp may follow the name),
// "+++ b/NAME" (or /dev/null to delete it) and its hunks; "\ No newline at
// end of file" after the line it qualifies. An empty line inside a hunk
// is an empty context line, as git apply takes it (editors strip the lone
// space). Renames, mode changes and binary diffs are refused.

// maxPatchNumber bounds a hunk header's line numbers and counts, so that
// no sum of them overflows.
const maxPatchNumber = 1 << 30

// devNull names the missing side of a created or deleted file.
const devNull = "/dev/null"

// patch is a parsed unified diff.
type patch struct {
	name  string // the patch file, for messages
	says  string // the description's first paragraph, on one line
	files []filePatch
}

// filePatch is the part of a patch that changes one file.
type filePatch struct {
	name   string // the file, without git's a/ or b/
	create bool   // "--- /dev/null": the file must not exist
	delete bool   // "+++ /dev/null": the hunks must empty the file
	hunks  []hunk
}

// hunk is one "@@ -oldStart,oldCount +newStart,newCount @@" and its lines.
type hunk struct {
	line               int    // the header's line in the patch
	header             string // "@@ -3,7 +3,7 @@", for messages
	oldStart, oldCount int
	newStart, newCount int
	lines              []hunkLine
}

// hunkLine is a context (' '), removed ('-') or added ('+') line; text
// ends with "\n" unless "\ No newline at end of file" followed it.
type hunkLine struct {
	op   byte
	text string
}

var hunkHeader = regexp.MustCompile(`^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@`)

// parsePatch parses the unified diff data of the patch file name.
func parsePatch(name string, data []byte) (*patch, error) {
	p := &patch{name: name}
	fail := func(n int, format string, args ...any) (*patch, error) {
		return nil, fmt.Errorf("grader: %s:%d: %s", name, n+1, fmt.Sprintf(format, args...))
	}
	lines := strings.Split(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i := 0
	var desc []string
	for ; i < len(lines) && !startsFile(lines, i); i++ {
		desc = append(desc, lines[i])
	}
	p.says = description(desc)
	seen := map[string]bool{}
	for i < len(lines) {
		if !startsFile(lines, i) {
			return fail(i, "%q: expected a hunk (@@ ...) or the next file (diff or ---)", lines[i])
		}
		if strings.HasPrefix(lines[i], "diff ") {
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "--- "); i++ {
				if l := lines[i]; !strings.HasPrefix(l, "index ") && !strings.HasPrefix(l, "new file mode ") && !strings.HasPrefix(l, "deleted file mode ") {
					return fail(i, "%q: only changes to the lines of a file are supported (no renames, modes or binary files)", l)
				}
			}
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i], "--- ") || !strings.HasPrefix(lines[i+1], "+++ ") {
			return fail(i, "expected a file header: a line \"--- a/FILE\" and a line \"+++ b/FILE\"")
		}
		oldName, newName := patchPath(lines[i][4:], "a/"), patchPath(lines[i+1][4:], "b/")
		fp := filePatch{name: oldName, create: oldName == devNull, delete: newName == devNull}
		switch {
		case fp.create && fp.delete:
			return fail(i, "both sides of the file header are %s", devNull)
		case fp.create:
			fp.name = newName
		case !fp.delete && oldName != newName:
			return fail(i, "%s becomes %s: renames are not supported", oldName, newName)
		}
		if fp.name == "" {
			return fail(i, "a file header without a file name")
		}
		if seen[fp.name] {
			return fail(i, "%s again: each file may have only one part of the patch", fp.name)
		}
		seen[fp.name] = true
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "@@"); {
			h, next, err := parseHunk(name, lines, i)
			if err != nil {
				return nil, err
			}
			fp.hunks = append(fp.hunks, h)
			i = next
		}
		if len(fp.hunks) == 0 {
			return fail(i, "%s has no hunks (@@ ...)", fp.name)
		}
		p.files = append(p.files, fp)
	}
	return p, nil
}

// parseHunk parses the hunk whose header is lines[i]; next is the line
// after it.
func parseHunk(name string, lines []string, i int) (h hunk, next int, err error) {
	fail := func(n int, format string, args ...any) (hunk, int, error) {
		return hunk{}, 0, fmt.Errorf("grader: %s:%d: %s", name, n+1, fmt.Sprintf(format, args...))
	}
	m := hunkHeader.FindStringSubmatch(lines[i])
	if m == nil {
		return fail(i, "%q is not a hunk header \"@@ -LINE,COUNT +LINE,COUNT @@\"", lines[i])
	}
	h.line, h.header = i+1, m[0]
	nums := [4]*int{&h.oldStart, &h.oldCount, &h.newStart, &h.newCount}
	for k, s := range m[1:] {
		*nums[k] = 1 // a count left out is 1
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n > maxPatchNumber {
			return fail(i, "%s: %s is too large", h.header, s)
		}
		*nums[k] = n
	}
	switch {
	case h.oldCount == 0 && h.newCount == 0:
		return fail(i, "%s: a hunk without lines", h.header)
	case h.oldCount > 0 && h.oldStart == 0, h.newCount > 0 && h.newStart == 0:
		return fail(i, "%s: lines are counted from 1", h.header)
	}
	olds, news := 0, 0 // the old and new lines read so far
	for i++; olds < h.oldCount || news < h.newCount; i++ {
		if i >= len(lines) {
			return fail(i-1, "%s: the patch ends after %d of its %d old and %d of its %d new lines", h.header, olds, h.oldCount, news, h.newCount)
		}
		l := lines[i]
		op, text := byte(' '), ""
		if l != "" {
			op, text = l[0], l[1:]
		}
		switch op {
		case ' ':
			olds++
			news++
		case '-':
			olds++
		case '+':
			news++
		default:
			return fail(i, "%s: %q is not a context, removed or added line, and the header counts %d old and %d new lines, not %d and %d", h.header, l, h.oldCount, h.newCount, olds, news)
		}
		if olds > h.oldCount || news > h.newCount {
			return fail(i, "%s: more lines than the header counts (%d old, %d new)", h.header, h.oldCount, h.newCount)
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\`) {
			i++ // "\ No newline at end of file", in any language
			if text == "" {
				return fail(i, "%s: an empty line without its newline is no line", h.header)
			}
		} else {
			text += "\n"
		}
		h.lines = append(h.lines, hunkLine{op: op, text: text})
	}
	return h, i, nil
}

// startsFile reports whether lines[i] opens the part of a patch for one
// file: a "diff" line, or a "---" line followed by a "+++" line.
func startsFile(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "diff ") ||
		strings.HasPrefix(lines[i], "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
}

// patchPath is the file name of a "---" or "+++" line after the marker:
// up to a tab (a time stamp follows), without git's prefix.
func patchPath(s, prefix string) string {
	s, _, _ = strings.Cut(s, "\t")
	if s == devNull {
		return s
	}
	return strings.TrimPrefix(s, prefix)
}

// description is the first paragraph of the lines before a patch's first
// file, on one line.
func description(lines []string) string {
	var words []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if len(words) > 0 {
				break
			}
			continue
		}
		words = append(words, l)
	}
	return strings.Join(words, " ")
}

// apply returns files (name to content; a name that is missing is a file
// that does not exist) with the patch applied, refusing to change a file
// that is not one of studentFiles. files is left as it was.
func (p *patch) apply(files map[string][]byte, studentFiles []string) (map[string][]byte, error) {
	if len(p.files) == 0 {
		return nil, fmt.Errorf("grader: %s changes no file: it needs a unified diff of some of the student files %v", p.name, studentFiles)
	}
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		out[name] = data
	}
	for _, fp := range p.files {
		if !contains(studentFiles, fp.name) {
			return nil, fmt.Errorf("grader: %s changes %s, which is not one of the student files %v", p.name, fp.name, studentFiles)
		}
		data, exists := files[fp.name]
		switch {
		case fp.create && exists:
			return nil, fmt.Errorf("grader: %s creates %s, which exists", p.name, fp.name)
		case !fp.create && !exists:
			return nil, fmt.Errorf("grader: %s changes %s, which does not exist", p.name, fp.name)
		}
		lines, err := p.applyFile(fp, splitLines(string(data)))
		if err != nil {
			return nil, err
		}
		if fp.delete {
			if len(lines) > 0 {
				return nil, fmt.Errorf("grader: %s deletes %s but leaves %d of its lines", p.name, fp.name, len(lines))
			}
			delete(out, fp.name)
			continue
		}
		out[fp.name] = []byte(strings.Join(lines, ""))
	}
	return out, nil
}

// applyFile applies fp's hunks to the lines of its file, each with its
// "\n" but the last where the file does not end with one.
func (p *patch) applyFile(fp filePatch, lines []string) ([]string, error) {
	var out []string
	pos, delta := 0, 0 // the next line of lines to copy; new lines minus old so far
	for k, h := range fp.hunks {
		where := fmt.Sprintf("grader: %s: hunk %d of %s (line %d, %s)", p.name, k+1, fp.name, h.line, h.header)
		// A header counts from 1; a side without lines names the line
		// before the place.
		at, newAt := h.oldStart-1, h.newStart-1
		if h.oldCount == 0 {
			at = h.oldStart
		}
		if h.newCount == 0 {
			newAt = h.newStart
		}
		switch {
		case at < pos:
			return nil, fmt.Errorf("%s starts before the end of the hunk before it", where)
		case at+h.oldCount > len(lines):
			return nil, fmt.Errorf("%s does not apply: it reaches line %d, and %s has %d lines", where, at+h.oldCount, fp.name, len(lines))
		case newAt != at+delta:
			return nil, fmt.Errorf("%s: its new lines would start at line %d, not %d (after the hunks before it); the header was edited by hand?", where, at+delta+1, newAt+1)
		}
		out = append(out, lines[pos:at]...)
		for _, l := range h.lines {
			if l.op == '+' {
				out = append(out, l.text)
				continue
			}
			if lines[at] != l.text {
				got, want := lines[at], l.text
				if strings.HasSuffix(got, "\n") && strings.HasSuffix(want, "\n") {
					got, want = got[:len(got)-1], want[:len(want)-1]
				}
				return nil, fmt.Errorf("%s does not apply: line %d of %s is %q, the patch expects %q (the reference changed since the patch was made?)", where, at+1, fp.name, got, want)
			}
			if l.op == ' ' {
				out = append(out, l.text)
			}
			at++
		}
		pos, delta = at, delta+h.newCount-h.oldCount
	}
	out = append(out, lines[pos:]...)
	for n, l := range out[:max(len(out)-1, 0)] {
		if !strings.HasSuffix(l, "\n") {
			return nil, fmt.Errorf("grader: %s: line %d of the new %s has no newline but lines follow it (a misplaced \"\\ No newline at end of file\")", p.name, n+1, fp.name)
		}
	}
	return out, nil
}

// splitLines splits s after each "\n"; the last line lacks it when s does
// not end with one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
