#!/usr/bin/env python3
"""Home Assistant alarm panel → Roost bridge.

Home Assistant calls this adapter from an automation whenever an alarm control panel changes
state (see README.md here). When the panel is `triggered`, the adapter raises a red alert in the
bridge's Roost group, deduplicated by the panel's entity id, so a siren that re-triggers ten
times is one alert; when the panel is `disarmed`, it resolves that alert. Other states are
acknowledged and ignored.

Environment: ROOST_URL (e.g. http://127.0.0.1:8080), ROOST_BRIDGE_KEY (rbk_...),
ROOST_BRIDGE_SECRET (only for a bridge created with signing), ADAPTER_LISTEN (default
127.0.0.1:8765; port 0 picks one).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from roost_bridge import RoostBridge, delivery_from_environment, outcome
from webhook_server import serve


def handler(delivery):
    def handle(body):
        entity = body.get("entity_id")
        state = body.get("state")
        if not isinstance(entity, str) or not entity or not isinstance(state, str):
            return 400, {"error": "entity_id and state are required"}
        name = body.get("friendly_name") or entity
        if state == "triggered":
            details = {key: body[key] for key in ("entity_id", "state", "changed_by", "zone", "friendly_name") if key in body}
            return outcome(*delivery.trigger(entity, f"{name}: alarm triggered", severity="red", details=details))
        if state == "disarmed":
            return outcome(*delivery.resolve(entity, f"{name} disarmed"))
        return 200, {"ignored": state}
    return handle


if __name__ == "__main__":
    bridge = RoostBridge(os.environ["ROOST_URL"], os.environ["ROOST_BRIDGE_KEY"], os.environ.get("ROOST_BRIDGE_SECRET"))
    serve(os.environ.get("ADAPTER_LISTEN", "127.0.0.1:8765"), handler(delivery_from_environment(bridge, "home-assistant")))
