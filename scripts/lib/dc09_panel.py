"""An alarm panel reporting to Roost's DC-09 receiver, made of dc09-spt (PyPI, pinned in
scripts/requirements/dc09.txt): the independent panel of Tests/RoostServerTests/DC09ReceiverTests.swift
and of scripts/bench-bridges.

dc09-spt builds the events (its dc03_msg and dc05_msg), frames them (dc09_msg.dc09block) and judges
Roost's answers with the check its dialler uses (dc09_msg.dc09answer: CRC, length, sequence number,
the receiver's time). Its AES does not run on Python 3 (it hands pycryptodome a str IV), so an
encrypted frame is built here the way dc09block builds one, with the cryptography package doing the
AES, and dc09answer is given a decryption by the same package. (0.0.4's dc09_extra forgets to return
the extension blocks it builds; they are built here in its format.)

    dc09_panel.py send HOST PORT tcp|udp SPEC_JSON
        sends one frame and prints {"answer": "ACK"|"NAK"|"DUH"|null, "raw": ..., "offset": ...}.
        SPEC_JSON: {"account", "line", "receiver"?, "key"? (hex), "seq", "type": "SIA-DCS"|"ADM-CID"|"NULL",
        "event"? (dc03/dc05 parameters), "extra"? (dc09_extra parameters), "time_offset"? (seconds),
        "crc"? ("bad" spoils it), "key_for_answer"? (hex: the key to read the answer with)}
    dc09_panel.py dialler HOST PORT tcp|udp ACCOUNT LINE TYPE EVENTS_JSON
        the real dialler (dc09_spt.dc09_spt, plain frames): queues the events (a list) in order,
        numbered from 0001 as a panel numbers its messages, and prints {"sent": true} once it
        reports the queue empty (every message acknowledged), or exits 1.
    dc09_panel.py bench HOST PORT tcp|udp SPEC_JSON COUNT
        sends COUNT frames one after another (sequence numbers counting up, the zone too, so each
        is a new alarm; each awaiting its answer), on one TCP connection or one UDP socket;
        prints {"acks", "seconds"}.
"""
import datetime
import json
import socket
import sys
import time

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from dc09_spt.msg.dc03_msg import dc03_msg
from dc09_spt.msg.dc05_msg import dc05_msg
from dc09_spt.msg.dc09_msg import dc09_msg


def aes(key, data, encrypt):
    cipher = Cipher(algorithms.AES(key), modes.CBC(bytes(16)))
    worker = cipher.encryptor() if encrypt else cipher.decryptor()
    return worker.update(data) + worker.finalize()


class Panel(dc09_msg):
    """dc09-spt's message block, with its AES done by cryptography."""

    def __init__(self, spec):
        key = bytes.fromhex(spec["key"]) if spec.get("key") else None
        receiver = int(spec["receiver"], 16) if spec.get("receiver") else None
        # dc09_msg takes 16 or 32-byte keys; a 24-byte one is set after.
        super().__init__(spec["account"], None, receiver, int(spec["line"], 16), int(spec.get("time_offset", 0)))
        self.key = key
        self.answer_key = bytes.fromhex(spec["key_for_answer"]) if spec.get("key_for_answer") else key

    def dc09crypt(self, data):
        # dc09_msg.dc09crypt's padding and timestamp, with printable padding that is never [ ] or |.
        pad = (len(data) + 21) % 16
        crypt = "".join(chr(0x41 + (i % 26)) for i in range(17 - pad))
        now = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.offset)
        crypt += data + f"_{now:%H:%M:%S,%m-%d-%Y}"
        return aes(self.key, crypt.encode(), True)

    def dc09decrypt(self, data):
        return aes(self.answer_key, data, False)


def frame(spec):
    panel = Panel(spec)
    kind = spec.get("type", "SIA-DCS")
    if kind == "NULL":
        # A link test's data block is empty; encrypted, it carries its timestamp like any frame.
        return panel, panel.dc09block(int(spec["seq"]), "NULL", "]")
    event = spec.get("event", {})
    message = dc03_msg.dc03event(spec["account"], event) if kind == "SIA-DCS" else dc05_msg.dc05event(spec["account"], event)
    # The extensions follow the data block's "]".
    return panel, panel.dc09block(int(spec["seq"]), kind, message + extensions(spec.get("extra", {})))


def extensions(params):
    """dc09_msg.dc09_extra's blocks ([X lon] [Y lat] [M mac] [V url]): 0.0.4's builds them and
    returns nothing, so its dialler never sends them."""
    blocks = [("X", "lon"), ("Y", "lat"), ("M", "mac"), ("V", "verification")]
    return "".join("[" + letter + params[name] + "]" for letter, name in blocks if name in params)


def spoil(block):
    """The same frame with a wrong CRC."""
    crc = int(block[1:5], 16) ^ 0x5A5A
    return block[0] + f"{crc:04X}" + block[5:]


def exchange(connection, kind, host, port, data):
    if kind == "tcp":
        connection.sendall(data)
        answer = b""
        while not answer.endswith(b"\r"):
            chunk = connection.recv(1024)
            if not chunk:
                break
            answer += chunk
        return answer
    connection.sendto(data, (host, port))
    answer, _ = connection.recvfrom(2048)
    return answer


def connect(kind, host, port):
    if kind == "tcp":
        return socket.create_connection((host, port), timeout=30)
    made = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    made.settimeout(30)
    return made


def judge(panel, seq, answer):
    if not answer:
        return {"answer": None, "raw": ""}
    text = answer.decode("ascii", "replace")
    try:
        verdict, offset = panel.dc09answer(seq, text)
    except Exception as error:  # noqa: BLE001 - the dialler's own refusal, reported as such
        return {"answer": None, "raw": text, "refused_by_dialler": str(error)}
    return {"answer": verdict, "raw": text, "offset": offset}


def send(host, port, kind, spec):
    panel, block = frame(spec)
    if spec.get("crc") == "bad":
        block = spoil(block)
    connection = connect(kind, host, port)
    try:
        answer = exchange(connection, kind, host, port, block.encode())
    except TimeoutError:
        answer = b""
    finally:
        connection.close()
    return judge(panel, int(spec["seq"]), answer)


def dialler(host, port, kind, account, line, mtype, events):
    from dc09_spt.dc09_spt import dc09_spt

    spt = dc09_spt(account, line=int(line, 16))
    spt.set_path("main", "primary", host, port, type=kind)
    for event in events:
        spt.send_msg(mtype, event)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = spt.state()
        if state["msgs queued"] == 0 and not state.get("send active"):
            return {"sent": True, "state": {k: v for k, v in state.items() if isinstance(v, (int, bool))}}
        time.sleep(0.05)
    return None


def bench(host, port, kind, spec, count):
    connection = connect(kind, host, port)
    acks = 0
    started = time.monotonic()
    for index in range(count):
        spec["seq"] = index % 9999 + 1
        if "event" in spec:
            spec["event"] = dict(spec["event"], zone=str(index % 1000))
        _, block = frame(spec)
        try:
            answer = exchange(connection, kind, host, port, block.encode())
        except TimeoutError:
            continue
        if answer[9:16].startswith((b'"ACK"', b'"*ACK"')):
            acks += 1
    seconds = time.monotonic() - started
    connection.close()
    return {"acks": acks, "seconds": round(seconds, 3), "transport": kind}


def main(argv):
    command, host, port, kind = argv[1], argv[2], int(argv[3]), argv[4]
    if command == "send":
        print(json.dumps(send(host, port, kind, json.loads(argv[5]))))
    elif command == "dialler":
        result = dialler(host, port, kind, argv[5], argv[6], argv[7], json.loads(argv[8]))
        if result is None:
            print(json.dumps({"sent": False}))
            return 1
        print(json.dumps(result))
    elif command == "bench":
        print(json.dumps(bench(host, port, kind, json.loads(argv[5]), int(argv[6]))))
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main(sys.argv))
