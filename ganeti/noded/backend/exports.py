"""Instance exports on a node: export_list, export_info, export_remove, export_dump,
export_read, export_write, export_finalize, export_abort, instance_import_disk
(Ganeti's backend: ListExports, ExportInfo, RemoveExport, FinalizeExport, and
the disk transfers of its import/export daemon).

Exports live in ``Paths.export_dir`` (``/srv/ganeti/export`` below the node's
root), one directory per instance name.  Work in progress lives in a hidden
staging directory (``.x-<id>``) of the same directory: ``export_list``
does not show it, and ``export_finalize`` renames it to the export's name
only once every dump and ``config.ini`` are written, so a failed export leaves
no partial export behind (the master removes the staging directory with
``export_abort``).

The OS scripts run through the daemon's child processes (``spawnProcess``)
with the OS API environment: ``export`` with ``EXPORT_INDEX``,
``EXPORT_DISK_PATH`` and ``EXPORT_DEVICE``, its standard output going to the
dump file; ``import`` with ``IMPORT_INDEX``, ``IMPORT_DISK_PATH`` and
``IMPORT_DEVICE``, the dump on its standard input.  The redirections are
made by ``/bin/sh`` (the script and the file are its positional arguments,
never part of the command text), so no data passes through this daemon.
Their standard error goes to ``LOG_DIR/os/export-...`` and ``import-...``.
File work (listing, reading and writing chunks, renames, removals) runs in
the thread pool.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
from collections.abc import Mapping
from typing import Any

from twisted.internet import defer

from ganeti.core import exportinfo
from ganeti.core.paths import EXPORT_DIR
from ganeti.core.rpcdefs.exports import is_name
from ganeti.noded import osdir, osenv, osrun
from ganeti.noded.backend import lvloops
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.backend.osdefs import CREATE_TIMEOUT, _instance_name, _prepare

#: Runs a script with its standard output into a file ($1).
_TO_FILE = 'exec "$0" > "$1"'
#: Runs a script with its standard input from a file ($1).
_FROM_FILE = 'exec "$0" < "$1"'


def _dir(ctx: NodeContext, name: str) -> str:
    return os.path.join(ctx.paths.export_dir, name)


def list_exports(export_dir: str) -> list[str]:
    """The visible entries of the export directory (blocking).  A node without the
    directory has no exports (Ganeti fails such a node instead)."""
    try:
        names = os.listdir(export_dir)
    except FileNotFoundError:
        return []
    except OSError as err:
        raise RPCFail(f"Cannot list the exports: {err}") from None
    return sorted(n for n in names if not n.startswith(".")
                  and os.path.isdir(os.path.join(export_dir, n)))


def export_list(ctx: NodeContext) -> defer.Deferred[list[str]]:
    """The exports of this node, by name."""
    return ctx.run(list_exports, ctx.paths.export_dir)


def export_name(ctx: NodeContext, path: str) -> str:
    """The export a path names: a bare name, or ``<export dir>/<name>`` (this node's
    export directory or Ganeti's default one, which a master on another root sends)."""
    path = path.rstrip("/")
    if "/" in path:
        parent, name = os.path.split(os.path.normpath(path))
        if parent not in (os.path.normpath(ctx.paths.export_dir), EXPORT_DIR):
            raise RPCFail(f"Exports are read from the export directory only, not {path!r}")
    else:
        name = path
    if not is_name(name):
        raise RPCFail(f"Invalid export name {name!r:.80}")
    return name


def read_info(directory: str) -> dict[str, dict[str, str]]:
    """The parsed ``config.ini`` of an export directory (blocking)."""
    conf = os.path.join(directory, exportinfo.EXPORT_CONF_FILE)
    try:
        with open(conf, encoding="utf-8") as f:
            text = f.read(1024 * 1024)
    except (OSError, UnicodeDecodeError) as err:
        raise RPCFail(f"Cannot read the export configuration {conf}: {err}") from None
    try:
        return exportinfo.parse_config(text)
    except ValueError as err:
        raise RPCFail(str(err)) from None


def export_info(ctx: NodeContext, path: str) -> defer.Deferred[dict[str, dict[str, str]]]:
    """An export's ``config.ini``, parsed."""
    return ctx.run(read_info, _dir(ctx, export_name(ctx, path)))


def remove_tree(path: str, missing_ok: bool) -> None:
    """Remove a directory tree (blocking)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        if not missing_ok:
            raise RPCFail(f"Error while removing the export: {path} does not exist") \
                from None
    except OSError as err:
        raise RPCFail(f"Error while removing the export: {err}") from None


def export_remove(ctx: NodeContext, export: str) -> defer.Deferred[None]:
    """Remove an export."""
    return ctx.run(remove_tree, _dir(ctx, export), False)


def export_abort(ctx: NodeContext, staging: str) -> defer.Deferred[None]:
    """Remove a staging directory and what it holds."""
    return ctx.run(remove_tree, _dir(ctx, staging), True)


def _make_staging(path: str) -> None:
    os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
    os.makedirs(path, mode=0o700, exist_ok=True)


def _disk_path(instance: Mapping[str, Any], env: Mapping[str, str], index: int) -> str:
    disks = instance.get("disks_info") or []
    if index >= len(disks):
        raise RPCFail(f"Instance {instance.get('name')} has no disk {index}")
    path = env.get(f"DISK_{index}_PATH")
    if not path:
        raise RPCFail(f"Disk {index} of {instance.get('name')} has no path on this node")
    return path


async def _run_disk_script(ctx: NodeContext, instance: Mapping[str, Any], index: int,
                           script: str, kind: str, redirect: str, data_path: str,
                           debug: int) -> None:
    name = _instance_name(instance.get("name"))
    osdef, path, env = await _prepare(ctx, instance, script, debug)
    # volumes without device-mapper: a loop device over each one's range
    ranges, loops = await lvloops.attach(ctx, instance, f"run the OS {script} script of",
                                         only=index)
    try:
        env.update(ranges)
        device = _disk_path(instance, env, index)
        prefix = "EXPORT" if script == osdir.SCRIPT_EXPORT else "IMPORT"
        env.update({f"{prefix}_INDEX": str(index), f"{prefix}_DISK_PATH": device,
                    f"{prefix}_DEVICE": device})
        logfile = os.path.join(ctx.paths.os_log_dir, osrun.log_name(
            kind, str(instance["os"]), name, str(index), ctx.clock.seconds()))
        run = await osrun.run_script(ctx, ["/bin/sh", "-c", redirect, path, data_path], env,
                                     osdef.path, logfile, osenv.hidden_values(instance),
                                     CREATE_TIMEOUT)
    finally:
        await lvloops.detach(ctx, loops)
    if not run.ok:
        raise RPCFail(f"OS {script} script failed for disk {index} ({run.reason()}), last "
                      f"lines in the log file:\n{run.tail}")


async def _export_dump(ctx: NodeContext, instance: dict[str, Any], index: int, staging: str,
                       debug: int) -> int:
    disks = instance.get("disks_info") or []
    if index >= len(disks):
        raise RPCFail(f"Instance {instance.get('name')} has no disk {index}")
    dump = str(disks[index].get("uuid") or "")
    if not is_name(dump):
        raise RPCFail(f"Disk {index} has no usable UUID")
    directory = _dir(ctx, staging)
    await ctx.run(_make_staging, directory)
    target = os.path.join(directory, dump)
    await _run_disk_script(ctx, instance, index, osdir.SCRIPT_EXPORT, "export", _TO_FILE,
                           target, debug)
    size: int = await ctx.run(os.path.getsize, target)
    return size


def export_dump(ctx: NodeContext, instance: dict[str, Any], index: int, staging: str,
                debug: int) -> defer.Deferred[int]:
    """Dump disk ``index`` with the OS export script into ``staging/<disk uuid>``;
    the dump's size."""
    return defer.Deferred.fromCoroutine(_export_dump(ctx, instance, index, staging, debug))


def read_chunk(path: str, offset: int, length: int) -> str:
    """``length`` bytes at ``offset`` of a file, base64 (blocking)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(length)
    except OSError as err:
        raise RPCFail(f"Cannot read {path}: {err}") from None
    return base64.b64encode(data).decode("ascii")


def export_read(ctx: NodeContext, dump: str, offset: int, length: int) -> defer.Deferred[str]:
    """A chunk of a dump of an export or a staging directory."""
    return ctx.run(read_chunk, _dir(ctx, dump), offset, length)


def write_chunk(path: str, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` (0: a new file) (blocking)."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if offset == 0 else 0)
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "wb") as f:
            if f.seek(0, os.SEEK_END) != offset:
                raise RPCFail(f"Chunk at {offset} does not follow the end of {path}")
            f.write(data)
    except OSError as err:
        raise RPCFail(f"Cannot write {path}: {err}") from None


def export_write(ctx: NodeContext, staging: str, name: str, offset: int,
                 data: str) -> defer.Deferred[None]:
    """Append a chunk to a file of a staging directory."""
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise RPCFail("The chunk is not base64 data") from None
    return ctx.run(write_chunk, os.path.join(_dir(ctx, staging), name), offset, raw)


def finalize(export_dir: str, staging: str, export: str, config: str) -> None:
    """Write ``config.ini`` into the staging directory and rename it to the export
    (an older export of that name is removed first) (blocking)."""
    src = os.path.join(export_dir, staging)
    dst = os.path.join(export_dir, export)
    try:
        _make_staging(src)
        conf = os.path.join(src, exportinfo.EXPORT_CONF_FILE)
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(config)
            f.flush()
            os.fsync(f.fileno())
        old = src + "-old"  # hidden too: a crash here leaves no second export listed
        if os.path.lexists(dst):
            shutil.rmtree(old, ignore_errors=True)
            os.rename(dst, old)
        os.rename(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    except OSError as err:
        raise RPCFail(f"Cannot finalize the export {export}: {err}") from None


def export_finalize(ctx: NodeContext, staging: str, export: str,
                    config: str) -> defer.Deferred[None]:
    """Make a staging directory the export ``export``."""
    try:
        exportinfo.parse_config(config)
    except ValueError as err:
        raise RPCFail(f"Invalid export configuration: {err}") from None
    return ctx.run(finalize, ctx.paths.export_dir, staging, export, config)


async def _import_disk(ctx: NodeContext, instance: dict[str, Any], index: int, dump: str,
                       debug: int) -> None:
    path = _dir(ctx, dump)
    if not await ctx.run(os.path.isfile, path):
        raise RPCFail(f"The dump {dump} does not exist on this node")
    await _run_disk_script(ctx, instance, index, osdir.SCRIPT_IMPORT, "import", _FROM_FILE,
                           path, debug)


def instance_import_disk(ctx: NodeContext, instance: dict[str, Any], index: int, dump: str,
                         debug: int) -> defer.Deferred[None]:
    """Run the OS import script for disk ``index`` with the dump on its standard input."""
    return defer.Deferred.fromCoroutine(_import_disk(ctx, instance, index, dump, debug))
