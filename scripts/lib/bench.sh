# shellcheck shell=bash
# What every benchmark script sets before it starts `roost serve`. Sourced, never executed.

# roost_bench_limits: a benchmark measures throughput, not the abuse limits (docs/SECURITY.md).
# It seeds its groups through the API and posts alerts and registers accounts far beyond what
# one neighbour may, so every limit it could meet is raised for the servers it starts.
roost_bench_limits() {
    local limit
    for limit in REGISTRATIONS_PER_ADDRESS_PER_HOUR UNKNOWN_TENANT_SIGN_INS_PER_ADDRESS INVITATIONS_PER_SENDER_PER_DAY \
        INVITATIONS_PER_RECIPIENT_PER_DAY INVITATIONS_PER_GROUP_PER_DAY GROUPS_PER_USER_PER_DAY ALERTS_PER_USER_PER_HOUR \
        VERIFICATION_CODES_PER_USER_PER_DAY; do
        export "ROOST_$limit=1000000"
    done
}
