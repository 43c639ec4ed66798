"""The side-by-side oracle: Debian's real Ganeti 3.0 clients against a real Ganeti 3.0
cluster and against our daemons (issue 14).  See test_oracle.py."""

__all__: list[str] = []
