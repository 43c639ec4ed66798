"""The dashboard's serial console panel in headless Chromium, against a fake guest.

The stack (tests/integration/consolestack.py, a process of its own) is the real
console path: RAPI's /2/instances/<name>/console/websocket relay, noded's console
endpoint over mutual TLS, and a unix socket standing in for QEMU's chardev with a
tiny "shell" behind it; masterd is faked.  No VM, no virtual cluster.

Skipped, saying what is missing, without Debian's chromium, chromium-driver and
selenium (as tests/integration/test_dashboard.py).
"""

from __future__ import annotations

import base64
import select
import shutil
import subprocess
import sys
import tempfile

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.helpers import ROOT
from tests.integration.test_dashboard import PAGE_TIMEOUT, browser_unavailable, start_browser

NAME = "vm1.test"


class DashboardConsoleTest(SynchronousTestCase):
    def setUp(self) -> None:
        reason = browser_unavailable()
        if reason:
            self.skipTest(reason)
        self.tmp = tempfile.mkdtemp(prefix="gcd", dir="/tmp")  # unix socket paths stay short
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.stack = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.consolestack", self.tmp], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop_stack)
        ready, _, _ = select.select([self.stack.stdout], [], [], 30)
        line = self.stack.stdout.readline().decode() if ready else ""
        if not line.startswith("READY "):
            self.fail(f"the console stack did not start: {line!r}")
        self.port = int(line.split()[1])

    def _stop_stack(self) -> None:
        if self.stack.poll() is None:
            self.stack.stdin.close()  # end of input stops its reactor
            try:
                self.stack.wait(10)
            except subprocess.TimeoutExpired:
                self.stack.kill()
                self.stack.wait()
        self.stack.stdout.close()

    def browser(self, user: str, password: str):
        profile = tempfile.mkdtemp(prefix="profile-", dir=self.tmp)
        driver = start_browser(profile, profile + ".log")
        self.addCleanup(driver.quit)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                               {"headers": {"Authorization": f"Basic {token}"}})
        driver.get(f"http://127.0.0.1:{self.port}/dashboard/")
        self.wait(driver, lambda d: d.find_element("id", "user-name").text == user, user)
        self.wait(driver, lambda d: NAME in d.find_element("id", "instances-body").text,
                  "the instance")
        return driver

    def wait(self, driver, condition, what: str) -> None:
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(driver, PAGE_TIMEOUT).until(condition, f"waiting for {what}")

    def output(self, driver) -> str:
        return driver.find_element("id", "console-output").text

    def state(self, driver) -> str:
        return driver.find_element("id", "console-state").text

    def open_console(self, driver) -> None:
        driver.find_element("css selector", f'button.instance-console[data-instance="{NAME}"]'
                            ).click()
        self.wait(driver, lambda d: d.find_element("id", "console-section").is_displayed(),
                  "the console panel")

    def test_console_panel(self) -> None:
        from selenium.webdriver.common.keys import Keys

        admin = self.browser("admin", "adminpw")
        self.open_console(admin)
        self.wait(admin, lambda d: f"GANETI-GUEST-READY {NAME}" in self.output(d),
                  "the guest's output")
        self.wait(admin, lambda d: self.state(d).startswith("connected"), "connected")
        admin.find_element("id", "console-output").send_keys("echo hi", Keys.ENTER)
        self.wait(admin, lambda d: "you typed: echo hi" in self.output(d), "the answer")

        # a second writer is told the console is busy
        other = self.browser("admin", "adminpw")
        self.open_console(other)
        self.wait(other, lambda d: "4409" in self.state(d), "busy")
        self.assertIn("console busy", self.state(other))

        # a read-only user has no Console button, and the server refuses it anyway
        reader = self.browser("reader", "readerpw")
        self.assertEqual(reader.find_elements("css selector", "button.instance-console"), [])
        reader.execute_script(
            "import('./console.js').then((m) => m.openConsole(arguments[0]));", NAME)
        self.wait(reader, lambda d: "4403" in self.state(d), "the refusal")
        self.assertIn("lacks the 'write' permission", self.state(reader))

        # the instance stops: the panel says the console closed
        self.stack.stdin.write(b"stop\n")
        self.stack.stdin.flush()
        self.wait(admin, lambda d: "closed (1000)" in self.state(d), "the close")
        self.assertIn("console closed", self.state(admin))

    def test_an_escape_sequence_cut_between_messages_is_dropped_whole(self) -> None:
        """QEMU's serial port sends what it has: busybox's cursor query ESC [ 6 n
        arrived as ESC, then "[6n", and showed as "[6n" in the panel."""
        driver = self.browser("admin", "adminpw")
        script = """
            const [chunks, done] = arguments;
            import('./console.js').then((m) => {
              let text = "", held = "";
              for (const chunk of chunks) {
                const [ready, rest] = m.splitPartial(held + chunk);
                held = rest;
                text = m.appendOutput(text, ready);
              }
              done([text, held]);
            });"""
        cases = [
            (["# \x1b", "[6n", "ls\r\n"], "# ls\n", ""),
            (["a\x1b[", "1;3", "2m", "b"], "ab", ""),
            (["x\x1b]0;tit", "le\x07y"], "xy", ""),
            (["x\x1b]0;t\x1b", "\\y"], "xy", ""),
            (["done\x1b[6n"], "done", ""),          # complete: nothing held
            (["a\x1bcb\x1b(", "Bc"], "abc", ""),       # ESC c, and ESC ( B cut in two
            (["wait\x1b[1"], "wait", "\x1b[1"),     # incomplete: held for the next chunk
            (["\x1b]" + "t" * 300], "t" * 300, ""),  # an endless OSC is not held back
        ]
        for chunks, shown, held in cases:
            with self.subTest(chunks=chunks):
                self.assertEqual(driver.execute_async_script(script, chunks), [shown, held])
