"""twistd plugin: ganeti-rapi, composed of the RAPI (ganeti.rapi) and the job feed
(ganeti.feeds).

Neither package imports the other; this plugin wires them: the feed relay
reads masterd's event stream and the RAPI server hands ``/2/feed`` to the
relay's WebSocket resource.  Everything is imported when the service is made,
so that ``twistd --help`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from twisted.application.service import IService, IServiceMaker
from twisted.plugin import IPlugin
from zope.interface import implementer


@implementer(IPlugin, IServiceMaker)
class RapiServiceMaker:
    """Makes ganeti-rapi with its WebSocket feed."""

    tapname = "ganeti-rapi"
    description = ("Ganeti remote API daemon: RAPI v2 over HTTPS, job feeds, dashboard "
                   "(run on the master node)")

    @property
    def options(self) -> Any:
        """The options class (instantiated by twistd)."""
        from ganeti.rapi import tap
        return tap.Options

    def makeService(self, options: Any) -> IService:
        """The RAPI daemon with its job feed at /2/feed."""
        from twisted.internet import reactor

        from ganeti.feeds.relay import FeedRelay
        from ganeti.feeds.websocket import feed_resource
        from ganeti.luxi.twclient import EventStreamClient
        from ganeti.rapi import tap

        paths = tap.startup_paths()
        limits = {name: options[option] for name, option in
                  (("max_pause", "feed-max-pause"), ("max_resyncs", "feed-max-resyncs"))
                  if options[option] is not None}
        relay = FeedRelay(reactor, EventStreamClient(reactor, paths.luxi_socket), **limits)
        resource = feed_resource(relay, reactor)
        return tap.make_service(options, paths=paths, websocket=lambda: resource,
                                on_start=relay.start, on_stop=relay.stop)

ganeti_rapi = RapiServiceMaker()
