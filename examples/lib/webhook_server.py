"""A tiny JSON webhook receiver (standard library only) shared by the example adapters."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(listen, handle):
    """Serves POSTs of JSON on `listen` ("host:port"); `handle(body)` returns (status, object)."""
    host, port = listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer = handle(body) if isinstance(body, dict) else (400, {"error": "expected a JSON object"})
            except json.JSONDecodeError:
                status, answer = 400, {"error": "invalid JSON"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host, int(port)), Handler)
    print(json.dumps({"msg": "listening", "port": server.server_address[1]}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
