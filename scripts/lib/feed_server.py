"""A warning publisher's web server for the CAP feed tests: Python's own http.server, serving
the files a test writes into a folder, as a publisher's server does (ETag and Last-Modified on
every answer, 304 to a conditional GET that names them).

  feed_server.py serve DIR   serves DIR on 127.0.0.1, prints {"port": N} as one line, then one
                             JSON line per request: {"path", "if_none_match",
                             "if_modified_since", "status"}, until killed.

"/huge" answers a 50 MB body (its Content-Length said first, then zeros for as long as the
client reads), the publisher that sends too much.
"""
import hashlib
import json
import os
import sys
import threading
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = None
PRINT = threading.Lock()
HUGE = 50 * 1024 * 1024


def say(line):
    with PRINT:
        print(json.dumps(line), flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # the JSON lines are the log
        pass

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        line = {"path": path, "if_none_match": self.headers.get("If-None-Match"),
                "if_modified_since": self.headers.get("If-Modified-Since")}
        if path == "/huge":
            line["status"] = 200
            say(line)
            self.send_response(200)
            self.send_header("Content-Type", "application/cap+xml")
            self.send_header("Content-Length", str(HUGE))
            self.end_headers()
            chunk = b"\0" * 65536
            try:
                for _ in range(HUGE // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass  # the client stopped reading: as it should
            return
        file = os.path.realpath(os.path.join(ROOT, path.lstrip("/")))
        if not file.startswith(ROOT + os.sep) or not os.path.isfile(file):
            line["status"] = 404
            say(line)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(file, "rb") as handle:
            body = handle.read()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        modified = os.path.getmtime(file)
        unchanged = line["if_none_match"] == etag
        if line["if_none_match"] is None and line["if_modified_since"]:
            try:
                unchanged = int(modified) <= parsedate_to_datetime(line["if_modified_since"]).timestamp()
            except (TypeError, ValueError):
                unchanged = False
        line["status"] = 304 if unchanged else 200
        say(line)
        self.send_response(line["status"])
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", formatdate(modified, usegmt=True))
        if unchanged:
            self.end_headers()
            return
        content_type = "application/atom+xml" if file.endswith(".atom") else "application/cap+xml"
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    global ROOT
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        sys.exit(__doc__)
    ROOT = os.path.realpath(sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    say({"port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
