"""Prints the text outputs of an executed notebook, cell by cell, for review;
with --check, verifies the figures the lesson's prose quotes.

    notebook-outputs.py EXECUTED.ipynb            print every cell's outputs
    notebook-outputs.py --check EXECUTED.ipynb... check quoted figures

A code cell gets a name in the lesson's fence, which scripts/nbgen keeps in
the cell's metadata ("name"):

    ```go fragmented
    ...
    ```

and the prose after it quotes that cell's output with an HTML comment
(invisible when rendered) that names the cell:

    <!-- outputs fragmented: "96 blocks kept" "allocated   147.50 MiB" -->

Several comments may follow one paragraph, one per cell. Each quoted string
must occur within one line of the text that the named cell printed, and that
cell must come before the comment, so a figure can pass only on the output
it describes: neither a neighbour's line nor an earlier cell's figure
satisfies it. A comment that names no cell, or a cell the notebook does not
have, is an error. --check prints one line per notebook and exits 1 when a
figure is missing.
"""
import json
import re
import sys

MARK = re.compile(r"<!--\s*outputs\b(.*?)-->", re.S)
NAMED = re.compile(r"^\s+([A-Za-z0-9_-]+):(.*)$", re.S)
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


def source_of(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def show(path):
    nb = json.load(open(path))
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        name = cell.get("metadata", {}).get("name")
        print(f"=== cell {index}" + (f" ({name})" if name else ""))
        for o in cell.get("outputs", []):
            if "text" in o:
                print("".join(o["text"]), end="")
            elif o.get("output_type") == "error":
                print("ERROR", o.get("ename"), o.get("evalue"))
            else:
                print("[", ", ".join(o.get("data", {}).keys()), "]")


def check_cells(cells, label="notebook"):
    """Returns (figures checked, problems) for a notebook's list of cells."""
    lines = {}  # name of a code cell above -> the lines it printed
    missing, checked = [], 0
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            name = cell.get("metadata", {}).get("name")
            if name:
                lines[name] = text_of(cell).splitlines()
            continue
        for mark in MARK.findall(source_of(cell)):
            named = NAMED.match(mark)
            if not named:
                missing.append(f"{label}: markdown cell {index}: an outputs comment must name its cell: <!-- outputs NAME: \"...\" -->")
                continue
            name, quoted = named.groups()
            figures = QUOTED.findall(quoted)
            if not figures:
                missing.append(f"{label}: markdown cell {index}: outputs {name}: quotes no figure")
            if name not in lines:
                missing.append(f"{label}: markdown cell {index}: no code cell named {name!r} comes before it")
                continue
            for figure in figures:
                checked += 1
                if not any(figure in line for line in lines[name]):
                    missing.append(f"{label}: markdown cell {index}: {figure!r} is quoted but no line of cell {name!r} prints it")
    return checked, missing


def check(path):
    """Returns the number of quoted figures and the list of those not found."""
    return check_cells(json.load(open(path))["cells"], path)


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
