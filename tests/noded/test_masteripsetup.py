"""The default master IP setup script: validation, the commands it composes, and what
start / stop / the netmask change do for each answer of the tools (no command runs)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ganeti.noded import masteripsetup as mip

V4 = mip.MasterAddress("br0", "10.9.0.254", 24, 4)
V6 = mip.MasterAddress("br0", "fd09::fe", 64, 6)
ENV = {"MASTER_NETDEV": "br0", "MASTER_IP": "10.9.0.254", "MASTER_NETMASK": "24",
       "CLUSTER_IP_VERSION": "4"}

ADDR_LIST = (
    "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
    "2: br0    inet 10.9.0.254/24 scope global br0:0\\       valid_lft forever\n"
    "3: eth1@if7    inet 10.8.0.1/16 scope global eth1\\       valid_lft forever\n"
)


class FakeTools:
    """Answers commands by their first words; records every command."""

    def __init__(self, answers=None, installed=("fping", "arping", "ndisc6")):
        self.answers = dict(answers or {})
        self.installed = set(installed)
        self.commands: list[list[str]] = []

    def run(self, argv):
        self.commands.append(list(argv))
        for key, answer in self.answers.items():
            if tuple(argv[:len(key)]) == key:
                return answer
        return 0, ""

    def which(self, program):
        return program in self.installed


NOT_LOCAL = {("ip", "-4", "-o", "route", "get"): (2, "RTNETLINK answers: Network is "
                                                     "unreachable\n"),
             ("fping",): (1, "")}


# --- validation ---------------------------------------------------------------

def test_environment_is_validated():
    assert mip.address_from_env(ENV) == V4
    assert mip.address_from_env({**ENV, "MASTER_IP": "fd09::00fe", "MASTER_NETMASK": "64",
                                 "CLUSTER_IP_VERSION": "6"}) == V6
    assert mip.address_from_env({**ENV, "MASTER_NETDEV": ""}).netdev == ""
    for key, value, words in (
            ("MASTER_NETDEV", "br0; rm -rf /", "device"),
            ("MASTER_NETDEV", "a" * 16, "device"),
            ("MASTER_NETDEV", "br0:0", "device"),
            ("MASTER_NETDEV", "..", "device"),
            ("MASTER_NETDEV", "-v", "device"),
            ("MASTER_IP", "10.9.0.256", "master IP"),
            ("MASTER_IP", "fd09::1", "master IP"),  # an IPv6 address for version 4
            ("MASTER_IP", "10.9.0.1 ", "master IP"),
            ("MASTER_NETMASK", "0", "netmask"),
            ("MASTER_NETMASK", "33", "netmask"),
            ("MASTER_NETMASK", "24\n", "netmask"),
            ("MASTER_NETMASK", "-1", "netmask"),
            ("MASTER_NETMASK", "²", "netmask"),
            ("CLUSTER_IP_VERSION", "5", "version"),
            ("CLUSTER_IP_VERSION", "", "version")):
        with pytest.raises(mip.SetupError, match=words):
            mip.address_from_env({**ENV, key: value})
    with pytest.raises(mip.SetupError, match="MASTER_IP is not set"):
        mip.address_from_env({k: v for k, v in ENV.items() if k != "MASTER_IP"})


def test_check_address_takes_integers_but_not_booleans():
    assert mip.check_address("10.0.0.1", 32, 4) == ("10.0.0.1", 32, 4)
    assert mip.check_address("fd00::1", 128, 6) == ("fd00::1", 128, 6)
    for args in (("10.0.0.1", True, 4), ("10.0.0.1", 24, True), (None, 24, 4),
                 ("fd00::1", 129, 6)):
        with pytest.raises(mip.SetupError):
            mip.check_address(*args)


# --- the commands ---------------------------------------------------------------

def test_commands_as_ganeti_script():
    assert mip.add_command(V4) == ["ip", "address", "add", "10.9.0.254/24", "dev", "br0",
                                   "label", "br0:0"]
    assert mip.add_command(V6) == ["ip", "address", "add", "fd09::fe/64", "dev", "br0"]
    assert mip.del_command(V4) == ["ip", "address", "del", "10.9.0.254/24", "dev", "br0"]
    assert mip.announce_command(V4) == ["arping", "-q", "-U", "-c", "3", "-I", "br0",
                                        "-s", "10.9.0.254", "10.9.0.254"]
    assert mip.announce_command(V6) == ["ndisc6", "-q", "-r", "3", "fd09::fe", "br0"]
    assert mip.route_command(V6) == ["ip", "-6", "-o", "route", "get", "fd09::fe"]
    assert mip.probe_command(V4) == ["fping", "-c", "5", "-p", "200", "10.9.0.254"]


def test_parse_addresses():
    assert mip.parse_addresses(ADDR_LIST) == [("lo", "127.0.0.1/8"), ("br0", "10.9.0.254/24"),
                                              ("eth1", "10.8.0.1/16")]
    assert mip.parse_addresses("garbage\n\n1: x\n") == []


# --- start ----------------------------------------------------------------------

def test_start_adds_and_announces():
    tools = FakeTools(NOT_LOCAL)
    assert "activated" in mip.start(V4, tools.run, tools.which)
    assert tools.commands == [mip.route_command(V4), mip.probe_command(V4),
                              mip.add_command(V4), mip.announce_command(V4)]


def test_start_is_a_noop_for_a_local_address():
    tools = FakeTools({("ip", "-4", "-o", "route", "get"):
                       (0, "local 127.0.1.254 dev lo src 127.0.0.1 uid 0\n")})
    message = mip.start(mip.MasterAddress("lo", "127.0.1.254", 32, 4), tools.run, tools.which)
    assert "already configured" in message
    assert len(tools.commands) == 1


def test_start_refuses_an_address_taken_elsewhere():
    tools = FakeTools({**NOT_LOCAL, ("fping",): (0, "")})
    with pytest.raises(mip.SetupError, match="another machine"):
        mip.start(V4, tools.run, tools.which)
    assert mip.add_command(V4) not in tools.commands


def test_start_without_fping_or_arping_still_adds():
    tools = FakeTools(NOT_LOCAL, installed=())
    mip.start(V4, tools.run, tools.which)
    assert tools.commands == [mip.route_command(V4), mip.add_command(V4)]


def test_start_failures():
    tools = FakeTools({**NOT_LOCAL, ("ip", "address", "add"):
                       (2, "RTNETLINK answers: Operation not permitted\n")})
    with pytest.raises(mip.SetupError, match="Operation not permitted"):
        mip.start(V4, tools.run, tools.which)
    tools = FakeTools(NOT_LOCAL)
    with pytest.raises(mip.SetupError, match="no master network device"):
        mip.start(mip.MasterAddress("", "10.9.0.254", 24, 4), tools.run, tools.which)
    assert tools.commands == [mip.route_command(V4)]


def test_announce_failure_is_ignored():
    tools = FakeTools({**NOT_LOCAL, ("arping",): (2, "arping: failed")})
    assert "activated" in mip.start(V4, tools.run, tools.which)


# --- stop -----------------------------------------------------------------------

def test_stop_removes_the_address():
    tools = FakeTools({("ip", "-4", "-o", "address", "show"): (0, ADDR_LIST)})
    assert "removed" in mip.stop(V4, tools.run)
    assert tools.commands[-1] == mip.del_command(V4)


def test_stop_without_the_address_does_nothing():
    tools = FakeTools({("ip", "-4", "-o", "address", "show"): (0, ADDR_LIST)})
    assert "Doing nothing" in mip.stop(mip.MasterAddress("br0", "10.9.0.7", 24, 4), tools.run)
    # a loopback-range address (virtual clusters) is not configured anywhere either
    assert "Doing nothing" in mip.stop(mip.MasterAddress("lo", "127.0.1.254", 32, 4),
                                       tools.run)
    assert "Doing nothing" in mip.stop(mip.MasterAddress("", "127.0.1.254", 32, 4), tools.run)
    assert all(cmd[:3] != ["ip", "address", "del"] for cmd in tools.commands)


def test_stop_refuses_an_address_on_another_device_or_mask():
    tools = FakeTools({("ip", "-4", "-o", "address", "show"): (0, ADDR_LIST)})
    with pytest.raises(mip.SetupError, match=r"wrong device or netmask \(10.8.0.1/16 on eth1;"):
        mip.stop(mip.MasterAddress("br0", "10.8.0.1", 16, 4), tools.run)
    with pytest.raises(mip.SetupError,
                       match=r"\(10.9.0.254/24 on br0; expected 10.9.0.254/16 on br0\)"):
        mip.stop(mip.MasterAddress("br0", "10.9.0.254", 16, 4), tools.run)


def test_stop_failures():
    tools = FakeTools({("ip", "-4", "-o", "address", "show"): (0, ADDR_LIST),
                       ("ip", "address", "del"): (2, "RTNETLINK answers: Operation not "
                                                     "permitted")})
    with pytest.raises(mip.SetupError, match="deactivation"):
        mip.stop(V4, tools.run)
    tools = FakeTools({("ip", "-4", "-o", "address", "show"): (127, "ip: command not found")})
    with pytest.raises(mip.SetupError, match="Cannot list"):
        mip.stop(V4, tools.run)


# --- the netmask ------------------------------------------------------------------

LOCAL = {("ip", "-4", "-o", "route", "get"): (0, "local 10.9.0.254 dev lo\n"),
         ("ip", "-4", "-o", "address", "show"): (0, ADDR_LIST)}


def test_change_netmask_adds_the_new_then_removes_the_old():
    tools = FakeTools(LOCAL)
    assert "/16" in mip.change_netmask(V4, 16, tools.run)
    assert tools.commands[-2:] == [
        ["ip", "address", "add", "10.9.0.254/16", "dev", "br0", "label", "br0:0"],
        mip.del_command(V4)]


def test_change_netmask_refusals():
    tools = FakeTools(NOT_LOCAL)
    with pytest.raises(mip.SetupError, match="not up"):
        mip.change_netmask(V4, 16, tools.run)
    tools = FakeTools({**LOCAL, ("ip", "address", "add"): (2, "denied")})
    with pytest.raises(mip.SetupError, match="new netmask"):
        mip.change_netmask(V4, 16, tools.run)
    tools = FakeTools({**LOCAL, ("ip", "address", "del"): (2, "denied")})
    with pytest.raises(mip.SetupError, match="old netmask"):
        mip.change_netmask(V4, 16, tools.run)


def test_change_netmask_leaves_a_loopback_range_address_alone():
    tools = FakeTools(LOCAL)
    message = mip.change_netmask(mip.MasterAddress("lo", "127.0.1.254", 32, 4), 24, tools.run)
    assert "nothing to change" in message
    assert all(cmd[1] != "address" or cmd[2] == "show" for cmd in tools.commands)


# --- main ---------------------------------------------------------------------------

def run_main(argv, environ, tools):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = mip.main(argv, environ, tools.run, tools.which)
    return code, out.getvalue(), err.getvalue()


def test_main_usage_and_validation_before_any_command():
    tools = FakeTools(NOT_LOCAL)
    for argv in ([], ["restart"], ["start", "stop"]):
        code, _, err = run_main(argv, ENV, tools)
        assert (code, err.startswith("Usage:")) == (1, True)
    code, _, err = run_main(["start"], {**ENV, "MASTER_NETDEV": "br0 up"}, tools)
    assert code == 1 and "device" in err
    assert tools.commands == []


def test_main_success_and_failure():
    code, out, _ = run_main(["start"], ENV, FakeTools(NOT_LOCAL))
    assert (code, "activated" in out) == (0, True)
    code, _, err = run_main(["start"], ENV, FakeTools({**NOT_LOCAL, ("ip", "address", "add"):
                                                       (2, "not permitted")}))
    assert (code, "not permitted" in err) == (1, True)


@pytest.mark.subprocess
def test_run_command_reports_a_missing_program():
    assert mip.run_command(["no-such-program-here"])[0] == 127
    status, output = mip.run_command(["true"])
    assert (status, output) == (0, "")
