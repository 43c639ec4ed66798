"""Ganeti's coercion of parameter values (ForceDictType, ParseUnit) in params_types."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import TypeEnforcementError
from ganeti.core.params_types import (
    BES_PARAMETER_TYPES,
    DISK_DT_TYPES,
    HVS_PARAMETER_TYPES,
    NDS_PARAMETER_TYPES,
    UnitParseError,
    force_dict_type,
    parse_unit,
)


class ParseUnitTest(SynchronousTestCase):
    def test_units_and_rounding_to_four(self):
        cases = {"512": 512, "1G": 1024, "1g": 1024, "1.5G": 1536, "1t": 1024 * 1024,
                 "2GiB": 2048, "10 mb": 12, "130": 132, "0.3": 4, "0": 0, 100: 100,
                 1.5: 4, "1.4": 4}
        for text, size in cases.items():
            self.assertEqual(parse_unit(text), size, text)

    def test_refusals(self):
        for text in ("", "-1", "G", "1 X", "1.2.3", "1P", [1]):
            self.assertRaises(UnitParseError, parse_unit, text)


class ForceDictTypeTest(SynchronousTestCase):
    def test_each_type(self):
        be = force_dict_type({"maxmem": "1G", "minmem": 256, "vcpus": "2",
                              "auto_balance": "False", "always_failover": 1,
                              "spindle_use": 2.0}, BES_PARAMETER_TYPES)
        self.assertEqual(be, {"maxmem": 1024, "minmem": 256, "vcpus": 2,
                              "auto_balance": False, "always_failover": True,
                              "spindle_use": 2})
        self.assertIs(type(be["spindle_use"]), int)
        nd = force_dict_type({"cpu_speed": "1.5", "ovs_name": None, "oob_program": False,
                              "exclusive_storage": "TRUE"}, NDS_PARAMETER_TYPES)
        self.assertEqual(nd, {"cpu_speed": 1.5, "ovs_name": None, "oob_program": "",
                              "exclusive_storage": True})
        disk = force_dict_type({"resync-rate": "100", "dynamic-resync": "true",
                                "metavg": "vg"}, DISK_DT_TYPES)
        self.assertEqual(disk, {"resync-rate": 100, "dynamic-resync": True, "metavg": "vg"})
        hv = force_dict_type({"acpi": "false", "migration_port": "8102",
                              "root_path": None}, HVS_PARAMETER_TYPES)
        self.assertEqual(hv, {"acpi": False, "migration_port": 8102, "root_path": None})

    def test_ganeti_messages(self):
        cases = [
            ({"vcpus": "lots"}, BES_PARAMETER_TYPES,
             "'vcpus' (value lots) is not a valid integer"),
            ({"auto_balance": "yes"}, BES_PARAMETER_TYPES,
             "'auto_balance' (value yes) is not a valid boolean"),
            ({"maxmem": "1X"}, BES_PARAMETER_TYPES,
             "'maxmem' (value 1X) is not a valid size. error: Unknown unit: X"),
            ({"maxmem": "much"}, BES_PARAMETER_TYPES,
             "'maxmem' (value much) is not a valid size. error: Invalid format"),
            ({"cpu_speed": "fast"}, NDS_PARAMETER_TYPES,
             "'cpu_speed' (value fast) is not a valid float"),
            ({"metavg": 5}, DISK_DT_TYPES, "'metavg' (value 5) is not a valid string"),
            ({"oob_program": None}, NDS_PARAMETER_TYPES,
             "'oob_program' (value None) is not a valid string"),
            ({"bogus": 1}, DISK_DT_TYPES, "Unknown parameter 'bogus'"),
            ({"resync-rate": "default"}, DISK_DT_TYPES,
             "'resync-rate' (value default) is not a valid integer"),
        ]
        for values, types, message in cases:
            err = self.assertRaises(TypeEnforcementError, force_dict_type, values, types)
            self.assertEqual(err.args, (message,))
        err = self.assertRaises(TypeEnforcementError, force_dict_type, [1], DISK_DT_TYPES)
        self.assertEqual(err.args, ("Expected dictionary, got '[1]'",))

    def test_allowed_values_pass_through(self):
        self.assertEqual(force_dict_type({"vcpus": "default"}, BES_PARAMETER_TYPES,
                                         ["default"]), {"vcpus": "default"})
