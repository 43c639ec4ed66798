"""The dashboard's static files, served from one directory.

Only regular files below the directory are served: a path with an empty,
``.`` or ``..`` segment, or a segment starting with ``.``, is not found, and
so is anything whose real path (symbolic links resolved) leaves the
directory.  A directory is served as its ``index.html``; asked for without
its final slash, it is redirected to the slashed path so that relative links
work.  Files are small and read synchronously on first use, then kept in
memory until their size or modification time changes (one ``stat`` per
request).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

#: Content types by file extension; anything else is application/octet-stream.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}
INDEX = "index.html"
#: Largest file served (it is held in memory).
MAX_FILE_SIZE = 8 * 1024 * 1024


@dataclass
class StaticResult:
    """What to answer: 200 with a file, a redirect (``location``), or 404 (``None`` body)."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


class StaticFiles:
    """Serves the files below ``directory``; see the module docstring for the rules."""

    def __init__(self, directory: str, max_size: int = MAX_FILE_SIZE) -> None:
        self.directory = os.path.realpath(directory)
        self.max_size = max_size
        self._cache: dict[str, tuple[tuple[int, int, int], bytes]] = {}

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self.directory or real.startswith(self.directory + os.sep)

    def get(self, rel: str, url_path: str) -> StaticResult:
        """The answer for ``rel`` (the path below the directory) requested as ``url_path``."""
        segments = rel.split("/") if rel else []
        trailing = not segments or segments[-1] == ""
        if trailing and segments:
            segments = segments[:-1]
        if any(not s or s.startswith(".") for s in segments):
            return StaticResult(404)
        path = os.path.join(self.directory, *segments)
        if not self._inside(path):
            return StaticResult(404)
        try:
            st = os.stat(path)
        except OSError:
            return StaticResult(404)
        if stat.S_ISDIR(st.st_mode):
            if not trailing:
                return StaticResult(301, headers=[("Location", url_path + "/")])
            path = os.path.join(path, INDEX)
            try:
                st = os.stat(path)
            except OSError:
                return StaticResult(404)
        elif trailing:
            return StaticResult(404)
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_size or not self._inside(path):
            return StaticResult(404)
        body = self._read(path, (st.st_mtime_ns, st.st_size, st.st_ino))
        if body is None:
            return StaticResult(404)
        ctype = CONTENT_TYPES.get(os.path.splitext(path)[1].lower(), "application/octet-stream")
        return StaticResult(200, body, [("Content-Type", ctype),
                                        ("Cache-Control", "no-cache"),
                                        ("X-Content-Type-Options", "nosniff")])

    def _read(self, path: str, stamp: tuple[int, int, int]) -> bytes | None:
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            with open(path, "rb") as f:
                body = f.read(self.max_size + 1)
        except OSError:
            return None
        if len(body) > self.max_size:
            return None
        self._cache[path] = (stamp, body)
        return body
