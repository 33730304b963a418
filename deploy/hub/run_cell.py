#!/usr/bin/python3
"""run_cell.py runs notebook cells in a new kernel of a student's server,
through the hub's proxy and Jupyter's kernel API (REST to start the kernel,
the kernel's websocket to execute), as a browser would. It prints each
cell's output and exits 1 when a cell ends in an error.

    run_cell.py URL TOKEN NOTEBOOK CELL...

URL is the server's base, e.g. http://127.0.0.1:8000/user/alice/; TOKEN an
API token with access to that server; NOTEBOOK the notebook's path in the
server (the kernel runs in its folder, as when a student opens it). Each
CELL is a file holding a cell's code, or LESSON.md#N: the Nth ```go block
of a lesson's Markdown (lessons/00-welcome.md#1 is the module recipe). The
session and its kernel are shut down at the end.
"""
import json
import re
import sys
import uuid

from tornado import httpclient, ioloop, websocket


async def run(base, token, notebook, cells):
    headers = {"Authorization": "token " + token}
    http = httpclient.AsyncHTTPClient()
    # A session for a notebook, as the browser makes when it opens one: the
    # kernel then runs in the notebook's folder (GoNB's GONB_DIR).
    r = await http.fetch(base + "api/sessions", method="POST", headers=headers, request_timeout=60,
                         body=json.dumps({"path": notebook, "type": "notebook", "kernel": {"name": "gonb"}}))
    created = json.loads(r.body)
    session_id, kernel = created["id"], created["kernel"]["id"]
    ws_url = base.replace("http", "ws", 1) + "api/kernels/%s/channels" % kernel
    conn = await websocket.websocket_connect(httpclient.HTTPRequest(ws_url, headers=headers))
    session = uuid.uuid4().hex
    failed = False
    try:
        for code in cells:
            msg_id = uuid.uuid4().hex
            conn.write_message(json.dumps({
                "header": {"msg_id": msg_id, "session": session, "username": "test",
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            }))
            idle = replied = False
            while not (idle and replied):
                raw = await conn.read_message()
                if raw is None:
                    print("run_cell: the kernel's websocket closed")
                    return 1
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    sys.stdout.write(content["text"])
                elif kind in ("execute_result", "display_data"):
                    data = content["data"]
                    # GoNB shows compiler errors as HTML only.
                    text = data.get("text/plain") or re.sub(r"<[^>]+>", "", re.sub(r"(?s)<style.*?</style>", "", data.get("text/html", "")))
                    sys.stdout.write(text + "\n")
                elif kind == "error":
                    sys.stdout.write("%s: %s\n" % (content["ename"], content["evalue"]))
                    failed = True
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    replied = True
                    failed = failed or content["status"] != "ok"
            if failed:
                break
    finally:
        conn.close()
        await http.fetch(base + "api/sessions/" + session_id, method="DELETE", headers=headers, raise_error=False)
    return 1 if failed else 0


def read_cell(arg):
    """A cell's code: a file's content, or for LESSON.md#N the Nth ```go
    block of the lesson (its opening line may name the cell)."""
    path, sep, n = arg.rpartition("#")
    if not sep or not path.endswith(".md"):
        path, n = arg, ""
    with open(path) as f:
        text = f.read()
    if not n:
        return text
    blocks = re.findall(r"^```go[^\n]*\n(.*?)^```", text, re.M | re.S)
    if not n.isdigit() or not 1 <= int(n) <= len(blocks):
        sys.exit("run_cell: %s has %d go blocks, no block %s" % (path, len(blocks), n))
    return blocks[int(n) - 1]


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    base, token, notebook = sys.argv[1], sys.argv[2], sys.argv[3]
    if not base.endswith("/"):
        base += "/"
    cells = [read_cell(arg) for arg in sys.argv[4:]]
    sys.exit(ioloop.IOLoop.current().run_sync(lambda: run(base, token, notebook, cells), timeout=600))


if __name__ == "__main__":
    main()
