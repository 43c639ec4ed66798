"""twistd plugin: ganeti-masterd (the code lives in ganeti.master.tap)."""

from twisted.application.service import ServiceMaker

ganeti_masterd = ServiceMaker(
    "Ganeti master daemon",
    "ganeti.master.tap",
    "Ganeti master daemon: cluster config and LUXI (run on the master node)",
    "ganeti-masterd",
)
