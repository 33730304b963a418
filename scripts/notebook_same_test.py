"""Tests for notebook-same.py: an executed copy is reused only when it was
executed from the same cells.

    /usr/bin/python3 scripts/notebook_same_test.py
"""
import io
import json
import os
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr

from scriptload import load

same = load("notebook-same")

NOTEBOOK = {"cells": [
    {"cell_type": "markdown", "source": "# Lesson\n", "metadata": {}},
    {"cell_type": "code", "source": ["x := 1\n", "fmt.Println(x)"], "outputs": [], "execution_count": None, "metadata": {}},
]}


def executed(nb):
    """nb as nbconvert writes it: outputs, counts, sources as strings."""
    out = json.loads(json.dumps(nb))
    for i, cell in enumerate(out["cells"]):
        if isinstance(cell["source"], list):
            cell["source"] = "".join(cell["source"])
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
            cell["execution_count"] = i
    out["metadata"] = {"kernelspec": {"name": "gonb"}}
    return out


class SameTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.nb = self.write("nb.ipynb", NOTEBOOK)

    def write(self, name, nb):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(nb, f)
        return path

    def verdict(self, other):
        with redirect_stderr(io.StringIO()) as err:
            code = same.main(["notebook-same.py", self.nb, other])
        return code, err.getvalue()

    def test_cases(self):
        changed = executed(NOTEBOOK)
        changed["cells"][1]["source"] = "x := 2\nfmt.Println(x)"
        extra = executed(NOTEBOOK)
        extra["cells"].append({"cell_type": "code", "source": "", "outputs": [], "metadata": {}})
        kind = executed(NOTEBOOK)
        kind["cells"][0]["cell_type"] = "raw"
        cases = {
            "executed from the same cells": (executed(NOTEBOOK), 0, ""),
            "a changed cell": (changed, 1, "cell 1"),
            "a cell more": (extra, 1, "3 cells"),
            "a cell of another kind": (kind, 1, "cell 0"),
        }
        for name, (nb, want, why) in cases.items():
            with self.subTest(name):
                code, err = self.verdict(self.write(name.replace(" ", "-") + ".ipynb", nb))
                self.assertEqual(code, want, err)
                self.assertIn(why, err)

    def test_missing_and_not_regular(self):
        code, err = self.verdict(os.path.join(self.dir, "missing.ipynb"))
        self.assertEqual(code, 1)
        self.assertIn("No such file", err)
        target = self.write("target.ipynb", executed(NOTEBOOK))
        link = os.path.join(self.dir, "link.ipynb")
        os.symlink(target, link)
        code, err = self.verdict(link)
        self.assertEqual(code, 1)
        self.assertIn("not a regular file", err)


if __name__ == "__main__":
    unittest.main()
