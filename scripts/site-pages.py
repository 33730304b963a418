"""Finishes the pages nbconvert wrote for make site: drops the script tags
that point at Debian's local files (file:///usr/share/javascript/...), which
no reader of the site has and the lessons do not use; turns the lessons'
links to each other (NN-name.ipynb) into links to their pages
(NN-name.html), and links into the course's folders (exercises/...), which
the site does not hold, into their path as code; and writes index.html, one
link per lesson with its title.

    site-pages.py SITE EXECUTED.ipynb...
"""
import html
import json
import os
import re
import sys

LESSON_LINK = re.compile(r'href="(\d\d-[a-z0-9-]+)\.ipynb(#[^"]*)?"')
COURSE_LINK = re.compile(r'<a href="\.\./([^"]+)">(.*?)</a>', re.S)
LOCAL_SCRIPT = re.compile(r'<script[^>]*src="file:///usr/share/javascript/[^"]*"[^>]*>\s*</script>\s*', re.S)


def title_of(path):
    """The first '# ' heading of the notebook's first markdown cell."""
    nb = json.load(open(path))
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in source.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        break
    return os.path.splitext(os.path.basename(path))[0]


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(site, notebooks):
    rows = []
    for nb in sorted(notebooks):
        name = os.path.splitext(os.path.basename(nb))[0]
        page = os.path.join(site, name + ".html")
        text = open(page).read()
        text = LOCAL_SCRIPT.sub("", text)
        text = LESSON_LINK.sub(lambda m: 'href="%s.html%s"' % (m.group(1), m.group(2) or ""), text)
        text = COURSE_LINK.sub(lambda m: '%s (<code>%s</code> in the course)' % (m.group(2), html.escape(m.group(1))), text)
        write(page, text)
        rows.append(f'<li><a href="{html.escape(name)}.html">{html.escape(title_of(nb))}</a></li>')
    index = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>GPU memory management, in Go</title>
<style>body{font-family:sans-serif;max-width:44em;margin:2em auto;line-height:1.5}li{margin:.3em 0}</style>
</head>
<body>
<h1>GPU memory management, in Go</h1>
<p>Every lesson of the course, executed, with its outputs and pictures. The
notebooks in <code>notebooks/</code> are the same lessons to run yourself
(<code>make lab</code>).</p>
<ol>
%s
</ol>
</body>
</html>
""" % "\n".join(rows)
    write(os.path.join(site, "index.html"), index)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2:])
