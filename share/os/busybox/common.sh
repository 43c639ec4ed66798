# Shared by the scripts of the busybox OS definition (sourced, never run).
# Ganeti's OS interface: everything comes in the environment; see
# docs/instances.md, "OS definitions".

log() {
  echo "busybox-os: $*" >&2
}

die() {
  log "$*"
  exit 1
}

# The variant: "default" (also when Ganeti gives none, as OS API 10 does).
check_variant() {
  case "${OS_VARIANT:-default}" in
    default) ;;
    *) die "unknown variant '$OS_VARIANT' (known: default)" ;;
  esac
}

# The parameters: root_size a positive number of MiB, marker one line.
check_params() {
  if [ -n "${OSP_ROOT_SIZE:-}" ]; then
    case "$OSP_ROOT_SIZE" in
      *[!0-9]*|0*) die "root_size must be a positive number of MiB, not '$OSP_ROOT_SIZE'" ;;
    esac
  fi
  case "${OSP_MARKER:-}" in
    *"
"*) die "marker must be one line" ;;
  esac
}

# The device or file to work on: the export/import one, else the first disk.
target_disk() {
  disk="${1:-}"
  [ -n "$disk" ] || disk="${DISK_0_PATH:-}"
  [ -n "$disk" ] || die "the instance has no disk with a path (DISK_COUNT=${DISK_COUNT:-0})"
  [ -e "$disk" ] || die "disk $disk does not exist"
  echo "$disk"
}

# The first NIC's address for the guest's init, in /etc/ganeti-network of tree $1:
# NIC_0_IP, the prefix length of NIC_0_NETWORK_SUBNET (else 24) and the
# network's gateway.  Anything that is not an IPv4 address is left out.
is_ipv4() {
  case "$1" in
    *[!0-9.]*|*..*|.*|*.) return 1 ;;
  esac
  old_ifs=$IFS; IFS=.
  # shellcheck disable=SC2086
  set -- $1
  IFS=$old_ifs
  [ $# -eq 4 ] || return 1
  for octet in "$@"; do
    [ "$octet" -le 255 ] 2>/dev/null || return 1
  done
}

write_network() {
  ip="" prefix=24 gateway=""
  if [ -n "${NIC_0_IP:-}" ]; then
    if is_ipv4 "$NIC_0_IP"; then ip=$NIC_0_IP; else log "NIC 0: ignored IP '$NIC_0_IP'"; fi
  fi
  case "${NIC_0_NETWORK_SUBNET:-}" in
    */*) bits=${NIC_0_NETWORK_SUBNET##*/}
         case "$bits" in
           ""|*[!0-9]*) ;;
           *) [ "$bits" -le 32 ] && prefix=$bits ;;
         esac ;;
  esac
  if [ -n "${NIC_0_NETWORK_GATEWAY:-}" ] && is_ipv4 "$NIC_0_NETWORK_GATEWAY"; then
    gateway=$NIC_0_NETWORK_GATEWAY
  fi
  printf 'NIC_IP=%s\nNIC_PREFIX=%s\nNIC_GATEWAY=%s\n' "$ip" "$prefix" "$gateway" \
    > "$1/etc/ganeti-network"
}

# A root tree for the instance in directory $1: busybox (its applet links come
# later, add_applet_links), and an /sbin/init that boots under the project's guest kernel (docs/instances.md,
# "Guest files"): it prints the marker and "GANETI-GUEST-READY <name>" on the serial
# console, sets the host name, configures lo and eth0, runs acpid (ACPI power
# button -> poweroff) and a root shell on ttyS0.
build_tree() {
  root="$1"
  bb=$(command -v busybox) || die "busybox is not installed (Debian: busybox-static)"
  mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/etc" \
    "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/root" "$root/var/log" \
    "$root/run" "$root/etc/acpi/PWRF"
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  chmod 755 "$root/bin/busybox"
  marker="${OSP_MARKER:-ganeti-busybox: $INSTANCE_NAME is up}"
  cat > "$root/sbin/init" <<'INIT'
#!/bin/sh
# The busybox OS's first process (share/os/busybox): set up, say so on the serial
# console, then hand over to busybox init (/etc/inittab: a root shell on ttyS0).
export PATH=/sbin:/bin:/usr/sbin:/usr/bin HOME=/root
mounted() { grep -q "^[^ ]* $1 " /proc/mounts 2>/dev/null; }
mounted /proc || mount -t proc proc /proc
mounted /sys || mount -t sysfs sysfs /sys
mounted /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts
mounted /dev/pts || mount -t devpts devpts /dev/pts
mount -o remount,rw / 2>/dev/null
mounted /run || mount -t tmpfs tmpfs /run
hostname -F /etc/hostname
ip link set lo up
NIC_IP="" NIC_PREFIX=24 NIC_GATEWAY=""
[ -r /etc/ganeti-network ] && . /etc/ganeti-network
if ip link show eth0 >/dev/null 2>&1; then
  [ -z "$NIC_IP" ] || ip addr add "$NIC_IP/$NIC_PREFIX" dev eth0
  ip link set eth0 up
  [ -z "$NIC_GATEWAY" ] || ip route add default via "$NIC_GATEWAY"
fi
acpid -c /etc/acpi -l /run/acpid.log
out=/dev/ttyS0
[ -c "$out" ] || out=/dev/console
cat /etc/ganeti-marker > "$out"
echo "GANETI-GUEST-READY $(cat /etc/hostname)" > "$out"
exec /bin/busybox init
INIT
  chmod 755 "$root/sbin/init"
  cat > "$root/etc/inittab" <<'TAB'
ttyS0::respawn:-/bin/sh
::ctrlaltdel:/sbin/poweroff -f
::shutdown:/bin/sync
TAB
  cat > "$root/etc/acpi/PWRF/00000080" <<'POWER'
#!/bin/sh
# busybox acpid runs this on the ACPI power button (libvirt's shutdown and reboot).
sync
mount -o remount,ro / 2>/dev/null
poweroff -f
POWER
  chmod 755 "$root/etc/acpi/PWRF/00000080"
  printf "PS1='# '\nexport PS1\n" > "$root/etc/profile"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
  printf 'root:x:0:\n' > "$root/etc/group"
  printf '127.0.0.1 localhost\n' > "$root/etc/hosts"
  printf '%s\n' "$marker" > "$root/etc/ganeti-marker"
  echo "$INSTANCE_NAME" > "$root/etc/hostname"
  write_network "$root"
  cat > "$root/etc/ganeti-instance" <<INFO
name=$INSTANCE_NAME
os=${INSTANCE_OS:-}
variant=${OS_VARIANT:-}
hypervisor=${HYPERVISOR:-}
disks=${DISK_COUNT:-0}
nics=${NIC_COUNT:-0}
INFO
}

# A link to /bin/busybox for each of its applets (but /sbin/init, ours), added to
# the file system on disk $1 by one debugfs run: a link a process in the tree
# would cost ten times the whole create.
add_applet_links() {
  bb=$(command -v busybox) || die "busybox is not installed (Debian: busybox-static)"
  work=$(mktemp -d)
  "$bb" --list-full | while read -r applet; do
    case "$applet" in
      sbin/init|linuxrc|bin/busybox|/*|*..*|*" "*) ;;
      *) printf 'symlink /%s /bin/busybox\n' "$applet" ;;
    esac
  done > "$work/cmds"
  debugfs -w -f "$work/cmds" "$1" >"$work/out" 2>&1 || die "debugfs failed: $(cat "$work/out")"
  if grep -q "^symlink: " "$work/out"; then
    die "cannot add busybox links on $1: $(grep "^symlink: " "$work/out" | head -3)"
  fi
  rm -rf "$work"
}

# Write the tree $1 as an ext4 file system onto the disk $2.
make_fs() {
  size=""
  [ -z "${OSP_ROOT_SIZE:-}" ] || size="${OSP_ROOT_SIZE}M"
  # shellcheck disable=SC2086
  mkfs.ext4 -q -F -L root -d "$1" "$2" $size || die "mkfs.ext4 failed on $2"
}
