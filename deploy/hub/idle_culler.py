#!/usr/bin/python3
"""idle_culler.py stops students' servers that have been idle too long, as
a service the hub starts (jupyterhub_config.py; Debian has no package of
jupyterhub-idle-culler). The home stays; the next login starts a fresh
server. It runs as the hub's user, with a token that may only list users,
read their activity and stop servers.

    idle_culler.py TIMEOUT_SECONDS [--once]

It checks every TIMEOUT/10 seconds (at least 5, at most 300); --once checks
once and exits (the tests). A server's
activity is what the hub records: the browser's requests and the kernels'
messages both count, so a long computation is not stopped.
"""
import datetime
import json
import os
import sys
import time
import urllib.request


def api(method, path):
    req = urllib.request.Request(os.environ["JUPYTERHUB_API_URL"] + path, method=method,
                                 headers={"Authorization": "token " + os.environ["JUPYTERHUB_API_TOKEN"]})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return json.loads(body) if body else None


def parse_time(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def cull(timeout):
    now = datetime.datetime.now(datetime.timezone.utc)
    for user in api("GET", "/users?state=ready"):
        for name, server in user.get("servers", {}).items():
            last = server.get("last_activity") or server.get("started")
            if not server.get("ready") or not last:
                continue
            idle = (now - parse_time(last)).total_seconds()
            if idle > timeout:
                path = "/users/%s/servers/%s" % (user["name"], name) if name else "/users/%s/server" % user["name"]
                api("DELETE", path)
                print("idle-culler: stopped %s's server, idle for %d s" % (user["name"], idle), flush=True)


def main():
    args = sys.argv[1:]
    once = "--once" in args
    args = [a for a in args if a != "--once"]
    if len(args) != 1 or not args[0].isdigit():
        sys.exit(__doc__)
    timeout = int(args[0])
    if once:
        cull(timeout)
        return
    every = min(300, max(5, timeout // 10))
    while True:
        try:
            cull(timeout)
        except Exception as e:  # the hub restarting, for instance: try again next round
            print("idle-culler: %s" % e, file=sys.stderr, flush=True)
        time.sleep(every)


if __name__ == "__main__":
    main()
