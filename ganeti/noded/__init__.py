"""ganeti-noded: the node daemon, serving the calls of ganeti.core.rpcdefs over mutual TLS."""
