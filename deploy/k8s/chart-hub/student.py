#!/usr/bin/python3
"""student.py does what a student's browser does with the chart's hub, and
prints what it found, one line per check ("ok ..." or "FAIL ...").

    student.py HUB_URL USER first|again

first: log in on the hub's login page, start the server from the hub (the
spawn page), follow the redirect to the server through the hub's OAuth
login, list ~/work/course/notebooks (copied by the init container) and save
a file there. again: log in, start the server and find that file (the home
volume and the student's work survive a restart). Exit status 1 on any
failure.
"""
import http.cookiejar
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hub"))
from login import served_app  # noqa: E402

hub, user, phase = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
jar = http.cookiejar.CookieJar()
browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
failed = False


def report(ok, what):
    global failed
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    failed |= not ok


def xsrf(path):
    """The _xsrf cookie a browser sends with a request for path (the most
    specific one): the hub and the server each set their own, for /hub/ and
    for /, and Jupyter's pages send it back in the X-XSRFToken header."""
    matching = [c for c in jar if c.name == "_xsrf" and path.startswith(c.path)]
    return max(matching, key=lambda c: len(c.path)).value if matching else ""


def get(path, api=False):
    req = urllib.request.Request(hub + path)
    if api:
        req.add_header("X-XSRFToken", xsrf(path))
    with browser.open(req, timeout=60) as r:
        return r.geturl(), r.status, r.read().decode(errors="replace")


def send(method, path, body):
    """Returns the status, and the body of an error."""
    req = urllib.request.Request(hub + path, method=method, data=json.dumps(body).encode(),
                                 headers={"X-XSRFToken": xsrf(path), "Content-Type": "application/json"})
    try:
        with browser.open(req, timeout=60) as r:
            return r.status, ""
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[:500]


# The login page, then its form.
_, _, page = get("/hub/login")
token = re.search(r'name="_xsrf" value="([^"]+)"', page)
form = urllib.parse.urlencode({"username": user, "password": "any", "_xsrf": token.group(1) if token else ""}).encode()
url, status, _ = (lambda r: (r.geturl(), r.status, r.read()))(browser.open(hub + "/hub/login?next=", data=form, timeout=60))
report(status == 200 and "/login" not in url, "%s: logged in on the hub's login page (now at %s)" % (user, urllib.parse.urlparse(url).path))

# The spawn page starts the server; the hub then reports its progress.
t0 = time.time()
get("/hub/spawn/" + user)
ready = False
for _ in range(300):
    _, _, body = get("/hub/api/user", api=True)
    server = json.loads(body).get("servers", {}).get("", {})
    if server.get("ready"):
        ready = True
        break
    time.sleep(1)
report(ready, "%s: server ready %.0fs after the spawn page" % (user, time.time() - t0))
if not ready:
    sys.exit(1)

# The server's own pages: the hub's OAuth redirects log the browser in, and
# the server opens JupyterLab at the course's notebooks (values.yaml's
# singleuser.defaultUrl).
url, status, page = get("/user/%s/" % user)
path, app = urllib.parse.urlparse(url).path, served_app(page)
report(status == 200 and path == "/user/%s/lab/tree/course/notebooks" % user and (app or "").startswith("JupyterLab "),
       "%s: the server's page opened through the hub's OAuth login: %s at %s" % (user, app or "no Jupyter front end", path))

notes = "course/notebooks/my-notes.md"
if phase == "first":
    _, status, body = get("/user/%s/api/contents/course/notebooks" % user, api=True)
    names = [e["name"] for e in json.loads(body)["content"]]
    ipynb = [n for n in names if n.endswith(".ipynb")]
    report(status == 200 and "00-welcome.ipynb" in names,
           "%s: ~/work/course/notebooks holds %d notebooks (the init container's copy)" % (user, len(ipynb)))
    status, why = send("PUT", "/user/%s/api/contents/%s" % (user, notes),
                       {"type": "file", "format": "text", "content": "kept across restarts\n"})
    report(status in (200, 201), ("%s: saved %s" % (user, notes)) + ("" if status in (200, 201) else " (HTTP %d: %s)" % (status, why)))
else:
    try:
        _, status, body = get("/user/%s/api/contents/%s" % (user, notes), api=True)
        kept = json.loads(body).get("content", "") == "kept across restarts\n"
    except urllib.error.HTTPError as e:
        kept = False
    report(kept, "%s: %s is still there after the restart" % (user, notes))

sys.exit(1 if failed else 0)
