"""Writes BENCHMARKS.md and the fanout latency CDF plot from roost-bench's results.

  bench_report.py RESULTS.jsonl WORKDIR OUTPUT_DIR COMMAND

RESULTS.jsonl holds one JSON object a scenario (roost-bench --results); WORKDIR holds the
latency samples (SERVER-latency.dat) and versions.txt. Prints the table too.
"""
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path


def machine():
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    return f"{os.cpu_count()} cores ({model}), {memory / 1024 / 1024:.0f} GiB, Linux {platform.release()}"


def commit():
    try:
        revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        # The report's own outputs do not make the measured code "uncommitted".
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!BENCHMARKS.md",
                                ":!Benchmarks/fanout-latency-cdf.png"], capture_output=True, text=True, check=False).stdout.strip()
        return revision + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def number(value):
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def main():
    results_path, workdir, output, command = sys.argv[1:5]
    results = [json.loads(line) for line in Path(results_path).read_text().splitlines()]
    # The event-loop sweep's runs (each on cores of its own) have a table of their own; the
    # comparison above it is at one core a server.
    sweep = [r for r in results if r.get("layout")]
    # The delivery benchmark's runs (scripts/bench-delivery) have a table of their own too.
    delivery = [r for r in results if r["scenario"].startswith("delivery")]
    results = [r for r in results if not r.get("layout") and not r["scenario"].startswith("delivery")]

    def find(scenario, server, **match):
        for result in reversed(results):
            if result["scenario"] == scenario and result["server"] == server and all(result.get(k) == v for k, v in match.items()):
                return result
        return None

    # The servers in the order of the table; a peer is shown when the run measured it.
    titles = {"roost": "Roost", "mosquitto": "mosquitto", "ejabberd": "ejabberd", "synapse": "Synapse"}
    present = [name for name in titles if any(r["server"] == name for r in results)]
    peers = [name for name in present if name != "roost"]
    rows = []  # (figure, {server: text}, {server: number for the ratio}, goal, verdict)

    def verdict(ok):
        return "met" if ok else "not met"

    def row(figure, texts, numbers=None, goal="", met=""):
        rows.append((figure, texts, numbers or {}, goal, met))

    def with_database(steps):
        """{server: deliveries per CPU-second of server and PostgreSQL} of fanout steps; mosquitto
        keeps nothing, so its own figure stands."""
        both = {name: step.get("per_cpu_s_with_database", step["per_cpu_s"] if name == "mosquitto" else None) for name, step in steps.items()}
        return {name: value for name, value in both.items() if value is not None}

    connections = {name: next((r for r in results if r["scenario"] == "connections" and r["server"] == name), None) for name in present}
    same = connections.get("roost")
    box = [r for r in results if r["scenario"] == "connections" and r["server"] == "roost"][-1:]
    box = box[0] if box and box[0] is not same else None
    measured = {name: r for name, r in connections.items() if r}
    if measured:
        n = (same or next(iter(measured.values())))["connections"]
        # A server measured at another count (Synapse: its joins are slow to set up) says so.
        def count_differs(name):
            return "" if measured[name]["connections"] == n else f" (at {number(measured[name]['connections'])})"

        user = {name: r["user_bytes_per_connection"] for name, r in measured.items()}
        row(f"user-space bytes per idle connection ({number(n)} on one process)", {k: number(v) + count_differs(k) for k, v in user.items()}, user, "≤ 1,024",
            verdict(same["user_bytes_per_connection"] <= 1024) if same else "")
        kernel = {name: r["kernel_bytes_per_socket"] for name, r in measured.items()}
        row("kernel bytes per socket (slab and buffers, both ends)", {k: number(v) + count_differs(k) for k, v in kernel.items()}, kernel)
        rate = {name: r["handshakes_per_s"] for name, r in measured.items()}
        row(f"connections opened per second, ramp to {number(n)} (each authenticated)", {k: number(v) + count_differs(k) for k, v in rate.items()}, rate)
        row("connections live on one process", {k: f"{number(r['live'])} of {number(r['connections'])}" for k, r in measured.items()}, {},
            "19,000 per process", verdict(same["live"] >= 19_000) if same else "")
    if box:
        retried = f" ({number(box['retries'])} refused while busy and retried)" if box.get("retries") else ""
        row(f"connections live on the box ({box['server_processes']} Roost processes, {box['client_processes']} client processes)",
            {"roost": f"{number(box['live'])} of {number(box['connections'])} in {box['seconds']} s{retried}"}, {}, "100,000 on the box",
            verdict(box["live"] >= 100_000))
        row("user-space bytes per idle connection, on the box", {"roost": number(box["user_bytes_per_connection"])}, {}, "≤ 1,024",
            verdict(box["user_bytes_per_connection"] <= 1024))

    # The comparison is at one event loop each; Roost's runs with more loops have a row of their own.
    fanouts = {name: find("fanout", name, loops=None) for name in present}
    fanouts = {name: r for name, r in fanouts.items() if r}
    roost_fanout = fanouts.get("roost")
    if fanouts:
        shape = next(iter(fanouts.values()))

        def groups(name):
            """A server run with fewer groups of the same size (Synapse) says so."""
            r = fanouts[name]
            return "" if (r["groups"], r["members"]) == (shape["groups"], shape["members"]) else f" ({r['groups']}×{r['members']})"

        best = {name: r["best"] for name, r in fanouts.items()}
        per_cpu = {name: b["per_cpu_s"] for name, b in best.items()}
        mqtt_best = per_cpu.get("mosquitto")
        row(f"fanout {shape['groups']}×{shape['members']}: deliveries per server CPU-second (best step)",
            {k: number(v) + groups(k) for k, v in per_cpu.items()},
            per_cpu, "≥ 150,000 and ≥ 1.0× mosquitto (stretch 250,000)",
            verdict(per_cpu["roost"] >= 150_000 and (mqtt_best is None or per_cpu["roost"] >= mqtt_best)) if "roost" in per_cpu else "")
        together = with_database(best)
        row("fanout: deliveries per CPU-second of server and PostgreSQL together (that step)",
            {k: number(v) + (f" (PostgreSQL {best[k]['database_cpu_s']:.2f} s)" if "database_cpu_s" in best[k] else " (no database)")
             for k, v in together.items()}, together)
        row("fanout: p99 delivery latency at that step", {k: f"{b['p99_ms']} ms at {number(b['rate'])} posts/s" for k, b in best.items()})
        # A server past its knee queues, which batches writes and flatters its CPU figure: compare
        # them also at the highest rate every server carried without queueing (p99 under 100 ms).
        # A server stepped through other rates (Synapse's are lower) shows its own highest such
        # step, with its rate.
        calm = {name: {step["rate"]: step for step in r["steps"] if step["p99_ms"] < 100 and step["missing"] == 0} for name, r in fanouts.items()}
        reference = {step["rate"] for step in (roost_fanout or shape)["steps"]}
        alike = {name: steps for name, steps in calm.items() if set(steps) & reference}
        common = sorted(set.intersection(*(set(steps) for steps in alike.values()))) if alike else []
        if common:
            rate = common[-1]
            at = {name: steps[rate] for name, steps in alike.items()}
            at.update({name: steps[max(steps)] for name, steps in calm.items() if name not in alike and steps})

            def own_rate(name):
                return "" if at[name]["rate"] == rate else f" at {number(at[name]['rate'])} posts/s"

            # The goal holds at every rate both carried without queueing, not only the highest.
            both_calm = sorted(set(calm.get("roost", {})) & set(calm.get("mosquitto", {})))
            ahead = [r for r in both_calm if calm["roost"][r]["per_cpu_s"] >= calm["mosquitto"][r]["per_cpu_s"]]
            row(f"fanout: deliveries per server CPU-second at {number(rate)} posts/s, none saturated",
                {k: f"{number(s['per_cpu_s'])} (p99 {s['p99_ms']} ms{own_rate(k)})" for k, s in at.items()}, {k: s["per_cpu_s"] for k, s in at.items()},
                "≥ 1.0× mosquitto at every rate neither queues" + (f" (ahead at {', '.join(number(r) for r in ahead) or 'none'} of "
                                                                    f"{', '.join(number(r) for r in both_calm)} posts/s)" if both_calm else ""),
                verdict(len(ahead) == len(both_calm)) if both_calm else "")
            both = with_database(at)
            row("fanout: the same with PostgreSQL's CPU counted", {k: number(v) for k, v in both.items()}, both)
    loops = [r for r in results if r["scenario"] == "fanout" and r["server"] == "roost" and r.get("loops")]
    if roost_fanout and loops:
        one = {step["rate"]: step for step in roost_fanout["steps"]}
        for more in loops:
            for step in more["steps"]:
                if step["rate"] in one:
                    base = one[step["rate"]]
                    row(f"fanout at {number(step['rate'])} posts/s: deliveries per server CPU-second, 1 → {more['loops']} event loops (same core)",
                        {"roost": f"{number(base['per_cpu_s'])} (p99 {base['p99_ms']} ms) → {number(step['per_cpu_s'])} (p99 {step['p99_ms']} ms)"})
    # Alerts back to back; those with quiet between them (`gap_ms`) have a row of their own below.
    back_to_back = [r for r in results if r["scenario"] == "alert" and not r.get("gap_ms")]
    for members, goal in ((1000, 20), (10000, 100)):
        alerts = {name: next((r for r in back_to_back if r["server"] == name and r["members"] == members), None) for name in present}
        if not any(alerts.values()) and members == 1000:
            alerts = {name: next((r for r in back_to_back if r["server"] == name and r["members"] < 10000), None) for name in present}
        alerts = {k: v for k, v in alerts.items() if v}
        if alerts:
            shape = alerts.get("roost") or next(iter(alerts.values()))
            row(f"alert to {number(shape['members'])} members, post → last member's receipt ({shape['alerts']} alerts)",
                {k: f"p50 {a['p50_ms']} ms, p99 {a['p99_ms']} ms" + (f" (only {number(a['live'])} connected)" if a.get("live", a["members"]) < a["members"] else "")
                 + (f" of {a['alerts']} alerts (not every member within 30 s: {a['incomplete']})" if a.get("incomplete") else "")
                 + (f" of {a['alerts']} alerts" if a["alerts"] != shape["alerts"] and not a.get("incomplete") else "")
                 for k, a in alerts.items()},
                {k: a["p99_ms"] for k, a in alerts.items() if a.get("live", a["members"]) == a["members"]},
                f"p99 ≤ {goal} ms" + (" and ≤ mosquitto's" if members == 1000 else ""),
                verdict(alerts["roost"]["p99_ms"] <= goal and (members != 1000 or "mosquitto" not in alerts
                                                               or alerts["roost"]["p99_ms"] <= alerts["mosquitto"]["p99_ms"]))
                if "roost" in alerts else "")
            timed = {k: a for k, a in alerts.items() if "first_p50_ms" in a and not a.get("incomplete")}
            if timed:
                row("the same: post → first member's receipt; the server's CPU an alert",
                    {k: f"p50 {a['first_p50_ms']} ms, p99 {a['first_p99_ms']} ms; {a['server_cpu_ms_per_alert']:.1f} ms" for k, a in timed.items()},
                    {k: a["server_cpu_ms_per_alert"] for k, a in timed.items()})
    for spaced in (r for r in results if r["scenario"] == "alert" and r["server"] == "roost" and r.get("gap_ms")):
        row(f"alert to {number(spaced['members'])} members, {number(spaced['gap_ms'])} ms of quiet after each (alerts as they come, not back to back; "
            f"{spaced['alerts']} alerts): post → last receipt; → first; the server's CPU an alert",
            {"roost": f"p50 {spaced['p50_ms']} ms, p99 {spaced['p99_ms']} ms; p50 {spaced['first_p50_ms']} ms, p99 {spaced['first_p99_ms']} ms; "
                      f"{spaced['server_cpu_ms_per_alert']:.1f} ms"
                      + (f" (not every member within 30 s: {spaced['incomplete']})" if spaced.get("incomplete") else "")})
    live = find("live-location", "roost")
    if live:
        row(f"live location: {live['sharers']} sharers every 2 s to {number(live['members'])} members, POST → member's notice",
            {"roost": f"p50 {live['p50_ms']} ms, p99 {live['p99_ms']} ms; server CPU {live['server_cpu_percent']}% of a core "
                      f"({number(live['told'])} of {number(live['points'])} points told)"})
    posts = {name: find("posts", name) for name in present}
    posts = {k: v for k, v in posts.items() if v}
    if posts:
        concurrency = next(iter(posts.values()))["concurrency"]
        row(f"message posts at concurrency {concurrency}, each until stored and acknowledged",
            {k: f"{number(p['open_rate'])}/s, p99 {p['open_p99_ms']} ms" for k, p in posts.items()}, {k: p["open_rate"] for k, p in posts.items()},
            "≥ 1.5× ejabberd", verdict(posts["roost"]["open_rate"] >= 1.5 * posts["ejabberd"]["open_rate"]) if {"roost", "ejabberd"} <= set(posts) else "")
        costs = {k: p for k, p in posts.items() if "open_cpu_s" in p and p["open_rate"]}
        if costs:
            def per_post(p, key):
                return p[key] * 1000 / (p["open_rate"] * p["open_seconds"])
            row("CPU per post at that concurrency: server + PostgreSQL",
                {k: f"{per_post(p, 'open_cpu_s'):.2f} + {per_post(p, 'open_database_cpu_s'):.2f} ms" for k, p in costs.items()},
                {k: per_post(p, "open_cpu_s") + per_post(p, "open_database_cpu_s") for k, p in costs.items()})
            # PostgreSQL's part alone, beside the floor: PostgreSQL doing the least a post needs (pgbench).
            floor = find("post-floor", "postgres")
            database = {k: 1000 / per_post(p, "open_database_cpu_s") for k, p in costs.items() if p["open_database_cpu_s"] > 0}
            if database:
                floor_rate = 1000 / floor["database_cpu_ms_per_post"] if floor and floor["database_cpu_ms_per_post"] > 0 else None
                title = "posts per PostgreSQL CPU-second at that concurrency"
                if floor_rate:
                    title += (f" (the floor, PostgreSQL alone under pgbench, one statement a post: {number(floor_rate)}, "
                              f"{floor['database_cpu_ms_per_post']:.3f} ms a post, {number(floor['rate'])} posts/s)")
                row(title, {k: number(v) for k, v in database.items()}, database,
                    "≥ ejabberd's; within 2× of the floor",
                    verdict(database["roost"] >= max(database.get("ejabberd", 0), (floor_rate or 0) / 2)) if "roost" in database else "")
        paced = next(iter(posts.values()))["paced_rate"]
        row(f"message posts paced at {number(paced)}/s",
            {k: f"{number(p['paced_achieved'])}/s, p99 {p['paced_p99_ms']} ms" for k, p in posts.items()}, {k: p["paced_p99_ms"] for k, p in posts.items()},
            "p99 ≤ 10 ms at 2,000/s", verdict(posts["roost"]["paced_p99_ms"] <= 10 and posts["roost"]["paced_rate"] >= 2000) if "roost" in posts else "")
        # The highest rate of the sweep carried in full (within 2%, nothing failed) with p99 ≤ 10 ms.
        swept = {k: p for k, p in posts.items() if p.get("sweep")}
        if swept:
            def highest(p):
                steps = sorted(p["sweep"], key=lambda s: s["rate"])
                fine = [s for s in steps if s["p99_ms"] <= 10 and s["achieved"] >= 0.98 * s["rate"] and not s["failed"]]
                above = [s for s in steps if not fine or s["rate"] > fine[-1]["rate"]]
                text = f"{number(fine[-1]['rate'])}/s (p99 {fine[-1]['p99_ms']} ms)" if fine else "none of the rates tried"
                if above:
                    text += f"; at {number(above[0]['rate'])}/s: {number(above[0]['achieved'])}/s, p99 {above[0]['p99_ms']} ms"
                return text, (fine[-1]["rate"] if fine else 0)
            found = {k: highest(p) for k, p in swept.items()}
            row("message posts: the highest paced rate with p99 ≤ 10 ms (rates tried: "
                + "; ".join(f"{titles[k]} {', '.join(number(s['rate']) for s in p['sweep'])}" for k, p in swept.items()) + ")",
                {k: text for k, (text, _) in found.items()}, {k: rate for k, (_, rate) in found.items()},
                "≥ 2× ejabberd's", verdict(found["roost"][1] >= 2 * found["ejabberd"][1]) if {"roost", "ejabberd"} <= set(found) else "")
    storm = find("resume-storm", "roost")
    if storm:
        row(f"resume storm: {number(storm['clients'])} clients reconnect at once, {storm['behind']} events behind",
            {"roost": f"{storm['seconds']} s until all live and caught up ({number(storm['complete'])} complete); "
                      f"RSS {storm['rss_before_mib']} → peak {storm['rss_peak_mib']} MiB"})

    header = ["figure"] + [titles[name] for name in present] + [f"Roost ÷ {titles[name]}" for name in peers] + ["goal (Roost)", ""]
    table = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for figure, texts, numbers, goal, met in rows:
        ratios = [f"{numbers['roost'] / numbers[peer]:.2f}×" if numbers.get("roost") is not None and numbers.get(peer) else ""
                  for peer in peers]
        table.append("| " + " | ".join([figure] + [texts.get(name, "") for name in present] + ratios + [goal, met]) + " |")

    sweep_text = sweep_table(sweep, os.path.join(workdir, "sweep.txt"))

    steps = []
    for name, result in fanouts.items():
        for step in result.get("steps", []):
            database = f"{step['database_cpu_s']:.2f}" if "database_cpu_s" in step else "–"
            together = number(step["per_cpu_s_with_database"]) if "per_cpu_s_with_database" in step else "–"
            client = f"{step['client_cpu_s']:.2f}" if "client_cpu_s" in step else "–"
            steps.append(f"| {titles[name]} | {number(step['rate'])} | {number(step['deliveries_per_s'])} | {step['cpu_s']:.2f} | "
                         f"{number(step['per_cpu_s'])} | {database} | {together} | {step['p50_ms']} ms | {step['p99_ms']} ms | "
                         f"{number(step['missing'])} | {client} |")

    plot = os.path.join(output, "Benchmarks", "fanout-latency-cdf.png")
    os.makedirs(os.path.dirname(plot), exist_ok=True)
    # One curve per server and step (rate): a dash pattern per server, a colour per rate. The
    # key sits outside the plot: inside, its 19 lines covered the slow servers' curves.
    curves = []
    for (name, title), dash in zip(titles.items(), (1, 2, 4, 5)):
        path = os.path.join(workdir, f"{name}-latency.dat")
        if not os.path.exists(path):
            continue
        rates = [int(line.split()[2]) for line in Path(path).read_text().splitlines() if line.startswith("# rate")]
        for index, rate in enumerate(rates):
            curves.append(f"'{path}' index {index} using 1:2 with lines lw 2 dt {dash} lc {index + 1} "
                          f"title '{title}, {rate:,} posts/s'")
    if curves:
        lines = ", ".join(curves)
        script = (f"set terminal pngcairo size 1120,560 noenhanced font ',11'\nset output '{plot}'\n"
                  "set title 'Fanout: delivery latency CDF (post sent to frame received), each rate step'\n"
                  "set xlabel 'latency (ms, log scale)'\nset ylabel 'fraction of deliveries'\nset logscale x\nset grid\n"
                  "set key outside right top font ',9'\nset yrange [0:1]\n"
                  f"plot {lines}\n")
        try:
            subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"roost: gnuplot failed: {error}", file=sys.stderr)
            try:
                script = script.replace("pngcairo", "png")
                subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError):
                plot = None

    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    versions_path = os.path.join(workdir, "versions.txt")
    versions = "; ".join(line.strip() for line in Path(versions_path).read_text().splitlines() if line.strip()) if os.path.exists(versions_path) else "not recorded"
    frame = number((roost_fanout or {}).get("frame_bytes", 0))
    roost_alert = find("alert", "roost", client_processes=1)  # one process counts what it reads
    alert_frame = f" ({number(roost_alert['frame_bytes'])} bytes)" if roost_alert and "frame_bytes" in roost_alert else ""
    text = f"""# Roost benchmarks

Produced by `{command}` on {today}: machine {machine()}; commit {commit()}.
Versions: {versions}.
Servers run on core 0 (one event loop a Roost process, but for the fanout rows that say two; mosquitto is single-threaded; ejabberd's
Erlang VM sees the one core; Synapse is one Python process), the clients (`roost-bench`, an epoll loop a process) on core 1,
PostgreSQL unpinned with fsync on; the event-loop sweep at the end gives Roost's loops, PostgreSQL and the clients cores of
their own where the machine has them.

**Roost, ejabberd and Synapse persist every message to PostgreSQL** on the same cluster: Roost
commits each post before it answers and delivers it; ejabberd's multi-user chat archives each
groupchat message with mod_mam (its own database, `scripts/lib/peers/ejabberd.yml`) before
sending it to the room; Synapse persists each event in its own database
(`scripts/lib/peers/synapse.yaml`) before it answers `/send`, and its members long-poll `/sync`
with a filter that keeps each answer to the new messages' bodies. mosquitto is the floor: QoS 0
publishes from memory, persistence off, no check for overlapping subscriptions
(`allow_duplicate_messages true`). Roost, ejabberd and Synapse carry the same message text
(each in its protocol's framing; Roost's frames are {frame} bytes); mosquitto's payloads are
padded to Roost's frame, an alert's to Roost's alert frame{alert_frame}. Synapse takes about 25 ms of its CPU to join a member to a room, so it
gets fewer rooms of the same 100 members, fewer idle members, and lower rates; its figures say
where their sizes differ. The pinning is the same for all. Server CPU is the server process's own (`/proc/PID/stat`);
PostgreSQL's (the postmaster and every backend, from `/proc`) is reported beside it and both
together. User-space memory is the growth of the servers' anonymous memory (`RssAnon`: heap
and stacks, not code mapped from files) over the idle connections; kernel memory is the growth
of slab and TCP buffer memory over both ends' sockets. Every connection is authenticated:
Roost's streams by a session lookup and the member's groups read from PostgreSQL, ejabberd's
sessions by SASL PLAIN against its `users` table and then a room join, Synapse's `/sync`
requests by access token (accounts registered through an application service). A Roost client refused
while the database is busy (503, or 1013 before it is live) retries with backoff, as real
clients do, and the retries are counted. Latencies are from the post's start to the kernel's
receive stamp on the member's socket (`SO_TIMESTAMPNS`). Ratios are Roost ÷ peer: below 1 is
better for bytes, latencies and CPU per post, above 1 for rates.

{chr(10).join(table)}

Fanout steps (posts spread evenly over the groups at each rate in turn; client CPU is
`roost-bench`'s own, on the other core, to show the client was not the limit):

| server | posts/s | deliveries/s | server CPU (s) | deliveries per server CPU-s | PostgreSQL CPU (s) | per CPU-s with PostgreSQL | p50 | p99 | missing | client CPU (s) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{chr(10).join(steps)}

{'![fanout delivery latency CDF](Benchmarks/fanout-latency-cdf.png)' if plot else '(gnuplot was not available: no plot)'}

{delivery_table(delivery)}

{sweep_text}

Falling short of a goal is information: where Roost stands against each peer and why, what the
profiles show and what was done about each gap is in docs/PERFORMANCE.md; each change's before
and after, in Benchmarks/before-and-after.md.
"""
    with open(os.path.join(output, "BENCHMARKS.md"), "w") as handle:
        handle.write(text)
    print("\n".join(table))
    print(f"roost: wrote {os.path.join(output, 'BENCHMARKS.md')}" + (f" and {plot}" if plot else ""), file=sys.stderr)


def delivery_table(runs):
    """The delivery benchmark's section: a red alert to members' phones, Roost over HTTP/1.1 and
    HTTP/2, Synapse's push path, and the encryption floor, against issue #55's goals."""
    if not runs:
        return "## Delivery\n\nNot run."
    floor = next((r["pushes_per_s"] for r in reversed(runs) if r["scenario"] == "delivery-floor"), None)
    synapse = next((r for r in reversed(runs) if r["server"] == "synapse"), None)

    def seconds(value):
        return "–" if value is None else f"{value:.2f} s"

    def per_cpu(run):
        return run["accepted"] / run["server_cpu_s"] if run.get("server_cpu_s") else 0

    lines = ["## Delivery: a red alert to members' phones", "",
             "One red alert to members with one Web Push device each (seeded in SQL) on a local HTTPS push service that answers",
             "each push after 50 ms as one across the internet does (`scripts/lib/push_service.py`, HTTP/1.1 keep-alive, or HTTP/2",
             "offered by ALPN), Roost on core 0 and the service on core 1, each run with a private PostgreSQL (`scripts/bench-delivery`).",
             "Times are from the alert's 201 to the service accepting the push. The peer is Synapse delivering one room message through",
             "HTTP pushers to a push gateway's notify endpoint answering after 50 ms: Sygnal, which would turn those into Web Push, is",
             "not on this workplace's PyPI, so Synapse is measured doing less than Roost does (no encryption, no VAPID, no TLS), with",
             "fewer members (each joins the room), and its pushes per CPU-second are an upper bound of the real path's.", "",
             "| run | members | first | median | last | pushes per server CPU-s | server CPU | PostgreSQL CPU | connections | another tenant's code |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        if run["scenario"] != "delivery":
            continue
        name = f"Roost, {run['protocol']}" if run["server"] == "roost" else "Synapse (HTTP pushers to a gateway)"
        lines.append(f"| {name} | {number(run['members'])} ({number(run['accepted'])} accepted) | {seconds(run['first_s'])} | "
                     f"{seconds(run['median_s'])} | {seconds(run['last_s'])} | {number(per_cpu(run))} | {run['server_cpu_s']:.2f} s | "
                     f"{run['database_cpu_s']:.2f} s | {run.get('connections', '–')} | {seconds(run.get('code_s'))} |")
    lines.append("")
    if floor:
        lines.append(f"The floor, the per-push encryption alone (RFC 8291, `roost-protocol-bench webpush`, one core): {number(floor)} pushes a second.")
    emails = next((r for r in runs if r.get("emails")), None)
    if emails:
        lines.append(f"The alert's email fallback to {number(emails['emails'])} members through one SMTP relay (aiosmtpd, STARTTLS, AUTH): "
                     f"{number(emails['emails_accepted'])} accepted, the last {seconds(emails['emails_last_s'])} after the 201, "
                     f"over {emails['smtp_sessions']} sessions.")
    lines += ["", "Goals (issue #55, on this 2-core machine):", "", "| goal | figure | |", "| --- | --- | --- |"]
    for run in (r for r in runs if r["scenario"] == "delivery" and r["server"] == "roost"):
        label = f"Roost, {run['protocol']}, {number(run['members'])} devices"
        if run["members"] >= 10_000:
            lines.append(f"| last push ≤ 5 s ({label}) | {seconds(run['last_s'])} | {'met' if (run['last_s'] or 99) <= 5 else 'not met'} |")
            lines.append(f"| median ≤ 2 s ({label}) | {seconds(run['median_s'])} | {'met' if (run['median_s'] or 99) <= 2 else 'not met'} |")
            limit = 8 if run["protocol"] == "h2" else 128
            lines.append(f"| ≤ {limit} TLS connections ({label}) | {run['connections']} | {'met' if run['connections'] <= limit else 'not met'} |")
        lines.append(f"| ≥ 3,000 pushes per server CPU-s ({label}) | {number(per_cpu(run))} | {'met' if per_cpu(run) >= 3000 else 'not met'} |")
        if floor:
            lines.append(f"| within 2× of the floor ({label}) | {floor / max(per_cpu(run), 1):.2f}× | {'met' if per_cpu(run) * 2 >= floor else 'not met'} |")
        if run.get("code_s") is not None:
            lines.append(f"| another tenant's code ≤ 1 s ({label}) | {seconds(run['code_s'])} | {'met' if run['code_s'] <= 1 else 'not met'} |")
        if synapse and per_cpu(synapse):
            ratio = per_cpu(run) / per_cpu(synapse)
            lines.append(f"| ≥ 10× Synapse's pushes per CPU-s ({label}) | {ratio:.1f}× | {'met' if ratio >= 10 else 'not met'} |")
    if emails:
        lines.append(f"| 1,000 emails through one relay ≤ 10 s | {seconds(emails['emails_last_s'])} | "
                     f"{'met' if (emails['emails_last_s'] or 99) <= 10 and emails['emails'] >= 1000 else 'not met'} |")
    return "\n".join(lines)


def sweep_table(runs, note_path):
    """The event-loop sweep: Roost at 1, 2, 4 and 8 loops, each loop on a core of its own, as a
    Markdown section; or why it was not run."""
    note = Path(note_path).read_text().strip() if os.path.exists(note_path) else "not run"
    heading = "Roost's event loops on cores of their own (the event-loop sweep of `scripts/bench`)"
    if not runs:
        return f"{heading}: {note}."
    fanouts = {r["loops"]: r for r in runs if r["scenario"] == "fanout"}
    alerts = {r["loops"]: r for r in runs if r["scenario"] == "alert"}
    rates = sorted({step["rate"] for r in fanouts.values() for step in r["steps"]})
    header = (["event loops (server cores)"] + [f"fanout at {number(rate)} posts/s: deliveries per server CPU-s (p99; client CPU)" for rate in rates]
              + ["fanout: deliveries per CPU-s with PostgreSQL, best step", "alert: post → last receipt", "alert: server CPU an alert", "alert goal p99 ≤ 100 ms (10,000 members)"])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for loops in sorted(set(fanouts) | set(alerts)):
        fanout, alert = fanouts.get(loops), alerts.get(loops)
        layout = (fanout or alert)["layout"]
        cells = [f"{loops} ({layout.split(';')[0].replace('server on cores ', '')})"]
        steps = {step["rate"]: step for step in (fanout or {}).get("steps", [])}
        cells += [f"{number(steps[rate]['per_cpu_s'])} (p99 {steps[rate]['p99_ms']} ms; client {steps[rate].get('client_cpu_s', 0):.2f} s)"
                  if rate in steps else "" for rate in rates]
        best = (fanout or {}).get("best", {})
        cells.append(number(best["per_cpu_s_with_database"]) + f" at {number(best['rate'])} posts/s" if "per_cpu_s_with_database" in best else "")
        if alert:
            cells.append(f"p50 {alert['p50_ms']} ms, p99 {alert['p99_ms']} ms ({number(alert['members'])} members over "
                         f"{alert['client_processes']} client processes using {alert['client_cpu_s']:.2f} s of CPU, {alert['alerts']} alerts"
                         + (f", {alert['incomplete']} incomplete" if alert.get("incomplete") else "") + ")")
            cells.append(f"{alert['server_cpu_ms_per_alert']:.1f} ms")
            cells.append(("met" if alert["p99_ms"] <= 100 else "not met") if alert["members"] >= 10000 else "(not 10,000 members)")
        else:
            cells += ["", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    shape = next(iter(fanouts.values()), None)
    shape = f"{shape['groups']} groups × {shape['members']} members" if shape else "not run"
    return f"""{heading}: {note}. Fanout: {shape}, each rate for the same seconds as above; a
step's client CPU is `roost-bench`'s own, to show the client kept up.

{chr(10).join(lines)}"""


if __name__ == "__main__":
    main()
