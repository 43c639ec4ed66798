"""ganeti-watcher: the periodic cluster watcher (run from cron every 5 minutes).

As Ganeti's watcher:

1. Exits quietly (status 0) while the watcher is paused (``gnt-cluster watcher
   pause``), unless ``--ignore-pause``.
2. Takes ``LOCK_DIR/ganeti-watcher.lock`` shared without waiting (a program that
   holds it exclusively keeps every watcher out; exit 0 with a log line).
3. On every node: starts the node daemons that should run and do not, runs the
   hooks in ``CONF_DIR/hooks/watcher``, and does node health maintenance when
   the cluster's ``maintain_node_health`` is set (:mod:`ganeti.cli.watcher_node`).
4. On a node that is not the master: stops here (status 0).
5. On the master: restarts ``ganeti-masterd`` if LUXI does not answer, starts
   ``ganeti-rapi`` if it is not running and restarts it once if it does not
   answer ``GET /version``; checks that this node is the master (else status
   11); archives jobs older than ``--job-age`` (``AutoArchiveJobs``); then runs
   one child watcher per node group (``--node-group UUID``), one second apart,
   and waits for them unless ``--no-wait-children``.
6. A group watcher locks ``DATA_DIR/watcher.<uuid>.data`` (exclusive, without
   waiting: one run per group at a time, whoever it is: this command, Ganeti's,
   or masterd's watcher service), records the boot ids of the group's nodes
   (a changed boot id means a reboot: the disks of instances with secondaries
   there are activated once instances exist), and submits
   ``OP_GROUP_VERIFY_DISKS`` at low priority, waits for it and archives it, then
   activates the disks it reports offline; Ganeti skips this when the group has
   no instances (or only ``ext`` ones), and so do we.  A verify-disks that
   masterd's service submitted less than four minutes ago is not repeated.

Exit codes: 0 (also paused, locked out, not master in the global run, queue
full or drained), 1 (an error), 11 (not the master: the master check failed).
Logs go to ``LOG_DIR/watcher.log`` (and stderr with ``--debug``).
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ganeti import version
from ganeti.cli import daemons, jobs, watcher_node
from ganeti.cli.framework import Context, default_luxi_factory
from ganeti.core import constants, errors, ssconf
from ganeti.core import watcher as watchermod
from ganeti.core.paths import Paths

log = logging.getLogger("ganeti-watcher")

#: Seconds between starting two group children (Ganeti's CHILD_PROCESS_DELAY).
CHILD_PROCESS_DELAY = 1.0
#: Seconds to wait for a restarted master daemon to answer.
MASTERD_START_TIMEOUT = 30.0
UUID_RE = re.compile(r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}")
#: Who recorded a verify-disks in the state file.
SUBMITTER = "ganeti-watcher"


class NotMasterError(errors.GenericError):
    """This node is not the master."""


@dataclass
class Runtime:
    """What the watcher touches outside itself (tests replace any of it)."""

    luxi_factory: Callable[[Paths], Any] = default_luxi_factory
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    start_daemon: Callable[[Paths, str, str], int] = daemons.start_on_node
    stop_daemon: Callable[[Paths, str], bool] = daemons.stop
    rapi_probe: Callable[[str], bool] = watcher_node.rapi_responding
    node_role: Callable[[Paths], Any] | None = None
    #: Starts the watcher of one group: (argv of this run, group uuid, lock fd) -> waitable.
    spawn_group: Callable[[list[str], str, int], Any] | None = None
    children: list[Any] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    """The options (Ganeti's, plus ``--version``)."""
    p = argparse.ArgumentParser(
        prog="ganeti-watcher", description="Ganeti cluster watcher: keeps the cluster's "
        "daemons running, archives old jobs and verifies disks (run it from cron).")
    p.add_argument("--version", action="version",
                   version=f"ganeti-watcher (ganeti-twisted {version.PACKAGE_VERSION}) "
                           f"{constants.RELEASE_VERSION}")
    p.add_argument("-d", "--debug", action="store_true",
                   help="log debug messages too, and log to stderr as well")
    p.add_argument("-g", "--node-group", dest="nodegroup", metavar="UUID",
                   help="run the watcher of one node group (used for the children)")
    p.add_argument("-A", "--job-age", default="6h", metavar="AGE",
                   help="archive jobs older than AGE (30, 30s, 5m, 6h, 2d, 1w; "
                        "default: %(default)s)")
    p.add_argument("--ignore-pause", action="store_true",
                   help="run even while the watcher is paused")
    p.add_argument("--wait-children", dest="wait_children", action="store_true",
                   default=True, help="wait for the group watchers (default)")
    p.add_argument("--no-wait-children", dest="wait_children", action="store_false",
                   help="do not wait for the group watchers")
    p.add_argument("--no-verify-disks", action="store_true",
                   help="do not verify the disks of the node groups")
    p.add_argument("--rapi-ip", metavar="IP",
                   help="the address RAPI listens on (default: this node's primary IP)")
    return p


def setup_logging(paths: Paths, debug: bool, stderr: Any) -> None:
    """Log to LOG_DIR/watcher.log (and stderr with --debug), Ganeti's line format."""
    log.handlers.clear()
    log.propagate = False
    log.setLevel(logging.DEBUG if debug else logging.INFO)
    fmt = logging.Formatter("%(asctime)s: ganeti-watcher pid=%(process)d %(levelname)s "
                            "%(message)s")
    try:
        os.makedirs(paths.log_dir, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(paths.log_file("watcher"),
                                                       encoding="utf-8")
        handler.setFormatter(fmt)
        log.addHandler(handler)
    except OSError:
        pass  # no log directory we may write: stderr only, if asked for
    if debug:
        stream = logging.StreamHandler(stderr)
        stream.setFormatter(fmt)
        log.addHandler(stream)


def _close_logging() -> None:
    for handler in list(log.handlers):
        handler.close()
        log.removeHandler(handler)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None,
         stderr: Any = None, runtime: Runtime | None = None) -> int:
    """Entry point of bin/ganeti-watcher; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stderr = sys.stderr if stderr is None else stderr
    rt = runtime or Runtime()
    parser = build_parser()
    try:
        opts = parser.parse_args(argv)
        if opts.nodegroup is not None:
            opts.nodegroup = opts.nodegroup.lower()
        opts.job_age = jobs.parse_timespec(opts.job_age)
        paths = Paths.from_env(os.environ if environ is None else environ)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else constants.EXIT_FAILURE
    except errors.GenericError as err:
        stderr.write(f"ganeti-watcher: {err.args[0] if err.args else err}\n")
        return constants.EXIT_FAILURE
    setup_logging(paths, opts.debug, stderr)
    try:
        return _run(paths, opts, argv, rt)
    finally:
        _close_logging()


def _run(paths: Paths, opts: argparse.Namespace, argv: list[str], rt: Runtime) -> int:
    if not opts.ignore_pause and watchermod.read_pause_file(paths.watcher_pause_file,
                                                            rt.now()) is not None:
        log.debug("Pause has been set, exiting")
        return constants.EXIT_SUCCESS
    try:
        lock_fd = _shared_lock(paths.watcher_lock_file)
    except OSError as err:
        log.error("Can't acquire lock on %s: %s", paths.watcher_lock_file, err)
        return constants.EXIT_SUCCESS
    try:
        if opts.nodegroup is None:
            return global_watcher(paths, opts, argv, rt, lock_fd)
        return group_watcher(paths, opts, rt)
    except NotMasterError:
        log.debug("Not master, exiting")
        return constants.EXIT_NOTMASTER
    except errors.JobQueueFull:
        log.error("Job queue is full, can't query cluster state")
    except errors.JobQueueDrainError:
        log.error("Job queue is drained, can't maintain cluster state")
    except Exception as err:
        log.exception("%s", err)
        return constants.EXIT_FAILURE
    finally:
        os.close(lock_fd)
    return constants.EXIT_SUCCESS


def _shared_lock(path: str) -> int:
    """Open and lock ``path`` shared without waiting; the descriptor."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


# --- the global watcher -------------------------------------------------------------

def connect(paths: Paths, rt: Runtime, try_restart: bool) -> Any:
    """A LUXI client of the master daemon; NotMasterError on another node.

    If the daemon does not answer and ``try_restart``, it is started (again)
    and given :data:`MASTERD_START_TIMEOUT` seconds to answer.
    """
    try:
        master = ssconf.read(paths, "master_node")
    except errors.ConfigurationError as err:
        raise NotMasterError(f"Not on master node ({err})") from None
    if master != paths.hostname:
        raise NotMasterError(f"Not on master node (the master is {master})")
    client = None
    try:
        client = rt.luxi_factory(paths)
        client.call("QueryConfigValues", ["master_node"])
        return client
    except (errors.NoMasterError, errors.TimeoutError, errors.ConnectionClosedError) as err:
        if not try_restart:
            raise
        log.warning("Luxi daemon seems to be down (%s), trying to restart", err)
    if client is not None:
        _close(client)
    rt.stop_daemon(paths, constants.MASTERD)
    ip = ssconf.node_primary_ip(paths) or ""
    try:
        rt.start_daemon(paths, constants.MASTERD, ip)
    except errors.GenericError as err:
        raise errors.GenericError(f"Can't start the master daemon: {err}") from None
    deadline = time.monotonic() + MASTERD_START_TIMEOUT
    while True:
        client = None
        try:
            client = rt.luxi_factory(paths)
            client.call("QueryConfigValues", ["master_node"])
            return client
        except (errors.NoMasterError, errors.ConnectionClosedError):
            if client is not None:
                _close(client)
            if time.monotonic() >= deadline:
                raise errors.GenericError("Can't start the master daemon") from None
            rt.sleep(0.2)


def _close(client: Any) -> None:
    if hasattr(client, "close"):
        client.close()


def check_master(client: Any, paths: Paths) -> None:
    """NotMasterError unless the master daemon names this node as the master."""
    (master,) = client.call("QueryConfigValues", ["master_node"])
    if master != paths.hostname:
        raise NotMasterError("This is not the master node")


def ensure_rapi(paths: Paths, rt: Runtime, rapi_ip: str) -> bool:
    """Start RAPI if it does not run; restart it once if it does not answer."""
    ip = ssconf.node_primary_ip(paths) or rapi_ip
    watcher_node.ensure_daemon(paths, constants.RAPI, ip, rt.start_daemon)
    log.debug("Attempting to talk to remote API on %s", rapi_ip)
    if rt.rapi_probe(rapi_ip):
        log.debug("Successfully talked to remote API")
        return True
    log.warning("Couldn't get answer from remote API, restarting daemon")
    rt.stop_daemon(paths, constants.RAPI)
    watcher_node.ensure_daemon(paths, constants.RAPI, ip, rt.start_daemon)
    log.debug("Second attempt to talk to remote API")
    if not rt.rapi_probe(rapi_ip):
        log.critical("RAPI is not responding")
        return False
    log.debug("Successfully talked to remote API")
    return True


def global_watcher(paths: Paths, opts: argparse.Namespace, argv: list[str], rt: Runtime,
                   lock_fd: int) -> int:
    """The node-local work, then on the master the cluster-wide work and the groups."""
    watcher_node.ensure_node_daemons(paths, rt.start_daemon)
    watcher_node.run_watcher_hooks(paths)
    # on every node, master or not, so that an old master is cleaned up too
    if watcher_node.NodeMaintenance.should_run(paths):
        watcher_node.NodeMaintenance(paths, rt.node_role).run()
    try:
        client = connect(paths, rt, try_restart=True)
    except NotMasterError:
        return constants.EXIT_SUCCESS  # nothing more to do on other nodes
    try:
        ensure_rapi(paths, rt, opts.rapi_ip or ssconf.node_primary_ip(paths) or "127.0.0.1")
        check_master(client, paths)
        archived, left = client.call("AutoArchiveJobs", opts.job_age,
                                     (constants.LUXI_DEF_RWTO - 1) // 2)
        log.debug("Archived %s jobs, left %s", archived, left)
        groups = client.call("QueryGroups", [], ["name", "uuid"], False)
    finally:
        _close(client)
    spawn = rt.spawn_group or spawn_group_process
    children = []
    for index, (name, uuid) in enumerate(groups):
        if index > 0:
            rt.sleep(CHILD_PROCESS_DELAY)
        log.debug("Spawning child for group %r (%s).", name, uuid)
        try:
            children.append(spawn(argv, uuid, lock_fd))
        except OSError:
            log.exception("Failed to start the watcher of group %r (%s)", name, uuid)
    rt.children.extend(children)
    if opts.wait_children:
        for child in children:
            status = child.wait() if hasattr(child, "wait") else child
            log.debug("Child %s exited with status %s", getattr(child, "pid", "?"), status)
    return constants.EXIT_SUCCESS


def spawn_group_process(argv: list[str], uuid: str, lock_fd: int) -> subprocess.Popen[bytes]:
    """Run this command again for one group; it shares the watcher lock."""
    args = [a for a in argv if not a.startswith(("-g", "--node-group"))]
    return subprocess.Popen([sys.executable, "-m", "ganeti.cli.watcher", *args,
                             "--node-group", uuid], pass_fds=(lock_fd,),
                            stdin=subprocess.DEVNULL)


# --- one node group -------------------------------------------------------------------

def known_groups(paths: Paths) -> list[str]:
    """The group uuids in ssconf ``nodegroups``."""
    result = [line.split(None, 1)[0] for line in watcher_node.ssconf_lines(paths, "nodegroups")]
    if not all(UUID_RE.fullmatch(r) for r in result):
        raise errors.GenericError("Ssconf contains invalid group UUID")
    return result


def _query_rows(client: Any, what: str, fields: list[str], qfilter: Any) -> list[list[Any]]:
    response = client.call("Query", what, fields, qfilter)
    return [[value for _, value in row] for row in response["data"]]


def group_instances(client: Any, uuid: str) -> list[dict[str, Any]] | None:
    """The instances whose primary node is in the group, or None if the master
    cannot list instances yet (they come with the instance layer)."""
    fields = ["name", "status", "admin_state", "disks_active", "snodes", "disk_template"]
    try:
        rows = _query_rows(client, constants.QR_INSTANCE, fields,
                           ["==", "pnode.group.uuid", uuid])
    except errors.OpPrereqError as err:
        log.debug("Instances cannot be queried (%s)", err)
        return None
    return [dict(zip(fields, row, strict=True)) for row in rows]


def activate_disks_after_reboot(client: Any, node: str,
                                instances: list[dict[str, Any]]) -> None:
    """A node rebooted: where instances use it as a secondary, their disks would be
    activated (``OP_INSTANCE_ACTIVATE_DISKS``); nothing without instances."""
    for inst in instances:
        if node in (inst.get("snodes") or []) and inst.get("disks_active"):
            log.info("Activating disks for instance '%s'", inst["name"])
            jobs_id = client.call("SubmitJob", [{
                "OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": inst["name"],
                "reason": watchermod.reason(f"Activating disks for instance {inst['name']}",
                                            time.time())}])
            log.debug("Submitted job %s", jobs_id)


def restart_instances(ctx: Context, state: watchermod.WatcherState,
                      instances: list[dict[str, Any]], now: float) -> list[str]:
    """Start the instances that should run and do not, one job each, waiting for
    each (Ganeti's _CheckInstances); the names restarted."""
    client = ctx.luxi()
    statuses = {i["name"]: i.get("status") or "" for i in instances}
    names = watchermod.restart_plan(state, statuses, now, log)
    for name in names:
        try:
            job_id = int(client.call("SubmitJob", [watchermod.restart_opcode(name, now)]))
            jobs.poll_job(ctx, job_id, jobs.Reporter(ctx, feedback=_log_feedback))
        except Exception:  # one instance's failure must not stop the others
            log.exception("Error while restarting instance '%s'", name)
    return names


def verify_disks(ctx: Context, uuid: str, state: watchermod.WatcherState,
                 instances: list[dict[str, Any]], now: float,
                 save: Callable[[], None]) -> int | None:
    """Submit the group's verify-disks (recorded and saved at once), wait for it,
    archive it; its job id."""
    client = ctx.luxi()
    job_id = int(client.call("SubmitJob", [watchermod.verify_disks_opcode(uuid, now)]))
    state.record_verify_disks(now, job_id, SUBMITTER)
    save()
    (result,) = jobs.poll_job(ctx, job_id, jobs.Reporter(ctx, feedback=_log_feedback))
    try:
        client.call("ArchiveJob", job_id)
    except errors.GenericError:
        log.exception("Error while archiving job %d", job_id)
    offline = watchermod.offline_disk_instances(result)
    known = {i["name"] for i in instances}
    ops = [{"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": name,
            "reason": watchermod.reason(f"Activating disks for instance {name}", now)}
           for name in offline if name in known]
    if ops:
        jobs.poll_job(ctx, int(client.call("SubmitJob", ops)),
                      jobs.Reporter(ctx, feedback=_log_feedback))
    return job_id


def _log_feedback(timestamp: list[int], log_type: str, message: Any) -> None:
    log.debug("%s", message)


def group_watcher(paths: Paths, opts: argparse.Namespace, rt: Runtime) -> int:
    """The watcher of one node group (see the module docstring, step 6)."""
    uuid = opts.nodegroup
    if not UUID_RE.fullmatch(uuid):
        raise errors.GenericError(f"Node group parameter (--node-group) must be given a "
                                  f"UUID, got '{uuid}'")
    log.info("Watcher for node group '%s'", uuid)
    if uuid not in known_groups(paths):
        raise errors.GenericError(f"Node group '{uuid}' is not known by ssconf")
    state_path = paths.watcher_group_state_file(uuid)
    log.debug("Using state file %s", state_path)
    try:
        statefile = watchermod.open_state_file(state_path)
    except watchermod.StateLocked as err:
        log.error("%s", err)
        return constants.EXIT_FAILURE
    ctx = Context(tool="ganeti-watcher", stdout=open(os.devnull, "w"),
                  stderr=sys.stderr, environ=paths.env(), luxi_factory=rt.luxi_factory,
                  _paths=paths)
    try:
        state = watchermod.WatcherState.read_from(statefile)
        ctx._luxi = connect(paths, rt, try_restart=False)
        client = ctx.luxi()
        check_master(client, paths)
        nodes = _query_rows(client, constants.QR_NODE, ["name", "bootid", "offline"],
                            ["==", "group.uuid", uuid])
        instances = group_instances(client, uuid)
        for node in state.rebooted_nodes({name: boot for name, boot, _ in nodes}):
            log.info("Node %s has a new boot id (rebooted)", node)
            activate_disks_after_reboot(client, node, instances or [])
        only_ext = all(i.get("disk_template") == "ext" for i in instances or [])
        now = rt.now()
        if instances:
            restart_instances(ctx, state, instances, now)
        if opts.no_verify_disks or only_ext:
            log.debug("Not verifying disks (%s)", "--no-verify-disks" if opts.no_verify_disks
                      else "no instances with disks to verify")
        elif not watchermod.verify_disks_due(state, now, watchermod.CRON_VERIFY_SPACING):
            log.info("A verify-disks of group %s was submitted less than %ds ago, not "
                     "repeating it", uuid, watchermod.CRON_VERIFY_SPACING)
        else:
            verify_disks(ctx, uuid, state, instances or [], now,
                         lambda: state.save(statefile, state_path))
        state.save(statefile, state_path)
    except Exception as err:
        log.info("Not updating status file due to failure: %s", err)
        raise
    finally:
        statefile.close()
        ctx.stdout.close()
        if ctx._luxi is not None:
            _close(ctx._luxi)
    return constants.EXIT_SUCCESS


if __name__ == "__main__":  # the group children
    sys.exit(main())
