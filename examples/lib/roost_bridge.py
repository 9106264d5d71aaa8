"""A small client for Roost's bridge API (standard library only).

    client = RoostBridge("http://127.0.0.1:8080", key="rbk_...", secret=None)
    client.trigger("front-door", "Front door alarm", severity="red", details={...})
    client.resolve("front-door")

    delivery = Delivery(client, "/var/lib/roost-bridge", heartbeat_s=60)
    delivery.start()
    outcome = delivery.trigger("front-door", "Front door alarm")   # kept on disk until Roost has it

`Delivery` is what the adapters use: an event is written to a queue directory before it is sent,
and stays there until Roost answered it for good, so an alarm raised while Roost is unreachable
(a restart, the network down) arrives when Roost is back, in order. It also sends the bridge's
heartbeat, so a bridge made with `heartbeat_s` is announced offline only when the adapter is.

When the bridge was created with signing, pass its secret: every request then carries
X-Roost-Timestamp and X-Roost-Signature (HMAC-SHA256 of "timestamp.body"). Roost refuses a
signature it has already seen (a replay), so every body carries `occurred_at` to the
millisecond: the same alarm sent twice in one second is two requests, not a replay.
"""

import datetime
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request


class RoostBridge:
    def __init__(self, url, key, secret=None, timeout=10):
        self.url = url.rstrip("/")
        self.key = key
        self.secret = secret
        self.timeout = timeout

    def post(self, path, payload):
        body = json.dumps(payload).encode() if payload is not None else b""
        headers = {"Authorization": "Bearer " + self.key, "Content-Type": "application/json"}
        if self.secret:
            timestamp = str(int(time.time()))
            mac = hmac.new(self.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            headers["X-Roost-Timestamp"] = timestamp
            headers["X-Roost-Signature"] = "sha256=" + mac
        request = urllib.request.Request(self.url + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, json.loads(text) if text else None
        except (urllib.error.URLError, OSError) as error:
            # Roost unreachable: status 0, and the reason.
            return 0, {"error": str(error)}

    @staticmethod
    def _now():
        return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def trigger_body(self, dedup_key, summary, severity="red", details=None, location=None, attachments=None):
        payload = {"action": "trigger", "dedup_key": dedup_key, "summary": summary, "severity": severity,
                   "occurred_at": self._now()}
        if details is not None:
            payload["details"] = details
        if location is not None:
            payload["location"] = location
        if attachments:
            payload["attachments"] = attachments
        return payload

    def resolve_body(self, dedup_key, summary=None):
        payload = {"action": "resolve", "dedup_key": dedup_key, "occurred_at": self._now()}
        if summary:
            payload["summary"] = summary
        return payload

    def trigger(self, dedup_key, summary, severity="red", details=None, location=None, attachments=None):
        return self.post("/v1/bridge/alerts", self.trigger_body(dedup_key, summary, severity, details, location, attachments))

    def resolve(self, dedup_key, summary=None):
        return self.post("/v1/bridge/alerts", self.resolve_body(dedup_key, summary))

    def heartbeat(self):
        return self.post("/v1/bridge/heartbeat", {"occurred_at": self._now()})

    def upload(self, data, content_type):
        """Uploads a snapshot (`POST /v1/media` with the bridge key); (status, answer)."""
        request = urllib.request.Request(self.url + "/v1/media", data=data, method="POST",
                                         headers={"Authorization": "Bearer " + self.key, "Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, json.loads(response.read().decode() or "null")
        except urllib.error.HTTPError as error:
            return error.code, None
        except (urllib.error.URLError, OSError) as error:
            return 0, {"error": str(error)}


def transient(status):
    """Whether an answer means "try again later": Roost unreachable (0), busy or failing."""
    return status == 0 or status in (408, 429) or status >= 500


class Delivery:
    """Delivers a bridge's events without losing one. Each event is a file in `directory`
    (written and fsynced before it is sent), removed once Roost answered it for good: accepted,
    or refused for a reason a retry cannot change (that one is moved to `failed/` and logged).
    While Roost is unreachable or busy, a worker retries the oldest event first, backing off
    from 1 s up to `retry_max_s`; newer events wait behind it, so they arrive in order. Every
    `heartbeat_s` (0: never) the worker also sends the bridge's heartbeat."""

    def __init__(self, bridge, directory, heartbeat_s=60, retry_max_s=60):
        self.bridge = bridge
        self.directory = directory
        self.heartbeat_s = heartbeat_s
        self.retry_max_s = max(1, retry_max_s)
        self.wake = threading.Event()
        self.lock = threading.Lock()
        os.makedirs(os.path.join(directory, "failed"), exist_ok=True)

    def _pending(self):
        return sorted(name for name in os.listdir(self.directory) if name.endswith(".json"))

    def _write(self, payload):
        name = f"{time.time_ns():020d}.json"
        path = os.path.join(self.directory, name)
        with open(path + ".tmp", "w") as file:
            json.dump(payload, file)
            file.flush()
            os.fsync(file.fileno())
        os.rename(path + ".tmp", path)
        return name

    def _send(self, name):
        """Sends one queued event; (status, answer), the file gone unless the answer was transient."""
        path = os.path.join(self.directory, name)
        with open(path) as file:
            event = json.load(file)
        status, answer = self.bridge.post(event["path"], event["body"])
        if not transient(status):
            if status >= 300 and not (status == 404 and event["body"].get("action") == "resolve"):
                print(json.dumps({"msg": "roost refused an event; kept in failed/", "status": status, "answer": answer}),
                      file=sys.stderr, flush=True)
                os.rename(path, os.path.join(self.directory, "failed", name))
            else:
                os.remove(path)
        return status, answer

    def submit(self, path, body):
        """Queues an event and tries it at once when nothing older waits: (status, answer,
        queued). `queued` is true when it stays on disk for the worker to deliver later."""
        with self.lock:
            name = self._write({"path": path, "body": body})
            if self._pending()[0] != name:
                self.wake.set()
                return 0, {"error": "older events are still waiting for Roost"}, True
            status, answer = self._send(name)
        if transient(status):
            self.wake.set()
            return status, answer, True
        return status, answer, False

    def trigger(self, dedup_key, summary, severity="red", details=None, location=None, attachments=None):
        return self.submit("/v1/bridge/alerts", self.bridge.trigger_body(dedup_key, summary, severity, details, location, attachments))

    def resolve(self, dedup_key, summary=None):
        return self.submit("/v1/bridge/alerts", self.bridge.resolve_body(dedup_key, summary))

    def start(self):
        threading.Thread(target=self._run, name="roost-delivery", daemon=True).start()

    def _run(self):
        backoff = 1
        next_beat = time.monotonic()
        while True:
            if self.heartbeat_s and time.monotonic() >= next_beat:
                status, _ = self.bridge.heartbeat()
                next_beat = time.monotonic() + (self.heartbeat_s if not transient(status) else min(self.heartbeat_s, backoff))
            with self.lock:
                pending = self._pending()
                status = self._send(pending[0])[0] if pending else 200
            if pending and transient(status):
                wait = backoff
                backoff = min(backoff * 2, self.retry_max_s)
            else:
                backoff = 1
                if pending:
                    continue  # the next one at once
                wait = max(0.0, next_beat - time.monotonic()) if self.heartbeat_s else None
            self.wake.wait(wait)
            self.wake.clear()


def delivery_from_environment(bridge, name):
    """The adapters' Delivery from ROOST_QUEUE_DIR (default ~/.local/state/roost-bridge/NAME),
    ROOST_HEARTBEAT_S (default 60; 0: none) and ROOST_RETRY_MAX_S (default 60), started."""
    directory = os.environ.get("ROOST_QUEUE_DIR") or os.path.join(os.path.expanduser("~"), ".local", "state", "roost-bridge", name)
    delivery = Delivery(bridge, directory, heartbeat_s=int(os.environ.get("ROOST_HEARTBEAT_S", "60")),
                        retry_max_s=int(os.environ.get("ROOST_RETRY_MAX_S", "60")))
    delivery.start()
    return delivery


def outcome(status, answer, queued):
    """What an adapter answers its caller, the truth about the event: 200 delivered (or a
    resolve with nothing open), 503 kept on disk for later (the caller sees a failure; the
    event still arrives), 502 refused by Roost for good."""
    if queued:
        return 503, {"queued": True, "roost": status}
    if status < 300 or status == 404:
        return 200, {"roost": status, "seq": (answer or {}).get("seq")}
    return 502, {"roost": status, "error": (answer or {}).get("error")}
