"""Tag logical units: get, set, delete and search tags of config objects."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, OpPrereqError, TagError
from ganeti.core.objects import ConfigData, TaggableObject
from ganeti.core.opcodes.views import OpTagsDel, OpTagsGet, OpTagsSearch, OpTagsSet
from ganeti.master.lu.base import LogicalUnit

_TAG_RE = re.compile(r"[\w.+*/:@-]+")


def check_tag(tag: Any) -> str:
    """Refuse tags Ganeti refuses: empty, too long, or with odd characters."""
    if not isinstance(tag, str) or not tag:
        raise TagError(f"Invalid tag {tag!r}: tags are non-empty strings")
    if len(tag) > constants.MAX_TAG_LEN:
        raise TagError(f"Tag too long (>{constants.MAX_TAG_LEN} characters): {tag[:40]}...")
    if not _TAG_RE.fullmatch(tag):  # "x\n" would forge a line in ssconf_cluster_tags
        raise TagError(f"Tag contains invalid characters: {tag!r}")
    return tag


class _TagsLU(LogicalUnit):
    REQ_BGL = False
    op: OpTagsGet | OpTagsSet | OpTagsDel

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        kind, name = self.op.kind, self.op.name
        # Ganeti's tag LUs expand names as every LU does: "Node 'x' not known",
        # "Node group 'x' not found", "Instance 'x' not known"
        try:
            cfg.tagged_object(kind, name)
        except OpPrereqError as err:
            words = {constants.TAG_NODE: "Node '{}' not known",
                     constants.TAG_NODEGROUP: "Node group '{}' not found",
                     constants.TAG_INSTANCE: "Instance '{}' not known"}.get(kind)
            if words is None or len(err.args) < 2 or err.args[1] != ECODE_NOENT:
                raise
            raise OpPrereqError(words.format(name or ""), ECODE_NOENT) from None

    async def _apply(self, change: Callable[[ConfigData], None]) -> None:
        """Commit ``change``; with ``dry_run``, only check it on a copy of the config."""
        if self.op.dry_run:
            change(copy.deepcopy(self.ctx.config.config))
            return
        await self.update_config(change)


class LUTagsGet(_TagsLU):
    """OP_TAGS_GET: the tags of one object, sorted."""

    OP_ID = "OP_TAGS_GET"
    op: OpTagsGet

    async def exec(self) -> Any:
        obj = self.ctx.config.config.tagged_object(self.op.kind, self.op.name)
        return sorted(obj.tags)


class LUTagsSet(_TagsLU):
    """OP_TAGS_SET: add tags to one object (durably, through the config writer)."""

    OP_ID = "OP_TAGS_SET"
    REQ_BGL = True
    op: OpTagsSet

    def check_prereq(self) -> None:
        super().check_prereq()
        for tag in self.op.tags:
            check_tag(tag)

    async def exec(self) -> Any:
        kind, name, new = self.op.kind, self.op.name, list(self.op.tags)

        def change(cfg: ConfigData) -> None:
            obj = cfg.tagged_object(kind, name)
            tags = set(obj.tags) | set(new)
            if len(tags) > constants.MAX_TAGS_PER_OBJ:
                raise TagError(f"Too many tags ({len(tags)} > {constants.MAX_TAGS_PER_OBJ})")
            obj.tags = sorted(tags)
            obj.serial_no += 1

        await self._apply(change)
        return None


class LUTagsDel(_TagsLU):
    """OP_TAGS_DEL: remove tags from one object; every tag must be present."""

    OP_ID = "OP_TAGS_DEL"
    REQ_BGL = True
    op: OpTagsDel

    async def exec(self) -> Any:
        kind, name, gone = self.op.kind, self.op.name, set(self.op.tags)

        def change(cfg: ConfigData) -> None:
            obj = cfg.tagged_object(kind, name)
            missing = sorted(gone - set(obj.tags))
            if missing:
                raise OpPrereqError(f"Tag(s) {', '.join(repr(t) for t in missing)} not found",
                                    ECODE_NOENT)
            obj.tags = sorted(set(obj.tags) - gone)
            obj.serial_no += 1

        await self._apply(change)
        return None


class LUTagsSearch(LogicalUnit):
    """OP_TAGS_SEARCH: ``[path, tag]`` for every tag matching a regular expression."""

    OP_ID = "OP_TAGS_SEARCH"
    REQ_BGL = False
    op: OpTagsSearch

    def check_prereq(self) -> None:
        # Ganeti's: a pattern that does not compile fails here, wrong_input (the
        # opcode itself takes any non-empty string).
        try:
            self.pattern = re.compile(self.op.pattern)
        except re.error as err:
            raise OpPrereqError(f"Invalid search pattern '{self.op.pattern}': {err}",
                                ECODE_INVAL) from None

    async def exec(self) -> Any:
        pattern = self.pattern
        cfg = self.ctx.config.config
        objects: list[tuple[str, TaggableObject]] = [("/cluster", cfg.cluster)]
        objects += [(f"/instances/{o.name}", o) for o in cfg.instances.values()]
        objects += [(f"/nodes/{o.name}", o) for o in cfg.nodes.values()]
        objects += [(f"/nodegroup/{o.name}", o) for o in cfg.nodegroups.values()]
        objects += [(f"/networks/{o.name}", o) for o in cfg.networks.values()]
        return [[path, tag] for path, obj in objects for tag in sorted(obj.tags)
                if pattern.search(tag)]
