"""twistd plugin: ganeti-noded (the code lives in ganeti.noded.tap)."""

from twisted.application.service import ServiceMaker

ganeti_noded = ServiceMaker(
    "Ganeti node daemon",
    "ganeti.noded.tap",
    "Ganeti node daemon: node RPC over HTTPS with mutual TLS (run on every node)",
    "ganeti-noded",
)
