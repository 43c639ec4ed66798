"""LUXI: the JSON-over-UNIX-socket protocol between clients and the master daemon."""
