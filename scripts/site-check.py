"""Checks the static site in headless Chromium: every page loads, every
image it holds decodes, no output is an error, and the index links to
every lesson page. nbconvert draws error outputs and text a cell wrote to
stderr alike; the stderr texts are counted from the executed notebook in
SITE/executed and reported, not failed (a program may log to stderr).

    site-check.py [SITE]        (default: site)

Each page is opened from a temporary copy to which a few lines of script
are added; on the load event they record, on <body>, how many images the
page has, how many failed to decode, and how many error outputs it shows.
One Chromium (Debian's chromium package) opens a harness page that loads
the copies one after another in a frame and gathers their records on its
own <body>; Chromium prints the resulting DOM (--dump-dom), and this
script reads the records. (A Chromium per page took 1.7 s each, 1 s of it
Chromium starting: 19 s for the site.) A page whose record is missing
from the harness's is opened on its own, as before. Exits 1 on any
failure; prints SKIP and exits 0 when Chromium is not installed.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length;
  var errors = document.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]').length;
  document.body.setAttribute('data-site-check', JSON.stringify({images: imgs.length, broken: broken, errors: errors}));
});
</script>
"""
RECORD = re.compile(r'data-site-check="([^"]*)"')
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=10000", "--dump-dom"]


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href"]


def read(path):
    with open(path) as f:
        return f.read()


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return os.environ.get("CHROMIUM") if os.environ.get("CHROMIUM") and os.path.exists(os.environ["CHROMIUM"]) else None


# The harness: each copy in turn in a frame (file:// pages may read each
# other's documents with --allow-file-access-from-files); a frame's load
# event comes after its page's own, when PROBE has made its record.
HARNESS = """<!DOCTYPE html><html><body><script>
var pages = %s, records = {};
function next(i) {
  if (i === pages.length) {
    document.body.setAttribute('data-site-check', JSON.stringify(records));
    return;
  }
  var frame = document.createElement('iframe');
  frame.style.width = '1200px';
  frame.style.height = '900px';
  frame.onload = function () {
    try {
      var record = frame.contentDocument.body.getAttribute('data-site-check');
      if (record) { records[pages[i]] = JSON.parse(record); }
    } catch (e) {}
    frame.remove();
    next(i + 1);
  };
  frame.src = pages[i];
  document.body.appendChild(frame);
}
window.addEventListener('load', function () { next(0); });
</script></body></html>
"""


def probed_copy(page, tmp):
    """Writes page with PROBE added to tmp; returns the copy's path."""
    copy = os.path.join(tmp, os.path.basename(page))
    text = read(page)
    text = text.replace("</body>", PROBE + "</body>", 1) if "</body>" in text else text + PROBE
    with open(copy, "w") as f:
        f.write(text)
    return copy


def dump(browser, url, tmp, flags=()):
    """Runs headless Chromium on url; returns its record (parsed) and, when
    there is none, the end of what it wrote to stderr."""
    profile = tempfile.mkdtemp(dir=tmp)
    out = subprocess.run([browser, *FLAGS, *flags, "--user-data-dir=" + profile, url],
                         capture_output=True, text=True, timeout=300)
    m = RECORD.search(out.stdout)
    if not m:
        return None, out.stderr[-2000:]
    return json.loads(html.unescape(m.group(1))), ""


def probe_all(browser, pages, tmp):
    """The records of pages, by name, from one Chromium; pages missing
    from them did not report through the harness. Their probed copies are
    left in tmp, under their names."""
    names = [os.path.basename(probed_copy(p, tmp)) for p in pages]
    harness = os.path.join(tmp, "site-check-harness.html")
    with open(harness, "w") as f:
        f.write(HARNESS % json.dumps(names))
    records, _ = dump(browser, "file://" + harness, tmp, ["--allow-file-access-from-files"])
    return records if isinstance(records, dict) else {}


def stderr_streams(site, page):
    """The stderr outputs of the executed notebook behind page (0 if none)."""
    nb = os.path.join(site, "executed", os.path.splitext(page)[0] + ".ipynb")
    if not os.path.exists(nb):
        return 0
    cells = json.loads(read(nb))["cells"]
    return sum(1 for c in cells for o in c.get("outputs", [])
               if o.get("output_type") == "stream" and o.get("name") == "stderr")


def main(site):
    browser = chromium()
    if not browser:
        print("SKIP site check: Chromium not installed (apt-get install chromium)")
        return 0
    index = os.path.join(site, "index.html")
    if not os.path.exists(index):
        print(f"site check: {index} is missing; run make site", file=sys.stderr)
        return 1
    parser = Links()
    parser.feed(read(index))
    pages = [os.path.join(site, h) for h in parser.hrefs if h.endswith(".html")]
    failures = []
    for page in pages:
        if not os.path.exists(page):
            failures.append(f"{index} links to {page}, which does not exist")
    lessons = sorted(p for p in os.listdir(site) if p.endswith(".html") and p != "index.html")
    for name in lessons:
        if os.path.join(site, name) not in pages:
            failures.append(f"{index} has no link to {name}")
    # Every relative link of every page leads to a page of the site.
    for name in lessons:
        links = Links()
        links.feed(read(os.path.join(site, name)))
        for h in links.hrefs:
            target = h.split("#")[0]
            if not target or "://" in h or h.startswith(("#", "mailto:", "data:")):
                continue
            if not os.path.exists(os.path.join(site, target)):
                failures.append(f"{name} links to {h}, which the site does not hold")
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        names = ["index.html"] + lessons
        records = probe_all(browser, [os.path.join(site, n) for n in names], tmp)
        for name in names:
            page = os.path.join(site, name)
            want = read(page).count('src="data:image/')
            record, why = records.get(name), ""
            if record is None:  # alone, as the harness did not report it
                record, why = dump(browser, "file://" + os.path.join(tmp, name), tmp)
            if record is None:
                failures.append(f"{name}: did not finish loading in Chromium\n{why}")
                continue
            logged = stderr_streams(site, name)
            errors = record["errors"] - logged
            line = f"site check: {name:32s} images {record['images']:3d} (broken {record['broken']}), error outputs {errors}"
            if logged:
                line += f", stderr outputs {logged}"
            print(line)
            if record["broken"] or errors or record["images"] < want:
                failures.append(line + f"; expected {want} images, none broken, no error outputs")
    print(f"site check: {len(lessons) + 1} pages in {time.time() - start:.1f}s")
    for f in failures:
        print("FAILED", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "site"))
