"""Sends PagerDuty Events API v2 events with PagerDuty's own client library (PyPI `pagerduty`,
pinned in scripts/requirements/tools.txt), its URL pointed at Roost: the independent sender of
Tests/EndToEndTests/BridgeToolsTests.swift.

    pagerduty_events.py ROOST_PORT ROUTING_KEY trigger SUMMARY SOURCE SEVERITY
    pagerduty_events.py ROOST_PORT ROUTING_KEY acknowledge|resolve DEDUP_KEY

The library takes only https:// URLs, so the events go through a TLS front started here (a
test CA from smtp_server.make_certificates, trusted by this client only) to Roost's plain port
on loopback, as a deployment's proxy terminates TLS in front of Roost.

Prints the dedup_key Roost answered; exits 1 with the library's error when the event is refused.
"""
import socket
import ssl
import sys
import tempfile
import threading

import pagerduty
from smtp_server import make_certificates


def relay(source, target):
    """Copies one direction until it ends, then half-closes the other side."""
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def tls_front(roost_port, directory):
    """Listens on a loopback port with TLS for "localhost" and relays each connection to Roost;
    the port and the CA file that verifies it."""
    ca_path, certificates = make_certificates(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificates["localhost"])
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            client, _ = listener.accept()
            try:
                secure = context.wrap_socket(client, server_side=True)
            except (OSError, ssl.SSLError):
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", roost_port))
            threading.Thread(target=relay, args=(secure, upstream), daemon=True).start()
            threading.Thread(target=relay, args=(upstream, secure), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], ca_path


def main(argv):
    roost_port, routing_key, action = int(argv[1]), argv[2], argv[3]
    with tempfile.TemporaryDirectory() as directory:
        port, ca_path = tls_front(roost_port, directory)
        client = pagerduty.EventsApiV2Client(routing_key, base_url=f"https://localhost:{port}",
                                             verify=ssl.create_default_context(cafile=ca_path))
        try:
            if action == "trigger":
                summary, source, severity = argv[4], argv[5], argv[6]
                key = client.trigger(summary, source, severity=severity, custom_details={"zone": "hall", "panel": "test"},
                                     links=[{"href": "https://example.org/camera/1", "text": "Camera"}])
            elif action in ("acknowledge", "resolve"):
                key = getattr(client, action)(argv[4])
            else:
                raise SystemExit(f"unknown action {action}")
        except pagerduty.Error as error:
            print(f"refused: {error}", file=sys.stderr)
            return 1
    print(key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
