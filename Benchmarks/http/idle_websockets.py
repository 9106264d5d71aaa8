"""Opens N idle WebSocket connections to a server and holds them until stdin closes.

Prints "open N" once all handshakes have completed, so the caller can measure the server's
memory with every connection idle. Plain sockets: no client library to install.
"""
import base64
import os
import socket
import sys

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = sys.argv[4] if len(sys.argv) > 4 else "/v1/conformance/echo"
sockets = []
for i in range(count):
    s = socket.create_connection((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(f"connection {i} closed during the handshake")
        response += chunk
    if not response.startswith(b"HTTP/1.1 101"):
        sys.exit(f"connection {i}: {response[:60]!r}")
    sockets.append(s)
print(f"open {len(sockets)}", flush=True)
sys.stdin.read()
