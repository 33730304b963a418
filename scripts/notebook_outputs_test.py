"""Tests for notebook-outputs.py --check: a quoted figure passes only on a
line of the cell it names.

    /usr/bin/python3 scripts/notebook_outputs_test.py
"""
import unittest

from scriptload import load

outputs = load("notebook-outputs")


def code(name, text):
    return {"cell_type": "code", "metadata": {"name": name} if name else {}, "source": "",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}


def prose(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


class CheckTest(unittest.TestCase):
    cells = [
        code("first", "kept   allocated   144.00 MiB\n"),
        code("second", "kept   allocated   147.50 MiB\nreserved    160.00 MiB\n"),
        code(None, "unnamed 99.00 MiB\n"),
    ]

    def run_check(self, comment):
        return outputs.check_cells(self.cells + [prose("Text.\n\n" + comment)])

    def test_cases(self):
        cases = [
            ("figure on a line of the named cell", '<!-- outputs second: "147.50 MiB" -->', 1, 0),
            ("two figures of one cell", '<!-- outputs second: "147.50 MiB" "160.00 MiB" -->', 2, 0),
            ("one comment per cell", '<!-- outputs first: "144.00" -->\n<!-- outputs second: "147.50" -->', 2, 0),
            ("figure printed only by a neighbour", '<!-- outputs second: "144.00 MiB" -->', 1, 1),
            ("figure split across two lines", '<!-- outputs second: "MiB\nreserved" -->', 1, 1),
            ("comment without a cell name", '<!-- outputs: "147.50 MiB" -->', 0, 1),
            ("unknown cell", '<!-- outputs third: "99.00 MiB" -->', 0, 1),
            ("no figure quoted", '<!-- outputs second: -->', 0, 1),
        ]
        for label, comment, checked, problems in cases:
            with self.subTest(label):
                got_checked, missing = self.run_check(comment)
                self.assertEqual(got_checked, checked, missing)
                self.assertEqual(len(missing), problems, missing)

    def test_cell_after_the_prose_does_not_count(self):
        cells = [prose('<!-- outputs later: "1.00 MiB" -->'), code("later", "1.00 MiB\n")]
        _, missing = outputs.check_cells(cells)
        self.assertEqual(len(missing), 1)
        self.assertIn("no code cell named 'later'", missing[0])


if __name__ == "__main__":
    unittest.main()
