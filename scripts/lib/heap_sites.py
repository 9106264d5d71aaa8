"""Where a server's live heap goes, per connection: reads heaptrack's stacks of what was never
freed (heaptrack_print --flamegraph-cost-type leaked, the server killed while its connections
were open) and prints the bytes per connection of each allocation site, named by its two
innermost frames in Roost's own code (demangled with `swift demangle`).

Usage: python3 heap_sites.py STACKS CONNECTIONS [TOP]"""

import collections
import subprocess
import sys


def roost_frames(stack):
    """The stack's frames in Roost's modules, innermost first."""
    frames = [frame.rsplit(" (", 1)[0] for frame in stack.split(";")]
    return [frame for frame in reversed(frames) if "Roost" in frame or "roost" in frame]


def main():
    stacks, connections = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    by_site = collections.Counter()
    with open(stacks, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            stack, _, cost = line.rstrip("\n").rpartition(" ")
            ours = roost_frames(stack)
            by_site[tuple(ours[:2]) if ours else ("(outside Roost's code)",)] += int(cost)
    names = sorted({frame for site in by_site for frame in site})
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    readable = dict(zip(names, demangled))
    total = sum(by_site.values())
    print(f"never freed: {total / connections:,.0f} bytes per connection over {connections:,} connections "
          "(the bytes asked for, without malloc's own overhead); by site:")
    for site, cost in by_site.most_common(top):
        print(f"  {cost / connections:7,.1f}  " + "  ←  ".join(readable[frame][:90] for frame in site))


if __name__ == "__main__":
    main()
