"""Prints the text outputs of an executed notebook, cell by cell, for review."""
import json
import sys

nb = json.load(open(sys.argv[1]))
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
