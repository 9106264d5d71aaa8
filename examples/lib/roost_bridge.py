"""A small client for Roost's bridge API (standard library only).

    client = RoostBridge("http://127.0.0.1:8080", key="rbk_...", secret=None)
    client.trigger("front-door", "Front door alarm", severity="red", details={...})
    client.resolve("front-door")

When the bridge was created with signing, pass its secret: every request then carries
X-Roost-Timestamp and X-Roost-Signature (HMAC-SHA256 of "timestamp.body"). Roost refuses a
signature it has already seen (a replay), so every body carries `occurred_at` to the
millisecond: the same alarm sent twice in one second is two requests, not a replay.
"""

import datetime
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request


class RoostBridge:
    def __init__(self, url, key, secret=None, timeout=10):
        self.url = url.rstrip("/")
        self.key = key
        self.secret = secret
        self.timeout = timeout

    def _post(self, path, payload):
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

    def trigger(self, dedup_key, summary, severity="red", details=None, location=None):
        payload = {"action": "trigger", "dedup_key": dedup_key, "summary": summary, "severity": severity,
                   "occurred_at": self._now()}
        if details is not None:
            payload["details"] = details
        if location is not None:
            payload["location"] = location
        return self._post("/v1/bridge/alerts", payload)

    def resolve(self, dedup_key, summary=None):
        payload = {"action": "resolve", "dedup_key": dedup_key, "occurred_at": self._now()}
        if summary:
            payload["summary"] = summary
        return self._post("/v1/bridge/alerts", payload)

    def heartbeat(self):
        return self._post("/v1/bridge/heartbeat", {"occurred_at": self._now()})
