"""WebSocket job feeds: masterd's LUXI event stream relayed to many clients (docs/feeds.md).

``protocol`` parses and validates what clients send and encodes what they
receive; ``relay`` keeps the history, the subscriptions and the per-client
flow control, fed by one event source; ``websocket`` is the autobahn resource
the RAPI daemon serves at ``/2/feed``.
"""

__all__ = [
    "protocol",
    "relay",
    "websocket",
]
