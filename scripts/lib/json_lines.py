"""The JSON lines a running service has written to its log so far, for the benchmarks that
watch one (the push service, the push gateway, the SMTP relay)."""
import json


def ended_lines(path):
    """Each line of `path` after the first (the service's greeting), as JSON. The service may be
    writing a line as this reads, and a long one goes out in more than one write: only the lines
    it has ended are read."""
    with open(path) as log:
        next(log, None)
        return [json.loads(line) for line in log if line.endswith("\n") and line.strip()]
