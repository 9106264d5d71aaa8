# shellcheck shell=bash
# What every benchmark script sets before it starts `roost serve`. Sourced, never executed.

# roost_bench_limits: a benchmark measures throughput, not the abuse limits (docs/SECURITY.md).
# It seeds its groups through the API and posts alerts and registers accounts far beyond what
# one neighbour may, so every limit it could meet is raised for the servers it starts.
roost_bench_limits() {
    local limit
    for limit in REGISTRATIONS_PER_ADDRESS_PER_HOUR UNKNOWN_TENANT_SIGN_INS_PER_ADDRESS INVITATIONS_PER_SENDER_PER_DAY \
        INVITATIONS_PER_RECIPIENT_PER_DAY INVITATIONS_PER_GROUP_PER_DAY GROUPS_PER_USER_PER_DAY ALERTS_PER_USER_PER_HOUR \
        VERIFICATION_CODES_PER_USER_PER_DAY POSTS_PER_ACCOUNT_PER_MINUTE OUTSIDE_PER_DESTINATION_PER_DAY OUTSIDE_PER_ACCOUNT_PER_DAY \
        OUTSIDE_PER_NEW_ACCOUNT_PER_DAY OUTSIDE_PER_TENANT_PER_DAY; do
        export "ROOST_$limit=1000000"
    done
}

# roost_bench_steer MODE CORES: where the kernel receives a loopback packet. By default it does
# so in the sender's own call: each frame the server sends is received, and its reader woken, on
# the server's core, and each request or ACK a client sends on the client's. MODE `client`
# receives every packet on CORES (taskset's list; receive packet steering), so the server's core
# runs its own sends and nothing of the clients'; `own` receives each packet on the core that
# last read its socket (receive flow steering), as on a network, where every machine receives
# its own packets. Either raises netdev_max_backlog to 20,000: at its default of 1,000 an alert
# to 10,000 members overflows the steered core's queue, and each packet dropped there waits
# 200 ms for its retransmission. These are the machine's settings, not the process's:
# roost_bench_unsteer (from the caller's cleanup) puts back what was there.
roost_steer_saved=()
roost_bench_steer() {
    local mode=$1 cores=$2 queue=/sys/class/net/lo/queues/rx-0 mask flows
    if ! [ -w "$queue/rps_cpus" ] || ! [ -w /proc/sys/net/core/rps_sock_flow_entries ]; then
        roost_die "steering loopback needs root and a writable $queue (ROOST_BENCH_STEER)"
    fi
    case $mode in
        client) mask=$(roost_cpu_mask "$cores") flows=0 ;;
        own) mask=$(roost_cpu_mask "0-$(($(nproc) - 1))") flows=32768 ;;
        *) roost_die "ROOST_BENCH_STEER is client or own, not '$mode'" ;;
    esac
    roost_steer_saved=("$(cat "$queue/rps_cpus")" "$(cat "$queue/rps_flow_cnt")"
        "$(cat /proc/sys/net/core/rps_sock_flow_entries)" "$(cat /proc/sys/net/core/netdev_max_backlog)")
    echo "$flows" >/proc/sys/net/core/rps_sock_flow_entries
    echo "$flows" >"$queue/rps_flow_cnt"
    echo "$mask" >"$queue/rps_cpus"
    echo 20000 >/proc/sys/net/core/netdev_max_backlog
}

roost_bench_unsteer() {
    [ "${#roost_steer_saved[@]}" -eq 4 ] || return 0
    local queue=/sys/class/net/lo/queues/rx-0
    echo "${roost_steer_saved[0]}" >"$queue/rps_cpus"
    echo "${roost_steer_saved[1]}" >"$queue/rps_flow_cnt"
    echo "${roost_steer_saved[2]}" >/proc/sys/net/core/rps_sock_flow_entries
    echo "${roost_steer_saved[3]}" >/proc/sys/net/core/netdev_max_backlog
    roost_steer_saved=()
}

# roost_cpu_mask LIST: taskset's core list (`1`, `2-5`, `0,2`) as the kernel's hexadecimal CPU
# mask, in comma-separated 32-bit words, highest first.
roost_cpu_mask() {
    local words=() parts part first last cpu index top=0 mask=""
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        first=${part%-*} last=${part#*-}
        for ((cpu = first; cpu <= last; cpu++)); do
            index=$((cpu / 32))
            words[index]=$(( ${words[index]:-0} | (1 << (cpu % 32)) ))
            if ((index > top)); then top=$index; fi
        done
    done
    for ((index = top; index >= 0; index--)); do
        mask+=$(printf '%08x' "${words[index]:-0}")
        [ "$index" -eq 0 ] || mask+=,
    done
    echo "$mask"
}
