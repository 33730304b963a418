#!/usr/bin/python3
"""login.py logs in on the hub's login page as a browser would, for the hub
tests: GET /hub/login (its cookies and _xsrf field, when it has one), then
POST the user name and password.

    login.py HUB_URL USER PASSWORD [--open]

Exits 0 when the hub accepted the login (it set its login cookie), 1 when
it refused it, 2 when the hub did not answer as a login page should.
GPUMEM_LOGIN_SOURCE=ADDRESS connects from that local address (the tests'
login flood from one place). With --open, it then opens the student's running server as a browser does
(/user/USER/, through the hub's OAuth redirects) and prints where it landed
and which front end the page is: "landed on PATH: JupyterLab 4.0.11" or
"landed on PATH: the classic Notebook" (served_app); exit 1 when neither.
"""
import http.client
import http.cookiejar
import os
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class FromSource(urllib.request.HTTPHandler):
    """Connects from a given local address (GPUMEM_LOGIN_SOURCE, like
    127.0.0.66): the hub tests stand for logins from several places."""

    def __init__(self, source):
        super().__init__()
        self.source = source

    def http_open(self, req):
        return self.do_open(lambda host, **kw: http.client.HTTPConnection(host, source_address=(self.source, 0), **kw), req)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def served_app(page):
    """Which Jupyter front end an HTML page is: "JupyterLab VERSION" (its
    page config names the app), "the classic Notebook" (Notebook 6's file
    list), or None."""
    m = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)
    if m:
        try:
            config = json.loads(m.group(1))
        except ValueError:
            return None
        if config.get("appName") == "JupyterLab":
            return "JupyterLab " + config.get("appVersion", "?")
        return None
    if 'id="notebook_list"' in page:
        return "the classic Notebook"
    return None


def log_in(hub, user, password, source=None):
    """Logs in as a browser would; returns (logged in, HTTP status, the
    cookie jar, the milliseconds the two requests took)."""
    jar = http.cookiejar.CookieJar()
    handlers = [urllib.request.HTTPCookieProcessor(jar), NoRedirect]
    if source:
        handlers.append(FromSource(source))
    opener = urllib.request.build_opener(*handlers)
    t0 = time.monotonic()
    page = opener.open(hub + "/hub/login", timeout=30).read().decode()
    form = {"username": user, "password": password}
    m = re.search(r'name="_xsrf"\s+value="([^"]+)"', page)
    if m:
        form["_xsrf"] = m.group(1)
    req = urllib.request.Request(hub + "/hub/login", data=urllib.parse.urlencode(form).encode(), method="POST")
    try:
        r = opener.open(req, timeout=60)
        status = r.status
    except urllib.error.HTTPError as e:  # 302 (no redirect followed), or 403 for a refused login
        status = e.code
    ms = int((time.monotonic() - t0) * 1000)
    return any(c.name == "jupyterhub-hub-login" for c in jar), status, jar, ms


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in ([], ["--open"]):
        sys.exit(__doc__)
    hub, user, password = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    try:
        logged_in, status, jar, ms = log_in(hub, user, password, os.environ.get("GPUMEM_LOGIN_SOURCE"))
    except Exception as e:  # the hub did not answer as a login page should
        print("login: %s/hub/login: %s" % (hub, e), file=sys.stderr)
        sys.exit(2)
    print("login: %s: HTTP %d, %s in %d ms" % (user, status, "logged in" if logged_in else "refused", ms))
    if not logged_in or len(sys.argv) == 4:
        sys.exit(0 if logged_in else 1)
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    try:
        with browser.open(hub + "/user/%s/" % user, timeout=60) as r:
            path, page = urllib.parse.urlparse(r.geturl()).path, r.read().decode(errors="replace")
    except Exception as e:
        print("login: %s: opening /user/%s/: %s" % (user, user, e))
        sys.exit(1)
    app = served_app(page)
    print("login: %s: landed on %s: %s" % (user, path, app or "no Jupyter front end"))
    sys.exit(0 if app else 1)


if __name__ == "__main__":
    main()
