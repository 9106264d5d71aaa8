"""A Web Push service for the delivery tests: HTTPS on a test CA, and everything it receives
checked by implementations that are not Roost's (http_ece decrypts RFC 8291 payloads, the
cryptography package checks the VAPID JWT's ES256 signature).

  push_service.py serve DIR   makes a test CA and a certificate for "localhost" under DIR,
                              four subscriptions ("ok", "other", "gone", "gone-too") with their own keys,
                              prints {"port", "ca", "subscriptions": {name: {endpoint, keys}}}
                              as one line, then one JSON line per push received, until killed.
                              "gone…" answers 410; a push whose VAPID token or payload does not
                              check out answers 400 and its line lists the problems.

HTTP/1.1 with keep-alive, as push services speak it; each connection accepted is one line
{"connection": n}. An endpoint's last path segment names its subscription, and may go on
after "~" (".../push/ok~17" is another device with the keys of "ok"), so a test can seed
thousands of devices. Names starting "busy" answer 429 with Retry-After: 60, names starting
"hang" answer only after 30 s; PUSH_SERVICE_DELAY_MS delays every answer (a service across
the internet); PUSH_SERVICE_CHECK=0 skips the decryption and the VAPID check (the benchmark's
service must not be slower than what it measures). Each push's line has "t", the time it was
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


def serve(directory):
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
    delay = int(os.environ.get("PUSH_SERVICE_DELAY_MS", "0")) / 1000
    check = os.environ.get("PUSH_SERVICE_CHECK", "1") != "0"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            with lock:
                connections[0] += 1
                print(json.dumps({"connection": connections[0]}), flush=True)

        def do_POST(self):
            name = self.path.rsplit("/", 1)[-1]
            base = name.split("~", 1)[0]
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if base.startswith("hang"):
                time.sleep(30)
            elif delay:
                time.sleep(delay)
            record = {"name": name, "ttl": self.headers.get("TTL"), "urgency": self.headers.get("Urgency"),
                      "topic": self.headers.get("Topic"), "content_encoding": self.headers.get("Content-Encoding"), "problems": []}
            subscription = subscriptions.get(base)
            if check:
                problems, k = check_vapid(self.headers.get("Authorization"), f"https://localhost:{port}")
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
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "60")
            self.send_header("Content-Length", "0")
            self.end_headers()

    class Server(ThreadingHTTPServer):
        # A sender opening its pool of connections at once must not find the listen queue full.
        request_queue_size = 1024
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificates["localhost"])
    # Each handshake in its connection's thread (on its first read), not one after another in the accept loop.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    listed = {}
    for name, subscription in subscriptions.items():
        point = subscription["key"].public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        listed[name] = {"endpoint": f"https://localhost:{port}/push/{name}",
                        "keys": {"p256dh": b64url(point), "auth": b64url(subscription["auth"])}}
    print(json.dumps({"port": port, "ca": ca_path, "subscriptions": listed}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    {"serve": serve}[sys.argv[1]](sys.argv[2])
