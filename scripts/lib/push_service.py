"""A Web Push service for the delivery tests: HTTPS on a test CA, and everything it receives
checked by implementations that are not Roost's (http_ece decrypts RFC 8291 payloads, the
cryptography package checks the VAPID JWT's ES256 signature).

  push_service.py gateway DIR a Matrix push gateway's notify endpoint, for the benchmark's Synapse
                              peer (see gateway() below)
  push_service.py serve DIR   makes a test CA and a certificate for "localhost" under DIR,
                              four subscriptions ("ok", "other", "gone", "gone-too") with their own keys,
                              prints {"port", "ca", "subscriptions": {name: {endpoint, keys}}}
                              as one line, then one JSON line per push received, until killed.
                              "gone…" answers 410; a push whose VAPID token or payload does not
                              check out answers 400 and its line lists the problems.

HTTP/1.1 with keep-alive, as push services speak it; with --http2 (`serve DIR --http2`), HTTP/2
only, offered by ALPN as FCM, Mozilla's and Apple's push services offer it (the h2 package from
PyPI, 100 streams a connection as its default). Each connection accepted is one line
{"connection": n, "protocol": "http/1.1" or "h2"}. An endpoint's last path segment names its subscription, and may go on
after "~" (".../push/ok~17" is another device with the keys of "ok"), so a test can seed
thousands of devices. Names starting "busy" answer 429 with Retry-After: 60, names starting
"hang" answer only after 30 s; PUSH_SERVICE_DELAY_MS delays every answer (a service across
the internet); PUSH_SERVICE_CHECK=0 skips the decryption and the VAPID check (the benchmark's
service must not be slower than what it measures). PUSH_SERVICE_HOLD_AFTER=N (HTTP/1.1) answers
the first N pushes and holds every later one unanswered until a file DIR/release exists (a test
kills a sender mid-fanout whatever the machine's speed). Each push's line has "t", the time it was
accepted (seconds since the epoch).
"""
import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smtp_server import make_certificates


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_vapid(header, audience):
    """The problems with an `Authorization: vapid t=..., k=...` header (RFC 8292); its k."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    problems = []
    if not header or not header.startswith("vapid "):
        return ["no vapid authorization"], None
    fields = dict(part.strip().split("=", 1) for part in header[len("vapid "):].split(","))
    token, k = fields.get("t", ""), fields.get("k", "")
    try:
        head, claims, signature = token.split(".")
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(k))
        raw = unb64url(signature)
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, (head + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))
    except (ValueError, InvalidSignature) as error:
        return [f"the VAPID signature does not verify: {error!r}"], k
    header_json, claims_json = json.loads(unb64url(head)), json.loads(unb64url(claims))
    if header_json.get("alg") != "ES256":
        problems.append("alg is not ES256")
    if claims_json.get("aud") != audience:
        problems.append(f"aud {claims_json.get('aud')!r} is not {audience!r}")
    now = time.time()
    if not (now < claims_json.get("exp", 0) <= now + 24 * 3600):
        problems.append(f"exp {claims_json.get('exp')!r} is not within the next 24 hours")
    if not str(claims_json.get("sub", "")).startswith(("mailto:", "https:")):
        problems.append(f"sub {claims_json.get('sub')!r} is not a mailto: or https: contact")
    return problems, k


def serve(directory, http2=False):
    import http_ece
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_path, certificates = make_certificates(directory)
    subscriptions = {}
    for name in ("ok", "other", "gone", "gone-too", "busy", "hang"):
        key = ec.generate_private_key(ec.SECP256R1())
        subscriptions[name] = {"key": key, "auth": os.urandom(16)}
    lock = threading.Lock()
    connections = [0]
    port = 0
    delay = int(os.environ.get("PUSH_SERVICE_DELAY_MS", "0")) / 1000
    check = os.environ.get("PUSH_SERVICE_CHECK", "1") != "0"
    hold_after = int(os.environ.get("PUSH_SERVICE_HOLD_AFTER", "0"))
    taken = [0]

    def hold():
        """With PUSH_SERVICE_HOLD_AFTER, a push past the first N waits until DIR/release exists."""
        if not hold_after:
            return
        with lock:
            taken[0] += 1
            if taken[0] <= hold_after:
                return
        while not os.path.exists(os.path.join(directory, "release")):
            time.sleep(0.02)

    def connected(protocol):
        with lock:
            connections[0] += 1
            print(json.dumps({"connection": connections[0], "protocol": protocol}), flush=True)

    def wait_for(name):
        """How long the service takes over a push to `name` before it answers."""
        return 30 if name.split("~", 1)[0].startswith("hang") else delay

    def answer(name, headers, body):
        """The status for one push (headers: lower-case names), after checking everything it carries."""
        base = name.split("~", 1)[0]
        record = {"name": name, "ttl": headers.get("ttl"), "urgency": headers.get("urgency"),
                  "topic": headers.get("topic"), "content_encoding": headers.get("content-encoding"), "problems": []}
        subscription = subscriptions.get(base)
        if check:
            problems, k = check_vapid(headers.get("authorization"), f"https://localhost:{port}")
            record["problems"] += problems
            record["k"] = k
        if subscription is None:
            record["problems"].append("no such subscription")
        elif check:
            try:
                plain = http_ece.decrypt(body, private_key=subscription["key"], auth_secret=subscription["auth"], version="aes128gcm")
                record["payload"] = json.loads(plain)
            except Exception as error:  # noqa: BLE001 (whatever the independent decryption refuses is the finding)
                record["problems"].append(f"decryption failed: {error!r}")
        status = 410 if base.startswith("gone") else 429 if base.startswith("busy") else (400 if record["problems"] else 201)
        record["status"] = status
        record["t"] = time.time()
        with lock:
            print(json.dumps(record), flush=True)
        return status, [("retry-after", "60")] if status == 429 else []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            connected("http/1.1")

        def do_POST(self):
            name = self.path.rsplit("/", 1)[-1]
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            hold()
            time.sleep(wait_for(name))
            status, extra = answer(name, {key.lower(): value for key, value in self.headers.items()}, body)
            self.send_response(status)
            for key, value in extra:
                self.send_header(key, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

    class Server(ThreadingHTTPServer):
        # A sender opening its pool of connections at once must not find the listen queue full.
        request_queue_size = 1024
        daemon_threads = True

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificates["localhost"])

    def announce():
        listed = {}
        for name, subscription in subscriptions.items():
            point = subscription["key"].public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            listed[name] = {"endpoint": f"https://localhost:{port}/push/{name}",
                            "keys": {"p256dh": b64url(point), "auth": b64url(subscription["auth"])}}
        print(json.dumps({"port": port, "ca": ca_path, "subscriptions": listed}), flush=True)

    if http2:
        import asyncio
        context.set_alpn_protocols(["h2"])

        async def main():
            nonlocal port
            server = await asyncio.start_server(lambda r, w: serve_h2(r, w, connected, wait_for, answer), "127.0.0.1", 0,
                                                ssl=context, backlog=1024)
            port = server.sockets[0].getsockname()[1]
            announce()
            await server.serve_forever()

        asyncio.run(main())
        return

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    # Each handshake in its connection's thread (on its first read), not one after another in the accept loop.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    announce()
    server.serve_forever()


async def serve_h2(reader, writer, connected, wait_for, answer):
    """One HTTP/2 connection: each request answered after its wait, many at once."""
    import asyncio

    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions

    connected("h2")
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    connection.initiate_connection()
    writer.write(connection.data_to_send())
    requests = {}

    async def respond(stream, headers, body):
        name = headers.get(":path", "").rsplit("/", 1)[-1]
        await asyncio.sleep(wait_for(name))
        status, extra = answer(name, headers, bytes(body))
        try:
            connection.send_headers(stream, [(":status", str(status)), ("content-length", "0")] + extra, end_stream=True)
            writer.write(connection.data_to_send())
        except h2.exceptions.StreamClosedError:
            # The client reset the stream (its deadline passed): nothing to answer.
            print(json.dumps({"reset": name}), flush=True)

    try:
        while data := await reader.read(65536):
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    requests[event.stream_id] = ({key: value for key, value in event.headers}, bytearray())
                elif isinstance(event, h2.events.DataReceived):
                    requests[event.stream_id][1].extend(event.data)
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    headers, body = requests.pop(event.stream_id)
                    asyncio.ensure_future(respond(event.stream_id, headers, body))
                elif isinstance(event, h2.events.ConnectionTerminated):
                    return
            writer.write(connection.data_to_send())
    except h2.exceptions.ProtocolError as error:
        # h2 has queued its GOAWAY: say why, send it, and end the connection.
        print(json.dumps({"protocol_error": repr(error)}), flush=True)
        writer.write(connection.data_to_send())
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def gateway(directory):
    """A Matrix push gateway's endpoint for the delivery benchmark's Synapse peer: plain HTTP/1.1
    on loopback, POST /_matrix/push/v1/notify answered {"rejected": []} after PUSH_SERVICE_DELAY_MS,
    one line {"pushkey", "t"} per device notified. Only the endpoint: the Web Push that Sygnal
    would then send is not made here (Sygnal is not on this workplace's PyPI), so Synapse is
    measured doing less than the whole path."""
    lock = threading.Lock()
    delay = int(os.environ.get("PUSH_SERVICE_DELAY_MS", "0")) / 1000

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            time.sleep(delay)
            devices = body.get("notification", {}).get("devices", [])
            with lock:
                for device in devices:
                    print(json.dumps({"pushkey": device.get("pushkey"), "t": time.time()}), flush=True)
            answer = b'{"rejected": []}'
            self.send_response(200 if self.path == "/_matrix/push/v1/notify" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    print(json.dumps({"port": server.server_address[1], "directory": directory}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "gateway":
        gateway(sys.argv[2])
    else:
        {"serve": serve}[sys.argv[1]](sys.argv[2], http2="--http2" in sys.argv[3:])
