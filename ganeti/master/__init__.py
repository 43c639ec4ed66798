"""ganeti-masterd: the only writer of the cluster config, serving LUXI."""
