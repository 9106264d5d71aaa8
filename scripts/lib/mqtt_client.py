"""An MQTT client of Roost's bridge listener made with paho-mqtt (PyPI, pinned in
scripts/requirements/tools.txt): the independent client of Tests/EndToEndTests/MQTTBridgeTests.swift.

    mqtt_client.py publish PORT KEY TOPIC PAYLOAD CHECK_URL TOKEN [--v5]
        connects with the key as password, publishes at QoS 1, waits for the PUBACK, and at
        once reads CHECK_URL (Roost's alerts of the group) with TOKEN: prints
        {"connack": ..., "puback": ..., "alerts": [...]} as JSON.
    mqtt_client.py will PORT KEY
        connects with a will, then drops the connection without DISCONNECT; prints "dropped".
    mqtt_client.py refused PORT KEY
        connects; prints the CONNACK's reason.
"""
import json
import sys
import threading
import urllib.request

import paho.mqtt.client as mqtt


def client(key, v5=False, will=False):
    protocol = mqtt.MQTTv5 if v5 else mqtt.MQTTv311
    made = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="roost-test", protocol=protocol)
    made.username_pw_set("bridge", key)
    if will:
        made.will_set("home/bridge/status", "offline", qos=1)
    return made


def connect(made, port):
    """Connects and waits for the CONNACK; its reason code as a string."""
    answered = threading.Event()
    result = {}

    def on_connect(_client, _userdata, _flags, reason, _properties):
        result["reason"] = str(reason)
        result["failure"] = reason.is_failure
        answered.set()

    made.on_connect = on_connect
    made.connect("127.0.0.1", port, keepalive=30)
    made.loop_start()
    if not answered.wait(30):
        raise SystemExit("no CONNACK within 30 s")
    return result


def main(argv):
    command, port, key = argv[1], int(argv[2]), argv[3]
    if command == "publish":
        topic, payload, check_url, token = argv[4], argv[5], argv[6], argv[7]
        made = client(key, v5="--v5" in argv)
        acked = threading.Event()
        reasons = []

        def on_publish(_client, _userdata, _mid, reason, _properties):
            reasons.append(str(reason))
            acked.set()

        made.on_publish = on_publish
        connack = connect(made, port)
        made.publish(topic, payload, qos=1)
        if not acked.wait(60):
            raise SystemExit("no PUBACK within 60 s")
        # Read at once: the alert must be there when the PUBACK is.
        request = urllib.request.Request(check_url, headers={"Authorization": f"Bearer {token}"})
        alerts = json.load(urllib.request.urlopen(request))["items"]
        made.disconnect()
        made.loop_stop()
        print(json.dumps({"connack": connack["reason"], "puback": reasons[0], "alerts": alerts}))
    elif command == "will":
        made = client(key, will=True)
        connect(made, port)
        made.loop_stop()
        made.socket().close()  # gone without a DISCONNECT: the will stands
        print("dropped")
    elif command == "refused":
        made = client(key, v5="--v5" in argv)
        result = connect(made, port)
        made.loop_stop()
        print(json.dumps(result))
    else:
        raise SystemExit(f"unknown command {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
