"""The test processes of a run never pick the same 127.0.x. range (helpers.free_ip_base):
a range one process holds is skipped by the others until it is released."""

import fcntl
import os
import subprocess
import sys

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.helpers import (
    IP_LOCK_DIR,
    ROOT,
    _held_ip_bases,
    free_ip_base,
    release_ip_base,
)


class InOrder:
    """An rng whose shuffle keeps the order: ranges are tried from 127.0.2. on."""

    @staticmethod
    def shuffle(items):
        pass


HOLDER = """
import sys
from tests.integration.helpers import free_ip_base
class InOrder:
    shuffle = staticmethod(lambda items: None)
print(free_ip_base(rng=InOrder), flush=True)
sys.stdin.read()  # hold it until told to exit
"""


class IpBaseTest(SynchronousTestCase):
    def test_a_range_another_process_holds_is_skipped_until_released(self):
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.stdin.close)
        held = holder.stdout.readline().strip()
        self.assertRegex(held, r"^127\.0\.\d+\.$")
        mine = free_ip_base(rng=InOrder)
        self.addCleanup(release_ip_base, mine)
        self.assertNotEqual(mine, held)
        # this process does not hand out its own range twice either
        again = free_ip_base(rng=InOrder)
        self.addCleanup(release_ip_base, again)
        self.assertNotIn(again, (mine, held))
        # the holder ends (or dies): its lock goes with it
        holder.stdin.close()
        holder.wait(timeout=30)
        fd = os.open(os.path.join(IP_LOCK_DIR, held.split(".")[2]), os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if still held
        finally:
            os.close(fd)
        release_ip_base(mine)
        self.assertNotIn(mine, _held_ip_bases)
