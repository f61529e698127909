#!/usr/bin/env bash
# Two hosts on one machine: network namespaces A (10.77.0.1) and B (10.77.0.2) joined by a veth pair.
# mpiexec runs in A and starts the worker on B through a launcher that enters B's namespace (where a
# cluster would use ssh); the workers talk over TCP only (no shared memory), as across machines. Made
# here as root and removed after; skips with a message where namespaces cannot be made.
# Usage: multihost_test.sh MPIEXEC PROGRAM [ARGS...]
set -uo pipefail
mpiexec=$1 program=$2
shift 2
probe=ctkprobe$$
if [[ $(id -u) -ne 0 ]] || ! ip netns add "$probe" 2>/dev/null; then
    echo "SKIP: network namespaces cannot be made here (needs root with CAP_SYS_ADMIN and iproute2)"
    exit 0
fi
ip netns del "$probe"
a=ctkA$$ b=ctkB$$ dir=$(mktemp -d)
cleanup() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
set -e
ip netns add "$a"
ip netns add "$b"
ip link add "v${$}a" type veth peer name "v${$}b"
ip link set "v${$}a" netns "$a"
ip link set "v${$}b" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "v${$}a"
ip -n "$b" addr add 10.77.0.2/24 dev "v${$}b"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v${$}a" up
ip -n "$b" link set "v${$}b" up
# OpenMPI's remote launcher is called as "agent HOST COMMAND...", the command meant for a remote shell.
cat >"$dir/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
echo "\$host" >>"$dir/agent.log"
case \$host in
    10.77.0.1) ns=$a ;;
    10.77.0.2) ns=$b ;;
    *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns sh -c "\$*"
AGENT
chmod +x "$dir/agent.sh"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' >"$dir/hosts"
set +e
ip netns exec "$a" timeout 240 "$mpiexec" --allow-run-as-root --hostfile "$dir/hosts" -n 2 \
    --mca plm_rsh_agent "$dir/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    "$program" "$@"
rc=$?
echo "multi-host job exit status: $rc"
if [[ $rc -eq 0 ]] && ! grep -q 10.77.0.2 "$dir/agent.log" 2>/dev/null; then
    echo "FAIL: the worker on 10.77.0.2 was not started through its namespace"
    exit 1
fi
exit $rc
