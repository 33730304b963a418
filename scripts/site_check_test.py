"""Tests for site-check.py in headless Chromium: a sound site passes with
one Chromium for all its pages; a broken image, an error output or a page
the index does not link fail.

    /usr/bin/python3 scripts/site_check_test.py
"""
import base64
import io
import os
import shutil
import subprocess
import tempfile
import unittest
from contextlib import redirect_stdout

from scriptload import load

check = load("site-check")

# A 1×1 PNG.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360f8cfc0f01f0005000201a5f6aa3c0000000049454e44ae426082")).decode()
GOOD = f'<html><body><p>lesson</p><img src="data:image/png;base64,{PNG}"></body></html>'
BROKEN_IMAGE = '<html><body><img src="data:image/png;base64,AAAA"></body></html>'
ERROR_OUTPUT = ('<html><body><div data-mime-type="application/vnd.jupyter.stderr">'
                'panic: boom</div></body></html>')


@unittest.skipUnless(check.chromium(), "Chromium is not installed")
class SiteCheckTest(unittest.TestCase):
    def site(self, pages, linked=None):
        """A site of pages (name → HTML) whose index links linked (default all)."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for name, text in pages.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        links = "".join(f'<a href="{n}">{n}</a>' for n in (pages if linked is None else linked))
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write(f"<html><body>{links}</body></html>")
        return d

    def run_check(self, site):
        runs = []
        real = subprocess.run

        def counting(*args, **kwargs):
            runs.append(args[0])
            return real(*args, **kwargs)

        out = io.StringIO()
        check.subprocess.run = counting
        try:
            with redirect_stdout(out):
                status = check.main(site)
        finally:
            check.subprocess.run = real
        return status, out.getvalue(), len(runs)

    def test_sound_site_passes_in_one_chromium(self):
        status, out, runs = self.run_check(self.site({"00-a.html": GOOD, "01-b.html": GOOD}))
        self.assertEqual(status, 0, out)
        self.assertIn("01-b.html                        images   1 (broken 0), error outputs 0", out)
        self.assertEqual(runs, 1, "one Chromium for the whole site")

    def test_broken_image_fails(self):
        status, out, _ = self.run_check(self.site({"00-a.html": GOOD, "01-b.html": BROKEN_IMAGE}))
        self.assertEqual(status, 1, out)
        self.assertIn("FAILED site check: 01-b.html", out)
        self.assertIn("(broken 1)", out)

    def test_error_output_fails(self):
        status, out, _ = self.run_check(self.site({"00-a.html": ERROR_OUTPUT}))
        self.assertEqual(status, 1, out)
        self.assertIn("error outputs 1", out)

    def test_unlinked_page_fails(self):
        status, out, _ = self.run_check(self.site({"00-a.html": GOOD, "01-b.html": GOOD}, linked=["00-a.html"]))
        self.assertEqual(status, 1, out)
        self.assertIn("has no link to 01-b.html", out)


if __name__ == "__main__":
    unittest.main()
