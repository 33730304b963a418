#!/usr/bin/python3
"""launcher.py runs, on the host, the student servers that the test hub's
PodmanKubeSpawner asks for: what KubeSpawner and the kubelet do for a pod.

    launcher.py SPAWN_DIR IMAGE

It watches SPAWN_DIR (shared with the hub's container) for requests:

    USER.start.json  {"port", "cmd", "env", "uid", "fs_gid", "mem_limit",
                      "cpu_limit", "home_mount", "init": [{"command", "uid"}]}
    USER.stop        stop the server

and answers with USER.started (the container's name), USER.failed (why) or
USER.exit (the exit code, once the server has ended by itself). Each student
has a persistent volume, gpumem-chart-home-USER, mounted at home_mount, like
the chart's dynamic storage; the init containers run first with the volume
at /mnt/work, like the chart's initContainers. Containers share the host's
network, so the hub (127.0.0.1) and the servers reach each other.
"""
import json
import os
import subprocess
import sys
import time

RUN = ["podman", "run", "--runtime", "runc",
       "--ulimit", "nofile=16384:16384", "--ulimit", "nproc=16384:16384", "--network", "host"]


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def container(user):
    return "gpumem-chart-" + user


def volume(user):
    return "gpumem-chart-home-" + user


def start(spawn, image, user, req):
    if subprocess.run(["podman", "volume", "exists", volume(user)]).returncode != 0:
        subprocess.run(["podman", "volume", "create", volume(user)], check=True, capture_output=True)
        # A new volume belongs to root; the chart's fsGroup makes it
        # writable by the user's group, which a chown stands in for here.
        subprocess.run(RUN + ["--rm", "--user", "0", "-v", volume(user) + ":/mnt/work", image,
                              "chown", "%d:%d" % (req["uid"], req["fs_gid"]), "/mnt/work"],
                       check=True, capture_output=True)
    for init in req.get("init", []):
        subprocess.run(RUN + ["--rm", "--user", str(init["uid"]), "-v", volume(user) + ":/mnt/work", image]
                       + init["command"], check=True, capture_output=True, timeout=300)
    env = []
    for k, v in req["env"].items():
        env += ["-e", "%s=%s" % (k, v)]
    subprocess.run(["podman", "rm", "-f", container(user)], capture_output=True)
    subprocess.run(RUN + ["-d", "--name", container(user),
                          "--user", "%d:%d" % (req["uid"], req["fs_gid"]),
                          "--memory", req["mem_limit"], "--cpus", str(req["cpu_limit"]),
                          "-v", volume(user) + ":" + req["home_mount"]]
                   + env + [image] + req["cmd"], check=True, capture_output=True)
    write(os.path.join(spawn, user + ".started"), container(user))


def main():
    spawn, image = sys.argv[1], sys.argv[2]
    running = set()
    while True:
        for name in sorted(os.listdir(spawn)):
            path = os.path.join(spawn, name)
            if name.endswith(".start.json"):
                user = name[: -len(".start.json")]
                with open(path) as f:
                    req = json.load(f)
                os.remove(path)
                try:
                    start(spawn, image, user, req)
                    running.add(user)
                except subprocess.CalledProcessError as e:
                    write(os.path.join(spawn, user + ".failed"),
                          "%s: %s" % (" ".join(e.cmd[:3]), (e.stderr or b"").decode(errors="replace")[-2000:]))
                except Exception as e:  # a bad request must not stop the other students' servers
                    write(os.path.join(spawn, user + ".failed"), repr(e))
            elif name.endswith(".stop"):
                user = name[: -len(".stop")]
                os.remove(path)
                subprocess.run(["podman", "rm", "-f", "-t", "5", container(user)], capture_output=True)
                running.discard(user)
                write(os.path.join(spawn, user + ".stopped"), "")
        for user in list(running):
            r = subprocess.run(["podman", "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}",
                                container(user)], capture_output=True, text=True)
            state = r.stdout.split()
            if r.returncode != 0 or state[0] != "true":
                write(os.path.join(spawn, user + ".exit"), state[1] if len(state) > 1 else "1")
                running.discard(user)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
