#!/usr/bin/python3
"""hub_api.py calls JupyterHub's REST API with a token, for the hub tests.

    hub_api.py METHOD URL TOKEN

prints the response's body and exits 1 on an HTTP error (or no answer).
POST sends an empty JSON object, as the API's start calls expect.
"""
import sys
import urllib.request

method, url, token = sys.argv[1:]
req = urllib.request.Request(url, method=method, headers={"Authorization": "token " + token})
if method == "POST":
    req.data = b"{}"
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        print(r.read().decode())
except Exception as e:  # the tests read the exit status; the reason goes to stderr
    print("hub_api: %s %s: %s" % (method, url, e), file=sys.stderr)
    sys.exit(1)
