"""twistd/twist entry point of ganeti-masterd: options and the service tree."""

from __future__ import annotations

import gc
import os

from twisted.application import service
from twisted.python import usage

from ganeti import daemon
from ganeti.core import constants
from ganeti.core.errors import GenericError
from ganeti.core.paths import Paths

#: The watcher service's interval when --watcher-interval is not given, and the
#: environment variable that overrides it.
DEFAULT_WATCHER_INTERVAL = 30.0
WATCHER_INTERVAL_ENV = "GANETI_WATCHER_INTERVAL"


class Options(usage.Options):
    """Command-line options of ganeti-masterd."""

    synopsis = "[options]"
    longdesc = ("The Ganeti master daemon: owns the cluster configuration and serves "
                "LUXI on RUN_DIR/socket/ganeti-query. Runs only on the master node. "
                "GANETI_ROOTDIR and GANETI_HOSTNAME select a virtual-cluster node. "
                "Logs at info level (--debug: debug too) to twistd's --logfile, which "
                "is reopened on SIGHUP.")
    optFlags = [daemon.DEBUG_FLAG,
                ["no-instance-events", None,
                 "Do not watch the nodes' instance events (a crashed instance then waits "
                 "for the next watcher round)"]]
    optParameters = [
        ["max-frame", None, constants.LUXI_MAX_FRAME,
         "Largest LUXI request accepted, in bytes", int],
        ["io-threads", None, 4, "Threads for blocking disk work", int],
        ["watcher-interval", None, None,
         "Seconds between two rounds of the watcher service (0: off; default: "
         f"${WATCHER_INTERVAL_ENV} if set, else {DEFAULT_WATCHER_INTERVAL:g})", float],
    ]

    def postOptions(self) -> None:
        if self["max-frame"] < 1024:
            raise usage.UsageError("--max-frame must be at least 1024 bytes")
        if not 1 <= self["io-threads"] <= 64:
            raise usage.UsageError("--io-threads must be between 1 and 64")
        if self["watcher-interval"] is None:
            # a virtual cluster's masterd may be started with the service off (the
            # oracle tests: jobs the service submits would shift the job ids)
            text = os.environ.get(WATCHER_INTERVAL_ENV, "")
            try:
                self["watcher-interval"] = float(text) if text else DEFAULT_WATCHER_INTERVAL
            except ValueError:
                raise usage.UsageError(f"${WATCHER_INTERVAL_ENV} must be a number of "
                                       f"seconds, not {text!r}") from None
        if not 0 <= self["watcher-interval"] <= 86400:
            raise usage.UsageError("--watcher-interval must be between 0 and 86400 seconds")


def makeService(options: Options) -> service.IService:
    """Build the master daemon; refuses (exit 1, clear message) off the master.

    The LUXI socket is made when twistd starts the service: one that cannot be
    made fails the start with exit status 1 (:mod:`ganeti.daemon`).
    """
    from twisted.internet import reactor

    from ganeti.master.service import MasterDaemon, load_master_config

    daemon_log = daemon.setup_log(options, "ganeti-masterd")
    try:
        paths = Paths.from_env()
        cfg = load_master_config(paths)
    except GenericError as err:
        daemon.cannot_start(daemon_log, "ganeti-masterd", str(err))
    # The config lives as long as the daemon: the cyclic collector need not walk it
    # again (objects a change replaces are still freed when their last reference goes;
    # config objects form no cycles).
    gc.freeze()
    return MasterDaemon(reactor, paths, cfg, max_frame=options["max-frame"],
                        io_threads=options["io-threads"], daemon_log=daemon_log,
                        install_signal=daemon.sighup_installer(reactor),
                        watcher_interval=options["watcher-interval"],
                        instance_events=not options["no-instance-events"],
                        process_exit=daemon.ProcessExit(), activate_master_ip=True)
