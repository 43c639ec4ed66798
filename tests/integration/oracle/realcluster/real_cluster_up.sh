#!/bin/bash
# Start a COMPLETE real Ganeti 3.0 virtual cluster on this machine (noded per node, wconfd, luxid, rapi, confd, mond) inside a private network+mount namespace, with the fake hypervisor and diskless/file templates; stop with real_cluster_down.sh DIR.
# Usage: real_cluster_up.sh DIR [SECONDS]
#   DIR      work directory (node roots DIR/nodeN.example.com are recreated).
#   SECONDS  lifetime: a watchdog runs real_cluster_down.sh DIR after it (default 900).
# Env: NODES (1-9, default 3).
# Afterwards:  DIR/gnt gnt-instance list          (real CLI as the master node)
#              DIR/nsrun /usr/bin/python3 x.py     (any command inside the namespace,
#                                                   e.g. a RAPI client to https://127.0.44.11:5080, admin/secret)
# How: `unshare -n -m` holder process (DIR/holder.pid); in it lo carries only 127.0.0.1/32
# and 127.0.44.1N/32 (node N), master IP 127.0.44.1 (cluster.example.com) is added by
# Ganeti itself; /etc/hosts and /usr/share/ganeti/os are bind-mounted privately (OS
# "noop", trivial scripts); DIR/bin/ssh runs Ganeti's ssh commands locally;
# DIR/bin/gnt-noloop lifts the loopback-IP refusal of `gnt-cluster init` for 127.0.44.x
# and skips the wait for an sshd (used for init and `gnt-node add` only).
# See README.md beside this script. Needs root and what `make install-oracle` installs.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:?usage: real_cluster_up.sh DIR [SECONDS]}
SECS=${2:-900}
NODES=${NODES:-3}
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
t0=$(date +%s.%N)
say() { printf '[%5.1fs] %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$*" >&2; }
die() { say "ERROR: $*"; "$HERE/real_cluster_down.sh" "$DIR" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "real_cluster_up: needs root" >&2; exit 1; }
for f in /usr/sbin/ganeti-noded /usr/sbin/ganeti-wconfd /usr/sbin/ganeti-luxid /usr/sbin/ganeti-rapi \
         /usr/lib/ganeti/daemon-util /usr/lib/ganeti/ensure-dirs; do
  [ -x "$f" ] || { echo "real_cluster_up: $f missing (make install-oracle)" >&2; exit 1; }
done
if [ -s "$DIR/holder.pid" ] && kill -0 "$(cat "$DIR/holder.pid")" 2>/dev/null; then
  echo "real_cluster_up: cluster in $DIR still runs; run real_cluster_down.sh $DIR first" >&2; exit 1
fi
rm -rf "$DIR"/node*.example.com "$DIR/bin" "$DIR/os" "$DIR"/*.log "$DIR/holder.pid" "$DIR/watchdog.pid"
mkdir -p "$DIR/bin" "$DIR/os/noop"

# --- private /etc/hosts (bind-mounted in the namespace only) ---
{ echo "127.0.0.1 localhost"; echo "127.0.44.1 cluster.example.com cluster"
  for i in $(seq "$NODES"); do echo "127.0.44.1$i node$i.example.com node$i"; done
  for i in $(seq 1 50); do echo "127.0.44.$((100 + i)) inst$i.example.com inst$i"; done
} > "$DIR/hosts"

# --- fake ssh: Ganeti vcluster prefixes remote commands with the node's env ---
cat > "$DIR/bin/ssh" <<'EOS'
#!/bin/bash
# Fake ssh for a one-machine Ganeti virtual cluster: drop ssh options and
# user@host, run the remote command line locally (vcluster mode prefixes it
# with "export GANETI_ROOTDIR=...; export GANETI_HOSTNAME=...;").
while [ $# -gt 0 ]; do
  case "$1" in
    -p|-o|-i|-l|-F|-c|-m|-b|-E) shift 2 ;;
    -*) shift ;;
    *) shift; break ;;
  esac
done
echo "$(date +%T) ssh-fake: $*" >> "${GVC_SSH_LOG:-/dev/null}"
exec bash -c "$*"
EOS
cat > "$DIR/bin/gnt-noloop" <<'EOS'
#!/usr/bin/python3
# gnt-noloop /usr/sbin/gnt-XXX args...: run a real gnt-* CLI with Ganeti's
# "host IP resolves to a loopback address" refusal lifted for 127.0.44.x only,
# and without the wait for an sshd on TCP/22 (bin/ssh runs commands locally).
import runpy, sys
sys.path.insert(0, "/usr/share/ganeti/default")
from ganeti import netutils, bootstrap
_orig = netutils.IP4Address.IsLoopback.__func__
def _isloop(cls, address):
  return False if address.startswith("127.0.44.") else _orig(cls, address)
netutils.IP4Address.IsLoopback = classmethod(_isloop)
bootstrap._WaitForSshDaemon = lambda hostname, port: None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
EOS
chmod +x "$DIR/bin/ssh" "$DIR/bin/gnt-noloop"

# --- trivial OS definition "noop" (API 20), logs its calls to DIR/os-calls.log ---
( cd "$DIR/os/noop" && echo 20 > ganeti_api_version && echo default > variants.list && : > parameters.list
  for s in create import export rename verify; do
    printf '#!/bin/sh\n# trivial Ganeti OS for the fake hypervisor: record the call, succeed\necho "$(date +%%T) %s $INSTANCE_NAME $OS_VARIANT node=$GANETI_HOSTNAME" >> %s/os-calls.log\n[ %s = export ] && printf x\nexit 0\n' \
      "$s" "$DIR" "$s" > "$s"; chmod +x "$s"
  done )

# --- node roots (what tools/vcluster-setup does, with 127.0.44.1N) ---
FS="$DIR/node1.example.com/srv/ganeti/file-storage"
for i in $(seq "$NODES"); do
  n=node$i.example.com; d=$DIR/$n
  mkdir -p "$d"/etc/default "$d"/etc/ganeti "$d"/var/lock "$d"/var/{lib,log,run}/ganeti "$d/srv/ganeti/file-storage"
  cat > "$d/etc/default/ganeti" <<EOS
# virtual node $n
NODED_ARGS='--no-mlock -b 127.0.44.1$i'
RAPI_ARGS='-b 127.0.44.1$i'
CONFD_ARGS='-b 127.0.44.1$i'
MOND_ARGS='-b 127.0.44.1$i'
METAD_ARGS='-b 127.0.44.1$i'
MASTERD_ARGS=''
WCONFD_ARGS=''
LUXID_ARGS=''
KVMD_ARGS=''
export GANETI_ROOTDIR='$d'
export GANETI_HOSTNAME='$n'
EOS
  echo "$FS" > "$d/etc/ganeti/file-storage-paths"   # cluster file dir (node1's) allowed everywhere
done
# daemons run as gnt-* users: every parent directory must be traversable
p="$DIR"; while [ "$p" != "/" ]; do chmod o+x "$p" 2>/dev/null; p=$(dirname "$p"); done

# --- namespace holder ---
setsid unshare -n -m --propagation private sleep $((SECS + 120)) > /dev/null 2>&1 < /dev/null &
echo $! > "$DIR/holder.pid"; H=$!
for _ in $(seq 50); do [ "$(readlink /proc/$H/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.05; done
[ "$(readlink /proc/$H/ns/net 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] || die "namespace not created"
setsid sh -c 'sleep "$1"; exec "$2" "$3"' sh "$SECS" "$HERE/real_cluster_down.sh" "$DIR" \
  >> "$DIR/watchdog.log" 2>&1 < /dev/null &
echo $! > "$DIR/watchdog.pid"
NS="nsenter -t $H -n -m"
$NS sh -e -c '
  ip link set lo up
  ip addr del 127.0.0.1/8 dev lo        # 127/8 on lo would make the master IP "already active"
  ip addr add 127.0.0.1/32 dev lo
  for i in $(seq "$1"); do ip addr add 127.0.44.1$i/32 dev lo; done
  ip link add xen-br0 type bridge; ip link set xen-br0 up   # default NIC link (bridged), no address
  mount -t sysfs sysfs /sys             # /sys/class/net of this netns (Ganeti checks bridges there)
  mount --bind "$2/hosts" /etc/hosts
  mount --bind "$2/os" /usr/share/ganeti/os' sh "$NODES" "$DIR" || die "namespace setup failed"

cat > "$DIR/nsrun" <<EOS
#!/bin/sh
# run a command inside the virtual cluster's network+mount namespace
exec nsenter -t $H -n -m "\$@"
EOS
cat > "$DIR/gnt" <<EOS
#!/bin/sh
# run a command (real gnt-* CLI) as the master node1 inside the namespace; GVC_NODE=nodeN.example.com for another node
N=\${GVC_NODE:-node1.example.com}
exec nsenter -t $H -n -m env GANETI_ROOTDIR=$DIR/\$N GANETI_HOSTNAME=\$N GVC_SSH_LOG=$DIR/ssh.log \
  PATH=$DIR/bin:/usr/sbin:/usr/bin:/sbin:/bin "\$@"
EOS
chmod +x "$DIR/nsrun" "$DIR/gnt"
for i in $(seq "$NODES"); do
  GVC_NODE=node$i.example.com "$DIR/gnt" /usr/lib/ganeti/ensure-dirs || die "ensure-dirs node$i"
done
say "namespace $H ready; gnt-cluster init"
"$DIR/gnt" timeout 180 "$DIR/bin/gnt-noloop" /usr/sbin/gnt-cluster init --no-etc-hosts --no-ssh-init \
  --master-netdev=lo --enabled-hypervisors=fake --enabled-disk-templates=diskless,file \
  --file-storage-dir="$FS" \
  --ipolicy-bounds-specs=min:disk-size=0,cpu-count=1,disk-count=0,memory-size=1,nic-count=0,spindle-use=0/max:disk-size=1048576,cpu-count=8,disk-count=16,memory-size=32768,nic-count=8,spindle-use=12 \
  cluster.example.com > "$DIR/init.log" 2>&1 || { cat "$DIR/init.log" >&2; die "gnt-cluster init failed"; }
say "cluster initialised (noded, wconfd, luxid, rapi, confd, mond started by daemon-util)"
for i in $(seq 2 "$NODES"); do
  "$DIR/gnt" timeout 180 "$DIR/bin/gnt-noloop" /usr/sbin/gnt-node add --no-ssh-key-check node$i.example.com \
    >> "$DIR/nodeadd.log" 2>&1 || { cat "$DIR/nodeadd.log" >&2; die "gnt-node add node$i failed"; }
  say "node$i.example.com added"
done
for i in $(seq "$NODES"); do   # RAPI users on every node (cluster verify wants all or none)
  U="$DIR/node$i.example.com/var/lib/ganeti/rapi/users"
  printf 'admin secret write\n' > "$U"; chown gnt-rapi:gnt-masterd "$U"; chmod 640 "$U"
done
"$DIR/gnt" timeout 60 gnt-node list >&2 || die "gnt-node list failed"
"$DIR/gnt" timeout 60 gnt-os list >&2
say "up; watchdog stops everything after ${SECS}s"
cat <<EOS
export GANETI_ROOTDIR=$DIR/node1.example.com GANETI_HOSTNAME=node1.example.com
# use inside the namespace: $DIR/gnt gnt-instance list   |   $DIR/nsrun CMD
# RAPI: https://127.0.44.11:5080 (user admin, password secret; reachable only via $DIR/nsrun)
# OS: noop+default; hypervisor fake; disk templates diskless,file; instance names inst1..50.example.com (127.0.44.101..)
# holder pid $H; stop: $HERE/real_cluster_down.sh $DIR
EOS
