"""Tests for prediction-check.py: a prediction's answer may not appear before
its cell runs.

    /usr/bin/python3 scripts/prediction_check_test.py
"""
import gc
import os
import tempfile
import unittest
import warnings

from scriptload import load

check = load("prediction-check")

FENCE = "```"


def lesson(before, box, source, after):
    return "\n\n".join([
        "# A lesson", before, box,
        FENCE + "go cell\n" + source + "\n" + FENCE,
        after,
    ]) + "\n"


OUT = '<!-- outputs cell: "reserved: 20971520 bytes" "peak 1,536.0 MiB" -->'
BOX = "> **Predict, then run.** How much is reserved?"


class PredictionTest(unittest.TestCase):
    def problems(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(text)
        try:
            return check.check(f.name)
        finally:
            os.unlink(f.name)

    def test_cases(self):
        cases = {
            "clean": (lesson("Some prose.", BOX, 'fmt.Println("reserved:", r)', OUT), 0),
            "in the paragraph before": (lesson("A segment is 20,971,520 bytes.", BOX, "fmt.Println(r)", OUT), 1),
            "two paragraphs before counts": (lesson("It holds 20_971_520.\n\nMore prose.", BOX, "fmt.Println(r)", OUT), 1),
            "three paragraphs before does not": (lesson("It holds 20971520.\n\nOne.\n\nTwo.", BOX, "fmt.Println(r)", OUT), 0),
            "in the box": (lesson("Prose.", BOX + " (1536 MiB)", "fmt.Println(r)", OUT), 1),
            "in the cell's label": (lesson("Prose.", BOX, 'fmt.Println("reserved (20971520):", r)', OUT), 1),
            "a given number is allowed": (lesson("Prose.", BOX + " 1536 MiB are asked for.", "fmt.Println(r)", OUT + " <!-- given: 1,536 -->"), 0),
            "a name is not a number": (lesson("On an H100 and float16.", BOX, "fmt.Println(r)", '<!-- outputs cell: "H100 100 GB" -->'), 0),
            "short numbers are not checked": (lesson("Two 20 MiB segments.", BOX, "fmt.Println(r)", '<!-- outputs cell: "20 MiB" -->'), 0),
            "a chart's prediction has no figures": (lesson("It holds 20971520.", BOX, "plot(r)", "The chart shows it."), 0),
        }
        for name, (text, want) in cases.items():
            with self.subTest(name):
                self.assertEqual(len(self.problems(text)), want, self.problems(text))

    def test_closes_the_lesson(self):
        # Unclosed, each lesson's file printed a ResourceWarning in make test.
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            self.problems(lesson("Some prose.", BOX, 'fmt.Println("reserved:", r)', OUT))
            gc.collect()
        self.assertEqual([str(w.message) for w in seen if issubclass(w.category, ResourceWarning)], [])

    def test_the_lessons(self):
        lessons = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lessons")
        for name in sorted(os.listdir(lessons)):
            if name.endswith(".md"):
                with self.subTest(name):
                    self.assertEqual(check.check(os.path.join(lessons, name)), [])


if __name__ == "__main__":
    unittest.main()
