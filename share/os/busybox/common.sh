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

# A root tree for the instance in directory $1.
build_tree() {
  root="$1"
  bb=$(command -v busybox) || die "busybox is not installed (Debian: busybox-static)"
  mkdir -p "$root/bin" "$root/sbin" "$root/etc" "$root/proc" "$root/sys" "$root/dev" \
    "$root/tmp" "$root/root" "$root/var/log"
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for tool in sh ls cat echo mount umount hostname poweroff reboot sleep ps mkdir; do
    ln -s busybox "$root/bin/$tool"
  done
  marker="${OSP_MARKER:-ganeti-busybox: $INSTANCE_NAME is up}"
  cat > "$root/sbin/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
hostname -F /etc/hostname
cat /etc/ganeti-marker
exec /bin/sh
INIT
  chmod 755 "$root/sbin/init"
  printf '%s\n' "$marker" > "$root/etc/ganeti-marker"
  echo "$INSTANCE_NAME" > "$root/etc/hostname"
  cat > "$root/etc/ganeti-instance" <<INFO
name=$INSTANCE_NAME
os=${INSTANCE_OS:-}
variant=${OS_VARIANT:-}
hypervisor=${HYPERVISOR:-}
disks=${DISK_COUNT:-0}
nics=${NIC_COUNT:-0}
INFO
}

# Write the tree $1 as an ext4 file system onto the disk $2.
make_fs() {
  size=""
  [ -z "${OSP_ROOT_SIZE:-}" ] || size="${OSP_ROOT_SIZE}M"
  # shellcheck disable=SC2086
  mkfs.ext4 -q -F -L root -d "$1" "$2" $size || die "mkfs.ext4 failed on $2"
}
