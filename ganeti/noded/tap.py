"""twistd/twist entry point of ganeti-noded: options and the service tree."""

from __future__ import annotations

import os

from twisted.application import service
from twisted.python import usage

from ganeti import daemon
from ganeti.core import constants, ssconf
from ganeti.core.errors import GenericError
from ganeti.core.paths import Paths
from ganeti.daemon import reactor_stopper

ANY_ADDRESS = "0.0.0.0"


class Options(usage.Options):
    """Command-line options of ganeti-noded."""

    synopsis = "[options]"
    longdesc = ("The Ganeti node daemon: serves node RPC over HTTPS with mutual TLS on the "
                "cluster certificate (DATA_DIR/server.pem). GANETI_ROOTDIR and "
                "GANETI_HOSTNAME select a virtual-cluster node. Logs at info level "
                "(--debug: debug too) to twistd's --logfile, which is reopened on SIGHUP.")
    optFlags = [
        ["no-mlock", None, "Do not lock the daemon into memory when running as root"],
        ["manage-confd", None, "Start ganeti-confd when this node becomes the master or a "
         "master candidate and stop it when it stops being one"],
        daemon.DEBUG_FLAG,
    ]
    optParameters = [
        ["bind", "b", None,
         "Address to listen on (default: this node's primary IP from ssconf, else 0.0.0.0)"],
        ["port", "p", constants.DEFAULT_NODED_PORT, "TCP port to listen on", int],
        ["max-body", None, 64 * 1024 * 1024, "Largest request body accepted, in bytes", int],
        ["io-threads", None, 4, "Threads for blocking disk work", int],
        ["libvirt-uri", None, None,
         "libvirt connection of the kvm hypervisor (default: $GANETI_LIBVIRT_URI, else "
         "qemu:///system); libvirt is only contacted when noded starts, and a missing "
         "libvirt only fails kvm calls"],
    ]

    def postOptions(self) -> None:
        if not 0 <= self["port"] <= 65535:
            raise usage.UsageError("--port must be between 0 and 65535")
        if self["max-body"] < 1024:
            raise usage.UsageError("--max-body must be at least 1024 bytes")
        if not 1 <= self["io-threads"] <= 64:
            raise usage.UsageError("--io-threads must be between 1 and 64")
        uri = self["libvirt-uri"]
        if uri is not None and (not uri or any(ch.isspace() for ch in uri) or ":" not in uri):
            raise usage.UsageError("--libvirt-uri must be a libvirt URI such as "
                                   "qemu:///system")


def makeService(options: Options) -> service.IService:
    """Build the node daemon; exits with a message if server.pem cannot be loaded.

    Listening happens when twistd starts the service: a port in use fails the
    start with exit status 1 (:mod:`ganeti.daemon`).
    """
    from twisted.internet import reactor
    from twisted.python.threadpool import ThreadPool

    from ganeti.noded.backend.context import NodeContext, thread_runner
    from ganeti.noded.backend.registry import handlers
    from ganeti.noded.bdev.drbdnet import MirrorNet
    from ganeti.noded.console import PATH_PREFIX, console_resource
    from ganeti.noded.hypervisors.base import NodeEnv
    from ganeti.noded.hypervisors.registry import NodeHypervisors
    from ganeti.noded.hypervisors.virt import VirtConnection, default_uri
    from ganeti.noded.instevents import InstanceEvents
    from ganeti.noded.server import make_site
    from ganeti.noded.service import NodeDaemon
    from ganeti.noded.tls import ClusterServerContextFactory
    from ganeti.rpc.tls import ClusterCertificate

    daemon_log = daemon.setup_log(options, "ganeti-noded")
    try:
        paths = Paths.from_env()
        cluster = ClusterCertificate.from_file(paths.server_pem)
    except (GenericError, OSError, ValueError) as err:
        daemon.cannot_start(daemon_log, "ganeti-noded", str(err))
    bind = options["bind"] or ssconf.node_primary_ip(paths) or ANY_ADDRESS
    pool = ThreadPool(minthreads=1, maxthreads=options["io-threads"], name="noded-io")
    run = thread_runner(reactor, pool)
    events = InstanceEvents(reactor)
    virt = VirtConnection(options["libvirt-uri"] or default_uri(), reactor)
    # every hypervisor of the table, made before the libvirt thread connects (kvm
    # takes its running domains back on the first connection)
    hypervisors = NodeHypervisors(NodeEnv(paths.run_dir, reactor, run, events, virt))
    ctx = NodeContext(paths=paths, clock=reactor, run=run,
                      shutdown=reactor_stopper(reactor),
                      manage_confd=bool(options["manage-confd"]), processes=reactor,
                      events=events, hypervisors=hypervisors,
                      mirrors=MirrorNet(paths.run_dir, reactor, run, reactor))
    site = make_site(ctx, handlers(), max_body=options["max-body"],
                     streams={PATH_PREFIX: console_resource(reactor, paths.run_dir,
                                                            hypervisors.serial_console)})
    return NodeDaemon(reactor, site, pool, ClusterServerContextFactory(cluster),
                      port=options["port"], bind=bind, children=ctx.children, virt=virt,
                      mirrors=ctx.mirrors,
                      mlock=os.geteuid() == 0 and not options["no-mlock"],
                      daemon_log=daemon_log, install_signal=daemon.sighup_installer(reactor),
                      process_exit=daemon.ProcessExit())
