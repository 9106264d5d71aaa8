"""The bridge benchmark's driver (scripts/bench-bridges): new alerts per second through MQTT at
QoS 1 (paho-mqtt, each PUBLISH answered only after its alert is committed) and through
PagerDuty's /v2/enqueue (HTTP/1.1 keep-alive), each with CLIENTS clients at once, each client a
bridge of its own (a bridge's rate limit allows a burst of 1000, so EVENTS / CLIENTS <= 1000).

    bench_bridges.py HTTP_PORT MQTT_PORT OPERATOR_TOKEN EVENTS CLIENTS [DC09_PANELS_FILE]

Prints one JSON line per transport: {"transport", "events", "seconds", "per_second"}. With
DC09_PANELS_FILE, also makes 2 x CLIENTS bridges with DC-09 identities (AES-128) and writes them
there as JSON ([{"account", "line", "key"}...]) for scripts/lib/dc09_panel.py's bench to drive.
"""
import http.client
import json
import secrets
import sys
import threading
import time
import urllib.request

import paho.mqtt.client as mqtt


def call(port, method, path, body=None, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def bridges(port, operator, count, dc09=0):
    """COUNT bridge keys of a new tenant's group, and DC09 panels' identities with their keys."""
    slug = "bench-" + secrets.token_hex(4)
    call(port, "POST", "/v1/admin/tenants", {"slug": slug, "name": "Bench", "registration": "open"}, operator)
    owner = call(port, "POST", "/v1/auth/register",
                 {"tenant": slug, "email": "bench@example.org", "password": "a long enough password", "display_name": "Bench"})["token"]
    group = call(port, "POST", "/v1/groups", {"name": "Bench street"}, owner)["id"]
    keys = [call(port, "POST", f"/v1/groups/{group}/bridges", {"name": f"Bench {index}", "rate_per_minute": 6000, "burst": 1000},
                 owner)["key"] for index in range(count)]
    panels = []
    for index in range(dc09):
        identity = {"line": "1", "account": secrets.token_hex(4).upper()}
        made = call(port, "POST", f"/v1/groups/{group}/bridges",
                    {"name": f"Bench panel {index}", "rate_per_minute": 6000, "burst": 1000, "dc09": identity}, owner)
        panels.append({"account": identity["account"], "line": "1", "key": made["dc09"]["key"]})
    return keys, panels


def mqtt_client(port, key, count, label, done):
    acked = threading.Semaphore(0)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{label}", protocol=mqtt.MQTTv311)
    client.username_pw_set("bench", key)
    client.max_inflight_messages_set(16)
    client.max_queued_messages_set(0)
    client.on_publish = lambda *_: acked.release()
    client.connect("127.0.0.1", port, keepalive=60)
    client.loop_start()
    for index in range(count):
        body = {"action": "trigger", "dedup_key": f"{label}-{index}", "summary": f"Bench alert {label}-{index}", "severity": "info"}
        client.publish("roost/alerts", json.dumps(body), qos=1)
    for _ in range(count):
        acked.acquire()
    client.disconnect()
    client.loop_stop()
    done.append(count)


def pagerduty_client(port, key, count, label, done):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for index in range(count):
        body = json.dumps({"routing_key": key, "event_action": "trigger", "dedup_key": f"{label}-{index}",
                           "payload": {"summary": f"Bench alert {label}-{index}", "source": "bench", "severity": "info"}})
        connection.request("POST", "/v2/enqueue", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 202:
            raise SystemExit(f"/v2/enqueue answered {response.status}")
    done.append(count)


def run(name, target, port, keys, events):
    per_client = events // len(keys)
    done = []
    threads = [threading.Thread(target=target, args=(port, key, per_client, f"{name}{index}", done)) for index, key in enumerate(keys)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    total = sum(done)
    print(json.dumps({"transport": name, "events": total, "seconds": round(seconds, 3), "per_second": round(total / seconds, 1)}), flush=True)


def main(argv):
    http_port, mqtt_port, operator, events, clients = int(argv[1]), int(argv[2]), argv[3], int(argv[4]), int(argv[5])
    if events // clients > 1000:
        raise SystemExit("at most 1000 events a client (a bridge's burst)")
    panels_file = argv[6] if len(argv) > 6 else None
    keys, panels = bridges(http_port, operator, 2 * clients, 2 * clients if panels_file else 0)
    if panels_file:
        with open(panels_file, "w") as out:
            json.dump(panels, out)
    run("mqtt-qos1", mqtt_client, mqtt_port, keys[:clients], events)
    run("pagerduty-v2-enqueue", pagerduty_client, http_port, keys[clients:], events)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
