#!/usr/bin/python3
"""Times a lesson's cells as a student meets them: one gonb kernel, the
lesson's code cells run in order through Jupyter's messaging (what a
browser does), and the wall time of each from the request to the kernel's
"idle". Then the median and the slowest of the cells after the first (the
first pays for the module recipe), and, with --split, where one cell's time
goes: GoNB's `go get`, `go build` and the program's own run, measured on
the kernel's scratch module after the last cell.

    scripts/cell-times.py [--cells N] [--split] [notebooks/02-allocator.ipynb]

Needs the gonb kernel (make setup) and python3-nbclient's jupyter_client.
Exit status 1 when a cell fails.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat
from jupyter_client.manager import start_new_kernel

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cell(kc, source, timeout):
    """Runs source, returns (seconds, error name or None)."""
    start = time.monotonic()
    msg_id = kc.execute(source)
    error = None
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            error = msg["content"]["ename"] or "error"
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stderr" and "panic:" in msg["content"]["text"]:
            error = "panic"
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return time.monotonic() - start, error


def timed(cmd, cwd):
    start = time.monotonic()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def split(scratch, runs=3):
    """Times, on a copy of the kernel's scratch module, what a cell costs
    after GoNB composed main.go: go get (GoNB runs it unless %noautoget),
    go build (main.go changed each time, as each cell changes it), and the
    program's run."""
    work = tempfile.mkdtemp(prefix="cell-times-")
    try:
        for name in ("go.mod", "go.sum", "main.go"):
            if os.path.exists(os.path.join(scratch, name)):
                shutil.copy(os.path.join(scratch, name), work)
        main = os.path.join(work, "main.go")
        get, build, run = [], [], []
        for i in range(runs):
            with open(main, "a") as f:
                f.write("\nconst cellTimesRun%d = %d\n" % (i, i))
            get.append(timed(["go", "get"], work))
            build.append(timed(["go", "build", "-o", "prog", "."], work))
            run.append(timed(["./prog"], work))
        return statistics.median(get), statistics.median(build), statistics.median(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebook", nargs="?", default=os.path.join(here, "notebooks", "02-allocator.ipynb"))
    ap.add_argument("--cells", type=int, default=20, help="how many code cells to run (default 20)")
    ap.add_argument("--split", action="store_true", help="also time go get, go build and the run of the last cell")
    ap.add_argument("--timeout", type=float, default=600, help="seconds one cell may take")
    args = ap.parse_args()

    nb = nbformat.read(args.notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"][: args.cells]
    os.environ["PATH"] = os.path.join(here, "bin") + os.pathsep + os.environ["PATH"]
    before = set(glob.glob("/tmp/gonb_*"))
    print("cell-times: %s, %d code cells, one gonb kernel" % (os.path.relpath(args.notebook, here), len(cells)), flush=True)
    km, kc = start_new_kernel(kernel_name="gonb", cwd=os.path.dirname(os.path.abspath(args.notebook)),
                              stderr=subprocess.DEVNULL)
    times, failed = [], 0
    try:
        for i, source in enumerate(cells):
            seconds, error = run_cell(kc, source, args.timeout)
            times.append(seconds)
            first = source.strip().splitlines()[0] if source.strip() else ""
            print("  cell %2d  %5.2f s  %s%s" % (i, seconds, "FAILED (%s) " % error if error else "", first[:60]), flush=True)
            failed += error is not None
        scratch = sorted(set(glob.glob("/tmp/gonb_*")) - before)
        if args.split and scratch:
            get, build, run = split(scratch[-1])
            print("cell-times: one cell's parts (median of 3): go get %.2f s, go build %.2f s, the program %.2f s"
                  % (get, build, run))
    finally:
        kc.stop_channels()
        km.shutdown_kernel()  # GoNB stops its gopls; now=True would orphan it
    later = times[1:]
    if later:
        print("cell-times: cells 1-%d: median %.2f s, slowest %.2f s; cell 0 (the recipe) %.2f s"
              % (len(times) - 1, statistics.median(later), max(later), times[0]))
    if failed:
        print("cell-times: %d cells failed" % failed)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
