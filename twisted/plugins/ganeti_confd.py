"""twistd plugin: ganeti-confd (the code lives in ganeti.confd.tap)."""

from twisted.application.service import ServiceMaker

ganeti_confd = ServiceMaker(
    "Ganeti configuration query daemon",
    "ganeti.confd.tap",
    "Ganeti confd: HMAC-signed read-only config queries over UDP (master candidates)",
    "ganeti-confd",
)
