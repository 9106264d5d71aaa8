"""CPU time from /proc for the benchmarks' figures: one process's, and PostgreSQL's (the
postmaster and every backend) all together."""
import os


def cpu(pid):
    """User and system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu():
    """CPU seconds of every process named postgres so far (one that ends meanwhile is skipped)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/comm") as comm:
                    if comm.read().strip() == "postgres":
                        total += cpu(name)
            except OSError:
                pass
    return total
