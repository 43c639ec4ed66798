"""ganeti-twisted: a Ganeti-compatible cluster virtualization manager on Twisted."""
