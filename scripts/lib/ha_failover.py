"""Failover under load: two Roost nodes on a Patroni-managed PostgreSQL pair (scripts/ha).

Posters post at a steady rate with a `client_msg_id` each and repeat a post after a 503 or a
broken connection until it is acknowledged; 200 WebSocket streams (spread over both nodes)
resume from their cursor whenever they drop. Then the primary's postmaster is killed with
SIGKILL (or, with --switchover, `patronictl switchover` moves the primary) and the load goes on
until Patroni's new primary has served for a while. Checked afterwards, on the new primary:
every acknowledged post is in the group's log exactly once; every stream received every
acknowledged message exactly once, in seq order; both Roost nodes stayed up; /readyz reported
the gap. Printed: the time from the kill to the first acknowledged post after it, the 503s, and
(with asynchronous replication) how many acknowledged posts the failover lost.

Usage (under scripts/ha, which sets DATABASE_URL and ROOST_HA_*):
    ha_failover.py ROOST_BINARY [--switchover] [--loss-allowed]
"""

import argparse
import asyncio
import itertools
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import websockets
from roost_process import Failure, RoostServe, check, http

STREAMS = 200
MEMBERS = 20
POSTERS = 4
RATE = 5.0  # posts per second per poster
PASSWORD = "failover test password"


def say(text):
    print(f"ha-test: {text}", flush=True)


class Node(RoostServe):
    def __init__(self, binary, name, workdir, admin, outbox):
        limits = ("ROOST_REGISTRATIONS_PER_ADDRESS_PER_HOUR", "ROOST_INVITATIONS_PER_SENDER_PER_DAY", "ROOST_INVITATIONS_PER_GROUP_PER_DAY",
                  "ROOST_INVITATIONS_PER_RECIPIENT_PER_DAY", "ROOST_ALERTS_PER_USER_PER_HOUR", "ROOST_POSTS_PER_ACCOUNT_PER_MINUTE",
                  "ROOST_OUTSIDE_PER_DESTINATION_PER_DAY", "ROOST_OUTSIDE_PER_ACCOUNT_PER_DAY", "ROOST_OUTSIDE_PER_NEW_ACCOUNT_PER_DAY",
                  "ROOST_OUTSIDE_PER_TENANT_PER_DAY")
        super().__init__(binary, os.path.join(workdir, f"{name}.log"), name=name,
                         environment={"ROOST_ADMIN_TOKEN": admin, **{limit: "1000000" for limit in limits}},
                         arguments=("--no-access-log",) + (() if outbox else ("--no-outbox-worker",)))


class Patroni:
    def __init__(self):
        self.configs = os.environ["ROOST_HA_PATRONI_CONFIGS"].split()
        self.api_ports = os.environ["ROOST_HA_API_PORTS"].split()
        self.directory = os.environ["ROOST_HA_DIR"]

    def cluster(self):
        for port in self.api_ports:
            status, body = http("GET", f"http://127.0.0.1:{port}/cluster", timeout=2)
            if status == 200:
                return body
        return None

    def leader(self):
        cluster = self.cluster() or {}
        for member in cluster.get("members", []):
            if member.get("role") == "leader" and member.get("state") == "running":
                return member["name"]
        return None

    def standby_streaming(self, sync):
        cluster = self.cluster() or {}
        wanted = {"sync_standby"} if sync else {"replica", "sync_standby"}
        return any(member.get("role") in wanted and member.get("state") in ("streaming", "running") for member in cluster.get("members", []))

    def postmaster_pid(self, name):
        with open(os.path.join(self.directory, name, "postmaster.pid")) as pid_file:
            return int(pid_file.readline())

    def patronictl(self, *arguments):
        return subprocess.run(["runuser", "-u", "postgres", "--", "patronictl", "-c", self.configs[0], *arguments],
                              capture_output=True, text=True, timeout=120, check=False)


class Stream:
    """One resuming stream: what it saw, and whether it ever saw a seq twice or out of order."""

    def __init__(self, index, node, token, group):
        self.index = index
        self.node = node
        self.token = token
        self.group = group
        self.cursor = None
        self.seen = []  # (seq, client_msg_id) of message.created, in arrival order
        self.problems = []
        self.connects = 0

    async def run(self, stop):
        url = self.node.base.replace("http://", "ws://") + f"/v1/stream?access_token={self.token}"
        while not stop.is_set():
            try:
                async with websockets.connect(url, open_timeout=5, ping_interval=None, max_size=2 ** 20) as socket_:
                    self.connects += 1
                    ready = json.loads(await asyncio.wait_for(socket_.recv(), 10))
                    if ready.get("type") != "ready":
                        raise ConnectionError(f"first frame {ready.get('type')}")
                    if self.cursor is None:
                        self.cursor = next(group["last_seq"] for group in ready["groups"] if group["id"] == self.group)
                    else:
                        await socket_.send(json.dumps({"type": "resume", "cursors": {self.group: self.cursor}}))
                    while not stop.is_set():
                        try:
                            text = await asyncio.wait_for(socket_.recv(), 0.5)
                        except TimeoutError:
                            continue
                        frame = json.loads(text)
                        if frame.get("type") != "event" or frame.get("group_id") != self.group:
                            continue
                        seq = frame["seq"]
                        if seq <= self.cursor:
                            self.problems.append(f"seq {seq} again or out of order after {self.cursor}")
                        elif seq != self.cursor + 1:
                            self.problems.append(f"a gap: seq {seq} after {self.cursor}")
                        self.cursor = max(self.cursor, seq)
                        if frame["event"] == "message.created":
                            self.seen.append((seq, frame["data"].get("client_msg_id")))
            except (TimeoutError, OSError, websockets.exceptions.WebSocketException, ConnectionError, json.JSONDecodeError):
                pass
            if not stop.is_set():
                await asyncio.sleep(0.2 + 0.3 * secrets.randbelow(100) / 100)


class Poster:
    def __init__(self, index, nodes, token, group):
        self.index = index
        self.nodes = nodes
        self.token = token
        self.group = group
        self.acknowledged = {}  # client_msg_id → (seq, acknowledged at)
        self.unavailable = 0  # 503s
        self.broken = 0  # connections that failed
        self.other = []  # any other answer: a bug

    def post(self, stop_after):
        """Posts one message until acknowledged (repeating it with the same id), or gives up."""
        client_msg_id = secrets.token_hex(12)
        body = {"client_msg_id": client_msg_id, "kind": "chat", "text": f"poster {self.index}: {client_msg_id}"}
        attempt = 0
        while time.time() < stop_after:
            node = self.nodes[(self.index + attempt) % len(self.nodes)]
            attempt += 1
            status, answer = http("POST", f"{node.base}/v1/groups/{self.group}/messages", body, self.token, timeout=10)
            if status in (200, 201):
                self.acknowledged[client_msg_id] = (answer["seq"], time.time())
                return
            if status == 503:
                self.unavailable += 1
            elif status == 0:
                self.broken += 1
            else:
                self.other.append((status, answer))
                return
            time.sleep(0.2)


def setup(nodes, admin):
    """A tenant, an owner with a group, and MEMBERS-1 members who joined by invitation."""
    base = nodes[0].base
    slug = "ha-" + secrets.token_hex(3)
    status, _ = http("POST", base + "/v1/admin/tenants", {"slug": slug, "name": "Failover street", "registration": "open"}, admin)
    check(status == 201, f"tenant: {status}")
    status, owner = http("POST", base + "/v1/auth/register", {"tenant": slug, "email": "owner@example.org", "password": PASSWORD, "display_name": "Owner"})
    check(status == 201, f"owner: {status}")
    status, group = http("POST", base + "/v1/groups", {"name": "Failover street"}, owner["token"])
    check(status == 201, f"group: {status}")
    tokens = [owner["token"]]
    for index in range(1, MEMBERS):
        email = f"member{index}@example.org"
        status, _ = http("POST", f"{base}/v1/groups/{group['id']}/invitations", {"email": email}, owner["token"])
        check(status == 201, f"invitation: {status}")
    deadline = time.time() + 60
    invitations = {}
    while time.time() < deadline and len(invitations) < MEMBERS - 1:
        invitations = {entry["to"]: entry["data"]["token"] for entry in nodes[0].deliveries("invitation", tenant=slug)}
        time.sleep(0.2)
    check(len(invitations) == MEMBERS - 1, f"invitations delivered: {len(invitations)}")
    for index in range(1, MEMBERS):
        email = f"member{index}@example.org"
        status, member = http("POST", base + "/v1/auth/register", {"tenant": slug, "email": email, "password": PASSWORD,
                                                                    "display_name": f"Member {index}", "invitation_token": invitations[email]})
        check(status == 201, f"member {index}: {status} {member}")
        tokens.append(member["token"])
    return group["id"], tokens


def all_messages(node, group, token):
    """(seq, client_msg_id) of every message in the group, from the primary, oldest first."""
    found = []
    before = None
    while True:
        url = f"{node.base}/v1/groups/{group}/messages?limit=200" + (f"&before={before}" if before else "")
        status, page = http("GET", url, token=token)
        check(status == 200, f"reading the log: {status}")
        found += [(item["seq"], item["client_msg_id"]) for item in page["items"]]
        if not page["items"] or len(page["items"]) < 200:
            break
        before = page["items"][-1]["seq"]
    return sorted(found)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--switchover", action="store_true", help="a planned switchover instead of a kill")
    parser.add_argument("--loss-allowed", action="store_true", help="asynchronous replication: count what is lost, do not fail on it")
    args = parser.parse_args()
    sync = os.environ.get("ROOST_HA_SYNC") == "on"
    label = "switchover" if args.switchover else ("failover, asynchronous replication" if args.loss_allowed else "failover, synchronous replication")

    patroni = Patroni()
    workdir = tempfile.mkdtemp(prefix="roost-ha-test-")
    admin = secrets.token_urlsafe(24)
    nodes = [Node(args.binary, "node1", workdir, admin, outbox=True), Node(args.binary, "node2", workdir, admin, outbox=False)]
    nodes[0].start()  # the first node migrates; the second finds the schema in place
    nodes[1].start()
    try:
        group, tokens = setup(nodes, admin)
        streams = [Stream(index, nodes[index % 2], tokens[index % MEMBERS], group) for index in range(STREAMS)]
        posters = [Poster(index, nodes, tokens[index], group) for index in range(POSTERS)]
        stop_streams = asyncio.Event()
        stream_tasks = [asyncio.create_task(stream.run(stop_streams)) for stream in streams]
        deadline = time.time() + 30
        while time.time() < deadline and sum(1 for stream in streams if stream.cursor is not None) < STREAMS:
            await asyncio.sleep(0.1)
        check(all(stream.cursor is not None for stream in streams), "every stream connected")

        readiness = []  # (time, node, status)
        executor = ThreadPoolExecutor(max_workers=POSTERS * 4 + 4)
        loop = asyncio.get_running_loop()
        stop_load = asyncio.Event()

        async def post_steadily(poster):
            while not stop_load.is_set():
                started = time.time()
                await loop.run_in_executor(executor, poster.post, time.time() + 90)
                await asyncio.sleep(max(0.0, 1 / RATE - (time.time() - started)))

        async def watch_readiness():
            while not stop_load.is_set():
                for node in nodes:
                    status, _ = await loop.run_in_executor(executor, lambda node=node: http("GET", node.base + "/readyz", timeout=2))
                    readiness.append((time.time(), node.name, status))
                await asyncio.sleep(0.2)

        load = [asyncio.create_task(post_steadily(poster)) for poster in posters] + [asyncio.create_task(watch_readiness())]
        await asyncio.sleep(5)

        old_leader = patroni.leader()
        check(old_leader is not None, "a leader before the event")
        struck = time.time()
        if args.switchover:
            candidate = "pg2" if old_leader == "pg1" else "pg1"
            result = await loop.run_in_executor(executor, lambda: patroni.patronictl("switchover", "--leader", old_leader, "--candidate", candidate, "--force"))
            check(result.returncode == 0, f"patronictl switchover: {result.stdout} {result.stderr}")
            say(f"switchover from {old_leader} to {candidate} asked of Patroni")
        else:
            pid = patroni.postmaster_pid(old_leader)
            os.kill(pid, signal.SIGKILL)
            say(f"killed the primary's postmaster ({old_leader}, pid {pid}) with SIGKILL")

        new_leader = None
        deadline = time.time() + 90
        while time.time() < deadline:
            leader = patroni.leader()
            if leader and leader != old_leader:
                new_leader = leader
                break
            await asyncio.sleep(0.2)
        check(new_leader is not None, f"Patroni promoted the standby within 90 s (leader: {patroni.leader()})")
        promoted = time.time()
        say(f"Patroni promoted {new_leader} {promoted - struck:.1f} s after the {'switchover began' if args.switchover else 'kill'}")

        # The load goes on until posts flow again and the old primary is a standby once more.
        deadline = time.time() + 120
        while time.time() < deadline:
            recovered = any(at > promoted for poster in posters for _, at in poster.acknowledged.values())
            if recovered and patroni.standby_streaming(sync) and time.time() - promoted > 10:
                break
            await asyncio.sleep(0.5)
        stop_load.set()
        await asyncio.gather(*load)
        executor.shutdown(wait=True)

        acknowledged = {key: value for poster in posters for key, value in poster.acknowledged.items()}
        after = [at for _, at in acknowledged.values() if at > struck]
        first_after = min(after) - struck if after else None
        # What clients felt: the longest time without an acknowledged post, around the event.
        times = sorted(at for _, at in acknowledged.values() if at > struck - 5)
        pause = max((later - earlier for earlier, later in itertools.pairwise(times)), default=0.0)
        unavailable = sum(poster.unavailable for poster in posters)
        broken = sum(poster.broken for poster in posters)
        other = [answer for poster in posters for answer in poster.other]
        check(not other, f"answers other than 2xx, 503 and a broken connection: {other[:5]}")
        for node in nodes:
            check(node.process.poll() is None, f"{node.name} stopped during the {label}")
        gaps = sorted({name for at, name, status in readiness if status != 200 and at >= struck})

        # Every acknowledged post is in the new primary's log exactly once.
        log = all_messages(nodes[0], group, tokens[0])
        by_id = {}
        for seq, client_msg_id in log:
            by_id.setdefault(client_msg_id, []).append(seq)
        lost = [key for key in acknowledged if key not in by_id]
        doubled = [key for key, seqs in by_id.items() if len(seqs) > 1]
        check(not doubled, f"posts stored twice: {doubled[:5]}")
        moved = [key for key, (seq, _) in acknowledged.items() if key in by_id and by_id[key] != [seq]]
        check(not moved, f"acknowledged with one seq, stored with another: {moved[:5]}")
        if args.loss_allowed:
            say(f"{label}: {len(lost)} of {len(acknowledged)} acknowledged posts are not on the new primary")
        else:
            check(not lost, f"{len(lost)} acknowledged posts are missing from the new primary's log: {lost[:5]}")

        # Every stream received every stored message exactly once, in seq order.
        last = max(seq for seq, _ in log)
        deadline = time.time() + 30
        while time.time() < deadline and any(stream.cursor < last for stream in streams):
            await asyncio.sleep(0.2)
        stop_streams.set()
        await asyncio.gather(*stream_tasks)
        problems = [(stream.index, stream.problems[:3]) for stream in streams if stream.problems]
        first_seen = min(seq for seq, _ in log if seq > 0)
        missed = {}
        for stream in streams:
            # Compared as (seq, client_msg_id): after a lossy failover a seq can name another message.
            start = stream.seen[0][0] if stream.seen else first_seen
            missing = sorted({pair for pair in log if pair[0] >= start} - set(stream.seen))
            if missing:
                missed[stream.index] = [seq for seq, _ in missing]
        lost_seen = sum(1 for stream in streams if any(client_msg_id in lost for _, client_msg_id in stream.seen))
        if args.loss_allowed:
            # A lost commit's seq is given to the next message on the new primary: a stream that saw
            # the lost one holds a cursor past it and never gets its successor.
            say(f"{label}: {lost_seen} streams received a message the failover then lost; {len(problems)} saw a seq reused; "
                f"{len(missed)} missed a later message because of it")
        else:
            check(not problems, f"streams saw events twice, out of order or with gaps: {problems[:5]}")
            check(not missed, f"streams missed messages: {list(missed.items())[:5]}")
        reconnects = sum(stream.connects - 1 for stream in streams)
        seen_acknowledged = sum(1 for stream in streams for _, client_msg_id in stream.seen if client_msg_id in acknowledged)

        say(f"{label}: {len(acknowledged)} posts acknowledged, {len(log)} messages in the log; {unavailable} answers 503 and "
            f"{broken} broken connections, all repeated until acknowledged; first post acknowledged "
            + (f"{first_after:.2f} s after the {'switchover began' if args.switchover else 'kill'}" if first_after is not None else "never after it")
            + f"; the longest time without an acknowledged post: {pause:.2f} s")
        say(f"{label}: {STREAMS} streams, {reconnects} reconnections, {seen_acknowledged} acknowledged messages received"
            + ("" if args.loss_allowed else ", each once and in order")
            + f"; /readyz reported the gap on {', '.join(gaps) if gaps else 'no node'}; both nodes stayed up")
    finally:
        for node in nodes:
            node.stop()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Failure as failure:
        print(f"ha-test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
