"""Fakes stay honest: same public methods and signatures as the real classes."""

import inspect

from twisted.trial.unittest import SynchronousTestCase

from ganeti.luxi.client import LuxiClient
from tests.fakes.luxi import FakeLuxiClient


class FakeSignatureTest(SynchronousTestCase):
    def test_fake_luxi_client_matches(self):
        real = {n: m for n, m in inspect.getmembers(LuxiClient, inspect.isfunction)
                if not n.startswith("_")}
        for name, method in real.items():
            fake = getattr(FakeLuxiClient, name, None)
            self.assertIsNotNone(fake, f"FakeLuxiClient lacks {name}")
            self.assertEqual(list(inspect.signature(fake).parameters),
                             list(inspect.signature(method).parameters), name)
