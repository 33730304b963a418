"""Prints the text outputs of an executed notebook, cell by cell, for review;
with --check, verifies the figures the lesson's prose quotes.

    notebook-outputs.py EXECUTED.ipynb            print every cell's outputs
    notebook-outputs.py --check EXECUTED.ipynb... check quoted figures

A lesson marks the figures its prose quotes from the outputs with an HTML
comment after the paragraph (invisible when rendered):

    <!-- outputs: "4000256" "20971520" -->

Each quoted string must occur in the text output of some code cell above
that markdown cell, so a change that moves a number fails the check instead
of leaving the prose wrong. --check prints one line per notebook and exits 1
when a figure is missing.
"""
import json
import re
import sys

MARK = re.compile(r"<!--\s*outputs:(.*?)-->", re.S)
QUOTED = re.compile(r'"([^"]+)"')


def text_of(cell):
    """The text a code cell printed (stdout, stderr, and text/plain results)."""
    parts = []
    for o in cell.get("outputs", []):
        if "text" in o:
            parts.append("".join(o["text"]))
        elif "data" in o and "text/plain" in o["data"]:
            parts.append("".join(o["data"]["text/plain"]))
    return "".join(parts)


def show(path):
    nb = json.load(open(path))
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        print(f"=== cell {index}")
        for o in cell.get("outputs", []):
            if "text" in o:
                print("".join(o["text"]), end="")
            elif o.get("output_type") == "error":
                print("ERROR", o.get("ename"), o.get("evalue"))
            else:
                print("[", ", ".join(o.get("data", {}).keys()), "]")


def check(path):
    """Returns the list of quoted figures missing from the outputs above them."""
    nb = json.load(open(path))
    seen = ""
    missing, checked = [], 0
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code":
            seen += text_of(cell) + "\n"
            continue
        for mark in MARK.findall(source):
            for figure in QUOTED.findall(mark):
                checked += 1
                if figure not in seen:
                    missing.append(f"{path}: markdown cell {index}: {figure!r} is quoted but no output above prints it")
    return checked, missing


def main(argv):
    if argv and argv[0] == "--check":
        failed = False
        for path in argv[1:]:
            checked, missing = check(path)
            status = "ok" if not missing else "FAILED"
            print(f"quoted figures: {path}: {checked} checked, {status}")
            for m in missing:
                print("   ", m)
            failed = failed or bool(missing)
        return 1 if failed else 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    show(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
