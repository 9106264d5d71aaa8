"""The floor of a post (issue #61): PostgreSQL alone doing the least a durable, ordered, notified
post must do, so Roost's cost per post can be read against it. Each transaction is one statement
that takes the group's next seq from its counter row (gapless: the row lock orders the group's
posts), inserts the log row and notifies, driven by pgbench (PostgreSQL's own, Debian's
postgresql package) at the posts benchmark's concurrency, on the benchmark's cluster with its
fsync and synchronous_commit. PostgreSQL's CPU is read from /proc: every live postgres process,
and the postmaster's reaped children (pgbench's backends end with the run).

  post_floor.py BINDIR HOST PORT DATABASE USER POSTMASTER_PID SECONDS [CONCURRENCY]

Prints the pgbench run's figures and one JSON line for the benchmark's results:
{"scenario": "post-floor", "server": "postgres", "rate", "database_cpu_ms_per_post", ...}.
POST_FLOOR_VARIANT=no-notify or batch-N runs a variant instead, to weigh a design against the
floor before building it into Roost (figures per post either way).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

GROUPS = 100

SETUP = f"""
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS post_floor CASCADE;
CREATE SCHEMA post_floor;
CREATE TABLE post_floor.groups (id integer PRIMARY KEY, last_seq bigint NOT NULL);
CREATE TABLE post_floor.log (
    group_id integer NOT NULL, seq bigint NOT NULL, author integer NOT NULL, text text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (group_id, seq));
INSERT INTO post_floor.groups SELECT g, 0 FROM generate_series(1, {GROUPS}) g;
"""

# The same text as the posts benchmark's messages.
SCRIPT = f"""\\set g random(1, {GROUPS})
\\set author random(1, 1000)
WITH next AS (UPDATE post_floor.groups SET last_seq = last_seq + 1 WHERE id = :g RETURNING last_seq),
     posted AS (INSERT INTO post_floor.log (group_id, seq, author, text)
                SELECT :g, last_seq, :author, 'Suspicious van on Elm St' FROM next RETURNING seq)
SELECT pg_notify('post_floor', :g || ':' || seq) FROM posted;
"""

# Variants to weigh a design against the floor (POST_FLOOR_VARIANT; the benchmark runs the floor):
#   no-notify   the same without the notify
#   batch-N     N posts of one group in one statement and one commit (group commit's floor:
#               one counter update, one notify, one WAL flush for N)
VARIANTS = {
    "no-notify": f"""\\set g random(1, {GROUPS})
\\set author random(1, 1000)
WITH next AS (UPDATE post_floor.groups SET last_seq = last_seq + 1 WHERE id = :g RETURNING last_seq)
INSERT INTO post_floor.log (group_id, seq, author, text) SELECT :g, last_seq, :author, 'Suspicious van on Elm St' FROM next;
""",
}


def batch(size):
    return f"""\\set g random(1, {GROUPS})
\\set author random(1, 1000)
WITH next AS (UPDATE post_floor.groups SET last_seq = last_seq + {size} WHERE id = :g RETURNING last_seq),
     posted AS (INSERT INTO post_floor.log (group_id, seq, author, text)
                SELECT :g, last_seq - {size} + n, :author, 'Suspicious van on Elm St' FROM next, generate_series(1, {size}) n RETURNING seq)
SELECT pg_notify('post_floor', :g || ':' || max(seq)) FROM posted;
"""


def ticks(path, fields):
    with open(path) as stat:
        values = stat.read().rsplit(")", 1)[1].split()
    return sum(int(values[index]) for index in fields)


def postgres_cpu(postmaster):
    """CPU seconds of PostgreSQL so far: every live postgres process's, and the postmaster's
    reaped children's (a backend that ended is counted there once it is waited for)."""
    total = ticks(f"/proc/{postmaster}/stat", (11, 12, 13, 14))
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == str(postmaster):
            continue
        try:
            with open(f"/proc/{name}/comm") as comm:
                if comm.read().strip() != "postgres":
                    continue
            total += ticks(f"/proc/{name}/stat", (11, 12))
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def main():
    if len(sys.argv) not in (8, 9):
        sys.exit(__doc__)
    bindir, host, port, database, user, postmaster, seconds = sys.argv[1:8]
    concurrency = int(sys.argv[8]) if len(sys.argv) == 9 else 32
    connection = ["-h", host, "-p", port, "-U", user, "-d", database]
    subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *connection, "-c", SETUP], check=True)
    variant = os.environ.get("POST_FLOOR_VARIANT", "")
    per_transaction = int(variant[6:]) if variant.startswith("batch-") else 1
    text = batch(per_transaction) if per_transaction > 1 else VARIANTS.get(variant, SCRIPT)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(text)
    try:
        before = postgres_cpu(postmaster)
        run = subprocess.run([os.path.join(bindir, "pgbench"), "-n", "-M", "prepared", "-c", str(concurrency), "-j", "2",
                              "-T", seconds, "-f", script.name, *connection], capture_output=True, text=True, check=True)
        after = postgres_cpu(postmaster)
    finally:
        os.unlink(script.name)
    transactions = int(re.search(r"number of transactions actually processed: (\d+)", run.stdout).group(1)) * per_transaction
    rate = float(re.search(r"tps = ([0-9.]+)", run.stdout).group(1)) * per_transaction
    latency = float(re.search(r"latency average = ([0-9.]+) ms", run.stdout).group(1))
    cpu = after - before
    subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", *connection, "-c", "SET client_min_messages = warning; DROP SCHEMA post_floor CASCADE"],
                   check=True)
    kind = f"variant {variant}" if variant else "one statement a post: seq, log row, notify"
    print(f"  the floor, PostgreSQL alone (pgbench, concurrency {concurrency}, {kind}): "
          f"{rate:.0f} posts/s, latency {latency:.2f} ms; PostgreSQL CPU {cpu:.2f} s for {transactions} posts, "
          f"{cpu * 1000 / max(1, transactions):.3f} ms a post")
    print(json.dumps({"scenario": "post-floor" + (f"-{variant}" if variant else ""), "server": "postgres", "concurrency": concurrency, "rate": round(rate),
                      "latency_ms": latency, "posts": transactions, "database_cpu_s": round(cpu, 3),
                      "database_cpu_ms_per_post": round(cpu * 1000 / max(1, transactions), 4)}))


if __name__ == "__main__":
    main()
