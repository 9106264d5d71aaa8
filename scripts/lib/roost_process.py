"""What the end-to-end scripts (web_e2e.py, ha_failover.py) share: failures, JSON over HTTP,
and `roost serve` as a child process on a port of its own, with log delivery read back."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http(method, url, body=None, token=None, timeout=10):
    """(status, parsed body or None); status 0 when the connection failed."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, method=method, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return 0, None
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, None


class RoostServe:
    """`roost serve` on 127.0.0.1 (the same port across restarts), ROOST_DELIVERY=log, its output
    appended to `log_path`. `environment` and `arguments` add to what every run gets."""

    def __init__(self, binary, log_path, name="roost serve", environment=None, arguments=()):
        self.binary = binary
        self.log_path = log_path
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.environment = dict(os.environ, ROOST_DELIVERY="log", **(environment or {}))
        self.arguments = [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--metrics-listen", "off", *arguments]
        self.process = None

    def start(self, ready_within=60):
        with open(self.log_path, "a") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(self.arguments, stdout=log, stderr=subprocess.STDOUT, env=self.environment)
        deadline = time.time() + ready_within
        while time.time() < deadline:
            check(self.process.poll() is None, f"{self.name} exited; see {self.log_path}")
            if http("GET", self.base + "/readyz", timeout=1)[0] == 200:
                return
            time.sleep(0.1)
        raise Failure(f"{self.name} was not ready within {ready_within} s")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def deliveries(self, template, tenant=None):
        """The log route's deliveries of one template (of one tenant, when given), oldest first."""
        found = []
        with open(self.log_path) as log:
            for line in log:
                if not (line.startswith("{") and '"channel"' in line):
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if entry.get("template") == template and (tenant is None or entry.get("tenant") == tenant):
                    found.append(entry)
        return found
