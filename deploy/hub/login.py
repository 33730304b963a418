#!/usr/bin/python3
"""login.py logs in on the hub's login page as a browser would, for the hub
tests: GET /hub/login (its cookies and _xsrf field, when it has one), then
POST the user name and password.

    login.py HUB_URL USER PASSWORD

Exits 0 when the hub accepted the login (it set its login cookie), 1 when
it refused it, 2 when the hub did not answer as a login page should.
"""
import http.cookiejar
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    hub, user, password = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    try:
        page = opener.open(hub + "/hub/login", timeout=30).read().decode()
    except Exception as e:
        print("login: GET %s/hub/login: %s" % (hub, e), file=sys.stderr)
        sys.exit(2)
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
    logged_in = any(c.name == "jupyterhub-hub-login" for c in jar)
    print("login: %s: HTTP %d, %s" % (user, status, "logged in" if logged_in else "refused"))
    sys.exit(0 if logged_in else 1)


if __name__ == "__main__":
    main()
