"""A minimal RFC 6455 codec for tests: client handshake, masked client frames, server frames."""

from __future__ import annotations

import base64
import os
import struct

OP_TEXT = 1
OP_BINARY = 2
OP_CLOSE = 8
OP_PING = 9
OP_PONG = 10


def handshake_request(path="/2/feed", host="localhost", headers=None):
    """The bytes of a client's opening handshake; returns (request, key)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), key


def client_frame(payload, opcode=OP_TEXT, fin=True):
    """A masked frame, as clients must send."""
    if isinstance(payload, str):
        payload = payload.encode()
    mask = os.urandom(4)
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def parse_frames(data):
    """Split server bytes into [(opcode, payload)]; returns (frames, rest)."""
    frames = []
    pos = 0
    while len(data) - pos >= 2:
        b0, b1 = data[pos], data[pos + 1]
        n = b1 & 0x7F
        head = 2
        if n == 126:
            if len(data) - pos < 4:
                break
            n = struct.unpack("!H", data[pos + 2:pos + 4])[0]
            head = 4
        elif n == 127:
            if len(data) - pos < 10:
                break
            n = struct.unpack("!Q", data[pos + 2:pos + 10])[0]
            head = 10
        masked = bool(b1 & 0x80)
        if masked:
            head += 4
        if len(data) - pos < head + n:
            break
        payload = data[pos + head:pos + head + n]
        if masked:
            mask = data[pos + head - 4:pos + head]
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        frames.append((b0 & 0x0F, payload))
        pos += head + n
    return frames, data[pos:]


def split_handshake(data):
    """(HTTP response head, the bytes after it) or (None, data) if incomplete."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None, data
    return data[:end + 4], data[end + 4:]
