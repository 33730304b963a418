"""Exits 0 when an executed notebook was executed from this notebook.

    notebook-same.py NOTEBOOK EXECUTED

Both must hold the same cells in the same order: the same kinds and the
same sources (outputs, execution counts and metadata aside). run-notebooks.sh
uses it to reuse the notebooks that make image-test executed in the
classroom image (NOTEBOOKS_EXECUTED) instead of executing them twice in
CI; any difference, or a file that is missing or not a regular file, means
the notebook is executed again. Prints why not on stderr.
"""
import json
import os
import stat
import sys


def cells(path):
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is not a regular file")
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    out = []
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        out.append((cell.get("cell_type"), source))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        want, got = cells(argv[1]), cells(argv[2])
    except (OSError, ValueError) as e:
        print(f"notebook-same: {e}", file=sys.stderr)
        return 1
    if len(want) != len(got):
        print(f"notebook-same: {argv[2]} has {len(got)} cells, {argv[1]} has {len(want)}", file=sys.stderr)
        return 1
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            print(f"notebook-same: cell {i} of {argv[2]} differs from {argv[1]}'s", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
