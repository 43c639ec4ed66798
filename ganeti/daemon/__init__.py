"""Start-up plumbing shared by the four daemons (masterd, noded, confd, rapi).

- :mod:`ganeti.daemon.logs`: the daemon's log (twistd's ``--logfile``, stdout
  under ``--nodaemon``, or syslog), info by default, ``--debug`` for more, a
  file that never rotates itself and is reopened on SIGHUP;
- :mod:`ganeti.daemon.reload`: SIGHUP and SIGUSR1 run the reload hooks on
  the reactor thread;
- :mod:`ganeti.daemon.listen`: listening sockets (TCP, TLS, UDP, UNIX,
  backlog :data:`LISTEN_BACKLOG`) that listen while twistd starts the
  application, or fail it with the address and the reason;
- :mod:`ganeti.daemon.service`: the root service (children start in order
  or not at all and stop in reverse, one after the other), the thread-pool
  service, "stop the reactor once it runs" and exit status 1 on failure.

docs/design/daemons.md describes how the pieces fit.  This package may
import only ``ganeti.core`` (and Twisted, txaio): every daemon package uses
it.
"""

from ganeti.daemon.listen import (
    LISTEN_BACKLOG,
    UNIX_PATH_MAX,
    ListenService,
    StartupError,
    reason_of,
    unix_path_problem,
)
from ganeti.daemon.logs import (
    DEBUG_FLAG,
    LOG_FILE_MODE,
    AppendLogFile,
    DaemonLog,
    LogService,
    daemon_log,
    level_predicate,
    set_library_log_level,
    setup_log,
)
from ganeti.daemon.reload import RELOAD_SIGNALS, ReloadService, SignalInstaller, sighup_installer
from ganeti.daemon.service import (
    DaemonService,
    ProcessExit,
    StepService,
    ThreadPoolService,
    cannot_start,
    reactor_stopper,
    stop_reactor,
)

__all__ = [
    "DEBUG_FLAG",
    "LISTEN_BACKLOG",
    "LOG_FILE_MODE",
    "RELOAD_SIGNALS",
    "UNIX_PATH_MAX",
    "AppendLogFile",
    "DaemonLog",
    "DaemonService",
    "ListenService",
    "LogService",
    "ProcessExit",
    "ReloadService",
    "SignalInstaller",
    "StartupError",
    "StepService",
    "ThreadPoolService",
    "cannot_start",
    "daemon_log",
    "level_predicate",
    "reactor_stopper",
    "reason_of",
    "set_library_log_level",
    "setup_log",
    "sighup_installer",
    "stop_reactor",
    "unix_path_problem",
]
