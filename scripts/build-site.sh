#!/usr/bin/env bash
# Renders the course as a static site: every lesson, executed, with its
# outputs and pictures, as one HTML page, plus an index, so that a reader
# can check each claim without installing anything.
#
#   scripts/build-site.sh [SITE]     (default: site)
#
# It converts the executed notebooks that scripts/run-notebooks.sh keeps in
# SITE/executed when SITE_DIR is set (make site runs both), so CI executes
# the notebooks once for the tests and the site. Pages use no network: the
# only scripts nbconvert links are Debian's local MathJax and RequireJS,
# which the lessons do not need, and they are left out.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
site=${1:-site}
executed="$site/executed"
if ! compgen -G "$executed/*.ipynb" >/dev/null; then
	echo "site: no executed notebooks in $executed; run make site (or SITE_DIR=$site bash scripts/run-notebooks.sh first)" >&2
	exit 1
fi
command -v jupyter-nbconvert >/dev/null || {
	echo "site: jupyter-nbconvert is missing; run scripts/setup.sh" >&2
	exit 1
}

jupyter nbconvert --to html --log-level=WARN --output-dir "$site" "$executed"/*.ipynb
/usr/bin/python3 "$here/scripts/site-pages.py" "$site" "$executed"/*.ipynb
echo "site: $(ls "$site"/*.html | wc -l) pages in $site/ (open $site/index.html)"
