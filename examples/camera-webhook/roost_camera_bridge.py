#!/usr/bin/env python3
"""Camera events → Roost bridge.

Accepts Frigate's event messages (the JSON Frigate publishes on its `frigate/events` MQTT topic:
`{"type": "new"|"update"|"end", "before": {...}, "after": {"id", "camera", "label", ...}}`,
relayed here by any MQTT-to-HTTP forwarder) or a generic camera webhook
(`{"camera", "label", "state": "start"|"end"}`). A detection raises an amber alert per camera and
label (`dedup_key` "<camera>:<label>"); its end resolves it. Labels outside CAMERA_LABELS
(default: person) are ignored.

Events are kept on disk until Roost has them (roost_bridge.Delivery); the caller hears 200
delivered, 503 queued for later, 502 refused. Frigate's reviews need no adapter: Roost reads
them over MQTT (docs/BRIDGES.md "Frigate over MQTT").

With FRIGATE_URL set (e.g. http://frigate:5000), a Frigate detection's snapshot
(`/api/events/<id>/snapshot.jpg`) is uploaded to Roost and attached to its alert; without a
snapshot (Frigate slow or away, Roost unreachable) the alert goes without one rather than late.

Environment: ROOST_URL, ROOST_BRIDGE_KEY, ROOST_BRIDGE_SECRET (optional), ADAPTER_LISTEN
(default 127.0.0.1:8766), CAMERA_LABELS (comma-separated), FRIGATE_URL (optional),
ROOST_QUEUE_DIR, ROOST_HEARTBEAT_S, ROOST_RETRY_MAX_S.
"""

import os
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from roost_bridge import RoostBridge, delivery_from_environment, outcome
from webhook_server import serve


def normalise(body):
    """(camera, label, phase, extra) from a Frigate event or a generic webhook; None if neither."""
    if "after" in body and isinstance(body.get("after"), dict):
        after = body["after"]
        phase = {"new": "start", "update": "update", "end": "end"}.get(body.get("type"))
        extra = {key: after[key] for key in ("id", "score", "top_score", "current_zones") if key in after}
        return after.get("camera"), after.get("label"), phase, extra
    if "camera" in body:
        return body.get("camera"), body.get("label"), body.get("state"), {}
    return None


def snapshot(bridge, frigate_url, event_id):
    """Frigate's snapshot of a detection, uploaded to Roost: [media id], or [] when either is away."""
    if not frigate_url or not isinstance(event_id, str) or not event_id:
        return []
    url = f"{frigate_url.rstrip('/')}/api/events/{urllib.parse.quote(event_id, safe='')}/snapshot.jpg"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            data = response.read(10 * 1024 * 1024)
    except (urllib.error.URLError, OSError):
        return []
    status, answer = bridge.upload(data, "image/jpeg")
    return [answer["id"]] if status == 201 and isinstance(answer, dict) else []


def handler(delivery, labels, frigate_url=None):
    def handle(body):
        event = normalise(body)
        if event is None:
            return 400, {"error": "expected a Frigate event or {camera, label, state}"}
        camera, label, phase, extra = event
        if not isinstance(camera, str) or not isinstance(label, str) or phase not in ("start", "update", "end"):
            return 400, {"error": "camera, label and a known state are required"}
        if label not in labels or phase == "update":
            return 200, {"ignored": label if label not in labels else phase}
        key = f"{camera}:{label}"
        if phase == "start":
            attachments = snapshot(delivery.bridge, frigate_url, extra.get("id"))
            return outcome(*delivery.trigger(key, f"{label.capitalize()} seen by {camera}", severity="amber",
                                             details={"camera": camera, "label": label, **extra}, attachments=attachments))
        return outcome(*delivery.resolve(key, f"{camera}: {label} gone"))
    return handle


if __name__ == "__main__":
    bridge = RoostBridge(os.environ["ROOST_URL"], os.environ["ROOST_BRIDGE_KEY"], os.environ.get("ROOST_BRIDGE_SECRET"))
    labels = {label.strip() for label in os.environ.get("CAMERA_LABELS", "person").split(",") if label.strip()}
    serve(os.environ.get("ADAPTER_LISTEN", "127.0.0.1:8766"),
          handler(delivery_from_environment(bridge, "camera"), labels, os.environ.get("FRIGATE_URL")))
