"""ganeti-rapi: Ganeti's remote API v2 over HTTPS, and the web dashboard."""
