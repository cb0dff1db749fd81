"""A device written against the raw topics of spec 4.11 with paho-mqtt, as an
independent second client. Reads its steps from argv, prints one JSON line per
observation for the test to check."""
import json
import ssl
import sys
import threading

import paho.mqtt.client as mqtt

host, port, ca, client_id, username, password, mode = sys.argv[1:8]
# X.509: an empty password, and the device's certificate and key files after the mode.
certfile, keyfile = (sys.argv[8:10] + [None, None])[:2]
events = []
lock = threading.Condition()


def emit(**fields):
    print(json.dumps(fields), flush=True)


def on_connect(client, userdata, flags, rc):
    with lock:
        events.append(("connack", rc))
        lock.notify_all()


def on_subscribe(client, userdata, mid, granted):
    with lock:
        events.append(("suback", list(granted)))
        lock.notify_all()


def on_message(client, userdata, msg):
    with lock:
        events.append(("message", (msg.topic, msg.payload.decode("utf-8"))))
        lock.notify_all()


def on_disconnect(client, userdata, rc):
    with lock:
        events.append(("disconnect", rc))
        lock.notify_all()


def wait_for(kind, timeout=10):
    with lock:
        ok = lock.wait_for(lambda: any(e[0] == kind for e in events), timeout)
        if not ok:
            return None
        for i, e in enumerate(events):
            if e[0] == kind:
                return events.pop(i)[1]


client = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv311, clean_session=True)
client.username_pw_set(username, password or None)
client.tls_set(ca_certs=ca, certfile=certfile, keyfile=keyfile, tls_version=ssl.PROTOCOL_TLS_CLIENT)
client.on_connect = on_connect
client.on_subscribe = on_subscribe
client.on_message = on_message
client.on_disconnect = on_disconnect
client.reconnect_delay_set(min_delay=60, max_delay=60)
client.connect(host, int(port), keepalive=30)
client.loop_start()
emit(step="connack", rc=wait_for("connack"))

client.subscribe("$iothub/twin/res/#", qos=0)
emit(step="suback", granted=wait_for("suback"))

if mode == "twin":
    client.publish("$iothub/twin/PATCH/properties/reported/?$rid=patch-1", json.dumps({"fanSpeed": 3, "mode": "eco"}), qos=0)
    topic, body = wait_for("message")
    emit(step="patch", topic=topic, body=body)
    client.publish("$iothub/twin/PATCH/properties/reported/?$rid=patch-2", json.dumps({"mode": None}), qos=0)
    topic, body = wait_for("message")
    emit(step="patch", topic=topic, body=body)
    client.publish("$iothub/twin/GET/?$rid=get-1", b"", qos=0)
    topic, body = wait_for("message")
    emit(step="get", topic=topic, body=body)
    client.publish("$iothub/twin/PATCH/properties/reported/?$rid=bad-1", b"{not json", qos=0)
    topic, body = wait_for("message")
    emit(step="bad-patch", topic=topic, body=body)
    client.disconnect()
elif mode == "no-api-version":
    client.publish("$iothub/twin/GET/?$rid=get-1", b"", qos=0)
    emit(step="after-twin-op", disconnect=wait_for("disconnect"), message=wait_for("message", timeout=0.5))
client.loop_stop()
