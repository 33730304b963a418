#!/usr/bin/python3
"""Checks that a lesson's predictions are predictions: the answer a
"Predict" box asks for must not be given before the student runs the cell.

    prediction-check.py lessons/*.md

A prediction is a blockquote that starts with "> **Predict". Its answer is
what the prose after the cell quotes from that cell's output (a prediction
answered by a chart, or in words, has no figures to compare): the figures
of the first `<!-- outputs NAME: "..." -->` comment naming the cell that
follows the prediction (scripts/notebook-outputs.py checks that the cell
prints them). Each number of three or more digits in those figures (1,536;
4000256; 29.53) must not appear in the two paragraphs before the box, in
the box itself, or in the cell's source (a label or comment that prints
the answer beside the question), written with or without thousands
separators or underscores. A number the student is given (the cell's
input, a size the box names on purpose) is declared after the figures:

    <!-- outputs NAME: "reserved: 20971520" --> <!-- given: 4000000 -->

Prints one line per problem and exits 1 when there is one.
"""
import re
import sys

FENCE = re.compile(r"^```go(?:\s+([A-Za-z0-9_-]+))?\s*$")
MARK = re.compile(r"<!--\s*outputs\s+([A-Za-z0-9_-]+):(.*?)-->", re.S)
GIVEN = re.compile(r"<!--\s*given:(.*?)-->", re.S)
QUOTED = re.compile(r'"([^"]+)"')
# A number, not the digits of a name (H100, float16, sm_90).
NUMBER = re.compile(r"(?<![A-Za-z\d_.])\d[\d,_]*(?:\.\d+)?")


def digits(number):
    """The number as its digits (and decimal point) only: 4_000_256 and
    4,000,256 are 4000256, 1,536.0 is 1536."""
    n = number.replace(",", "").replace("_", "")
    if "." in n:
        n = n.rstrip("0").rstrip(".")
    return n


def numbers(text):
    """The numbers of text with at least three digits, normalized."""
    out = set()
    for m in NUMBER.finditer(text):
        n = digits(m.group(0)).strip(".")
        if sum(c.isdigit() for c in n) >= 3:
            out.add(n)
    return out


def blocks(text):
    """The lesson as a list of ("prose", text) and ("code", name, source)."""
    out, lines, i = [], text.split("\n"), 0
    prose = []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            out.append(("prose", "\n".join(prose)))
            prose = []
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            out.append(("code", m.group(1), "\n".join(lines[i + 1 : j])))
            i = j + 1
            continue
        prose.append(lines[i])
        i += 1
    out.append(("prose", "\n".join(prose)))
    return out


def paragraphs(prose):
    return [p for p in re.split(r"\n\s*\n", prose) if p.strip()]


def check(path):
    with open(path) as f:
        text = f.read()
    parts = blocks(text)
    problems = []
    for k, part in enumerate(parts):
        if part[0] != "prose":
            continue
        paras = paragraphs(part[1])
        for p, para in enumerate(paras):
            if not para.lstrip().startswith("> **Predict"):
                continue
            # The cell the box asks about: the next code block.
            cell = next((b for b in parts[k + 1 :] if b[0] == "code"), None)
            if cell is None or not cell[1]:
                problems.append("%s: a prediction (%r) before no named cell" % (path, para.strip()[:60]))
                continue
            name, source = cell[1], cell[2]
            rest = "\n".join(b[1] for b in parts[parts.index(cell) + 1 :] if b[0] == "prose")
            mark = next((m for m in MARK.finditer(rest) if m.group(1) == name), None)
            if mark is None:
                continue  # answered by a chart or in words: nothing to compare
            after = rest[mark.end() :]
            given = GIVEN.match(after.lstrip(" "))
            allowed = numbers(given.group(1)) if given else set()
            answers = set()
            for q in QUOTED.findall(mark.group(2)):
                answers |= numbers(q)
            answers -= allowed
            before = "\n\n".join(paras[max(0, p - 2) : p])
            for where, body in (("the two paragraphs before it", before), ("the box", para), ("the cell's source", source)):
                leaked = sorted(answers & numbers(body))
                if leaked:
                    problems.append("%s: the prediction before cell %s is answered in %s: %s (declare a number the student is given with <!-- given: N --> after the outputs comment)"
                                    % (path, name, where, ", ".join(leaked)))
    return problems


def main(paths):
    problems = []
    for path in paths:
        problems += check(path)
    for p in problems:
        print("prediction-check:", p)
    if not problems:
        print("prediction-check: %d lessons, every prediction's answer comes after its cell" % len(paths))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
