"""Prints the failing cells of an executed notebook and exits 1 if any failed.

Used by run-notebooks.sh after `jupyter nbconvert --execute --allow-errors`,
because GoNB reports compile errors as HTML that nbconvert's own message
leaves out.
"""
import html
import json
import re
import sys

nb = json.load(open(sys.argv[1]))
failed = 0
for index, cell in enumerate(nb["cells"]):
    if cell["cell_type"] != "code":
        continue
    outputs = cell.get("outputs", [])
    if not any(o.get("output_type") == "error" for o in outputs):
        continue
    failed += 1
    print(f"--- cell {index} failed:")
    print("    " + "".join(cell["source"]).replace("\n", "\n    "))
    print("--- its output:")
    for o in outputs:
        if o.get("output_type") == "stream":
            text = "".join(o["text"])
        elif o.get("output_type") == "error":
            text = o.get("ename", "") + ": " + o.get("evalue", "") + "\n" + "\n".join(o.get("traceback", []))
        else:
            data = o.get("data", {})
            text = "".join(data.get("text/plain", "")) or re.sub(r"<[^>]+>", "", re.sub(r"(?s)<style.*?</style>", "", "".join(data.get("text/html", ""))))
        text = re.sub(r"\x1b\[[0-9;]*m", "", html.unescape(text)).strip()
        if text:
            text = re.sub(r"\n\s*\n+", "\n", text)
            print("    " + text[:4000].replace("\n", "\n    "))
    break  # later failures usually follow from the first
sys.exit(1 if failed else 0)
